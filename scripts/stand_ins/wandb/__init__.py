"""Stand-in for wandb on the GPU recording machine: see scripts/stand_ins/README.md."""

import torch


def _json_friendly(obj):
    if isinstance(obj, torch.Tensor):
        obj = obj.detach()
        return obj.cpu().numpy() if obj.size() else obj.item()
    return obj


def init(*args, **kwargs):
    return None


def log(data, step=None, commit=None):
    for value in data.values():
        _json_friendly(value)
