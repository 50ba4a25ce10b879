"""The worker pool: a run that dies leaves no worker behind."""

import os
import subprocess
import sys
import time
from collections import deque

import pytest

CHILD = """
import os, sys
from synclint.run.workers import Pool
pool = Pool(2, [])
print(" ".join(str(p.pid) for p in pool.procs), flush=True)
os._exit(0)  # as a SIGKILL would: no cleanup, the pipes' ends simply vanish
"""


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers and /proc")
def test_workers_exit_when_the_main_process_dies():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    deadline = time.time() + 20
    while time.time() < deadline and any(os.path.exists(f"/proc/{p}") and _alive(p) for p in pids):
        time.sleep(0.1)
    alive = [p for p in pids if os.path.exists(f"/proc/{p}") and _alive(p)]
    for p in alive:
        os.kill(p, 9)
    assert not alive, "workers outlived the run"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return not any(line.startswith("State:") and ("Z" in line.split()[1]) for line in fh)
    except OSError:
        return False


HOT_ITEM = "import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    v = x.sum().item()\n"


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers")
def test_a_worker_past_its_budget_is_killed_and_replaced(tmp_path, monkeypatch):
    """-j 2 over 9 files: the one that spins is one error line after its budget; its worker
    is replaced and every other file's finding is reported."""
    from synclint.testing import run_cli, spin_on

    for i in range(8):
        (tmp_path / f"ok{i}.py").write_text(HOT_ITEM)
    (tmp_path / "slow.py").write_text(HOT_ITEM)
    spin_on(monkeypatch, "slow.py")  # forked workers inherit the patch
    start = time.monotonic()
    r = run_cli(["check", "-j", "2", "--no-cache", "--file-timeout", "2", "--output-format", "concise", "."], tmp_path)
    took = time.monotonic() - start
    assert r.exit_code == 2, r.output
    assert ("synclint: error: slow.py: analysis took longer than 2 s; skipped "
            "(raise `file-timeout` in [tool.synclint] to allow more)") in r.stderr.splitlines()
    assert sorted(line.split(":")[0] for line in r.stdout.splitlines() if "SYN101" in line) == [
        f"ok{i}.py" for i in range(8)]
    assert took < 25  # the spin (30 s) was cut short


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers")
def test_a_worker_that_dies_fails_its_file_and_the_jobs_waiting_for_it_run_on(monkeypatch):
    """One worker, five files: each job waits in the worker's pipe while the one before it
    runs. The worker dies on the second file: that file gets the error line with the
    worker's exit code, and the job that was waiting behind it runs on a new worker with
    the rest.

    A dying process's files close before it can be reaped: here that moment lasts (the
    worker closes them, then exits), so the exit code must be waited for, never read
    while the process has not yet gone (it read "exit code None" on a loaded machine)."""
    from synclint.run import workers

    real = workers.Worker.do

    def do(self, job, budget=None):
        if job[1] == "dies.py":
            for fd in map(int, os.listdir("/proc/self/fd")):
                if fd > 2:
                    try:
                        os.close(fd)  # its pipe and the sentinel's end: the main process sees it gone
                    except OSError:
                        pass
            time.sleep(0.5)
            os._exit(3)  # as a segfault in a parser would end it
        return real(self, job, budget)

    monkeypatch.setattr(workers.Worker, "do", do)  # forked workers inherit the patch
    names = ["a.py", "dies.py", "b.py", "c.py", "d.py"]
    with workers.Pool(1, []) as pool:
        results = {job[1]: result for _, job, result in pool.run([("summarise", n, HOT_ITEM, n[:-3]) for n in names])}
    assert sorted(results) == sorted(names)
    assert results["dies.py"] == (None, "cannot analyse: synclint's worker died on this file (exit code 3)")
    assert all(results[n][0] and results[n][1] is None for n in names if n != "dies.py")


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers")
def test_a_worker_killed_between_runs_is_replaced_and_the_next_runs_files_are_checked():
    """A worker can go while it waits for work (the OOM killer picks the process that holds
    the most trees): sending it the next run's first job fails, and that job goes to the
    worker started in its place, not reported as the file a worker died on."""
    from synclint.run import workers

    with workers.Pool(1, []) as pool:
        assert [r[1] for _, _, r in pool.run([("summarise", "a.py", HOT_ITEM, "a")])] == [None]
        pool.procs[0].kill()
        pool.procs[0].join()
        results = {job[1]: result for _, job, result in pool.run([("summarise", n, HOT_ITEM, n[:-3]) for n in ("b.py", "c.py")])}
    assert sorted(results) == ["b.py", "c.py"] and all(r[0] and r[1] is None for r in results.values())


