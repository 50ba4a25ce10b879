import numpy as np
import torch


class Anchors:
    def hanning(self, size, device):
        w = np.hanning(size)
        return torch.from_numpy(w).to(device)  # [once] only the head's first call makes the windows

    def ramp(self, size, device):
        w = np.arange(size)
        return torch.from_numpy(w).to(device)  # [per-step] near miss: its call's guard tests another attribute


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.anchors = Anchors()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x, meta):
        if not hasattr(self, "mean"):
            self.mean = torch.tensor(meta["mean"], device=x.device)  # [setup] kept on the module after the first call
        if getattr(self, "std", None) is None:
            self.std = torch.tensor(meta["std"], device=x.device)  # [setup] the same, spelled with getattr
        if not hasattr(self, "scale"):
            self.shift = torch.tensor(meta["shift"], device=x.device)  # [per-step] near miss: the body sets another attribute
        if hasattr(self, "mean"):
            self.bias = torch.tensor(meta["bias"], device=x.device)  # [per-step] near miss: true once set, every call after
        if not hasattr(x, "mean"):
            self.offset = torch.tensor(meta["offset"], device=x.device)  # [per-step] near miss: tests another object
        if not hasattr(self, "windows"):
            self.windows = self.anchors.hanning(x.shape[-1], x.device)
        if not hasattr(self, "scale"):
            self.ramp = self.anchors.ramp(x.shape[-1], x.device)
        return self.proj((x - self.mean) / self.std) * self.windows * self.ramp
