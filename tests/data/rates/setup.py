import dataclasses
import functools

import numpy as np
import torch
import torch.nn as nn


def kmeans(x, k, iters):
    means = x[:k]
    for _ in range(iters):
        counts = torch.bincount(x.argmax(-1), minlength=k)
        print(counts.max().item())  # [once] only a once-only branch calls it: its loop runs once too
    return means


def sample_rows(x, n):
    return x[torch.multinomial(x.softmax(-1).sum(0), n)].cpu()  # [per-step] near miss: the init calls it, and so does every step through the attribute it is handed to


def seed_from(x):
    return sample_rows(x, 4)


def refine(x, iters):
    for _ in range(iters):
        print(x.max().item())  # [per-step] near miss: the same loop, called at every forward


class Codebook(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("inited", torch.tensor(False))
        self.register_buffer("embed", torch.zeros(4, 3))
        self.frozen = False
        self._indexes = functools.lru_cache(8)(self._indexes)
        self.replace_fn = sample_rows if self.frozen else seed_from

    def init_embed_(self, x):
        if self.inited:
            return
        self.embed.data.copy_(kmeans(x, 4, 10))
        self.embed.data.copy_(seed_from(x))
        print(x.sum().item())  # [once] after an early return on a flag this function then sets
        self.inited.data.copy_(torch.tensor(True))

    def skip_if_frozen(self, x):
        if self.frozen:
            return x
        print(x.std().item())  # [per-step] near miss: an early return on a flag nothing here sets
        return x

    def _indexes(self, n):
        out = []
        for i in range(n):
            out.append(torch.from_numpy(np.arange(i + 1)).to(self.embed.device))  # [setup] memoised by an lru_cache made in __init__
        return out

    @functools.lru_cache(maxsize=None)
    def table(self, n):
        return torch.tensor(list(range(n))).cuda()  # [setup] memoised by lru_cache: once per distinct n

    @torch.no_grad()
    def lookup(self, n):
        return torch.tensor(list(range(n))).cuda()  # [per-step] near miss: a decorator that memoises nothing

    def forward(self, x):
        self.init_embed_(x)
        self.replace_fn(x, 2)
        self.skip_if_frozen(x)
        refine(x, 2)
        self._indexes(x.shape[0])
        self.table(x.shape[0])
        self.lookup(x.shape[0])
        return x


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.mask = torch.ones(3, 3)
        self.grid = torch.zeros(3)

    def attention(self, x):
        self.mask = self.mask.to(dtype=x.dtype, device=x.device) if self.mask is not None else None  # [setup] stored back: later calls find it moved
        return x @ self.mask

    def forward(self, x):
        grid = self.grid.to(device=x.device)  # [per-step] near miss: the move is not stored back
        return self.attention(x) + grid


@dataclasses.dataclass
class Table:
    n: int

    def __post_init__(self):
        self._rows = functools.lru_cache(4)(self._rows)

    def _rows(self, device):
        return torch.tensor(list(range(self.n))).to(device)  # [setup] memoised by an lru_cache made in __post_init__


def encode_all(loader):
    enc = Encoder().cuda()
    table = Table(3)
    for x in loader:
        enc(x.cuda(non_blocking=True))
        table._rows(torch.device("cuda"))


def run_epoch(model, opt, data, steps):
    for i in range(steps):
        loss = model(data[i]).sum()
        loss.backward()
        opt.step()
        print(loss.item())  # [per-step] the step loop inside the epoch


def fit(model, opt, data):
    sched = torch.optim.lr_scheduler.StepLR(opt, 10)
    for epoch in range(10):
        run_epoch(model, opt, data, 100)
        sched.step()
        print(model.embed.sum().item())  # [per-epoch] an epoch loop by its variable's name


def fit_full_batch(model, opt, x):
    for epoch in range(200):
        loss = model(x).sum()
        loss.backward()
        opt.step()
        print(loss.item())  # [per-step] near miss: each epoch is one optimizer step (full batch)


def main():
    model = Codebook().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(100, 4, 3, device="cuda")
    fit(model, opt, data)
    fit_full_batch(model, opt, data[0])


def show_first(loader):
    first = True
    for x in loader:
        x = x.cuda(non_blocking=True)
        if first and x.dim() > 1:
            print(x.sum().item())  # [once] a one-shot flag: the body turns it off
            first = False


def show_ready(loader):
    for x in loader:
        ready = True
        x = x.cuda(non_blocking=True)
        if ready:
            print(x.max().item())  # [per-step] near miss: the flag is set again at every iteration
            ready = False


def check_kernels(x):
    for channels in [1, 16, 64]:
        print(x[:channels].sum().item())  # [once] three configurations written out, not steps
    for scale in (0.5, 2.0):
        for batch in x.split(4):
            print((batch * scale).mean().item())  # [per-step] near miss: a loop over a tensor's chunks inside
