"""A plain class whose constructor runs an overridable start-up hook (`self._init_custom()`);
the subclass of another module overrides it (lightllm's model classes). Another module imports
this one: its `__main__` block is its own test, no program's start-up."""
import torch


class BaseEngine:
    def __init__(self, cfg, loader=None):
        self.cfg = cfg
        self._init_custom()
        if loader is not None:
            self.serve(loader)

    def serve(self, loader):
        """The constructor runs the program's work: a loop over batches is no setup."""
        for x in loader:
            self.step(x)
        return torch.zeros(2).cuda()  # [once] after the loop: not setup

    def _init_custom(self):
        pass

    def step(self, x):
        return self._post(x)

    def _post(self, x):
        return x


def test():
    return torch.arange(4).cuda()  # [once] the module's own test


if __name__ == "__main__":
    y = torch.zeros(2).cuda()  # [once] a library module's `__main__` block
    test()
