"""Where files are analysed: in this process or in worker processes that keep their trees.

A check runs in two phases (see `runner`): every file is parsed and walked once to
summarise it, the project is linked in the main process, then each file is walked again
with the rules. Parsing is most of the cost, so a worker keeps the trees it parsed in the
first phase and the second phase sends each file back to the worker that holds its tree
(a LibCST tree is about 1 KB per line: 120 MB for the 110k lines of the Lightning sources).

A worker that dies (a segfault in the parser on absurdly deep code) fails the file it was
on with a one-line error; its files are checked again by a fresh worker. So does a worker
that spends longer than the time budget on one job (`file-timeout`): it is killed. In this
process the budget is a timer signal (`time_limit`): a process of its own for one file
would cost a fork and sending the trees back, and what runs long is our Python code, which
a signal interrupts. LibCST's native parse, which no signal interrupts, is bounded by the
nesting limits, and a file large enough for it to run for seconds goes to a worker even
alone (`runner.LOCAL_MAX_CHARS`).
"""

from __future__ import annotations

import os
import time
from collections import deque
from contextlib import contextmanager
from typing import Callable, Deque, Dict, Iterator, List, Optional, Sequence, Tuple, Union

# Jobs: ("summarise", path, text, module_name[, keep[, force]]) -> (summary JSON or None, error or None)
#       ("lint", path, text, module_name, project facts JSON[, force])
#           -> (findings, graph JSON, error, summary JSON of this walk or None,
#               the questions the walk asked the project facts: `ProjectFacts.reads`)
Job = Tuple

TIMEOUT_PREFIX = "analysis took longer than "
# A job sent to wait in a worker's pipe while it works on another must fit the pipe's
# buffer, or sending it blocks this process until that worker is free (64 KiB: Linux's
# smallest; a larger job is sent when the worker asks).
WAITING_JOB_BYTES = 64 * 1024
# A job taken from another worker's queue costs this many times its lint where the tree is
# held: its file is parsed and walked again first (the Lightning sources: parse 22%, first
# walk 26%, lint walk 30% of a cold check).
STEAL_COST = 3
# How long a worker that closed its pipe may take to exit before it is killed (`reap`).
REAP_SECONDS = 5.0


class FileTimeout(BaseException):
    """The time budget ran out (a BaseException, so that no `except Exception` on the way,
    a rule's isolation included, takes it for that code's own error)."""


def timeout_message(seconds: float) -> str:
    return (f"{TIMEOUT_PREFIX}{seconds:g} s; skipped "
            "(raise `file-timeout` in [tool.synclint] to allow more)")


def timed_out(error: Optional[str]) -> bool:
    """The error is the time budget's: it says how long this run allowed, not what the file
    is, so it is never cached."""
    return bool(error) and error.startswith(TIMEOUT_PREFIX)


def failed(job: Job, message: str):
    """The result of a job that produced nothing but an error for its file."""
    return (None, message) if job[0] == "summarise" else ([], None, message, None, [])


# After the budget, the timer fires again this often until its exception gets through: one
# that finds the stack at the recursion limit (a long chain's walk) raises RecursionError
# instead, which the code it lands in may take for its own error.
RETRY_S = 0.1


@contextmanager
def time_limit(seconds: Optional[float]):
    """Raise FileTimeout in this thread after `seconds` (SIGALRM), and every RETRY_S after
    that until it is raised. Only the main thread can take a signal: elsewhere (an editor's
    analysis thread) the code runs unbounded."""
    import signal
    import threading

    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise FileTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    outer, interval = signal.setitimer(signal.ITIMER_REAL, seconds, RETRY_S)
    if outer and outer <= seconds:  # the host's own timer (a test runner's) ends sooner: leave it be
        signal.setitimer(signal.ITIMER_REAL, outer, interval)
        signal.signal(signal.SIGALRM, previous)
        yield
        return
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # the host's timer goes on with what was left of it
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 1e-3), interval)


