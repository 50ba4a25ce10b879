"""A small training script with CPU-GPU sync hazards (test data for the integrations)."""
import torch
import torch.nn as nn

device = "cuda"
model = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
w = torch.ones(8, device=device)


def train(loader):
    total = 0.0
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
        total += loss.item()
        if w.sum().item() > 0:
            pass
    return total


def evaluate(xs):
    out = []
    for x in xs:
        out.append(
            model(x)
            .sum()
            .item()
        )
    return out


scale = w.mean().item()
label = "é→" + str(w.max().item())
ok = w.min().item()  # noqa: SYN101
	
