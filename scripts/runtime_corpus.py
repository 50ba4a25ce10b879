#!/usr/bin/env python3
"""The runtime-truth corpus: real training programs traced on a GPU, scored against the rules.

fixtures/trace/corpus/manifest.toml names each program (repository, commit, path, sha256,
license, the torchvision dataset it reads, and the files of its own repository it imports);
the programs are other people's code and are not committed. Their traces are
(fixtures/trace/corpus/<name>.json).

    python scripts/runtime_corpus.py fetch [--mirror /work/.mirror]   # materialise the programs
    python scripts/runtime_corpus.py gpu --out DIR [--time-limit 15] [--jobs 4]   # on a GPU: trace each
    python scripts/runtime_corpus.py score [--json]                    # join traces with findings
    python scripts/runtime_corpus.py exec PROGRAM [ARGS]               # run one with synthetic data

Programs land in ../synclint-runtime-corpus/<name>/main.py (SYNCLINT_RUNTIME_CORPUS moves
it), the files they import beside it where the repository has them. `exec` replaces
torchvision's MNIST/FashionMNIST/CIFAR10/CIFAR100 with FakeData of the same image size and
classes (1000 training and 500 test images, no download), gives the program an 80-column
terminal (`stty size` answers, for progress bars that ask) and runs it as `__main__` in its
own directory; `gpu` runs `exec` under `synclint trace`, which also records the lines that ran.

Scoring: each traced sync line of a program is a runtime label, except the syncs no linter
should report (a module's one-time move to the device, a checkpoint save: eval/README.md),
which are listed apart. A line a finding covers is *confirmed*, else *missed*. A finding
with no traced sync is *ran, no sync* when one of its lines ran in the window (a false
positive for this run) and *did not run* otherwise (neither confirmed nor refuted: left
out). Recall = confirmed lines / traced lines; precision = confirmed findings / (confirmed
+ ran-no-sync findings). A trace without line records (taken before they existed) counts
its unreached findings as *unknown*, outside both. SYN5xx findings (overhead, not syncs)
are not scored. A missed line's family comes from what blocked (device/event/
Stream.synchronize: 4, pageable copy: 3, a tensor formatted: 1), else "?".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import runpy
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = ROOT / "fixtures" / "trace" / "corpus"
MANIFEST = CORPUS_DIR / "manifest.toml"
PROGRAMS = Path(os.environ.get("SYNCLINT_RUNTIME_CORPUS", ROOT.parent / "synclint-runtime-corpus"))

# torchvision dataset -> (image size, classes)
DATASETS = {"MNIST": ((1, 28, 28), 10), "FashionMNIST": ((1, 28, 28), 10),
            "CIFAR10": ((3, 32, 32), 10), "CIFAR100": ((3, 32, 32), 100)}


def load_manifest() -> List[Dict[str, Any]]:
    return tomllib.loads(MANIFEST.read_text())["program"]


def program_files(p: Dict[str, Any]) -> List[Tuple[str, str, Path]]:
    """(path in the repository, sha256, where it lands) for the program and what it imports:
    the program as main.py, each imported file at its place relative to the program's folder."""
    here = PROGRAMS / p["name"]
    out = [(p["path"], p["sha256"], here / "main.py")]
    base = os.path.dirname(p["path"])
    for extra in p.get("imports", []):
        out.append((extra["path"], extra["sha256"], here / os.path.relpath(extra["path"], base or ".")))
    return out


def fetch(mirror: Path) -> int:
    bad = 0
    for p in load_manifest():
        git_dir = mirror / p["repo"].replace("/", "+") / "repo"
        for path, sha256, dest in program_files(p):
            r = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{p['commit']}:{path}"], capture_output=True)
            if r.returncode != 0:
                print(f"{p['name']}: cannot read {path} at {p['commit'][:10]} from {git_dir}", file=sys.stderr)
                bad += 1
                continue
            if hashlib.sha256(r.stdout).hexdigest() != sha256:
                print(f"{p['name']}: {path}: sha256 differs from the manifest", file=sys.stderr)
                bad += 1
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(r.stdout)
    problems = f"; {bad} files could not be materialised" if bad else ""
    print(f"{len(load_manifest())} programs in {PROGRAMS}{problems}")
    return 1 if bad else 0