class Worker:
    """Analyses files in the calling process; keeps each first-phase result until its lint."""

    def __init__(self, codes: Sequence[str], built: Optional[Callable[[], None]] = None) -> None:
        """`built()`: called when a tree is built, before it is walked (`engine.analyse`)."""
        from synclint.registry import all_rules

        by_code = {r.CODE: r for r in all_rules()}
        self.rules = tuple(by_code[c] for c in codes)
        self.held: Dict[str, object] = {}
        self.built = built

    def do(self, job: Job, budget: Optional[float] = None):
        """`budget`: seconds this job may take in this process (see `time_limit`). A job
        that ends past it is a timeout, whatever it returned: where the timer's exception
        came as a RecursionError, the code it met may have made an error of it (a rule's
        internal error, "nesting too deep")."""
        start = time.monotonic()
        try:
            with time_limit(budget):
                if job[0] == "summarise":
                    out = self._summarise(*job[1:])
                else:
                    out = self._lint(*job[1:])
        except FileTimeout:
            out = None
        except Exception as e:  # noqa: BLE001 - one file's internal error must not end the run
            out = failed(job, f"internal error in synclint ({type(e).__name__}: {e}); please report it")
        if out is None or (budget and time.monotonic() - start >= budget):
            self.held.pop(job[1], None)  # a tree left half-walked
            return failed(job, timeout_message(budget))
        return out

    def _summarise(self, path: str, text: str, module_name: str, keep: bool = True, force: bool = False):
        from synclint.engine import LintError, analyse, might_fire

        try:
            a = analyse(text, path, module_name, force, built=self.built)
        except LintError as e:
            return None, str(e)
        if a is None:
            return _names_only(text, module_name), None
        if keep and (force or might_fire(text)):  # a file to lint next: its tree waits here for the second phase
            self.held[path] = a
        return a.summary.to_json(), None

    def _lint(self, path: str, text: str, module_name: str, project: Optional[dict], force: bool = False):
        from synclint.engine import LintError, analyse, lint_analysis, might_fire
        from synclint.semantic.facts import ProjectFacts

        a = self.held.get(path)  # kept: a second linking round may lint the file again
        if not force and not might_fire(text):
            return [], None, None, None, []  # summarised for others; no rule can fire here
        if a is None:
            try:
                a = analyse(text, path, module_name, force, built=self.built)
            except LintError as e:
                return [], None, str(e), None, []
            if a is None:
                return [], None, None, None, []
            self.held[path] = a
        facts = ProjectFacts.from_json(project) if project else ProjectFacts()
        facts.record()
        try:
            findings, graph, summary = lint_analysis(a, self.rules, facts)
        except LintError as e:
            return [], None, str(e), None, []
        reads = sorted(list(k) for k in facts.reads)
        return [f.to_cache() for f in findings], graph.to_json(), None, summary.to_json(), reads


def _names_only(text: str, module_name: str) -> Optional[dict]:
    """The summary of a file the prefilter skips (a config of plain dicts): only the class
    names it builds components by (`registries.type_names`), where it names any."""
    from synclint.semantic.facts import ModuleSummary
    from synclint.semantic.registries import type_names

    names = type_names(text)
    return ModuleSummary(module_name, type_names=names).to_json() if names else None


def _serve(conn, codes: Union[Sequence[str], Callable[[], Sequence[str]]], inherited: Sequence = ()) -> None:
    """A worker process: one job at a time from the pipe, until it is closed.

    `inherited` are the main process's pipe ends that a forked worker holds copies of (its
    own pipe's and the other workers'): closed at once, or a killed run would leave workers
    waiting forever on pipes that they themselves keep open."""
    for c in inherited:
        c.close()
    import gc

    if callable(codes):
        collect_less()  # before LibCST is imported (see there)
        try:
            worker = Worker(codes(), gc.freeze)
        except Exception as e:  # noqa: BLE001 - the main process raises it
            sent(conn, ("failed", e))
            return
        if not sent(conn, ("ready", None)):
            return
    else:
        worker = Worker(codes, gc.freeze)
    serve(conn, worker.do)
    # Nothing to flush, nothing to free: the interpreter's own exit freed the trees this
    # worker holds one object at a time, 0.2 s of a cold check spent waiting on it.
    os._exit(0)


