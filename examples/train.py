"""A small, ordinary training script with the hazards synclint exists to catch."""
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = TensorDataset(torch.randn(1024, 32), torch.randint(0, 10, (1024,)))
loader = DataLoader(data, batch_size=64, shuffle=True)


def train_epoch():
    total = torch.zeros(1).to(device)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.detach()
        if torch.isnan(loss):
            raise RuntimeError("diverged")
        print(f"step {step}: {loss.item():.3f}")
    return total.item() / len(loader)


def evaluate(x, y):
    model.eval()
    logits = model(x)
    correct = logits.argmax(1) == y
    return logits[correct]


for epoch in range(3):
    print(epoch, train_epoch())