def test_in_process_budget_ends_the_job_and_restores_the_alarm(monkeypatch):
    """In this process (one file, -j 1) the budget is SIGALRM: the job that runs out is its
    file's error, the tree it left half-walked is dropped, and the handler and the timer are
    put back, whether the job finished or not. (Only the spinning job has a budget it must
    run out of: a real job on a loaded machine may take longer than that one's.)"""
    import signal

    from synclint.testing import spin_on
    from synclint.run.workers import Worker, timeout_message

    spin_on(monkeypatch, "slow.py")
    before = signal.getsignal(signal.SIGALRM)
    w = Worker(["SYN101"])
    ample = 120.0
    for name in ("ok.py", "slow.py"):
        assert w.do(("summarise", name, HOT_ITEM, name[:-3]), ample)[1] is None
    start = time.monotonic()
    found, _graph, error, _summary, _reads = w.do(("lint", "slow.py", HOT_ITEM, "slow", None), 0.5)
    assert (found, error) == ([], timeout_message(0.5))
    assert time.monotonic() - start < 5 and "slow.py" not in w.held
    found, _graph, error, _summary, _reads = w.do(("lint", "ok.py", HOT_ITEM, "ok", None), ample)
    assert error is None and [f["code"] for f in found] == ["SYN101"]
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert timeout_message(0.5) == ("analysis took longer than 0.5 s; skipped "
                                    "(raise `file-timeout` in [tool.synclint] to allow more)")


def test_in_process_budget_keeps_the_hosts_own_timer(monkeypatch):
    """A host (a test runner's timeout) may have an alarm of its own running: the budget
    leaves it going with what was left of it."""
    import signal

    from synclint.testing import spin_on
    from synclint.run.workers import Worker, timeout_message

    spin_on(monkeypatch, "slow.py")
    w = Worker(["SYN101"])
    signal.setitimer(signal.ITIMER_REAL, 100)
    try:
        assert w.do(("lint", "slow.py", HOT_ITEM, "slow", None), 0.5)[2] == timeout_message(0.5)
        assert 95 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


EDIT_RECHECK = """
import os, sys
from synclint.run.runner import check_files
files = sorted(f for f in os.listdir(".") if f.endswith(".py"))
select = lambda: __import__("synclint.registry", fromlist=["default_rules"]).default_rules()
r = check_files(files, select, cache_dir=__import__("pathlib").Path(".synclint_cache"), jobs=2, selection_key="k")
print(sorted((f.filename, f.code) for f in r.findings), "libcst" in sys.modules, flush=True)
os._exit(0)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers")
def test_an_edits_recheck_imports_the_rules_in_a_worker_only(tmp_path):
    """With a cache, the worker started first imports LibCST and the rules while this process
    reads the cache: after an edit, the findings are the same as a cold run's, and this
    process never imported LibCST."""
    for i in range(9):
        (tmp_path / f"f{i}.py").write_text(HOT_ITEM)

    def run():
        out = subprocess.run([sys.executable, "-c", EDIT_RECHECK], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.split("] ")

    found, _ = run()  # fills the cache
    (tmp_path / "f3.py").write_text(HOT_ITEM + "w = x.sum().item()\n")
    again, imported = run()
    assert again.count("SYN101") == found.count("SYN101") + 1
    assert imported.strip() == "False"


def test_a_selection_that_fails_in_a_worker_is_raised_here():
    """A rule selection the worker makes (an unknown code in the configuration) is raised
    in this process, as the same error, not a worker's failure on a file."""
    from synclint.registry import SelectionError, match
    from synclint.run.workers import Pool

    pool = Pool(1, lambda: match("SYN999"))
    try:
        with pytest.raises(SelectionError, match="SYN999"):
            list(pool.run([("summarise", "a.py", HOT_ITEM, "a")]))
    finally:
        pool.close()


