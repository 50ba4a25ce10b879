"""A helper's return behind a type test of its parameter, at calls with a CUDA tensor:
marked as a fixture is (not one of fixtures/, whose marks a GPU run records)."""
import torch


def to_scalar(value):
    if isinstance(value, torch.Tensor):
        return value.item()  # error: SYN101 [hot]  (a CUDA loss, every step)
    return value


def to_host(value):
    if isinstance(value, (int, float)):
        return value
    return value.detach()


def report(loader):
    model = torch.nn.Linear(3, 3).cuda()
    for x in loader:
        loss = model(x.cuda()).sum()  # error: SYN304 [hot]
        print(f"loss {to_scalar(loss):.4f}")  # a Python float: `return value` runs only for non-tensors
        print(to_host(loss))  # error: SYN106 [hot]  (near miss: the tensor path gives the tensor back)