def synthetic_datasets() -> None:
    """torchvision's downloadable image datasets become FakeData of the same shape."""
    import torchvision
    from torchvision.datasets import FakeData

    def stand_in(image_size, classes):
        def make(root=None, train=True, transform=None, target_transform=None, download=False, **_):
            return FakeData(size=1000 if train else 500, image_size=image_size, num_classes=classes,
                            transform=transform, target_transform=target_transform,
                            random_offset=0 if train else 10_000)
        return make

    for name, (size, classes) in DATASETS.items():
        setattr(torchvision.datasets, name, stand_in(size, classes))


def terminal_stand_in() -> None:
    """`stty size` answers "24 80" (progress bars that size themselves read it at import)."""
    import tempfile

    bin_dir = Path(tempfile.mkdtemp(prefix="synclint-corpus-bin-"))
    stty = bin_dir / "stty"
    stty.write_text("#!/bin/sh\necho 24 80\n")
    stty.chmod(0o755)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def exec_program(argv: List[str]) -> None:
    program = Path(argv[0]).resolve()
    synthetic_datasets()
    terminal_stand_in()
    os.chdir(program.parent)  # programs write checkpoints and samples beside themselves
    sys.argv = [str(program)] + argv[1:]
    sys.path.insert(0, str(program.parent))
    runpy.run_path(str(program), run_name="__main__")


def gpu(out: Path, time_limit: float, jobs: int, only: Optional[List[str]] = None) -> int:
    """Trace each program (`jobs` at a time: the labels are which lines sync, not how long)."""
    from concurrent.futures import ThreadPoolExecutor

    out.mkdir(parents=True, exist_ok=True)

    def one(p: Dict[str, Any]) -> str:
        main = PROGRAMS / p["name"] / "main.py"
        cmd = [sys.executable, "-m", "synclint", "trace", "--no-join", "--root", str(main.parent),
               "--time-limit", str(time_limit), "-o", str(out / f"{p['name']}.json"),
               "--", "python", str(Path(__file__).resolve()), "exec", str(main), *p.get("args", [])]
        r = subprocess.run(cmd, capture_output=True, text=True)
        (out / f"{p['name']}.log").write_text(r.stdout + r.stderr)
        tail = (r.stderr.strip().splitlines() or [""])[-1]
        return f"{p['name']}: exit {r.returncode}: {tail}"

    programs = [p for p in load_manifest() if not only or p["name"] in only]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for line in pool.map(one, programs):
            print(line, flush=True)
    return 0


# Syncs that are real but are not labels (eval/README.md: what no linter should report):
# one-time moves of a module to the device, checkpoints. Shown, not scored.
NOT_LABELS = {"nn/modules/module.py:to": "setup move of a module", "nn/modules/module.py:cuda": "setup move of a module",
              "nn/parallel/data_parallel.py:__init__": "setup of DataParallel",
              "torch/serialization.py:save": "checkpoint save"}


def _not_a_label(via: Optional[str]) -> Optional[str]:
    for suffix, why in NOT_LABELS.items():
        if via and via.endswith(suffix):
            return why
    return None


def _family_of_missed(site: Dict[str, Any]) -> str:
    via = site.get("via") or ""
    if site["kind"] in ("device", "event") or via.endswith(":synchronize"):
        return "4"
    if site["kind"] == "pageable-copy":
        return "3"
    if via.endswith((":__format__", ":__repr__", ":__str__")):
        return "1"
    return "?"


_TALLIES = ("confirmed_lines", "missed_lines", "confirmed_findings", "ran_no_sync", "did_not_run", "unknown")


