"""Which library calls synchronize, on a real GPU: the evidence behind SYN120 and SYN212.

Each call runs once to warm up, then once under `torch.cuda.set_sync_debug_mode("warn")`,
which reports every synchronizing CUDA call torch makes (a read-back, a blocking copy, a
nonzero), and once behind about 20 ms of queued matmuls, timing how long the host is held
(a call that syncs holds it until the queue drains). Prints a table; `--json FILE` writes
every row. Needs CUDA; pytorch-metric-learning and torchvision are optional (their rows are
skipped without them).

    python scripts/library_syncs.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings


def _queue(torch, ms: float = 20.0):
    """Queue roughly `ms` of GPU work and return at once."""
    a = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    t = time.perf_counter()
    a @ a
    torch.cuda.synchronize()
    one = max((time.perf_counter() - t) * 1e3, 1e-3)
    for _ in range(max(1, int(ms / one))):
        a = a @ a
        a = a / a.norm()
    return a


def measure(torch, name: str, fn) -> dict:
    fn()  # warm-up: allocator, kernels, lazy init
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [str(w.message).splitlines()[0] for w in caught if "synchroniz" in str(w.message).lower()]
    held = []
    for _ in range(5):
        _queue(torch)
        t = time.perf_counter()
        fn()
        held.append((time.perf_counter() - t) * 1e3)
        torch.cuda.synchronize()
    held.sort()
    return {"call": name, "syncs_seen": len(syncs), "first": syncs[0] if syncs else "", "host_held_ms": held[len(held) // 2]}


def cases(torch):
    emb = torch.nn.functional.normalize(torch.randn(64, 128, device="cuda"), dim=1)
    labels = torch.randint(0, 8, (64,), device="cuda")
    out = [("reference: x.sum().item()", lambda: emb.sum().item()),
           ("reference: emb * 2", lambda: emb * 2)]
    try:
        from pytorch_metric_learning import losses, miners
    except ImportError:
        print("pytorch-metric-learning not installed: its rows are skipped", file=sys.stderr)
    else:
        made = {
            "ArcFaceLoss": losses.ArcFaceLoss(num_classes=8, embedding_size=128),
            "CosFaceLoss": losses.CosFaceLoss(num_classes=8, embedding_size=128),
            "SphereFaceLoss": losses.SphereFaceLoss(num_classes=8, embedding_size=128),
            "ContrastiveLoss": losses.ContrastiveLoss(),
            "SupConLoss": losses.SupConLoss(),
            "NTXentLoss": losses.NTXentLoss(),
            "MultiSimilarityLoss": losses.MultiSimilarityLoss(),
            "GeneralizedLiftedStructureLoss": losses.GeneralizedLiftedStructureLoss(),
            "TripletMarginLoss": losses.TripletMarginLoss(),
            "FastAPLoss": losses.FastAPLoss(),
            "VICRegLoss (near-miss)": losses.VICRegLoss(),
        }
        for name, loss in made.items():
            loss = loss.cuda()
            if name.startswith("VICReg"):
                out.append((f"pml.{name}", lambda loss=loss: loss(emb, ref_emb=emb.flip(0))))
            else:
                out.append((f"pml.{name}", lambda loss=loss: loss(emb, labels)))
        ms = miners.MultiSimilarityMiner()
        tm = miners.TripletMarginMiner()
        out.append(("pml.MultiSimilarityMiner", lambda: ms(emb, labels)))
        out.append(("pml.TripletMarginMiner", lambda: tm(emb, labels)))
        pairs = ms(emb, labels)
        contrastive, triplet = losses.ContrastiveLoss(), losses.TripletMarginLoss()
        out.append(("pml.ContrastiveLoss given mined pairs", lambda: contrastive(emb, labels, pairs)))
        out.append(("pml.TripletMarginLoss given mined pairs", lambda: triplet(emb, labels, pairs)))
    try:
        import torchvision
        import torchvision.transforms as T
        from torchvision.transforms import v2
    except ImportError:
        print("torchvision not installed: its rows are skipped", file=sys.stderr)
    else:
        img = torch.rand(16, 3, 224, 224, device="cuda")
        n1 = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        n2 = v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(1, -1, 1, 1)
        std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(1, -1, 1, 1)
        out.append((f"torchvision {torchvision.__version__} transforms.Normalize", lambda: n1(img)))
        out.append((f"torchvision {torchvision.__version__} transforms.v2.Normalize", lambda: n2(img)))
        out.append(("(img - mean) / std with device buffers", lambda: (img - mean) / std))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write every row to this file")
    a = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("needs CUDA", file=sys.stderr)
        return 2
    rows = [measure(torch, name, fn) for name, fn in cases(torch)]
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(f"{meta['gpu']}, torch {meta['torch']}, {meta['date']}")
    print(f"{'call':58} {'syncs seen':>10} {'host held ms':>13}")
    for r in rows:
        print(f"{r['call'][:58]:58} {r['syncs_seen']:>10} {r['host_held_ms']:>13.2f}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
