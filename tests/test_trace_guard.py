"""`synclint.guard` / `synclint.allow_sync` and the pytest plugin, on CPU: the process's
interceptor is replaced by one installed on tests/data/trace/fake_torch.py (whose syncs
do what c10's do under the sync debug mode), so the guard's levels, its thread scope, where it raises and what it says are
checked without a GPU. tests/test_trace_gpu.py checks the same on a real device."""

import subprocess
import sys
import threading
import traceback
import warnings

import pytest

from trace_helpers import fake_interceptor, fake_torch

import synclint
from synclint.trace import guard as guard_mod
from synclint.trace import intercept

pytest_plugins = ["pytester"]


def _line():
    return sys._getframe(1).f_lineno


@pytest.fixture
def fake(monkeypatch):
    """The shared interceptor is installed on the fake torch; a CUDA device is 'present'."""
    with fake_interceptor() as i:
        monkeypatch.setattr(intercept, "_shared", i)
        monkeypatch.setattr(intercept, "_users", 1)
        monkeypatch.setattr(intercept, "cuda_state", lambda: None)
        yield i
        monkeypatch.setattr(intercept, "_shared", None)


def test_disallow_raises_when_the_block_ends_naming_the_line_op_and_rule(fake):
    ran = []
    with pytest.raises(synclint.SyncError) as e:
        with synclint.guard("disallow"):
            sync_line = _line(); fake_torch.nonzero()  # noqa: E702
            ran.append("rest of the block")
    assert ran == ["rest of the block"]  # a warning handler cannot raise: the guard's exit does
    assert f"test_trace_guard.py:{sync_line}: stream sync" in str(e.value) and "allow_sync" in str(e.value)
    note = "\n".join(getattr(e.value, "__notes__", []))
    assert "the sync happened here" in note and "sync_line = _line(); fake_torch.nonzero()" in note


def test_a_sync_in_a_wrapped_call_raises_at_once_on_its_line(fake):
    ran = []
    with pytest.raises(synclint.SyncError, match=r"non_blocking copy from pageable memory \[SYN303\]") as e:
        with synclint.guard("disallow"):
            line = _line(); fake_torch.pageable_copy()  # noqa: E702
            ran.append("next line")
    assert ran == []
    assert [f.lineno for f in traceback.extract_tb(e.value.__traceback__) if f.filename == __file__][-1] == line


def test_a_wrapped_tensor_method_raises_at_once_on_its_line(fake):
    x, ran = fake_torch.Tensor(), []
    with pytest.raises(synclint.SyncError) as e:
        with synclint.guard("disallow"):
            line = _line(); x.item()  # noqa: E702
            ran.append("next line")
    assert ran == [] and f"test_trace_guard.py:{line}: stream sync" in str(e.value)


def test_two_syncs_raise_once_for_the_first(fake):
    with pytest.raises(synclint.SyncError, match="stream sync") as e:
        with synclint.guard("disallow") as g:
            line = _line(); fake_torch.boolean_mask_index()  # noqa: E702
            fake_torch.synchronize()
    assert [ev.kind for ev in g.events] == ["stream", "stream", "device"]
    assert f"test_trace_guard.py:{line}:" in str(e.value)


def test_a_guard_that_raised_leaves_nothing_behind(fake):
    with pytest.raises(synclint.SyncError):
        with synclint.guard("disallow"):
            fake_torch.item()
    assert fake.listeners == [] and intercept._users == 1  # the fixture's own hold
    with synclint.guard("log") as g:
        fake_torch.item()
    assert len(g.events) == 1


def test_disallow_names_the_rule_for_the_debug_modes_blind_spots(fake):
    with pytest.raises(synclint.SyncError, match=r"torch\.cuda\.synchronize\(\) \[SYN401\]"):
        with synclint.guard("disallow"):
            fake_torch.synchronize()


def test_allow_sync_lets_a_sync_through_and_records_its_reason(fake):
    with synclint.guard("disallow") as g:
        with synclint.allow_sync("logged every 100 steps"):
            fake_torch.item()
        ok = True
    assert ok and [e.allowed for e in g.events] == ["logged every 100 steps"] and g.syncs == []


def test_another_threads_syncs_are_not_this_guards(fake):
    with synclint.guard("disallow") as g:
        t = threading.Thread(target=fake_torch.item)
        t.start()
        t.join()
    assert g.events == []


def test_a_guard_in_another_thread_does_not_see_this_threads_syncs(fake):
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def guarded():
        with synclint.guard("disallow") as g:
            entered.set()
            release.wait(5)
        seen["events"] = g.events

    t = threading.Thread(target=guarded)
    t.start()
    entered.wait(5)
    fake_torch.item()  # this (unguarded) thread syncs while the other is guarded
    release.set()
    t.join()
    assert seen["events"] == []


