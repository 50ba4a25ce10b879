import torch
from torch.utils.data import DataLoader


def report(x):
    print(x.sum().item())  # [once] called only from setup


def epoch_summary(x):
    print(x.mean().item())  # [per-epoch] called from train's straight-line code, not from its batch loop


def loss_of(model, x):
    out = model(x)
    print(out.max().item())  # [per-step] called from the batch loop
    return out.sum()


def train(model, opt, loader, w, accum):
    epoch_summary(w)
    print(w.std().item())  # [per-epoch] train's own code: it loops over batches itself
    first = None
    for i, x in enumerate(loader):
        x = x.cuda(non_blocking=True)
        loss = loss_of(model, x)
        loss.backward()
        if first is None:
            first = x.sum().item()  # [once] a lazy initialisation: the first step only
        if i % 100 == 0:
            print(loss.item())  # [every-n-steps] a periodic guard in the batch loop
        if i < 3 or i % 10 == 0:
            print(loss.max().item())  # [every-n-steps] the first few steps, then every tenth
        if i < accum or i % 10 == 0:
            print(loss.min().item())  # [per-step] near miss: `i < accum` may hold on every step
        if (i + 1) % accum == 0:
            opt.step()
            print(w.var().item())  # [per-step] an accumulation guard: every optimizer step
        if x.size(1) % 2 == 0:
            print(x.norm().item())  # [per-step] near miss: a shape's parity, tested every step


def train_accumulating(model, opt, loader, accum):
    for batch in loader:
        for k in range(accum):
            loss = model(batch[k]).sum()
            loss.backward()
            print(loss.item())  # [per-micro-step] the micro-batch loop
        opt.step()
        print(batch.sum().item())  # [per-step] the batch loop, around the micro-batches


def generate(model, idx, max_new_tokens):
    for _ in range(max_new_tokens):
        context = idx[:, -8:]
        logits = model(context)
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        idx = torch.cat([idx, nxt], dim=1)
        print(nxt.max().item())  # [per-token] the decoding loop feeds the model's output back


def unroll(cell, xs, h):
    for x in xs:
        y, h = cell(x, h)
        print(y.sum().item())  # [per-step] a recurrent state handed back as it came out: no decoding


def main():
    model = torch.nn.Linear(3, 3).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(torch.randn(10, 3), pin_memory=True)
    w = torch.randn(3, device="cuda")
    report(w)
    for epoch in range(10):
        train(model, opt, loader, w, 4)
    train_accumulating(model, opt, loader, 4)
    generate(model, torch.zeros(1, 1, device="cuda"), 8)
    unroll(torch.nn.GRUCell(3, 3).cuda(), torch.randn(5, 3, device="cuda"), None)


def upsample_all(outputs):
    interp = torch.nn.Upsample(scale_factor=2)
    for out in outputs:
        parsing = out
        parsing = interp(parsing)
        parsing = parsing.transpose(0, 1)
        print(parsing.sum().item())  # [per-step] the module's input is bound in the same iteration: no feedback
