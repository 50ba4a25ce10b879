import torch
import torch.nn as nn


class Denoiser(nn.Module):
    def forward(self, x, t):
        return x * t


def serve(requests, results, steps):
    model = Denoiser().cuda()
    while True:
        size = requests.get()
        x = torch.randn(size, device="cuda")
        for t in range(steps):
            eps = model(x, t)
            x = x - 0.1 * eps
            print(eps.abs().max().item())  # [per-token] each denoising step
        results.put(x.cpu())  # [per-epoch] once per request: the loop of requests holds a denoising loop


def answer(requests, results):
    model = Denoiser().cuda()
    while True:
        size = requests.get()
        x = torch.randn(size, device="cuda")
        results.put(model(x, 1).cpu())  # [per-step] near miss: one forward per request, no inner step loop
