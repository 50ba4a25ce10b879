#!/usr/bin/env python3
"""Record which lines of each fixture really synchronize, on a CUDA machine.

Every `fixtures/*.py` (not the `.fixed.py` twins) runs as `__main__` (runpy, a fresh
namespace, its absolute path, so the working directory does not matter) under
`torch.cuda.set_sync_debug_mode("warn")` with `warnings.simplefilter("always")` (warn mode
is otherwise deduplicated per line). A `warnings.showwarning` hook takes each "called a
synchronizing CUDA operation" warning and walks the Python stack outwards to the innermost
frame that belongs to the fixture file: that line synced.

    python scripts/record_syncs.py tests/data/gpu-sync-record.json [--fixtures DIR] [--isolate] [NAME ...]

Output: {"meta": {...}, "fixtures": {"SYN101.py": {"synced_lines": [..], "counts": {"12": 3},
"unattributed": 0, "error": null}}}. tests/test_gpu_record.py checks the fixtures' `# error:`
marks against it. The debug mode cannot see `torch.cuda.synchronize()`, `Event.synchronize()`
and pageable `non_blocking` copies (sync-catalogue section 1); those lines are simply absent.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import hashlib
import io
import json
import os
import platform
import runpy
import socket
import subprocess
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

SYNC_WARNING = "called a synchronizing CUDA operation"
ROOT = Path(__file__).resolve().parent.parent
STAND_INS = Path(__file__).resolve().parent / "stand_ins"  # see its README.md


def fixture_paths(folder: Path, names: Optional[List[str]] = None) -> List[Path]:
    paths = sorted(p for p in folder.glob("*.py") if not p.name.endswith(".fixed.py"))
    if names:
        wanted = {n if n.endswith(".py") else n + ".py" for n in names}
        paths = [p for p in paths if p.name in wanted]
    return paths


def _same_file(a: str, b: str) -> bool:
    return os.path.normcase(os.path.realpath(a)) == b


def innermost_fixture_line(target: str, start_depth: int = 1) -> Optional[int]:
    """Line of the innermost stack frame whose code comes from the file `target`."""
    frame = sys._getframe(start_depth)
    while frame is not None:
        if _same_file(frame.f_code.co_filename, target):
            return frame.f_lineno
        frame = frame.f_back
    return None


def record_one(path: Path, torch: Any) -> Dict[str, Any]:
    """Run one fixture under the sync debug mode; the lines that synced."""
    target = os.path.normcase(os.path.realpath(str(path)))
    counts: Dict[int, int] = {}
    unattributed = 0
    error: Optional[str] = None

    def hook(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        nonlocal unattributed
        if SYNC_WARNING not in str(message):
            return
        row = innermost_fixture_line(target, 2)
        if row is None:
            unattributed += 1
        else:
            counts[row] = counts.get(row, 0) + 1

    old_argv, old_path = sys.argv[:], sys.path[:]
    torch.manual_seed(0)
    torch.cuda.synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = hook
        sink = io.StringIO()
        try:
            sys.argv = [str(path)]
            sys.path.insert(0, str(path.parent))
            sys.path.append(str(STAND_INS))  # trackers not installed here (an installed one wins)
            torch.cuda.set_sync_debug_mode("warn")
            with contextlib.redirect_stdout(sink):
                runpy.run_path(str(path), run_name="__main__")
        except SystemExit as e:
            if e.code not in (0, None):
                error = f"SystemExit({e.code!r})"
        except BaseException as e:  # noqa: BLE001 - recorded per fixture
            tb = [f for f in traceback.extract_tb(e.__traceback__) if _same_file(f.filename, target)]
            where = f" (line {tb[-1].lineno})" if tb else ""
            error = f"{type(e).__name__}: {e}{where}"[:500]
        finally:
            torch.cuda.set_sync_debug_mode("default")
            sys.argv, sys.path[:] = old_argv, old_path
    try:
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - e.g. a device-side assert
        error = error or f"{type(e).__name__} after the run: {e}"[:500]
    return {
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "synced_lines": sorted(counts),
        "counts": {str(k): v for k, v in sorted(counts.items())},
        "unattributed": unattributed,
        "error": error,
    }


def meta(torch: Any) -> Dict[str, Any]:
    return {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "mode": "set_sync_debug_mode('warn') + warnings.simplefilter('always'); innermost fixture frame per warning",
    }


def record_all(paths: List[Path], isolate: bool = False, say=print) -> Dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("record_syncs.py needs a CUDA device (the debug mode only sees CUDA syncs)")
    out: Dict[str, Any] = {"meta": meta(torch), "fixtures": {}}
    for p in paths:
        if isolate:
            res = _record_in_subprocess(p)
        else:
            res = record_one(p, torch)
        out["fixtures"][p.name] = res
        flag = f"  ERROR {res['error']}" if res["error"] else ""
        say(f"{p.name:40s} synced lines {res['synced_lines']}{flag}")
    return out


def _record_in_subprocess(path: Path) -> Dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--single", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"synced_lines": [], "counts": {}, "unattributed": 0, "error": f"subprocess exit {proc.returncode}: {tail[0]}"[:500]}


def write_atomic(path: Path, text: str) -> None:
    sys.path.insert(0, str(ROOT))  # the repo's synclint, on the GPU machine too
    from synclint.atomic import write_text_atomic

    write_text_atomic(path, text)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", nargs="?", help="where to write the JSON record")
    ap.add_argument("names", nargs="*", help="only these fixtures (e.g. SYN101.py)")
    ap.add_argument("--fixtures", type=Path, default=ROOT / "fixtures", help="fixture folder (default: the repo's)")
    ap.add_argument("--isolate", action="store_true", help="one subprocess per fixture (a device-side assert cannot poison the rest)")
    ap.add_argument("--single", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.single:
        import torch

        print(json.dumps(record_one(a.single.resolve(), torch)))
        return 0
    if not a.output:
        ap.error("the output path is required")
    paths = fixture_paths(a.fixtures.resolve(), a.names)
    if not paths:
        print(f"no fixtures in {a.fixtures}", file=sys.stderr)
        return 2
    data = record_all(paths, isolate=a.isolate)
    write_atomic(Path(a.output), json.dumps(data, indent=2) + "\n")
    errors = [n for n, r in data["fixtures"].items() if r["error"]]
    print(f"recorded {len(paths)} fixture(s) to {a.output}" + (f"; {len(errors)} raised: {', '.join(errors)}" if errors else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
