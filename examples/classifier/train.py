"""Train the classifier for a few epochs, printing the loss as it goes."""
import torch

from data import make_loader
from model import Classifier, LabelledLoss

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train_epoch(model, loss_fn, opt, loader):
    total = torch.zeros(1).to(device)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.detach()
        print(f"step {step}: loss {loss.item():.3f}")
    return total.item() / len(loader)


def main(epochs=3):
    model = Classifier().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = make_loader()
    for epoch in range(epochs):
        mean = train_epoch(model, LabelledLoss(), opt, loader)
        print(f"epoch {epoch}: mean loss {mean:.3f}")


if __name__ == "__main__":
    main()
