import torch
import torch.nn as nn
from mmengine.visualization import Visualizer


def _split_levels(x, sizes):
    out = []
    for s in sizes:
        out.append(x[: s.item()])  # [once] a helper only a debug helper calls: its loop runs as rarely
    return out


def debug_dump(x, sizes):
    parts = _split_levels(x, sizes)
    for p in parts:
        print(p.sum().item())  # [once] a debug helper by its name: its own loops too


def count_items(x, sizes):
    for s in sizes:
        print(x[: s.item()].sum().item())  # [per-step] near miss: the same loop in a helper the batch loop calls


def visualize_batch(images):
    for im in images:
        print(im.max().item())  # [once] a visualisation helper nothing calls


def plot_batch(images):
    for im in images:
        print(im.max().item())  # [per-step] near miss: a plot helper called every step without a flag


class Overlay(Visualizer):
    def add_frames(self, frames):
        for f in frames:
            print(f.max().item())  # [once] a visualiser's method (mmengine's Visualizer) nothing here calls


class VisualizationDemo:
    def __init__(self, model):
        self.model = model

    def run_on_video(self, frames):
        for frame in frames:
            out = self.model(frame.cuda())
            print(out.sum().item())  # [per-step] near miss: a demo class's per-frame inference (not by its class's name)


class Head(nn.Module):
    def __init__(self, debug=False, vis_thresh=0.5):
        super().__init__()
        self.debug = debug
        self.vis_thresh = vis_thresh
        self.debug_percentile = None
        self.margin = 0.5
        self.fc = nn.Linear(3, 3)

    def forward(self, x, check: bool = False, strict: bool = True):
        y = self.fc(x)
        if self.debug:
            debug_dump(y, [y.sum()])
            print(y.mean().item())  # [once] under a debug flag
        if check:
            assert (y > 0).all()  # [once] a check flag that defaults off
        if strict:
            assert (y < 10).all()  # [per-step] near miss: a flag that defaults on
        if self.vis_thresh > 0.3:
            print(y.min().item())  # [per-step] near miss: a threshold compared, not a flag tested
        if self.training:
            print(y.std().item())  # [per-step] near miss: a flag that is on during training
        if self.debug_percentile is not None:
            print(y.max().item())  # [once] a debug option given a value
        if self.margin is not None:
            print(y.var().item())  # [per-step] near miss: an option of no debug word given a value
        return y


def train(model, loader, sizes):
    for x in loader:
        x = x.cuda(non_blocking=True)
        y = model(x)
        count_items(y, sizes)
        plot_batch(y)
        y.sum().backward()


def main():
    model = Head().cuda()
    train(model, torch.utils.data.DataLoader(torch.randn(8, 3), pin_memory=True), [torch.tensor(2)])


def reference_scores(q):
    s = q @ q.T
    return s[s > 0].sum()  # [once] a reference only the module's own test calls


def test():
    q = torch.randn(4, 4, device="cuda")
    for n in range(3):
        print(reference_scores(q).item())  # [once] the module's own test, run by its __main__ block


def test_epoch(loader):
    for x in loader:
        print(x.cuda().sum().item())  # [per-step] near miss: a script's test(loader), its loop over batches


if __name__ == "__main__":
    test()
    main()
