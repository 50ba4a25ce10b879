import torch


class Scheduler:
    def __init__(self, n):
        self.timesteps = torch.arange(n, device="cuda")
        self.sigmas = torch.linspace(1, 0, n, device="cuda")
        self._step_index = None

    @property
    def step_index(self):
        return self._step_index

    def _init_step_index(self, t):
        hits = (self.timesteps == t).nonzero()  # [once] only the first step finds no index yet
        self._step_index = hits[0].item()  # [once] the same

    def _lookup(self, t):
        return (self.timesteps == t).nonzero()  # [per-step] near miss: the branch's call sets nothing

    def step(self, x, t):
        if self.step_index is None:
            self._init_step_index(t)
        if self._step_index is None:
            self._lookup(t)
        out = x * self.sigmas[self._step_index]
        self._step_index += 1
        return out