def score() -> Dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from synclint.trace.command import static_findings
    from synclint.trace.join import CONFIRMED, MISSED, NOT_REACHED, join
    from synclint.trace.schema import load

    per_program: Dict[str, Any] = {}
    fam: Dict[str, Dict[str, int]] = {}

    def tally(family: str, key: str) -> None:
        if family == "5":  # SYN5xx: GPU overhead that is not a sync; no runtime label to meet
            return
        for f in (family, "all"):
            fam.setdefault(f, dict.fromkeys(_TALLIES, 0))[key] += 1

    excluded: List[str] = []

    for p in load_manifest():
        trace_file = CORPUS_DIR / f"{p['name']}.json"
        files = [dest for _, _, dest in program_files(p)]
        if not trace_file.exists() or not all(f.exists() for f in files):
            per_program[p["name"]] = None
            continue
        trace = load(str(trace_file))
        outcome = static_findings([str(f) for f in files if f.suffix == ".py"], str(files[0].parent), no_cache=True)
        findings, errors = outcome.findings, [str(e) for e in outcome.all_errors]
        joined = join(trace, findings, str(files[0].parent))
        counts = {CONFIRMED: 0, MISSED: 0, NOT_REACHED: 0, "did-not-run": 0}
        for row in joined.rows:
            counts[row.status] += 1
            if row.status == CONFIRMED:
                for family in sorted({f.code[3] for f in row.findings}):
                    tally(family, "confirmed_lines")
                for f in row.findings:
                    tally(f.code[3], "confirmed_findings")
            elif row.status == MISSED:
                why = _not_a_label(row.sites[0].via)
                if why:
                    excluded.append(f"{p['name']}:{row.file}:{row.line} ({why})")
                elif all(s.user for s in row.sites):
                    tally(_family_of_missed({"kind": row.sites[0].kind, "via": row.sites[0].via}), "missed_lines")
            else:
                verdict = "unknown" if row.ran is None else "ran_no_sync" if row.ran else "did_not_run"
                counts["did-not-run"] += row.ran is False
                for f in row.findings:
                    tally(f.code[3], verdict)
        per_program[p["name"]] = {**counts, "stopped": trace.meta.get("stopped"), "errors": errors}
    for t in fam.values():
        lines = t["confirmed_lines"] + t["missed_lines"]
        judged = t["confirmed_findings"] + t["ran_no_sync"]
        t["recall"] = None if not lines else round(t["confirmed_lines"] / lines, 3)
        t["precision"] = None if not judged else round(t["confirmed_findings"] / judged, 3)
    return {"programs": per_program, "families": dict(sorted(fam.items())), "not_labels": excluded}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    g = sub.add_parser("gpu")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--time-limit", type=float, default=15.0)
    g.add_argument("--jobs", type=int, default=1, help="programs traced at once")
    g.add_argument("--only", nargs="*", help="these programs only (names)")
    s = sub.add_parser("score")
    s.add_argument("--json", action="store_true")
    e = sub.add_parser("exec")
    e.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.cmd == "fetch":
        return fetch(a.mirror)
    if a.cmd == "gpu":
        return gpu(a.out, a.time_limit, a.jobs, a.only)
    if a.cmd == "exec":
        exec_program(a.program)
        return 0
    result = score()
    if a.json:
        print(json.dumps(result, indent=1))
        return 0
    for name, r in result["programs"].items():
        print(f"{name:30s} " + ("(no trace or program)" if r is None else
                                f"confirmed {r['confirmed']}, missed {r['missed']}, no sync {r['not-reached']} "
                                f"(did not run {r['did-not-run']}), stopped {r['stopped']}"))
    print(f"{'family':8s} {'recall':>8s} {'precision':>10s}  sync lines confirmed/missed; "
          "findings confirmed/ran-no-sync/did-not-run/unknown")
    for family, t in result["families"].items():
        rec = "-" if t["recall"] is None else f"{100 * t['recall']:.0f}%"
        pr = "-" if t["precision"] is None else f"{100 * t['precision']:.0f}%"
        print(f"{family:8s} {rec:>8s} {pr:>10s}  {t['confirmed_lines']}/{t['missed_lines']}; "
              f"{t['confirmed_findings']}/{t['ran_no_sync']}/{t['did_not_run']}/{t['unknown']}")
    print(f"not labels (real syncs no linter should report): {len(result['not_labels'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
