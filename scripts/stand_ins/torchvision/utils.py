"""Stand-in for torchvision.utils on the GPU recording machine: see scripts/stand_ins/README.md."""

import torch


def make_grid(tensor, nrow=8, padding=2, **kwargs):
    """The images side by side, on their device (the real one pads and tiles; no host copy)."""
    if isinstance(tensor, (list, tuple)):
        tensor = torch.stack(list(tensor))
    return torch.cat(list(tensor), dim=-1)


def save_image(tensor, fp, **kwargs):
    grid = make_grid(tensor) if tensor.dim() == 4 else tensor
    grid.mul(255).add_(0.5).clamp_(0, 255).to("cpu", torch.uint8).numpy()
