"""The interception and recording of `synclint trace`, on CPU: the interceptor is installed
on tests/data/trace/fake_torch.py (whose syncs do what c10's do under the sync debug mode),
so attribution to the user's line, counts, blocked time, the debug mode's blind spots,
the program's own warning filters and threads are checked without a GPU."""

import json
import sys
import threading
import time
import warnings

import pytest

from trace_helpers import CLOCK, HERE, fake_interceptor, fake_torch

from synclint.trace.record import Recorder
from synclint.trace.schema import Site, Trace, TraceError, from_json, load

THIS = "test_trace_record.py"
BLOCK_MS = fake_torch.BLOCK_S * 1e3


def _line():
    return sys._getframe(1).f_lineno


@pytest.fixture
def traced():
    with fake_interceptor() as i:
        rec = Recorder((str(HERE),))
        i.listeners.append(rec)
        yield i, rec


def _helper_that_syncs():
    line = _line(); fake_torch.item()  # noqa: E702
    return line


def test_each_sync_is_charged_to_the_users_line_with_count_and_blocked_time(traced):
    _, rec = traced
    for _ in range(3):
        item_line = _line(); fake_torch.item()  # noqa: E702
    sync_line = _line(); fake_torch.synchronize()  # noqa: E702
    sites = {(s.file, s.line, s.kind): s for s in rec.sites()}
    item = sites[(THIS, item_line, "stream")]
    assert item.count == 3
    assert item.function == "test_each_sync_is_charged_to_the_users_line_with_count_and_blocked_time"
    assert item.via.endswith("fake_torch.py:item")
    assert item.source == "item_line = _line(); fake_torch.item()  # noqa: E702"
    if CLOCK:  # the first sync at a line arms the clock; the next ones are timed
        assert item.timed == 2
        assert 2 * BLOCK_MS <= item.blocked_ms < 2 * BLOCK_MS + 20
    else:
        assert item.timed == 0 and item.blocked_ms == 0
    dev = sites[(THIS, sync_line, "device")]  # a blind spot of the debug mode: the wrapper times it
    assert dev.count == 1 and dev.timed == 1 and BLOCK_MS <= dev.blocked_ms < BLOCK_MS + 20
    assert dev.via.endswith("fake_torch.py:synchronize")


@pytest.mark.skipif(not CLOCK, reason="the clock needs sys.monitoring (Python 3.12+)")
def test_the_clock_times_operators_and_two_syncs_in_one_call_once_each(traced):
    _, rec = traced
    x, mask = fake_torch.Tensor(), fake_torch.Tensor()
    for _ in range(3):
        mask_line = _line(); x[mask]  # noqa: E702
        if_line = _line() + 1
        if x:
            pass
        two_line = _line(); fake_torch.boolean_mask_index()  # noqa: E702
        fmt_line = _line(); f"{x:.3f}"  # noqa: E702
    sites = {s.line: s for s in rec.sites()}
    for line in (mask_line, if_line, fmt_line):
        assert (sites[line].count, sites[line].timed) == (3, 2)
        assert 2 * BLOCK_MS <= sites[line].blocked_ms < 2 * BLOCK_MS + 20
    # Each sync counts from the end of the one before it in the same call; both of the first
    # call are untimed (the call was running before the first armed the clock).
    two = sites[two_line]
    assert (two.count, two.timed) == (6, 4)
    assert 4 * BLOCK_MS <= two.blocked_ms < 4 * BLOCK_MS + 20
    assert sites[fmt_line].via.endswith("fake_torch.py:__format__")


REPORT_S = 0.003  # the late report of the stand-in below


def _late_reporting_sync():
    """A sync whose report arrives REPORT_S after it ended (the warnings path, slowed)."""
    if fake_torch._mode[0] == 1:
        time.sleep(REPORT_S)
    fake_torch._sync(0)


def _set_mode(mode):
    fake_torch._mode[0] = mode


def test_the_report_latency_is_measured_apart_from_the_sync_and_recorded_nowhere(traced):
    """`synclint trace` measures how late the detector's report of a sync arrives (the
    warnings machinery between the C++ return and the clock read): the sync timed with the
    debug mode off against the same sync timed to its report. Its own syncs are no site."""
    interceptor, rec = traced
    latency = interceptor.report_latency(_late_reporting_sync, _set_mode, runs=8)
    assert REPORT_S * 0.8 <= latency < REPORT_S + 0.02
    assert rec.sites() == []


