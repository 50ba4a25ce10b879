"""A loop over one dimension of a tensor walks the items of one result, at the rate around it
(LTX-Video's `infer()` saves each generated video: `for i in range(images.shape[0])`); its
near misses step every pass."""
import torch


def sample_and_save(model, n):
    images = model(torch.randn(n, 3, device="cuda"))
    for i in range(images.shape[0]):
        print(images[i].sum().item())  # [once] each image of one result
    for i in range(images.size(0)):
        print(images[i].max().item())  # [once] the same through size()


def train_rows(model, opt, X):
    for i in range(X.shape[0]):
        loss = model(X[i]).sum()
        loss.backward()
        opt.step()
        print(loss.item())  # [per-step] near miss: each row is a training step


def evaluate(loader, model):
    for batch in loader:
        out = model(batch.cuda())
        for j in range(out.shape[0]):
            print(out[j].sum().item())  # [per-step] near miss: the rate around it is per step


def iterate(model, n):
    x = torch.randn(4, device="cuda")
    for i in range(n):
        x = model(x) + 1
        print(x.sum().item())  # [per-step] near miss: a loop over a count repeats
