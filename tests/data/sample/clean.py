import torch

w = torch.ones(8, device="cuda")
total = torch.zeros((), device="cuda")
for _ in range(10):
    total += w.sum()
print(float(total.cpu()))
