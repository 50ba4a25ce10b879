"""Synthetic data: stands in for a real dataset so the example runs anywhere."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader(n=1024, features=32, classes=10, batch_size=64):
    x = torch.randn(n, features)
    y = torch.randint(0, classes, (n,))
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)