def collect_less(per_job: bool = False) -> None:
    """Each parse makes some hundred thousand objects; with the default threshold (700) the
    collector ran constantly and re-scanned the imported modules: frozen, and run ten times
    less often, 5-8% less CPU for the same peak memory (the lightning sources). In the main
    process, set before LibCST is imported: its import alone ran the collector for 10 ms.

    `per_job`: not by allocation count at all, but once after each job (`after_job`), as in
    a worker (`serve`): for a process that ends with its one check. Its main process keeps
    what it makes to the end (summaries, facts: of its 240,000 objects that end as garbage,
    the collector had freed 20,000 on the way, for 0.13 s of 1.7 s on the Lightning tree,
    the same peak); where it analyses the files itself (`-j 1`, a few files) the per-job
    collection took 8.3 s of CPU where the thresholds' took 9.8 s (peak 292 MB, was 286)."""
    import gc

    gc.freeze()
    gc.set_threshold(10000, 50, 1000)
    if per_job:
        gc.disable()


def after_job() -> None:
    """Where the collector runs once per job (`collect_less(per_job=True)`, `serve`): the
    job's cyclic garbage (its walks' models) is freed, and what it keeps is frozen."""
    import gc

    if not gc.isenabled():
        gc.collect(0)  # everything younger than the last freeze is in the youngest generation
        gc.freeze()


def serve(conn, handle) -> None:
    """Answer each job from the pipe with `handle(job)`, until the pipe closes (or sends None).

    The collector runs once per job, not by allocation count: a job's cyclic garbage (its
    walks' models) is freed when it ends, and what survives (the trees held for the second
    phase, acyclic, freed by their reference counts when dropped) is frozen, so that no
    later collection scans it again. Collections triggered by allocation re-scanned the
    held trees: a tenth of a cold check's CPU on the Lightning sources; this way, a third
    of that, for the same peak memory. A `Worker` made by `_serve` freezes each tree as
    soon as it is built (`Worker.built`), so that this collection scans only what the
    walks left, not the tree too (on the Lightning sources 0.05 s of each worker's
    collections, was 0.12 s); nothing made before the tree in a job is cyclic garbage, or
    the freeze would keep it (`parse.positions.statement_rows`)."""
    collect_less(per_job=True)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        answer = handle(job)
        after_job()
        if not sent(conn, answer):
            return


def queues(jobs: Sequence[Job], n: int,
           affinity: Optional[Dict[str, int]] = None) -> Tuple[List[Deque[Job]], Deque[Job]]:
    """(each of `n` workers' own jobs, the shared ones): a path's job goes to the worker that
    `affinity` says holds its tree, the largest first, so that the work left when another
    worker runs out is the smaller files, which it may take (`stolen`): the jobs end nearly
    together. Jobs without a holder are shared, in their order."""
    own: List[Deque[Job]] = [deque() for _ in range(n)]
    shared: Deque[Job] = deque()
    for job in sorted(jobs, key=lambda j: -len(j[2])) if affinity else jobs:
        w = (affinity or {}).get(job[1])
        (own[w] if w is not None else shared).append(job)
    return own, shared


def stolen(own: Sequence[Deque[Job]], waiting: Sequence[int]) -> Optional[Tuple[int, int]]:
    """(worker, index in its queue) of the job a worker with none left takes from another's
    queue (`waiting`: the size of the jobs each worker has been sent and not begun), or None.
    The file's tree is parsed and walked again there (`STEAL_COST`): a job is taken only
    where the rest of that worker's work outlasts it, and the smallest. At a wave's end on
    the Lightning sources a worker took the next job of the other one's last few: 53 files,
    5% of the tree, parsed and walked twice."""
    chars = [sum(len(j[2]) for j in q) + waiting[w] for w, q in enumerate(own)]
    held = [w for w in range(len(own)) if own[w]]
    if not held:
        return None
    w = max(held, key=chars.__getitem__)
    q = own[w]
    k = min(range(len(q)), key=lambda k: len(q[k][2]))
    size = len(q[k][2])
    return (w, k) if STEAL_COST * size <= chars[w] - size else None


def sent(conn, message) -> bool:
    """Send `message` to the main process; False where it has closed its end of the pipe
    (its run ended, with this worker's answer no longer wanted): the worker then stops
    quietly, instead of printing a BrokenPipeError traceback on the user's terminal."""
    try:
        conn.send(message)
    except OSError:  # BrokenPipeError, ConnectionResetError
        return False
    return True


