"""The guard and the trace on a real CUDA device (skipped without one). Run on the GPU
machine: `python -m pytest -q tests/test_trace_gpu.py`."""

import sys
import threading
import traceback

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

import synclint  # noqa: E402


def _line():
    return sys._getframe(1).f_lineno


@pytest.fixture
def x():
    return torch.randn(1024, device="cuda")


def _raised_at(exc):
    return [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == __file__][-1]


def _names(exc, line):
    """The error names the line that synced, and its note shows the stack there."""
    note = "\n".join(getattr(exc, "__notes__", []))
    return f"test_trace_gpu.py:{line}:" in str(exc) and f"line {line}," in note


def test_disallow_raises_at_the_item_line_with_its_rule(x):
    ran = []
    with pytest.raises(synclint.SyncError) as e:
        with synclint.guard("disallow"):
            y = x * 2
            line = _line(); y.sum().item()  # noqa: E702
            ran.append("the next line")
    assert _names(e.value, line) and "SYN101" in str(e.value)
    assert _raised_at(e.value) == line and ran == []


@pytest.mark.parametrize("what", ["mask", "fstring", "if", "bool", "cpu", "print", "nonzero"])
def test_disallow_raises_at_the_line_for_syncs_in_operators_and_torch_python_code(x, what, capsys):
    ran = []
    with pytest.raises(synclint.SyncError) as e:
        with synclint.guard("disallow"):
            if what == "mask":
                line = _line(); x[x > 0]  # noqa: E702
            elif what == "fstring":
                line = _line(); f"{x.sum():.3f}"  # noqa: E702
            elif what == "if":
                line = _line() + 1
                if x.sum() > 0:
                    ran.append("the if's body")
            elif what == "bool":
                line = _line(); bool(x.sum() > 0)  # noqa: E702
            elif what == "print":
                line = _line(); print(x.sum())  # noqa: E702
            elif what == "nonzero":
                line = _line(); x.nonzero()  # noqa: E702
            else:
                line = _line(); x.cpu()  # noqa: E702
            ran.append("the next line")
    assert _names(e.value, line)  # x[mask] syncs twice inside one C call: reported once
    assert _raised_at(e.value) == line and ran == []


@pytest.mark.parametrize("what, rule", [("synchronize", "SYN401"), ("event", "SYN402"),
                                        ("stream", "SYN402"), ("pageable", "SYN303")])
def test_disallow_raises_for_the_debug_modes_blind_spots(x, what, rule):
    ev = torch.cuda.Event()
    host = torch.ones(1 << 16)
    with pytest.raises(synclint.SyncError, match=rule) as e:
        with synclint.guard("disallow"):
            if what == "synchronize":
                line = _line(); torch.cuda.synchronize()  # noqa: E702
            elif what == "event":
                ev.record()
                line = _line(); ev.synchronize()  # noqa: E702
            elif what == "stream":
                line = _line(); torch.cuda.current_stream().synchronize()  # noqa: E702
            else:
                line = _line(); host.to("cuda", non_blocking=True)  # noqa: E702
    assert _raised_at(e.value) == line  # raised as the call returns, on its line
    assert _names(e.value, line)


def test_allow_sync_is_silent_and_recorded(x):
    with synclint.guard("disallow") as g:
        with synclint.allow_sync("checked once per epoch"):
            v = x.sum().item()
        y = x * 2  # no sync
    assert isinstance(v, float) and y.is_cuda
    assert [e.allowed for e in g.events] == ["checked once per epoch"]


def test_another_threads_syncs_do_not_fire(x):
    done = []

    def other():
        done.append(x.sum().item())
        torch.cuda.synchronize()

    with synclint.guard("disallow") as g:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        y = x + 1
    assert len(done) == 1 and g.events == [] and y.is_cuda


def test_a_sync_in_a_function_synclint_does_not_wrap_is_raised_when_the_block_ends(x):
    ran = []
    with pytest.raises(synclint.SyncError) as e:
        with synclint.guard("disallow"):
            line = _line(); torch.nonzero(x)  # noqa: E702
            ran.append("the rest of the block")
    assert _names(e.value, line) and ran == ["the rest of the block"]


def test_another_threads_syncs_pass_while_the_guard_raises_at_the_line(x):
    done, started, go = [], threading.Event(), threading.Event()

    def other():
        started.set()
        go.wait(10)
        for _ in range(3):
            done.append(x.sum().item())

    t = threading.Thread(target=other)
    t.start()
    started.wait(10)
    with pytest.raises(synclint.SyncError):
        with synclint.guard("disallow"):
            go.set()
            t.join()
            x.sum().item()
    assert len(done) == 3


def test_log_counts_each_sync(x):
    with synclint.guard("log") as g:
        for _ in range(3):
            line = _line(); x.sum().item()  # noqa: E702
    assert len(g.events) == 3 and all(e.where.endswith(f"test_trace_gpu.py:{line}") for e in g.events)