def test_the_clock_leaves_the_report_latency_out_of_each_syncs_blocked_time():
    from synclint.trace.timing import SyncClock

    clock = SyncClock()
    clock._tool = 1  # as if started: only the arithmetic is under test here
    clock.latency = 0.002
    frame = (lambda: sys._getframe())()  # a frame that has returned: its instruction stays put
    at = (frame.f_code, clock._instruction(frame.f_code, frame.f_lasti))
    clock._local.started = {at: 10.0}
    assert clock.elapsed(frame, 10.005) == pytest.approx(0.003)
    assert clock.elapsed(frame, 10.006) == 0.0  # a report sooner than the latency: no negative time


def test_a_sync_in_a_helper_is_charged_to_the_helpers_line_with_its_caller(traced):
    _, rec = traced
    call_line = _line(); helper_line = _helper_that_syncs()  # noqa: E702
    (site,) = rec.sites()
    assert (site.file, site.line) == (THIS, helper_line)
    assert site.callers[0] == f"{THIS}:{call_line}:test_a_sync_in_a_helper_is_charged_to_the_helpers_line_with_its_caller"


def test_the_debug_modes_blind_spots_are_seen_by_their_wrappers(traced):
    _, rec = traced
    event_line = _line(); fake_torch.event_synchronize()  # noqa: E702
    copy_line = _line(); fake_torch.pageable_copy()  # noqa: E702
    fake_torch.Tensor("cpu", pinned=True).to("cuda", non_blocking=True)  # pinned: no sync
    fake_torch.Tensor("cuda").to("cuda")  # no copy across: no sync
    sites = {(s.line, s.kind): s for s in rec.sites()}
    assert set(sites) == {(event_line, "event"), (copy_line, "pageable-copy")}
    assert all(s.count == 1 and s.timed == 1 and s.blocked_ms >= BLOCK_MS for s in sites.values())


def test_the_programs_own_warning_filters_do_not_hide_syncs(traced):
    _, rec = traced
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore")  # the first line of many training scripts
        warnings.simplefilter("error", UserWarning)
        line = _line(); fake_torch.item(); fake_torch.item()  # noqa: E702
    with warnings.catch_warnings(record=True) as shown:
        warnings.resetwarnings()
        fake_torch.item()
    sites = {s.line: s.count for s in rec.sites()}
    assert sites[line] == 2 and sum(sites.values()) == 3
    assert shown == []  # the detector's warnings are taken, never shown


def test_the_programs_own_debug_mode_is_honoured_and_syncs_still_seen(traced):
    _, rec = traced
    fake_torch.cuda.set_sync_debug_mode("default")  # the program turns it off: we still see syncs
    fake_torch.item()
    fake_torch.cuda.set_sync_debug_mode("warn")  # the program wants the warnings: it gets them
    with pytest.warns(UserWarning, match="synchronizing CUDA operation"):
        fake_torch.item()
    fake_torch.cuda.set_sync_debug_mode("error")  # and the error, before the sync
    with pytest.raises(RuntimeError, match="synchronizing"):
        fake_torch.item()
    fake_torch.cuda.set_sync_debug_mode(0)
    assert sum(s.count for s in rec.sites()) == 2


def test_uninstall_leaves_warnings_and_the_debug_mode_as_they_were():
    filters, show = list(warnings.filters), warnings._showwarnmsg
    fake_torch.cuda.set_sync_debug_mode(0)
    with fake_interceptor():
        assert fake_torch.cuda.get_sync_debug_mode() == 1
    assert warnings.filters == filters and warnings._showwarnmsg is show
    assert fake_torch.cuda.get_sync_debug_mode() == 0
    fake_torch.Tensor().item()  # no interceptor, no warning
    assert fake_torch.Tensor.to.__qualname__ == "Tensor.to"


def test_nothing_is_recorded_outside_the_window(traced):
    _, rec = traced
    rec.recording = False
    fake_torch.item()
    rec.recording = True
    fake_torch.item()
    assert sum(s.count for s in rec.sites()) == 1


def test_syncs_of_another_thread_carry_its_name(traced):
    _, rec = traced
    t = threading.Thread(target=fake_torch.item, name="loader-thread")
    t.start()
    t.join()
    (site,) = rec.sites()
    assert site.threads == ["loader-thread"]


def test_a_sync_with_no_user_frame_is_kept_under_the_library_frame(traced):
    from synclint.trace.frames import UserCode

    i, rec = traced
    i.user = UserCode(["/nonexistent-root"], library=[])
    fake_torch.item()
    (site,) = rec.sites()
    assert site.user is False
    assert site.file.endswith("fake_torch.py") and site.function == "_sync" and site.callers == []


