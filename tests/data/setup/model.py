"""Setup transfers (`semantic.setup`): what a model's construction moves to the GPU once
reports nothing; the same moves where they repeat are findings. A rate in brackets after
`#`: the finding a line must give; an unmarked line gives none."""
import torch
from torch import nn

MEAN = [0.485, 0.456, 0.406]


class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.inv = inv.cuda()  # a module's constructor: setup
        self.cos = None

    def forward(self, x):
        if self.cos is None:  # filled on the first call: setup
            self.cos = torch.arange(x.shape[1]).float().cuda()
        return x * self.inv


class Block(nn.Module):
    def __init__(self, i):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4))
        self.reset_parameters()

    def reset_parameters(self):
        self.bias = torch.tensor([0.5]).cuda()  # a weight-initialisation hook: setup

    def forward(self, x):
        return x * self.scale + self.bias


class Boxes:
    """Not a module: built where its callers are (here per step)."""

    def __init__(self, t):
        self.t = torch.tensor(t, dtype=torch.float32).cuda()  # [per-step] built by forward


class KVCache:
    """Not a module: built once per `generate()` call, which is not setup."""

    def __init__(self, n):
        self.pos = torch.arange(n).cuda()  # [once] once per request


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean = torch.tensor(MEAN).view(1, 3, 1, 1).cuda()  # setup
        self.blocks = nn.ModuleList([Block(i) for i in range(4)])
        self.rot = Rotary(8)
        self._init_tables()

    def _init_tables(self):
        self.table = torch.arange(16).cuda()  # only the constructor calls it: setup

    def shift(self, x):
        return x + torch.arange(4).cuda()  # [per-step] the constructor and forward call it

    def forward(self, x):
        pos = torch.arange(x.shape[1]).cuda()  # [per-step]
        b = Boxes([[0, 0, 1, 1]])
        for blk in self.blocks:
            x = blk(x)
        return self.shift(x + pos), b

    def generate(self, x, n):
        cache = KVCache(n)
        for _ in range(n):
            x = torch.cat([x, self(x)[0][:, -1:]], 1)
        return x, cache
