import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.grids = [torch.zeros(1)] * 3
        self.sizes = None

    def forward(self, feats):
        outs = []
        for k, x in enumerate(feats):
            grid = self.grids[k]
            if grid.shape[2:4] != x.shape[2:4]:
                ys, xs = torch.meshgrid([torch.arange(x.shape[2]), torch.arange(x.shape[3])])
                grid = torch.stack((xs, ys), 2).view(1, 1, x.shape[2], x.shape[3], 2).type(x.type())  # [once] remade only when the input size changes
                self.grids[k] = grid
            outs.append(x + grid[..., 0])
        sizes = [x.shape[2:] for x in feats]
        if sizes != self.sizes:
            self.sizes = sizes
            self.priors = torch.cat([torch.arange(s[0] * s[1]).float() for s in sizes]).cuda()  # [once] the same, stored on self
        if feats[0].shape != feats[1].shape:
            scale = torch.tensor([2.0]).cuda()  # [per-step] near miss: nothing is stored, so the test holds again next step
            outs[1] = outs[1] * scale
        return outs
