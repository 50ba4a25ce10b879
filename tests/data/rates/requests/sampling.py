"""Another module's decoding loops (flux's `sampling.denoise`, a sampler's method) and a
helper that runs none: what `cli.py` calls."""
import torch


def denoise(model: torch.nn.Module, img, timesteps):
    for t_curr, t_prev in zip(timesteps[:-1], timesteps[1:]):
        pred = model(img, t_curr)
        img = img + (t_prev - t_curr) * pred
    return img


def unpack(x):
    return x.float()


class Sampler:
    def __init__(self, model: torch.nn.Module):
        self.model = model

    def sample(self, img, steps):
        for _ in range(steps):
            eps = self.model(img)
            img = img - 0.1 * eps
        return img