def test_no_sync_means_no_event(x):
    with synclint.guard("disallow") as g:
        for _ in range(10):
            x = x * 2 + 1
        pinned = torch.ones(1 << 16).pin_memory()
        pinned.to("cuda", non_blocking=True)
    assert g.events == []


def test_the_guard_leaves_torch_as_it_found_it(x):
    to, sync, device_sync = torch.Tensor.to, torch.cuda.Event.synchronize, torch._C._cuda_synchronize
    item, getitem = torch.Tensor.item, torch.Tensor.__getitem__
    with synclint.guard("disallow"):
        pass
    assert torch.Tensor.to is to and torch.cuda.Event.synchronize is sync and "to" not in torch.Tensor.__dict__
    assert torch._C._cuda_synchronize is device_sync and torch.Tensor.item is item and torch.Tensor.__getitem__ is getitem
    assert "__getitem__" not in torch.Tensor.__dict__ and "__bool__" not in torch.Tensor.__dict__
    assert "nonzero" not in torch.Tensor.__dict__ and "__repr__" in torch.Tensor.__dict__
    assert torch.cuda.get_sync_debug_mode() == 0


# ---------------------------------------------------------------- the trace

PROGRAM = """
import warnings
warnings.filterwarnings("ignore")  # as many training scripts begin: must not hide a sync
import torch

p = torch.nn.Parameter(torch.zeros(1, device="cuda"))
opt = torch.optim.SGD([p], lr=0.1)
host = torch.ones(1 << 20)
ev = torch.cuda.Event()
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
torch.cuda._sleep(3 * 10**7); torch.cuda.synchronize()  # clocks up first: an idle GPU times the sleep slow
a.record(); torch.cuda._sleep(10**7); b.record(); b.synchronize()
cycles = int(10**7 * SLEEP_MS / a.elapsed_time(b))
for step in range(100):
    torch.cuda._sleep(cycles)
    loss = (p * 2).sum()
    v = loss.item()                              # ITEM: waits for the queued sleep
    x = host.to("cuda", non_blocking=True)       # PAGEABLE
    ev.record()
    ev.synchronize()                             # EVENT
    torch.cuda._sleep(cycles)
    torch.cuda.synchronize()                     # DEVICE: waits for the second sleep
    opt.step()
"""


def _program(tmp_path, sleep_ms):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM.replace("SLEEP_MS", str(sleep_ms)))
    lines = {tag: n for n, text in enumerate(PROGRAM.splitlines(), start=1) for tag in ("ITEM", "PAGEABLE", "EVENT", "DEVICE")
             if f"# {tag}" in text}
    return path, lines


@pytest.mark.skipif(sys.version_info < (3, 12), reason="the clock needs sys.monitoring")
def test_the_trace_counts_and_times_each_sync_and_agrees_with_the_profiler(tmp_path):
    from synclint.trace.run import Options, run

    path, lines = _program(tmp_path, sleep_ms=5)
    t = run(Options([str(path)], roots=[str(tmp_path)], warmup=2, steps=10, cross_check=True))
    sites = {(s.line, s.kind): s for s in t.sites}
    item, device = sites[(lines["ITEM"], "stream")], sites[(lines["DEVICE"], "device")]
    assert sites[(lines["PAGEABLE"], "pageable-copy")].count == 10 and sites[(lines["EVENT"], "event")].count == 10
    assert (item.count, item.timed) == (10, 10)  # the first one, in the warm-up, armed the clock
    assert (device.count, device.timed) == (10, 10)
    assert 4.0 < item.blocked_ms / 10 < 6.5 and 4.0 < device.blocked_ms / 10 < 6.5
    prof = t.meta["profiler"]["sync_ms"]
    assert abs(t.blocked_ms - prof) <= 0.1 * prof, (t.blocked_ms, t.meta["profiler"])
    assert torch.cuda.get_sync_debug_mode() == 0


def test_the_trace_records_the_graph_breaks_of_a_compiled_step_and_their_syncs(monkeypatch):
    from pathlib import Path

    from synclint.trace.run import Options, run

    repo = Path(__file__).resolve().parent.parent
    program = repo / "fixtures/trace/compiled_step.py"
    source = program.read_text().splitlines()
    line = {tag: next(i for i, s in enumerate(source, 1) if s.strip().startswith(tag))
            for tag in ("scale = loss.item()", "if loss > 10:", "right = logits[", "note(loss)")}
    monkeypatch.chdir(repo)
    t = run(Options([str(program), "--backend", "eager"], roots=[str(repo)], warmup=2, steps=6))
    breaks = {b.line: b.gb_id for b in t.compile.breaks if b.file == "fixtures/trace/compiled_step.py"}
    assert breaks == {line["scale = loss.item()"]: "GB0124", line["if loss > 10:"]: "GB0170",
                      line["right = logits["]: "GB0036", line["note(loss)"]: "GB0098"}
    # the lines Dynamo leaves to Python read the GPU's values: each step they sync
    synced = {s.line for s in t.sites if s.file == "fixtures/trace/compiled_step.py"}
    assert {line["scale = loss.item()"], line["if loss > 10:"], line["right = logits["]} <= synced
