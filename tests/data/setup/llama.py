"""Overrides of another module's hooks: one its constructor calls (setup), one its per-step
method calls (a finding)."""
import torch

from .engine import BaseEngine


class LlamaEngine(BaseEngine):
    def _init_custom(self):
        self.inv_freq = torch.arange(0, 64, 2).float().cuda()  # the base's constructor calls it: setup

    def _post(self, x):
        return x + torch.arange(4).cuda()  # [per-step] the base's step calls it
