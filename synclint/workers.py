"""Where files are analysed: in this process or in worker processes that keep their trees.

A check runs in two phases (see `runner`): every file is parsed and walked once to
summarise it, the project is linked in the main process, then each file is walked again
with the rules. Parsing is most of the cost, so a worker keeps the trees it parsed in the
first phase and the second phase sends each file back to the worker that holds its tree
(a LibCST tree is about 1 KB per line: 120 MB for the 110k lines of the Lightning sources).

A worker that dies (a segfault in the parser on absurdly deep code) fails the file it was
on with a one-line error; its files are checked again by a fresh worker.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Deque, Dict, Iterator, List, Optional, Sequence, Tuple

# Jobs: ("summarise", path, text, module_name[, keep]) -> (summary JSON or None, error or None)
#       ("lint", path, text, module_name, project facts JSON)
#           -> (findings, graph JSON, error, summary JSON of this walk or None,
#               the questions the walk asked the project facts: `ProjectFacts.reads`)
Job = Tuple


class Worker:
    """Analyses files in the calling process; keeps each first-phase result until its lint."""

    def __init__(self, codes: Sequence[str]) -> None:
        from synclint.registry import all_rules

        by_code = {r.CODE: r for r in all_rules()}
        self.rules = tuple(by_code[c] for c in codes)
        self.held: Dict[str, object] = {}

    def do(self, job: Job):
        try:
            if job[0] == "summarise":
                return self._summarise(*job[1:])
            return self._lint(*job[1:])
        except Exception as e:  # noqa: BLE001 - one file's internal error must not end the run
            msg = f"internal error in synclint ({type(e).__name__}: {e}); please report it"
            return (None, msg) if job[0] == "summarise" else ([], None, msg, None, [])

    def _summarise(self, path: str, text: str, module_name: str, keep: bool = True):
        from synclint.engine import LintError, analyse, might_fire

        try:
            a = analyse(text, path, module_name)
        except LintError as e:
            return None, str(e)
        if a is None:
            return None, None
        if keep and might_fire(text):  # a file to lint next: its tree waits here for the second phase
            self.held[path] = a
        return a.summary.to_json(), None

    def _lint(self, path: str, text: str, module_name: str, project: Optional[dict]):
        from synclint.engine import LintError, analyse, lint_analysis, might_fire
        from synclint.semantic.facts import ProjectFacts

        a = self.held.get(path)  # kept: a second linking round may lint the file again
        if not might_fire(text):
            return [], None, None, None, []  # summarised for others; no rule can fire here
        if a is None:
            try:
                a = analyse(text, path, module_name)
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


def _serve(conn, codes: Sequence[str], inherited: Sequence = ()) -> None:
    """A worker process: one job at a time from the pipe, until it is closed.

    `inherited` are the main process's pipe ends that a forked worker holds copies of (its
    own pipe's and the other workers'): closed at once, or a killed run would leave workers
    waiting forever on pipes that they themselves keep open."""
    import gc

    for c in inherited:
        c.close()
    worker = Worker(codes)
    # Each parse makes some hundred thousand objects; with the default threshold (700) the
    # collector ran constantly and re-scanned the imported modules: frozen, and run ten
    # times less often, 5-8% less CPU for the same peak memory (the lightning sources).
    gc.freeze()
    gc.set_threshold(10000, 50, 1000)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        conn.send(worker.do(job))


class Pool:
    """Worker processes with a job queue each (jobs for the trees they hold) and a shared
    one; an idle worker takes its own jobs first, then shared ones, then another's."""

    def __init__(self, n: int, codes: Sequence[str]) -> None:
        import multiprocessing as mp

        import libcst  # noqa: F401 - imported once here, inherited by forked workers

        methods = mp.get_all_start_methods()
        self._mp = mp.get_context("fork" if "fork" in methods else methods[0])
        self.codes = list(codes)
        self.procs: List = [None] * n
        self.conns: List = [None] * n
        for i in range(n):
            self._start(i)

    def _start(self, i: int) -> None:
        parent, child = self._mp.Pipe()
        # the main process's ends it inherits: its own pipe's and the other workers'
        inherited = [c for c in self.conns if c is not None] + [parent]
        p = self._mp.Process(target=_serve, args=(child, self.codes, inherited), daemon=True)
        p.start()
        child.close()
        self.procs[i], self.conns[i] = p, parent

    def run(self, jobs: Sequence[Job], affinity: Optional[Dict[str, int]] = None) -> Iterator[Tuple[int, Job, object]]:
        """Yield (worker index, job, result) as jobs finish; `affinity` sends a path's job to
        the worker that holds its tree."""
        from multiprocessing.connection import wait

        n = len(self.procs)
        own: List[Deque[Job]] = [deque() for _ in range(n)]
        shared: Deque[Job] = deque()
        for job in jobs:
            w = (affinity or {}).get(job[1])
            (own[w] if w is not None else shared).append(job)
        busy: Dict[int, Job] = {}

        def feed(i: int) -> None:
            q = own[i] if own[i] else shared if shared else max(own, key=len)
            if q:
                job = q.popleft()
                busy[i] = job
                self.conns[i].send(job)

        for i in range(n):
            feed(i)
        while busy:
            ready = wait([self.conns[i] for i in busy] + [self.procs[i].sentinel for i in busy])
            for i in list(busy):
                conn, proc = self.conns[i], self.procs[i]
                if conn in ready or (proc.sentinel in ready and conn.poll()):
                    try:
                        result = conn.recv()
                    except (EOFError, OSError):
                        result = None
                    if result is not None:
                        job = busy.pop(i)
                        yield i, job, result
                        feed(i)
                        continue
                if proc.sentinel in ready or not proc.is_alive():
                    job = busy.pop(i)
                    code = proc.exitcode
                    msg = f"cannot analyse: synclint's worker died on this file (exit code {code})"
                    yield i, job, ((None, msg) if job[0] == "summarise" else ([], None, msg, None, []))
                    shared.extend(own[i])  # its trees are gone: any worker re-parses them
                    own[i].clear()
                    self._start(i)
                    feed(i)

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


def usable_cpus() -> int:
    """CPUs this process may run on (taskset, cpusets), not all the machine has."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1
