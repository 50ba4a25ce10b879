"""The language server's analysis process: one warm worker that runs the server's jobs
(`synclint.frontends.lsp_analysis`) one at a time, so that parsing and linting never hold the
event loop (LibCST's parser keeps the GIL for the whole parse: a thread would not do).

A job whose result is no longer wanted (the buffer changed) is interrupted with SIGUSR1:
the worker raises `Cancelled` at its next bytecode and stays warm for the next job. A job
that runs past the time budget, or a worker that dies (a crash in the parser), costs a
fresh worker, started when the next job comes."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import Any, Optional, Tuple

_INTERRUPT = getattr(signal, "SIGUSR1", None)  # None on Windows: stale jobs then run to the end


class Cancelled(BaseException):
    """Raised in the worker when its job is interrupted (a BaseException, so that no
    `except Exception` in the analysis swallows it)."""


_busy = False  # in the worker: a job is running (an interrupt between jobs is ignored)


def _on_interrupt(signum, frame) -> None:
    if _busy:
        raise Cancelled


def _run(job: Tuple, memory) -> Tuple[str, Any]:
    """("ok", result), ("cancelled", None) or ("error", message) for one job; `memory`: what
    the worker keeps between its jobs (`lsp_analysis.Memory`)."""
    global _busy
    from synclint.frontends import lsp_analysis

    kind, args = job[0], job[1:]
    try:
        try:
            _busy = True
            if kind == "analyse":
                return "ok", lsp_analysis.analyse_buffer(*args, memory=memory)
            if kind == "fix_all":
                return "ok", lsp_analysis.fix_all_buffer(*args, memory=memory)
            return "error", f"unknown job {kind!r}"
        finally:
            _busy = False
    except Cancelled:
        return "cancelled", None
    except Exception as e:  # noqa: BLE001 - one buffer's internal error must not end the server
        return "error", f"internal error in synclint ({type(e).__name__}: {e}); please report it"


def _serve(conn) -> None:
    """The worker process's loop: a job from the pipe, its reply, until the pipe closes."""
    from synclint.run.workers import serve

    os.dup2(2, 1)  # stdout is the LSP stream: a stray print here must not corrupt it
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the editor's Ctrl-C is for the server
    if _INTERRUPT is not None:
        signal.signal(_INTERRUPT, _on_interrupt)
    from synclint.frontends.lsp_analysis import Memory

    memory = Memory()
    _run(("analyse", "import torch\n", None), memory)  # warm up: imports and the parser
    serve(conn, lambda job: _run(job, memory))


class AnalysisWorker:
    """The server's side: `await run(job)` -> ("ok", result) | ("cancelled", None) |
    ("error", message). One job at a time; cancelling the awaiting task interrupts the job."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self._proc = None
        self._conn = None
        self._lock: Optional[asyncio.Lock] = None
        self._start_lock = threading.Lock()

    def start(self) -> None:
        """Start the process now (it warms up while the editor opens its first file)."""
        import multiprocessing as mp

        with self._start_lock:
            if self._proc is not None and self._proc.is_alive():
                return
            ctx = mp.get_context("spawn")  # the server has threads: never fork it
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(child,), daemon=True, name="synclint-lsp-worker")
            proc.start()
            child.close()
            self._proc, self._conn = proc, parent

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.is_alive():
            proc.kill()
            proc.join(5)

    def _roundtrip(self, job: Tuple) -> Tuple[str, Any]:
        """In a thread: send the job, wait for its reply within the budget."""
        self.start()
        conn, proc = self._conn, self._proc
        try:
            conn.send(job)
            if conn.poll(self.budget_s):
                return conn.recv()
        except (EOFError, OSError):
            self.stop()
            return "error", f"internal error in synclint (the analysis process died, exit code {proc.exitcode}); please report it"
        self.stop()  # over the budget: a fresh worker takes the next job
        return "error", f"analysis stopped after {self.budget_s:g} s (the time budget); nothing reported for this file"

    async def run(self, job: Tuple) -> Tuple[str, Any]:
        loop = asyncio.get_running_loop()
        if self._lock is None:
            self._lock = asyncio.Lock()
        await self._lock.acquire()
        try:
            reply = loop.run_in_executor(None, self._roundtrip, job)
        except BaseException:
            self._lock.release()
            raise
        reply.add_done_callback(lambda _: self._lock.release())  # the next job waits for this reply
        try:
            return await asyncio.shield(reply)
        except asyncio.CancelledError:
            self.interrupt()
            raise

    def interrupt(self) -> None:
        proc = self._proc
        if _INTERRUPT is not None and proc is not None and proc.pid is not None:
            try:
                os.kill(proc.pid, _INTERRUPT)
            except OSError:
                pass
