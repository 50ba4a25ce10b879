"""Loops that call a decoding loop of another module: each pass is one request (flux's
`while opts is not None:` around `denoise`); their near misses step every pass."""
import torch

from requests_pkg.sampling import Sampler, denoise, unpack


def serve(model, prompts, loader, opt):
    sampler = Sampler(model)
    for prompt in prompts:
        x = denoise(model, torch.randn(4, device="cuda"), list(range(10)))
        print(x.sum().item())  # [per-epoch]
    for prompt in prompts:
        y = sampler.sample(torch.randn(4, device="cuda"), 10)
        print(y.mean().item())  # [per-epoch]
    while prompts:
        z = denoise(model, torch.randn(4, device="cuda"), [1, 2])
        print(z.max().item())  # [per-epoch]
        prompts = prompts[1:]
    # near misses: a helper that decodes nothing; a decoder called only under a condition;
    # a loop over a loader's batches; a loop that steps an optimizer itself
    for prompt in prompts:
        u = unpack(torch.randn(4, device="cuda"))
        print(u.sum().item())  # [per-step]
    for prompt in prompts:
        if prompt:
            denoise(model, torch.randn(4, device="cuda"), [1, 2])
        print(prompt.sum().item())  # [per-step]
    for batch in loader:
        v = denoise(model, batch.cuda(), [1, 2])
        print(v.sum().item())  # [per-step]
    for prompt in prompts:
        w = denoise(model, torch.randn(4, device="cuda"), [1, 2])
        w.sum().backward()
        opt.step()
        print(w.sum().item())  # [per-step]
