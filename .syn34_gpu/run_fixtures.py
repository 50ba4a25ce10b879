"""Run fixtures on a GPU: lines the debug mode sees syncing, and lines that block the host
(timing oracle: queue torch.cuda._sleep before each line, a line that waits > THRESH blocked)."""
import json, os, re, runpy, sys, time, warnings
import torch

THRESH = 0.012
CYCLES = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 0
files = [a for a in sys.argv[1:] if a.endswith(".py")]


def calib():
    torch.cuda._sleep(1000); torch.cuda.synchronize()
    t = time.perf_counter(); torch.cuda._sleep(200_000_000); torch.cuda.synchronize()
    return 200_000_000 / (time.perf_counter() - t)


def debug_lines(path):
    seen = set()
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            runpy.run_path(path, run_name="__main__")
        finally:
            torch.cuda.set_sync_debug_mode("default")
    for w in ws:
        if "synchroniz" in str(w.message) and os.path.abspath(w.filename) == os.path.abspath(path):
            seen.add(w.lineno)
    return seen


def oracle_lines(path, cycles):
    ap = os.path.abspath(path)
    blocked = {}
    prev = [None]

    def close(now):
        if prev[0] is not None:
            ln, t0 = prev[0]
            dt = now - t0
            if dt > THRESH:
                blocked[ln] = max(blocked.get(ln, 0), dt)
            prev[0] = None

    def tracer(frame, event, arg):
        if os.path.abspath(frame.f_code.co_filename) != ap:
            return None
        def local(frame, event, arg):
            now = time.perf_counter()
            if event == "line":
                close(now)
                torch.cuda._sleep(cycles)
                prev[0] = (frame.f_lineno, time.perf_counter())
            elif event == "return":
                close(now)
            return local
        return local(frame, event, arg) if event == "line" else local

    sys.settrace(tracer)
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        sys.settrace(None)
        torch.cuda.synchronize()
    return blocked


def marks(path):
    err, unfl = {}, set()
    for i, line in enumerate(open(path).read().splitlines(), 1):
        m = re.search(r"#\s*error:\s*(.*)", line)
        if m:
            err[i] = m.group(1)
        if re.search(r"#\s*unflagged-sync:", line):
            unfl.add(i)
    return err, unfl


rate = calib()
cycles = int(rate * 0.02)
print(f"sleep rate {rate:.3g} cycles/s, 20ms = {cycles}")
for path in files:
    err, unfl = marks(path)
    dbg = debug_lines(path)
    orc = oracle_lines(path, cycles)
    print(f"== {path}")
    print("  debug-mode sync lines:", sorted(dbg))
    print("  oracle blocked lines :", {k: round(v * 1000, 1) for k, v in sorted(orc.items())})
    print("  marked error lines   :", sorted(err))
    print("  unflagged-sync lines :", sorted(unfl))
    print("  debug sync but unmarked:", sorted(set(dbg) - set(err) - unfl))
    print("  oracle blocked but unmarked:", sorted(set(orc) - set(err) - unfl))
    print("  marked but no debug sync:", sorted(set(err) - dbg))
    print("  marked but not blocked (oracle):", sorted(set(err) - set(orc)))
