import torch
import torch.nn as nn


class DiT(nn.Module):
    def __init__(self, ckpt):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        if ckpt:
            self.forward = self.forward_ckpt
        else:
            self.forward = self.forward_plain
        self.describe = self.summary

    def prepare(self, x, t):
        freqs = torch.arange(0, 8).to(t.device)  # [per-step] called from what forward is
        return x * freqs.sum()

    def forward_ckpt(self, x, t):
        x = self.prepare(x, t)
        return self.proj(x).sum().item()  # [per-step] the module's forward, set in __init__

    def forward_plain(self, x, t):
        return self.proj(x).max().item()  # [per-step] the other arm

    def summary(self, x):
        return x.abs().max().item()  # [once] near miss: held on another attribute, no hook

    def unused(self, x):
        return x.min().item()  # [once] near miss: nothing sets or calls it
