"""A diffusion pipeline's `__call__` denoises once per request (its loop is per step), where a
callable object's `__call__` is otherwise hot by its name; its near misses stay per step."""
import torch
import torch.nn as nn
from diffusers import DiffusionPipeline
from diffusers.models.modeling_utils import ModelMixin


class Transformer(ModelMixin):
    def forward(self, x, t):
        return x * t


class Pipeline(DiffusionPipeline):
    def __init__(self, transformer: Transformer, scheduler):
        super().__init__()
        self.register_modules(transformer=transformer, scheduler=scheduler)

    def encode(self, prompt):
        ids = torch.tensor(prompt).cuda()
        return ids.sum().item()  # [per-epoch] called before the loop: once per request

    def __call__(self, prompt, timesteps, latents):
        n = self.encode(prompt)
        steps = timesteps.tolist()  # [per-epoch] before the denoising loop
        for i, t in enumerate(timesteps):
            model_input = torch.cat([latents] * 2)
            noise_pred = self.transformer(model_input, t)
            latents = self.scheduler.step(noise_pred, t, latents)[0]
            print(noise_pred.max().item())  # [per-token] a denoising step
        print(latents.sum().item(), n, steps)  # [per-epoch] after it
        return latents


class Loss:
    def __call__(self, pred, target):
        return (pred - target).abs().sum().item()  # [per-step] near miss: a callable that decodes nothing


class Smoother:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x.max().item()  # [per-step] near miss: a stack of layers, no decoding


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = nn.Linear(4, 4)

    def forward(self, src, steps):
        outputs = torch.zeros(steps, 4).cuda()  # [per-step] near miss: a module's forward runs every training step
        inp = src
        for t in range(steps):
            out = self.decoder(inp)
            top = out.argmax(-1)
            inp = torch.nn.functional.one_hot(top, 4).float()
            outputs[t] = out[0]
        print(outputs.sum().item())  # [per-step] near miss: the same
        return outputs
