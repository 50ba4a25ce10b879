import torch, itertools
torch.manual_seed(0)
d = "cuda"
# float ranges: CPU-then-copy vs built on the device, bitwise?
bad = []
for start, end, steps in itertools.product([0, -1, 0.1, 3.7, -2.5], [1, 10, 7.3, 1e3], [2, 5, 7, 100, 1001, 12345]):
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        a = torch.linspace(start, end, steps, dtype=dt).cuda()
        b = torch.linspace(start, end, steps, dtype=dt, device=d)
        if not torch.equal(a, b):
            bad.append(("linspace", start, end, steps, dt, (a != b).sum().item()))
        a = torch.logspace(start / 10, end / 100, steps, dtype=dt).cuda()
        b = torch.logspace(start / 10, end / 100, steps, dtype=dt, device=d)
        if not torch.equal(a, b):
            bad.append(("logspace", start, end, steps, dt, (a != b).sum().item()))
for start, end, step in itertools.product([0, 0.1, -3.3], [1, 10.5, 100], [0.1, 0.01, 0.7, 1.0]):
    a = torch.arange(start, end, step).cuda()
    b = torch.arange(start, end, step, device=d)
    if a.shape != b.shape or not torch.equal(a, b):
        bad.append(("arange", start, end, step, a.shape, b.shape))
from collections import Counter
print("range mismatches by kind/dtype:", Counter((b[0], str(b[4]) if b[0] != "arange" else "") for b in bad))
print([b for b in bad if b[0] != "logspace"][:10])
# full with a dtype moved in: double rounding?
import random
mism = 0
for _ in range(2000):
    v = random.uniform(-1e4, 1e4)
    a = torch.full((1,), v).to(d, torch.float16)
    b = torch.full((1,), v, dtype=torch.float16, device=d)
    mism += int(not torch.equal(a, b))
print("full->f16 double-rounding mismatches:", mism)
# pinned-ness
p = torch.randn(4).pin_memory()
print("clone of pinned pinned?", p.clone().is_pinned(), "as_tensor(pinned) pinned?", torch.as_tensor(p).is_pinned(),
      ".float() of pinned f32 pinned?", p.float().is_pinned(), "contiguous", p.contiguous().is_pinned())
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 4))
print("loader(pin_memory=True) batch pinned:", next(iter(DataLoader(ds, batch_size=4, pin_memory=True)))[0].is_pinned())
print("torch", torch.__version__, torch.cuda.get_device_name())
