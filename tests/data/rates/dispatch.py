import functools
import torch
import torch.nn as nn


def flip(x):
    return x.flip(0).sum().item()  # [per-step] a function of a local dispatch table, called every step


def crop(x):
    return x[:1].sum().item()  # [per-step] the table's other entry


def shown(x):
    return x.max().item()  # [once] near miss: the table only names it, nobody calls its items


class Criterion(nn.Module):
    def __init__(self, panoptic, losses):
        super().__init__()
        self.panoptic = panoptic
        self.losses = losses
        self.aug_map = {"flip": self.aug_flip, "none": self.aug_none}

    def loss_labels(self, outputs, targets):
        return outputs["logits"].sum().item()  # [per-step] called through the dict of bound methods

    def loss_boxes(self, outputs, targets):
        return outputs["boxes"].sum().item()  # [per-step] one arm of a conditional entry

    def loss_boxes_panoptic(self, outputs, targets):
        return outputs["boxes"].max().item()  # [per-step] the other arm

    def loss_unused(self, outputs, targets):
        return outputs["boxes"].min().item()  # [once] near miss: in no table, called by nobody

    def aug_flip(self, x):
        return x.flip(0).mean().item()  # [per-step] a table kept on self in __init__

    def aug_none(self, x):
        return x.mean().item()  # [per-step] its other entry

    def describe(self, outputs):
        names = {"labels": self.loss_labels, "unused": self.loss_unused}
        return sorted(names)  # the table's keys only: no call edge to its items

    def get_loss(self, loss, outputs, targets):
        loss_map = {
            "labels": self.loss_labels,
            "boxes": self.loss_boxes_panoptic if self.panoptic else self.loss_boxes,
        }
        assert loss in loss_map
        return loss_map[loss](outputs, targets)

    def forward(self, outputs, targets, aug="flip"):
        out = [self.get_loss(loss, outputs, targets) for loss in self.losses]
        out.append(self.aug_map[aug](outputs["logits"]))
        table = {"flip": flip, "crop": crop}
        out.append(table[aug](outputs["logits"]))
        listed = {"shown": shown}
        out.append(list(listed))
        self.describe(outputs)
        return out


class TimeEmbedding(nn.Module):
    """Methods held in attributes: `self.act = self.activate`, `self.embed = partial(...)`
    (mmagic's DDPM `TimeEmbedding`), then called every forward."""

    def __init__(self, dim):
        super().__init__()
        self.embed = functools.partial(self.sinusoidal, dim=dim)
        self.act = self.activate
        self.listed = [self.shown_once]

    @staticmethod
    def sinusoidal(timesteps, dim):
        freqs = torch.arange(0, dim // 2).float().to(timesteps.device)  # [per-step] through the partial
        return timesteps[:, None] * freqs[None]

    def activate(self, x):
        return x * torch.tensor([1.0, 2.0]).cuda()  # [per-step] through the held method

    def shown_once(self, x):
        return x * torch.tensor([3.0]).cuda()  # [once] near miss: listed, never called

    def forward(self, t):
        return self.act(self.embed(t))