def test_log_records_every_sync_and_does_not_raise(fake, caplog):
    with synclint.guard("log") as g:
        for _ in range(2):
            line = _line(); fake_torch.item()  # noqa: E702
    assert [e.where for e in g.events] == [f"test_trace_guard.py:{line}"] * 2
    assert sum("sync: test_trace_guard.py" in r.getMessage() for r in caplog.records) == 2


def test_allow_level_records_nothing(fake):
    with synclint.guard("allow") as g:
        fake_torch.item()
    assert g.events == []


def test_the_innermost_guard_decides(fake):
    with synclint.guard("disallow"):
        with synclint.guard("log") as inner:
            fake_torch.item()
    assert len(inner.events) == 1


def test_bad_level_and_empty_reason_are_clear_errors():
    with pytest.raises(ValueError, match="allow, log, disallow"):
        synclint.guard("strict")
    with pytest.raises(ValueError, match="needs a reason"):
        synclint.allow_sync("")


def test_without_cuda_a_guard_says_so_once_and_checks_nothing(monkeypatch):
    monkeypatch.setattr(intercept, "cuda_state", lambda: "no CUDA GPU is visible to torch 2.13.0")
    monkeypatch.setattr(guard_mod, "_no_device_said", [])
    with pytest.warns(RuntimeWarning, match="no CUDA GPU.*checks nothing"):
        with synclint.guard("disallow") as g:
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with synclint.guard("disallow"):
            pass
    assert not g.active


def test_import_synclint_does_not_import_torch():
    code = "import sys, synclint; synclint.guard; synclint.allow_sync; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- the pytest plugin

_TESTS = """
import sys
sys.path.insert(0, {fake_dir!r})
import pytest
import fake_torch
import synclint
from synclint.trace import intercept

def test_syncs():
    fake_torch.item()

def test_clean():
    pass

@pytest.mark.sync_guard("disallow")
def test_marked():
    fake_torch.item()
"""


def _write(pytester):
    from trace_helpers import FAKE_DIR

    pytester.makepyfile(test_user=_TESTS.format(fake_dir=str(FAKE_DIR)))


def test_plugin_is_off_unless_asked(pytester, fake, monkeypatch):
    fake.user.roots = (str(pytester.path),)
    _write(pytester)
    result = pytester.runpytest_inprocess("-k", "not marked")
    result.assert_outcomes(passed=2)
    assert "sync-guard" not in result.stdout.str()


def test_plugin_log_lists_each_tests_syncs_and_a_marker_wins(pytester, fake):
    from synclint.trace.frames import UserCode
    from trace_helpers import FAKE_DIR

    fake.user = UserCode([str(pytester.path)], library=[str(FAKE_DIR)])
    _write(pytester)
    result = pytester.runpytest_inprocess("--sync-guard=log")
    result.assert_outcomes(passed=2, failed=1)  # test_marked: disallow, from its marker
    out = result.stdout.str()
    assert "test_user.py::test_syncs (log): 1 sync" in out
    assert "test_user.py:9: stream sync" in out
    assert "SyncError: synchronizing CUDA operation at test_user.py:16" in out
    assert "test_clean (log)" not in out


def test_plugin_without_cuda_says_so_in_one_line(pytester, monkeypatch):
    monkeypatch.setattr(intercept, "cuda_state", lambda: "no CUDA GPU is visible to torch 2.13.0")
    pytester.makepyfile(test_user="def test_a():\n    pass\n")
    result = pytester.runpytest_inprocess("--sync-guard=disallow")
    result.assert_outcomes(passed=1)
    assert result.stdout.str().count("sync-guard: no CUDA GPU is visible to torch 2.13.0; tests ran unguarded") == 1


def test_a_wrapped_call_raises_the_error_armed_inside_it():
    from synclint.trace import raising

    err = synclint.SyncError("at z.py:3")
    wrapped = raising.raise_armed_after(lambda: raising.arm(err))
    with pytest.raises(synclint.SyncError, match="z.py:3"):
        wrapped()
    assert raising.pending() is None


def test_the_rule_is_named_for_a_sync_in_a_test_file_outside_any_loop(tmp_path):
    """`tests-hot-only` hides a test file's cold findings from `check`; the guard still names
    the rule for a sync it saw run there (the GPU test's `.item()` in a `with` block was
    reported as 'no synclint rule flags this line')."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "tests").mkdir()
    test_file = tmp_path / "tests" / "test_model.py"
    test_file.write_text("import torch\n\ndef test_a():\n    x = torch.ones(3, device='cuda')\n    v = x.sum().item()\n")
    by_line, selected = guard_mod._check_file(str(test_file))
    assert any(n.startswith("SYN101 ") for n in by_line.get(5, ())), by_line
    assert "SYN101" in selected
