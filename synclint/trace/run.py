"""Run the user's program in this interpreter under interception, for a bounded window.

The program runs as `__main__` (runpy), with its own `sys.argv` and `sys.path[0]`, the way
`python script.py` / `python -m module` would run it. A step is one `optimizer.step()` of
any `torch.optim` optimizer (torch's global step hook): `--warmup` steps run unrecorded
(first-use kernel loading and cudnn autotuning block the host but are not the program's
steady state), `--steps` ends the window, `--time-limit` ends it on the clock. Ending the
window stops the program (SystemExit raised from the step hook, a KeyboardInterrupt from
the timer) and the trace keeps what was recorded.
"""

from __future__ import annotations

import _thread
import datetime as _dt
import os
import platform
import runpy
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from synclint.trace.schema import Trace

# Host-side CUDA runtime calls that block until the GPU catches up, as the profiler names
# them (HTA's BLOCKING_SYNC_CALLS less cudaEventQuery, which polls).
PROFILER_SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                       "cudaMemcpy", "cudaMemcpyAsync")


class TraceUnavailable(Exception):
    """Nothing can be traced here (no torch, no CUDA device): one line for the user."""


class _WindowClosed(BaseException):
    """Raised from the step hook to end the program once `--steps` steps are recorded."""


@dataclass
class Options:
    program: List[str]  # [script, args...] or ["-m", module, args...]
    roots: Sequence[str] = ()
    steps: Optional[int] = None
    warmup: int = 0
    time_limit: Optional[float] = None
    cross_check: bool = False  # also run the profiler and record its sync-call time
    lines: bool = True  # also record which lines of the user's files ran (lines.py)
    compile_only: bool = False  # record Dynamo's graph breaks and recompilations only: no GPU needed


@dataclass
class _Window:
    steps: int = 0
    started: Optional[float] = None
    ended: Optional[float] = None
    stopped: str = "end"
    timer_fired: bool = False
    profiler: Any = None
    hooks: List[Any] = field(default_factory=list)


def program_argv(command: Sequence[str]) -> List[str]:
    """`python train.py --lr 1` / `train.py --lr 1` / `python -m pkg.mod` -> what runs."""
    args = list(command)
    if args and os.path.basename(args[0]).startswith("python") and not args[0].endswith(".py"):
        args = args[1:]
    if not args:
        raise TraceUnavailable("no program given: synclint trace [OPTIONS] -- python script.py [ARGS]")
    if args[0] == "-m":
        if len(args) < 2:
            raise TraceUnavailable("-m needs a module name")
        return args
    if args[0].startswith("-"):
        raise TraceUnavailable(f"{args[0]}: only a script or -m module can be traced")
    if not os.path.isfile(args[0]):
        raise TraceUnavailable(f"{args[0]}: no such file")
    return args


