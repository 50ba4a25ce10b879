"""The trace recorded on a GPU (fixtures/trace/h100-train-sites*.json: `synclint trace` of
fixtures/trace/train_sites.py on an H100, torch 2.11, 2026-11-26; docs/trace.md shows the
command) checked on CPU: every sync site of the script is there, the counts equal the
debug mode's where it sees the line, the blind spots are there too, the blocked time adds
up to the profiler's time in blocking CUDA calls of the same run, and the join labels each
finding."""

from pathlib import Path

import pytest

from synclint.trace.command import static_findings
from synclint.trace.join import CONFIRMED, MISSED, NOT_REACHED, join
from synclint.trace.schema import load

REPO = Path(__file__).resolve().parent.parent
FIX = REPO / "fixtures" / "trace"
SCRIPT = "fixtures/trace/train_sites.py"


def _line_of(text):
    lines = (FIX / "train_sites.py").read_text().splitlines()
    (row,) = [i for i, line in enumerate(lines, 1) if text in line]
    return row


# Each sync site of the script, found by its text (so an edit that moves lines still works).
SITES = {
    "x = x.to(device)": "stream",  # a blocking copy of the batch
    "y = y.to(device, non_blocking=True)": "pageable-copy",
    "confident = out[out.amax(dim=1) > 0.5]": "stream",
    "total = loss.item()": "stream",
    "if loss > 100:": "stream",
    'msg = f"step {step} loss {loss:.3f}"': "stream",
    "return max(history[-5:])": "stream",
    "done.synchronize()": "event",
    "torch.cuda.synchronize()  # torch.cuda.synchronize()": "device",
}
BLIND = {"pageable-copy", "event", "device"}  # what the debug mode cannot see


@pytest.fixture(scope="module", params=["h100-train-sites.json", "h100-train-sites-crosscheck.json"])
def trace(request):
    return load(str(FIX / request.param))


def test_the_trace_is_a_real_gpu_run_of_the_window_asked_for(trace):
    m = trace.meta
    assert m["gpu"].startswith("NVIDIA") and m["torch"].startswith("2.") and m["debug_mode"] is True
    assert (m["steps"], m["warmup_steps"], m["stopped"], m["exit_code"]) == (30, 3, "steps", 0)


def test_every_site_appears_with_the_debug_modes_count_or_as_a_blind_spot(trace):
    sites = {(s.line, s.kind): s for s in trace.sites}
    for text, kind in SITES.items():
        s = sites[(_line_of(text), kind)]
        assert s.user and s.threads == ["MainThread"] and s.timed == s.count
        if kind in BLIND:
            assert s.debug_mode == 0 and s.count == 30
        else:
            assert s.count == s.debug_mode  # equal to the debug mode's count for the line
    per_step = [s for s in trace.sites if s.kind != "device" or s.count > 1]
    assert all(s.count == 30 for s in per_step if "max(history" not in s.source)


def test_blocked_time_adds_up_to_the_profilers_sync_calls_within_10_percent():
    trace = load(str(FIX / "h100-train-sites-crosscheck.json"))
    prof = trace.meta["profiler"]
    assert set(prof["calls"]) >= {"cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize"}
    assert abs(trace.blocked_ms - prof["sync_ms"]) <= 0.10 * prof["sync_ms"]


def test_the_top_site_is_the_item_with_its_share_of_wall(trace):
    top = trace.sites[0]
    assert top.line == _line_of("total = loss.item()") and top.blocked_ms > 0
    assert 0 < 100 * top.blocked_ms / trace.wall_ms < 100


def test_the_join_labels_each_finding_on_the_recorded_run(trace):
    outcome = static_findings([str(REPO / SCRIPT)], str(REPO), no_cache=True)
    assert outcome.all_errors == []
    joined = join(trace, outcome.findings, str(REPO))
    labels = {(r.status, r.line): r.codes for r in joined.rows}
    expect = {
        (CONFIRMED, _line_of("x = x.to(device)")): ["SYN304"],
        (CONFIRMED, _line_of("y = y.to(device, non_blocking=True)")): ["SYN303"],
        (CONFIRMED, _line_of("confident = out[")): ["SYN201"],
        (CONFIRMED, _line_of("total = loss.item()")): ["SYN101"],
        (CONFIRMED, _line_of("if loss > 100:")): ["SYN105"],
        (CONFIRMED, _line_of('msg = f"step')): ["SYN106"],
        (CONFIRMED, _line_of("return max(history[-5:])")): ["SYN108"],  # a list of GPU losses
        (NOT_REACHED, _line_of("loader = DataLoader(")): ["SYN504"],
        # Missed: the explicit syncs of a function that also times itself (the rules take those
        # as intentional).
        (MISSED, _line_of("done.synchronize()")): [],
        (MISSED, _line_of("torch.cuda.synchronize()  # torch.cuda.synchronize()")): [],
        (MISSED, _line_of("t0 = time.perf_counter()") - 1): [],  # the once-only sync before timing
    }
    assert labels == expect