# ---------------------------------------------------------------- pageable copies


def test_pageable_non_blocking_copy_is_recognised_from_the_call():
    torch = pytest.importorskip("torch")
    from synclint.trace.intercept import _pageable_to_cuda as pageable

    cpu = torch.ones(4)
    assert pageable(torch, "to", cpu, ("cuda",), {"non_blocking": True})
    assert pageable(torch, "to", cpu, (torch.device("cuda", 0),), {"non_blocking": True})
    assert pageable(torch, "to", cpu, (), {"device": "cuda:0", "non_blocking": True})
    assert pageable(torch, "to", cpu, ("cuda", torch.float16, True), {})
    assert pageable(torch, "cuda", cpu, (), {"non_blocking": True})
    assert not pageable(torch, "to", cpu, ("cuda",), {})  # blocking: the stream callback sees it
    assert not pageable(torch, "to", cpu, ("cpu",), {"non_blocking": True})
    assert not pageable(torch, "to", cpu, (torch.float16,), {"non_blocking": True})
    assert not pageable(torch, "copy_", cpu, (torch.ones(4),), {"non_blocking": True})  # CPU destination


# ---------------------------------------------------------------- schema


def test_trace_round_trips_through_json(tmp_path):
    t = Trace({"wall_ms": 10.0, "root": "/x"}, [Site("a.py", 3, "f", "stream", count=2, blocked_ms=1.5)])
    p = tmp_path / "t.json"
    p.write_text(t.dumps())
    back = load(str(p))
    assert back.sites == t.sites and back.meta == t.meta and back.blocked_ms == 1.5
    assert json.loads(p.read_text())["version"] == 1


@pytest.mark.parametrize("text, reason", [
    ("{", "not valid JSON"),
    ('{"schema": "other"}', "not a synclint trace"),
    ('{"schema": "synclint-trace", "version": 99, "meta": {}, "sites": []}', "trace version 99"),
    ('{"schema": "synclint-trace", "version": 1, "meta": {}, "sites": [{"line": 1}]}', "sites[0] has no 'file'"),
    ('{"schema": "synclint-trace", "version": 1, "meta": {}, "sites": [{"file": "a", "line": 1, "kind": "x", "count": 1}]}',
     "unknown kind 'x'"),
])
def test_a_bad_trace_file_is_one_line_naming_the_file(tmp_path, text, reason):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(TraceError) as e:
        load(str(p))
    assert str(e.value).startswith(str(p)) and reason in str(e.value) and "\n" not in str(e.value)


def test_from_json_reads_what_to_json_wrote():
    t = Trace({"wall_ms": 1}, [Site("a.py", 1, "", "device", count=1)])
    assert from_json(t.to_json(), "x").sites[0].kind == "device"


# ---------------------------------------------------------------- the command to run


def test_the_program_is_what_follows_python(tmp_path):
    from synclint.trace.run import TraceUnavailable, program_argv

    script = tmp_path / "train.py"
    script.write_text("")
    assert program_argv(["python", str(script), "--lr", "1"]) == [str(script), "--lr", "1"]
    assert program_argv(["python3.12", str(script)]) == [str(script)]
    assert program_argv([str(script)]) == [str(script)]
    assert program_argv(["python", "-m", "pkg.train", "--x"]) == ["-m", "pkg.train", "--x"]
    for bad, reason in ((["python"], "no program given"), (["python", "-m"], "-m needs a module"),
                        (["python", "-c", "1"], "only a script or -m module"),
                        (["python", str(tmp_path / "nope.py")], "no such file")):
        with pytest.raises(TraceUnavailable, match=reason):
            program_argv(bad)


def test_the_lines_that_ran_are_recorded_for_the_users_files_only(tmp_path):
    from synclint.trace.frames import UserCode
    from synclint.trace.lines import LineRecorder, ran

    prog = tmp_path / "prog.py"
    prog.write_text("def f(n):\n    if n > 5:\n        return 'big'\n    return 'small'\n")
    namespace = {}
    exec(compile(prog.read_text(), str(prog), "exec"), namespace)
    rec = LineRecorder(UserCode([str(tmp_path)]))
    rec.start()
    try:
        for n in range(3):
            namespace["f"](n)
        import json  # library code runs too, and is not recorded
        json.dumps([1])
    finally:
        rec.stop()
    runs = rec.lines()
    assert list(runs) == ["prog.py"] and runs["prog.py"] == [[2, 2], [4, 4]]
    assert ran(runs["prog.py"], 3, 4) and not ran(runs["prog.py"], 3, 3)