def run(options: Options) -> Trace:
    from synclint.trace.intercept import acquire, cuda_state, release
    from synclint.trace.frames import UserCode
    from synclint.trace.lines import LineRecorder
    from synclint.trace.dynamo import HOOK, DynamoRecorder, compile_record
    from synclint.trace.record import Recorder

    reason = None if options.compile_only else cuda_state()
    if reason:
        hint = " (--compile-only records graph breaks without one)" if reason.startswith("no CUDA") else ""
        raise TraceUnavailable(reason + hint)
    from synclint.torch_import import import_torch

    try:
        torch = import_torch()
    except ImportError:
        raise TraceUnavailable("torch is not installed (pip install 'synclint[trace]')") from None

    program = program_argv(options.program)
    roots = tuple(os.path.realpath(r) for r in (options.roots or [os.getcwd()]))
    recorder = Recorder(roots)
    recorder.recording = False  # open_window starts it, after its own synchronize
    window = _Window()
    user = UserCode(roots)
    line_recorder = LineRecorder(user) if options.lines else None

    def open_window() -> None:
        if not options.compile_only:
            torch.cuda.synchronize()  # warm-up work must not be charged to the first recorded sync
            if interceptor is not None and interceptor.clock is not None:
                interceptor.clock.latency = _report_latency(torch, interceptor)
        recorder.recording = True
        if line_recorder is not None:
            line_recorder.start()
        if options.cross_check:
            window.profiler = _start_profiler(torch)
        window.started = time.perf_counter()

    def on_step(*_: Any) -> None:
        window.steps += 1
        if window.steps == options.warmup and options.warmup:
            open_window()
        elif options.steps is not None and window.steps >= options.warmup + options.steps:
            window.stopped = "steps"
            raise _WindowClosed()
        elif window.timer_fired:  # the timer's interrupt was lost (it landed in a torch callback, which swallows it)
            window.stopped = "time-limit"
            raise _WindowClosed()

    from torch.optim.optimizer import register_optimizer_step_post_hook

    window.hooks.append(register_optimizer_step_post_hook(on_step))
    timer = None
    if options.time_limit:
        def out_of_time() -> None:
            window.timer_fired = True
            _thread.interrupt_main()

        timer = threading.Timer(options.time_limit, out_of_time)
        timer.daemon = True

    interceptor = None if options.compile_only else acquire(recorder, user=user)
    dynamo = DynamoRecorder().__enter__()  # the graph breaks and recompilations, the whole run (not only the window)
    exit_code = 0
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    wall_start = time.perf_counter()
    try:
        if not options.warmup:
            open_window()
        if timer:
            timer.start()
        exit_code = _run_program(program)
    except _WindowClosed:
        pass
    except KeyboardInterrupt:
        if not window.timer_fired:
            raise
        window.stopped = "time-limit"
    except BaseException as e:  # the program's own error: the user's traceback, then the trace
        traceback.print_exc()
        window.stopped, exit_code = "error", 1
        dynamo.take_error(e)  # a graph break under fullgraph=True is one
    finally:
        if timer:
            timer.cancel()
        window.ended = time.perf_counter()
        recorder.recording = False
        if line_recorder is not None:
            line_recorder.stop()
        for h in window.hooks:
            h.remove()
        sys.argv[:], sys.path[:] = saved_argv, saved_path
        profile = _stop_profiler(window.profiler) if window.profiler is not None else None
        timing = _timing(interceptor) if interceptor is not None else None
        if interceptor is not None:
            release(recorder)
        dynamo.__exit__(None, None, None)
    started = window.started if window.started is not None else window.ended
    meta: Dict[str, Any] = {
        "command": list(options.program),
        "root": roots[0],
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "synclint": _version(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": None if options.compile_only else torch.cuda.get_device_name(0),
        "detector": None if options.compile_only else
        "torch.cuda.set_sync_debug_mode('warn') + wrappers (device/event synchronize, pageable copies)",
        "timing": timing,
        "wall_ms": round((window.ended - started) * 1e3, 3),
        "run_ms": round((window.ended - wall_start) * 1e3, 3),
        "steps": max(0, window.steps - options.warmup),
        "warmup_steps": options.warmup,
        "stopped": window.stopped,
        "exit_code": exit_code,
        "profiler": profile,
        "lines": line_recorder.mechanism if line_recorder is not None else None,
        "compile": dynamo.error or HOOK,
        "compile_only": options.compile_only,
    }
    return Trace(meta, recorder.sites(), line_recorder.lines() if line_recorder is not None else None,
                 None if dynamo.error else compile_record(dynamo, user))


def _timing(interceptor: Any) -> str:
    """How the blocked time of the debug mode's syncs was measured (timing.py)."""
    if interceptor.clock is not None and interceptor.clock.available:
        return ("sys.monitoring: from the start of the syncing instruction, less the report's own latency "
                f"({interceptor.clock.latency * 1e6:.1f} us, measured on the idle GPU as the window opened)")
    if not hasattr(sys, "monitoring"):
        return "none: Python before 3.12 has no sys.monitoring (syncs counted, not timed)"
    return "none: no free sys.monitoring tool id (syncs counted, not timed)"


def _run_program(program: List[str]) -> int:
    try:
        if program[0] == "-m":
            sys.argv = program[1:]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(program[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = program[:]
            sys.path.insert(0, os.path.dirname(os.path.abspath(program[0])))
            runpy.run_path(program[0], run_name="__main__")
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    return 0


def _report_latency(torch: Any, interceptor: Any) -> float:
    """How late the detector's report of a sync arrives (timing.py), measured with a short
    sync on the idle GPU, with the debug mode set directly (not through the program's
    `set_sync_debug_mode`, which the detector wraps) and put back after."""
    c = torch._C
    before = c._cuda_get_sync_debug_mode()
    y = torch.ones(1, device="cuda")
    try:
        return interceptor.report_latency(y.item, c._cuda_set_sync_debug_mode)
    finally:
        c._cuda_set_sync_debug_mode(before)


def _start_profiler(torch: Any) -> Any:
    from torch.profiler import ProfilerActivity, profile

    # CUDA activity alone records the runtime calls it is asked for (cudaStreamSynchronize,
    # ...). CPU activity would also record every aten op, which makes each syncing line
    # slower by time the trace charges and the profiler's blocking calls leave out: on an
    # H100 it tripled the trace's figure for a pageable copy (23.5 -> 63.5 us).
    prof = profile(activities=[ProfilerActivity.CUDA])
    prof.start()
    return prof


def _stop_profiler(prof: Any) -> Dict[str, Any]:
    """The profiler's host time in blocking CUDA runtime calls, by call name."""
    calls: Dict[str, List[float]] = {}
    try:
        prof.stop()
        for e in prof.events():
            if e.name in PROFILER_SYNC_CALLS:
                c = calls.setdefault(e.name, [0, 0.0])
                c[0] += 1
                c[1] += e.time_range.elapsed_us() / 1e3
    except Exception as e:  # the cross-check must not cost the trace
        return {"error": f"{type(e).__name__}: {e}"}
    return {"sync_ms": round(sum(c[1] for c in calls.values()), 3),
            "calls": {k: [v[0], round(v[1], 3)] for k, v in sorted(calls.items())},
            "counted": list(PROFILER_SYNC_CALLS)}


def _version() -> str:
    from synclint.build import VERSION as __version__

    return __version__
