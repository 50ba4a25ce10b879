import functools

import torch
import torch.nn as nn


class Flow(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("loc", torch.zeros(2))
        self.register_buffer("cov", torch.eye(2))
        self.fixed = self.constant

    @property
    def prior(self):
        return torch.distributions.MultivariateNormal(self.loc, self.cov)  # [per-step] a property read by forward runs every step

    @prior.setter
    @functools.wraps(print)
    def prior(self, value):
        self.loc = torch.tensor(value).cuda()  # [once] near miss: the setter runs where `prior` is assigned, never here

    @functools.cached_property
    def table(self):
        return torch.tensor([1.0, 2.0]).cuda()  # [once] near miss: a cached property runs once per instance

    @property
    def constant(self):
        return torch.tensor([3.0, 4.0]).cuda()  # [setup] near miss: read only in __init__

    def prior_fn(self):
        return torch.tensor([5.0, 6.0]).cuda()  # [once] near miss: a method of the class, never called

    def forward(self, x):
        return self.prior.log_prob(x) + self.table.sum() + self.fixed.sum() + self.prior_fn


class Scaled(Flow):
    def forward(self, x):
        return self.prior.sample() * x  # (the base's property, read through a subclass)


def train(flow, loader, opt):
    for x in loader:
        loss = flow(x.cuda()).mean()
        loss.backward()
        opt.step()
