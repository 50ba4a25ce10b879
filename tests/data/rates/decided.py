import torch


class Sched:
    def __init__(self, n):
        self.timesteps = torch.linspace(1, 0, n, device="cuda")


def denoise(model, x, sched, floats, given):
    for i, t in enumerate(sched.timesteps):
        cur = t
        if not torch.is_tensor(cur):
            cur = torch.tensor([cur], device=x.device)  # [once] never taken: iterating a tensor yields tensors
        if not isinstance(cur, torch.Tensor):
            cur = torch.tensor([cur], device=x.device)  # [once] the same, asked with isinstance
        x = model(x, cur)
    for t in floats:
        if not torch.is_tensor(t):
            t = torch.tensor([t], device=x.device)  # [per-step] near miss: the items are Python floats
        x = model(x, t)
    for t in given:
        if not torch.is_tensor(t):
            t = torch.tensor([t], device=x.device)  # [per-step] near miss: what the items are is not known
        x = model(x, t)
    return x


def main(model, x, given):
    sched = Sched(10)
    for batch in range(3):
        denoise(model, x, sched, [0.5, 0.25], given)
