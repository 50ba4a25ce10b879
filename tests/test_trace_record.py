"""The interception and recording of `synclint trace`, on CPU: torch's sync callbacks are
driven by tests/data/trace/fake_torch.py (what c10 does at a sync), so attribution to the
user's line, counts, blocked time, the debug-mode cross-check and threads are checked
without a GPU."""

import json
import sys
import threading

import pytest

from trace_helpers import HERE, FakeWaiter, fake_interceptor, fake_torch

from synclint.trace.record import Recorder
from synclint.trace.schema import Site, Trace, TraceError, from_json, load

THIS = "test_trace_record.py"


def _line():
    return sys._getframe(1).f_lineno


def _recorder(debug_mode=False):
    i = fake_interceptor(FakeWaiter(stream_s=0.002, device_s=0.010))
    rec = Recorder((str(HERE),), debug_mode=debug_mode)
    i.listeners.append(rec)
    return i, rec


def _helper_that_syncs(i):
    line = _line(); fake_torch.item(i)  # noqa: E702
    return line


def test_each_sync_is_charged_to_the_users_line_with_count_and_blocked_time():
    i, rec = _recorder()
    for _ in range(3):
        item_line = _line(); fake_torch.item(i)  # noqa: E702
    sync_line = _line(); fake_torch.synchronize(i)  # noqa: E702
    sites = {(s.file, s.line, s.kind): s for s in rec.sites()}
    item = sites[(THIS, item_line, "stream")]
    assert item.count == 3 and item.timed == 3
    assert item.blocked_ms == pytest.approx(6.0)
    assert item.function == "test_each_sync_is_charged_to_the_users_line_with_count_and_blocked_time"
    assert item.via.endswith("fake_torch.py:item")
    assert item.source == "item_line = _line(); fake_torch.item(i)  # noqa: E702"
    dev = sites[(THIS, sync_line, "device")]
    assert dev.count == 1 and dev.blocked_ms == pytest.approx(10.0)
    # most blocked first
    assert [s.kind for s in rec.sites()] == ["device", "stream"]


def test_a_sync_in_a_helper_is_charged_to_the_helpers_line_with_its_caller():
    i, rec = _recorder()
    call_line = _line(); helper_line = _helper_that_syncs(i)  # noqa: E702
    (site,) = rec.sites()
    assert (site.file, site.line) == (THIS, helper_line)
    assert site.callers[0] == f"{THIS}:{call_line}:test_a_sync_in_a_helper_is_charged_to_the_helpers_line_with_its_caller"


def test_event_sync_outside_the_python_wrapper_is_counted_untimed():
    i, rec = _recorder()
    fake_torch.event_synchronize(i)
    (site,) = rec.sites()
    assert site.kind == "event" and site.count == 1 and site.timed == 0 and site.blocked_ms == 0


def test_debug_mode_counts_sit_beside_the_callback_counts_and_disagreements_show():
    i, rec = _recorder(debug_mode=True)
    for _ in range(2):
        both = _line(); fake_torch.item(i); fake_torch.debug_mode_warning(i)  # noqa: E702
    only_callback = _line(); fake_torch.synchronize(i)  # noqa: E702
    only_debug = _line(); fake_torch.debug_mode_warning(i)  # noqa: E702
    sites = {(s.line, s.kind): s for s in rec.sites()}
    assert (sites[(both, "stream")].count, sites[(both, "stream")].debug_mode) == (2, 2)
    assert sites[(only_callback, "device")].debug_mode == 0  # the debug mode cannot see it
    assert (sites[(only_debug, "stream")].count, sites[(only_debug, "stream")].debug_mode) == (0, 1)


def test_nothing_is_recorded_outside_the_window():
    i, rec = _recorder()
    rec.recording = False
    fake_torch.item(i)
    rec.recording = True
    fake_torch.item(i)
    assert sum(s.count for s in rec.sites()) == 1


def test_syncs_of_another_thread_carry_its_name():
    i, rec = _recorder()
    t = threading.Thread(target=fake_torch.item, args=(i,), name="loader-thread")
    t.start()
    t.join()
    (site,) = rec.sites()
    assert site.threads == ["loader-thread"]


def test_a_sync_with_no_user_frame_is_kept_under_the_library_frame():
    from synclint.trace.frames import UserCode

    i, rec = _recorder()
    i.user = UserCode(["/nonexistent-root"], library=[])
    fake_torch.item(i)
    (site,) = rec.sites()
    assert site.user is False
    assert site.file.endswith("fake_torch.py") and site.function == "item" and site.callers == []


def test_reentrant_syncs_from_our_own_waiting_are_ignored():
    i, rec = _recorder()

    class Waiter(FakeWaiter):
        def stream(self, ptr):
            fake_torch.event_synchronize(i)  # what GpuWaiter's event wait fires
            return 0.001

    i._waiter = Waiter()
    fake_torch.item(i)
    assert [(s.kind, s.count) for s in rec.sites()] == [("stream", 1)]


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
