"""What each compiled-code case of docs/compiled.md does on a GPU under torch.compile, by
mode and flags: Dynamo graphs and breaks, inductor's CUDA graph skips and partitions, and, in
one steady-state call, the syncs `torch.cuda.set_sync_debug_mode` sees, device-to-host and
host-to-device copies, stream synchronizations and CUDA graph launches (profiler).

    python scripts/compiled_consequences.py [CASE ...]     # writes $OUT/consequences.jsonl

Each case is one line of a compiled function between two graph ops (`site`)."""
import json, os, sys, time, warnings, logging
import numpy as np
import torch, torch._dynamo as dynamo
from torch._dynamo.utils import counters
from torch.profiler import profile, ProfilerActivity
logging.getLogger("torch").setLevel(logging.ERROR)
dev = os.environ.get("DEVICE", "cuda")  # DEVICE=cpu: a dry run of the script itself
log = logging.getLogger("case")
def site(fn):
    def f(x):
        y = x * 2
        z = fn(y)
        return y + 1, z
    return f
def branch(y):
    if y.sum() > 0:
        return y + 1
    return y - 1
def asserted(y):
    assert (y.abs() >= 0).all(), "negative"
    return y + 1
def printed(y):
    print(y.sum())
    return y
def logged(y):
    log.info("loss %s", y.sum())
    return y
def mw_scalar(y):
    y = y.clone(); y[y > 0] = 0.0; return y
def mw_0d(y):
    y = y.clone(); y[y > 0] = y.sum(); return y
def mw_tensor(y):
    z = torch.zeros_like(y); m = y > 0; z[m] = y[m]; return z
CASES = {
 "item": site(lambda y: y.sum().item() * y),
 "int": site(lambda y: y * int(y.sum())),
 "bool": site(lambda y: y * bool(y.sum() > 0)),
 "tolist_int": site(lambda y: len(y.long().tolist())),
 "tolist_float": site(lambda y: len(y.tolist())),
 "zeros_t": site(lambda y: torch.zeros(y.abs().sum().long(), device=y.device).sum()),
 "if": site(branch),
 "assert": site(asserted),
 "print": site(printed),
 "fstring": site(lambda y: f"{y.sum()}"),
 "log": site(logged),
 "mask_read": site(lambda y: y[y > 0].sum()),
 "mask_write_scalar": site(mw_scalar),
 "mask_write_0d": site(mw_0d),
 "mask_write_tensor": site(mw_tensor),
 "nonzero": site(lambda y: torch.nonzero(y > 0).sum()),
 "where1": site(lambda y: torch.where(y > 0)[0].sum()),
 "where3": site(lambda y: torch.where(y > 0, y, 0.0)),
 "unique": site(lambda y: torch.unique((y * 4).long()).sum()),
 "masked_select": site(lambda y: torch.masked_select(y, y > 0).sum()),
 "repeat_interleave": site(lambda y: torch.repeat_interleave(y, (y > 0).long() + 1).sum()),
 "repeat_interleave_os": site(lambda y: torch.repeat_interleave(y, 2, output_size=2 * y.numel()).sum()),
 "bincount": site(lambda y: torch.bincount((y.abs() * 4).long()).sum()),
 "one_hot": site(lambda y: torch.nn.functional.one_hot((y.abs() * 4).long()).sum()),
 "cpu": site(lambda y: y.cpu().sum()),
 "numpy": site(lambda y: y.detach().cpu().numpy().sum()),
 "tensor_list": site(lambda y: y + torch.tensor([1.0, 2.0], device=y.device).sum()),
 "tensor_np": site(lambda y: y + torch.tensor(np.ones(2, dtype=np.float32), device=y.device).sum()),
 "equal": site(lambda y: y * (1 if torch.equal(y, y) else 2)),
 "histc": site(lambda y: torch.histc(y).sum()),
}
CONFIGS = {
 "default": dict(opts={}, flags={}),
 "default+flags": dict(opts={}, flags={"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}),
 "reduce-overhead": dict(opts={"mode": "reduce-overhead"}, flags={}),
 "reduce-overhead+flags": dict(opts={"mode": "reduce-overhead"}, flags={"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}),
}
def measure(name, cfg):
    dynamo.reset(); counters.clear()
    x = torch.randn(4096, device=dev)
    out = {"case": name, "config": cfg}
    with dynamo.config.patch(**CONFIGS[cfg]["flags"]):
        f = torch.compile(CASES[name], **CONFIGS[cfg]["opts"])
        try:
            t0 = time.perf_counter()
            for _ in range(4):
                f(x)
            if dev == "cuda":
                torch.cuda.synchronize()
            out["compile_s"] = round(time.perf_counter() - t0, 2)
        except Exception as e:
            out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:150]}"
            return out
        if dev == "cuda":
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                torch.cuda.set_sync_debug_mode("warn")
                f(x)
                torch.cuda.set_sync_debug_mode(0)
            out["debug_syncs"] = sum("synchroniz" in str(m.message) for m in w)
        with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev == "cuda" else [])) as prof:
            f(x)
            if dev == "cuda":
                torch.cuda.synchronize()
        names = [e.name for e in prof.events()]
        out["memcpy_dtoh"] = sum("Memcpy DtoH" in n for n in names)
        out["memcpy_htod"] = sum("Memcpy HtoD" in n for n in names)
        out["stream_sync"] = sum(n in ("cudaStreamSynchronize", "cudaDeviceSynchronize") for n in names)
        out["graph_launch"] = sum(n == "cudaGraphLaunch" for n in names)
    out["graphs"] = counters["stats"]["unique_graphs"]
    out["breaks"] = sum(counters["graph_break"].values())
    out["cg_skips"] = counters["inductor"]["cudagraph_skips"]
    out["cg_partitions"] = counters["inductor"]["cudagraph_partitions"]
    return out
if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if a in CASES] or list(CASES)
    dest = os.path.join(os.environ.get("OUT", "."), "consequences.jsonl")
    gpu = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    print(torch.__version__, gpu, flush=True)
    with open(dest, "w") as fh:
        fh.write(json.dumps({"torch": torch.__version__, "gpu": gpu,
                             "date": time.strftime("%Y-%m-%d")}) + "\n")
        for n in names:
            for c in CONFIGS:
                r = measure(n, c)
                fh.write(json.dumps(r) + "\n"); fh.flush()
                print(json.dumps(r), flush=True)