class Pool:
    """Worker processes with a job queue each (jobs for the trees they hold) and a shared
    one; an idle worker takes its own jobs first, then shared ones, then another's. A worker
    that dies, or that is still on a job `budget` seconds after it began, is replaced."""

    def __init__(self, n: int, codes: Union[Sequence[str], Callable[[], Sequence[str]]],
                 budget: Optional[float] = None) -> None:
        """`codes`: the rules' codes, or a function that selects them, called in each worker:
        LibCST and the rules are then imported there while this process goes on (its own
        work overlaps theirs), and an error of the selection is raised here when the first
        result is awaited. A function needs the fork start method (it is not pickled)."""
        import multiprocessing as mp

        if not callable(codes):
            import libcst  # noqa: F401 - imported once here, inherited by forked workers

        self._mp = mp.get_context("fork" if forks() else mp.get_all_start_methods()[0])
        self.codes = codes if callable(codes) else list(codes)
        self.budget = budget
        self.procs: List = []
        self.conns: List = []
        self.greeted: List[bool] = []  # the worker said its rules are imported (a function's codes)
        self.grow(n)

    def grow(self, n: int) -> None:
        """Have `n` workers (more jobs than the first run of few)."""
        for i in range(len(self.procs), n):
            self.procs.append(None)
            self.conns.append(None)
            self.greeted.append(False)
            self._start(i)

    def _start(self, i: int) -> None:
        parent, child = self._mp.Pipe()
        # the main process's ends it inherits: its own pipe's and the other workers'
        inherited = [c for c in self.conns if c is not None] + [parent]
        p = self._mp.Process(target=_serve, args=(child, self.codes, inherited), daemon=True)
        p.start()
        child.close()
        self.procs[i], self.conns[i] = p, parent
        self.greeted[i] = not callable(self.codes)

    def run(self, jobs: Sequence[Job], affinity: Optional[Dict[str, int]] = None,
            prepare: Optional[Callable[[Job], Job]] = None) -> Iterator[Tuple[int, Job, object]]:
        """Yield (worker index, job, result) as jobs finish; `affinity` sends a path's job to
        the worker that holds its tree. `prepare(job)` completes a job before it is sent, or
        drops it (None: no result is yielded for it).

        A worker has its next job in its pipe while it works on one (when that job is small
        enough to wait there without blocking this process), and the job after that is
        completed and pickled meanwhile: what this process does for a job and with a
        result (two milliseconds, over some thousand jobs a tenth of a cold check's wall
        time when the workers waited for it) overlaps their work."""
        from multiprocessing.connection import wait
        from multiprocessing.reduction import ForkingPickler

        n = len(self.procs)
        own, shared = queues(jobs, n, affinity)
        sent: List[Deque[Job]] = [deque() for _ in range(n)]  # per worker, oldest first
        deadline: Dict[int, float] = {}  # per worker: when its oldest job's budget ends

        def begun(i: int) -> None:
            """Worker i begins its oldest job now: that job's budget starts."""
            deadline[i] = time.monotonic() + (self.budget or float("inf"))

        completed: Dict[int, Tuple[Job, bytes]] = {}  # id(queued job) -> (it completed, pickled)

        def queue_for(i: int) -> Deque[Job]:
            """Worker i's own jobs, else the shared ones, else one it may take from another
            worker (`steal`); an empty queue where it waits."""
            return own[i] if own[i] else shared if shared else steal(i)

        def steal(i: int) -> Deque[Job]:
            """Another worker's queue, with the job worker i takes from it first (`stolen`),
            or its own, empty: it waits."""
            found = stolen(own, [sum(len(j[2]) for j in list(q)[1:]) for q in sent])
            if found is None:
                return own[i]
            w, k = found
            if k:
                job = own[w][k]
                del own[w][k]
                own[w].appendleft(job)
            return own[w]

        def complete(job: Job) -> Tuple[Optional[Job], bytes]:
            done = prepare(job) if prepare is not None else job
            return done, ForkingPickler.dumps(done) if done is not None else b""

        def next_for(i: int) -> Optional[Tuple[Deque[Job], Job, bytes]]:
            """The queue worker i takes from next and its first job, completed; the jobs
            `prepare` drops (None) are dropped from their queues on the way."""
            while True:
                q = queue_for(i)
                if not q:
                    return None
                done = completed.get(id(q[0]))
                if done is None:
                    done = completed[id(q[0])] = complete(q[0])
                if done[0] is not None:
                    return q, done[0], done[1]
                completed.pop(id(q.popleft()))

        def feed(i: int) -> None:
            """Send worker i a job if it has none, and one more to wait in its pipe."""
            while len(sent[i]) < 2:
                found = next_for(i)
                if found is None:
                    return
                q, job, data = found
                if sent[i] and len(data) > WAITING_JOB_BYTES:
                    return  # sent once the worker is free
                completed.pop(id(q.popleft()))
                if not sent[i]:
                    begun(i)
                sent[i].append(job)
                try:
                    self.conns[i].send_bytes(data)
                except OSError:  # its end of the pipe closed: the worker has gone
                    if len(sent[i]) > 1:
                        return  # on the job before this one: `run` sees it go and reports that one
                    reap(self.procs[i])
                    restart(i)  # between two jobs: this one goes to the worker in its place

        def ahead(i: int) -> None:
            """Complete the job worker i will take next, while it works."""
            next_for(i)

        def restart(i: int) -> None:
            """A new worker in the place of worker i, which has gone."""
            self.conns[i].close()
            shared.extendleft(reversed(sent[i]))  # sent but never begun: any worker runs them
            sent[i].clear()
            shared.extend(own[i])  # its trees are gone: any worker re-parses them
            own[i].clear()
            self._start(i)

        def replace(i: int, message: str):
            """Worker i failed on the job it was on: that job's result is `message`."""
            job = sent[i].popleft()
            restart(i)
            feed(i)
            for w in range(n):  # (its jobs are shared now: a worker left waiting takes some)
                if not sent[w]:
                    feed(w)
            return i, job, failed(job, message)

        for i in range(n):
            feed(i)
        for i in range(n):
            ahead(i)
        while any(sent):
            busy = [i for i in range(n) if sent[i]]
            wait_s = max(0.0, min(deadline[i] for i in busy) - time.monotonic()) if self.budget else None
            ready = wait([self.conns[i] for i in busy] + [self.procs[i].sentinel for i in busy], wait_s)
            for i in busy:
                conn, proc = self.conns[i], self.procs[i]
                gone = proc.sentinel in ready
                if conn in ready or (gone and conn.poll()):
                    try:
                        result = conn.recv()
                    except (EOFError, OSError):  # its end of the pipe closed: it is exiting
                        result, gone = None, True
                    if result is not None and not self.greeted[i]:
                        self.greeted[i] = True
                        if result[1] is not None:
                            raise result[1]  # the selection failed (a configuration error)
                        continue
                    if result is not None:
                        job = sent[i].popleft()
                        begun(i)  # the one that waited in its pipe, if any
                        feed(i)
                        yield i, job, result
                        ahead(i)
                        continue
                if gone or not proc.is_alive():
                    yield replace(i, f"cannot analyse: synclint's worker died on this file (exit code {reap(proc)})")
                elif time.monotonic() >= deadline[i]:
                    proc.kill()
                    proc.join()
                    yield replace(i, timeout_message(self.budget))

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
                conn.close()
            except OSError:
                pass
        for p in self.procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def reap(proc) -> Optional[int]:
    """The exit code of a worker whose pipe or sentinel says it has gone. A process's files
    close as it exits, before the kernel lets it be reaped: read at once, the code may not
    be there yet (None), so it is waited for. One that closed its pipe and lives on is killed."""
    proc.join(REAP_SECONDS)
    if proc.exitcode is None:
        proc.kill()
        proc.join()
    return proc.exitcode


def forks() -> bool:
    """Whether workers can be forked (they then inherit this process's imports, and a
    function given to `Pool` needs no pickling)."""
    import multiprocessing as mp

    return "fork" in mp.get_all_start_methods()


def usable_cpus() -> int:
    """CPUs this process may run on (taskset, cpusets), not all the machine has."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1
