#!/usr/bin/env python3
"""On a CUDA machine: does an op make the host wait, and does set_sync_debug_mode see it?

    python3 scripts/nms_host_wait.py

For each op, the host time it takes when issued behind queued matmuls (an op that waits
for the GPU takes about as long as the queue; one that does not, microseconds), and how
many syncs `torch.cuda.set_sync_debug_mode("warn")` reports for it. Written for SYN211:
torchvision's `nms` makes the host wait, and the debug mode does not report it.
"""
import statistics
import time
import warnings

import torch
import torchvision

dev = "cuda"
a = torch.randn(4096, 4096, device=dev)
xy = torch.rand(2000, 2, device=dev) * 500
boxes = torch.cat([xy, xy + 20], dim=1)
scores = torch.rand(2000, device=dev)
labels = torch.randint(0, 10, (2000,), device=dev)


def queue():
    for _ in range(20):
        a @ a


def debug_mode_syncs(op):
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            op()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    return sum("synchroniz" in str(w.message) for w in seen)


def host_ms(op):
    out = []
    for _ in range(7):
        torch.cuda.synchronize()
        queue()
        t = time.perf_counter()
        op()
        out.append((time.perf_counter() - t) * 1e3)
        torch.cuda.synchronize()
    return statistics.median(out)


torch.cuda.synchronize()
t = time.perf_counter(); queue(); torch.cuda.synchronize(); print(f"queued work alone: {(time.perf_counter() - t) * 1e3:.1f} ms")
for name, op in [
    ("boxes * 2 (no sync)", lambda: boxes * 2),
    ("scores.sum().item() (sync)", lambda: scores.sum().item()),
    ("torchvision.ops.nms", lambda: torchvision.ops.nms(boxes, scores, 0.5)),
    ("torchvision.ops.batched_nms", lambda: torchvision.ops.batched_nms(boxes, scores, labels, 0.5)),
]:
    print(f"{name}: host {host_ms(op):.2f} ms, debug mode reports {debug_mode_syncs(op)} sync(s)")
print("torch", torch.__version__, "torchvision", torchvision.__version__, torch.cuda.get_device_name())
