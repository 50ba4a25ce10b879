import time, torch
torch.cuda._sleep(1000); torch.cuda.synchronize()
t = time.perf_counter(); torch.cuda._sleep(200_000_000); torch.cuda.synchronize(); rate = 2e8 / (time.perf_counter() - t)
cyc = int(rate * 0.05)
for nbytes in (32, 4096, 65536, 65540, 262144, 1 << 20, 16 << 20):
    src = torch.empty(nbytes // 4).fill_(1.0)
    for kind in ("pageable nb", "pinned nb", "pageable blocking"):
        s = src.pin_memory() if kind.startswith("pinned") else src
        torch.cuda.synchronize(); torch.cuda._sleep(cyc)
        t = time.perf_counter()
        y = s.to("cuda", non_blocking=not kind.endswith("blocking"))
        dt = time.perf_counter() - t
        torch.cuda.synchronize()
        print(f"{nbytes:>9} B {kind:18s} host {dt*1e3:7.2f} ms (queued 50 ms)")
for label, fn in (("empty_cache (cache holds blocks)", lambda: torch.cuda.empty_cache()),):
    a = torch.empty(1 << 26, device="cuda"); del a
    torch.cuda.synchronize(); torch.cuda._sleep(cyc)
    t = time.perf_counter(); fn(); dt = time.perf_counter() - t; torch.cuda.synchronize()
    print(label, f"host {dt*1e3:.2f} ms (queued 50 ms)")