def test_a_worker_frees_each_jobs_cyclic_garbage_and_freezes_what_it_keeps():
    """Workers run the collector once per job, not by allocation count: a job's reference
    cycles must still be freed when it ends (no memory growth over a run), and what the
    job keeps must be frozen (no later collection scans the held trees again)."""
    code = r'''
import gc, weakref
from synclint.run.workers import serve

class Node:
    pass

kept, dead = [], []

def handle(job):
    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: only the collector frees it
    dead.append(weakref.ref(a))
    kept.append(Node())
    return job

class Conn:
    def __init__(self):
        self.jobs, self.sent = [1, 2, None], []
    def recv(self):
        return self.jobs.pop(0)
    def send(self, answer):
        self.sent.append((answer, [r() is None for r in dead], gc.get_freeze_count()))

c = Conn()
serve(c, handle)
(first, freed1, frozen1), (second, freed2, frozen2) = c.sent
assert (first, second) == (1, 2)
assert freed1 == [True] and freed2 == [True, True], (freed1, freed2)
assert frozen2 > frozen1 > 0
print("ok")
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_worker_hands_each_tree_it_builds_to_its_hook_before_walking_it(monkeypatch):
    """A worker process freezes each tree as soon as it is built (`Worker.built`), so that
    the collection at the job's end scans only what the walks left: the hook runs once per
    tree, before the first walk; a file the prefilter skips builds none."""
    from synclint.run.workers import Worker
    from synclint.walker import Walker

    events = []
    walk = Walker.walk
    monkeypatch.setattr(Walker, "walk", lambda self, node: events.append("walk") or walk(self, node))
    worker = Worker([], built=lambda: events.append("built"))
    worker.do(("summarise", "a.py", HOT_ITEM, "a"))
    assert events[0] == "built" and events.count("built") == 1 and "walk" in events
    worker.do(("summarise", "b.py", "x = 1\n", "b"))
    assert events.count("built") == 1


def test_a_worker_whose_answer_is_no_longer_wanted_stops_without_a_traceback():
    """The main process may close its pipe before a worker answers (its run ended: a
    one-file check that needed none of the pool); the worker then stops quietly: a
    BrokenPipeError traceback reached a user's terminal from a pool worker."""
    code = r'''
from multiprocessing import Pipe
from synclint.run.workers import serve

main_end, worker_end = Pipe()
main_end.send("job")
main_end.close()  # the run is over before the answer comes
serve(worker_end, lambda job: job)
print("ok")
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    assert "Traceback" not in out.stderr


def test_lint_jobs_go_to_the_worker_holding_their_tree_largest_first():
    """So that what is left when one worker runs out is small files (`stolen`); jobs
    without a holder (the first phase's) stay in their order."""
    from synclint.run.workers import queues

    jobs = [("lint", p, "x" * size, p) for p, size in (("a", 10), ("b", 30), ("c", 20), ("d", 5))]
    own, shared = queues(jobs, 2, {"a": 0, "b": 1, "c": 0})
    assert [[j[1] for j in q] for q in own] == [["c", "a"], ["b"]] and [j[1] for j in shared] == ["d"]
    own, shared = queues(jobs, 2)
    assert own == [deque(), deque()] and [j[1] for j in shared] == ["a", "b", "c", "d"]


def test_a_worker_with_no_jobs_left_takes_the_smallest_of_another_only_where_that_pays():
    """Its tree is parsed and walked again where it is taken (`STEAL_COST` times its lint):
    the smallest job of the busiest worker, where the rest of that worker's work outlasts
    that; else it waits."""
    from synclint.run.workers import STEAL_COST, stolen

    def q(*sizes):
        return deque(("lint", f"f{i}", "x" * s, "m") for i, s in enumerate(sizes))

    assert stolen([q(), q(300, 100, 200)], [0, 0]) == (1, 1)
    rest = 300 + 200
    assert stolen([q(), q(300, rest // STEAL_COST + 1, 200)], [0, 0]) is None  # (costs more than it saves)
    assert stolen([q(), q(300, rest // STEAL_COST + 1, 200)], [0, 400]) == (1, 1)  # (one more waits in its pipe)
    assert stolen([q(), q(400)], [0, 0]) is None  # the last job: its holder lints it sooner
    assert stolen([q(), q()], [0, 0]) is None
