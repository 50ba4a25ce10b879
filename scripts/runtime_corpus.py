#!/usr/bin/env python3
"""The runtime-truth corpus: real training programs traced on a GPU, scored against the rules.

fixtures/trace/corpus/manifest.toml names each program (repository, commit, path, sha256,
the torchvision dataset it reads); the programs are other people's code and are not
committed. Their traces are (fixtures/trace/corpus/<name>.json).

    python scripts/runtime_corpus.py fetch [--mirror /work/.mirror]   # materialise the programs
    python scripts/runtime_corpus.py gpu --out DIR [--time-limit 15]   # on a GPU: trace each one
    python scripts/runtime_corpus.py score [--json]                    # join traces with findings
    python scripts/runtime_corpus.py exec PROGRAM [ARGS]               # run one with synthetic data

Programs land in ../synclint-runtime-corpus/<name>/main.py (SYNCLINT_RUNTIME_CORPUS moves
it). `exec` replaces torchvision's MNIST/FashionMNIST/CIFAR10/CIFAR100 with FakeData of
the same image size and classes (1000 training and 500 test images, no download) and runs
the program as `__main__` in its own directory; `gpu` runs `exec` under `synclint trace`.

Scoring: each traced sync line of a program is a runtime label, except the syncs no linter
should report (a module's one-time move to the device, a checkpoint save: eval/README.md),
which are listed apart. A line a finding covers is *confirmed*, else *missed*; a finding
with no traced sync is *not reached* (its line did not run, or ran without syncing: the
trace does not record which lines ran, so this is not yet a false positive). Recall =
confirmed lines / traced lines; the confirmed share of the findings is a lower bound on
precision. SYN5xx findings (overhead, not syncs) are not scored. A missed line's family
comes from what blocked (device/event/Stream.synchronize: 4, pageable copy: 3, a tensor
formatted: 1), else "?".
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
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = ROOT / "fixtures" / "trace" / "corpus"
MANIFEST = CORPUS_DIR / "manifest.toml"
PROGRAMS = Path(os.environ.get("SYNCLINT_RUNTIME_CORPUS", ROOT.parent / "synclint-runtime-corpus"))

# torchvision dataset -> (image size, classes)
DATASETS = {"MNIST": ((1, 28, 28), 10), "FashionMNIST": ((1, 28, 28), 10),
            "CIFAR10": ((3, 32, 32), 10), "CIFAR100": ((3, 32, 32), 100)}


def load_manifest() -> List[Dict[str, Any]]:
    return tomllib.loads(MANIFEST.read_text())["program"]


def fetch(mirror: Path) -> int:
    bad = 0
    for p in load_manifest():
        git_dir = mirror / p["repo"].replace("/", "+") / "repo"
        r = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{p['commit']}:{p['path']}"], capture_output=True)
        if r.returncode != 0:
            print(f"{p['name']}: cannot read {p['path']} at {p['commit'][:10]} from {git_dir}", file=sys.stderr)
            bad += 1
            continue
        if hashlib.sha256(r.stdout).hexdigest() != p["sha256"]:
            print(f"{p['name']}: sha256 differs from the manifest", file=sys.stderr)
            bad += 1
            continue
        dest = PROGRAMS / p["name"] / "main.py"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(r.stdout)
    print(f"{len(load_manifest()) - bad} programs in {PROGRAMS}")
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


def exec_program(argv: List[str]) -> None:
    program = Path(argv[0]).resolve()
    synthetic_datasets()
    os.chdir(program.parent)  # programs write checkpoints and samples beside themselves
    sys.argv = [str(program)] + argv[1:]
    sys.path.insert(0, str(program.parent))
    runpy.run_path(str(program), run_name="__main__")


def gpu(out: Path, time_limit: float) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for p in load_manifest():
        main = PROGRAMS / p["name"] / "main.py"
        cmd = [sys.executable, "-m", "synclint", "trace", "--no-join", "--root", str(main.parent),
               "--time-limit", str(time_limit), "-o", str(out / f"{p['name']}.json"),
               "--", "python", str(Path(__file__).resolve()), "exec", str(main)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        tail = (r.stderr.strip().splitlines() or [""])[-1]
        print(f"{p['name']}: exit {r.returncode}: {tail}")
    return 0


# Syncs that are real but are not labels (eval/README.md: what no linter should report):
# one-time moves of a module to the device, checkpoints. Shown, not scored.
NOT_LABELS = {"nn/modules/module.py:to": "setup move of a module", "nn/modules/module.py:cuda": "setup move of a module",
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


def score() -> Dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from synclint.trace.join import CONFIRMED, MISSED, NOT_REACHED, join, static_findings
    from synclint.trace.schema import load

    per_program: Dict[str, Any] = {}
    fam: Dict[str, Dict[str, int]] = {}

    def tally(family: str, key: str) -> None:
        if family == "5":  # SYN5xx: GPU overhead that is not a sync; no runtime label to meet
            return
        for f in (family, "all"):
            fam.setdefault(f, {"confirmed_lines": 0, "missed_lines": 0, "confirmed_findings": 0, "not_reached": 0})[key] += 1

    excluded: List[str] = []

    for p in load_manifest():
        trace_file = CORPUS_DIR / f"{p['name']}.json"
        main = PROGRAMS / p["name"] / "main.py"
        if not trace_file.exists() or not main.exists():
            per_program[p["name"]] = None
            continue
        trace = load(str(trace_file))
        findings, errors = static_findings([str(main)])
        joined = join(trace, findings, str(main.parent))
        counts = {CONFIRMED: 0, MISSED: 0, NOT_REACHED: 0}
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
                    excluded.append(f"{p['name']}:{row.line} ({why})")
                elif all(s.user for s in row.sites):
                    tally(_family_of_missed({"kind": row.sites[0].kind, "via": row.sites[0].via}), "missed_lines")
            else:
                for f in row.findings:
                    tally(f.code[3], "not_reached")
        per_program[p["name"]] = {**counts, "stopped": trace.meta.get("stopped"), "errors": errors}
    for t in fam.values():
        lines = t["confirmed_lines"] + t["missed_lines"]
        findings = t["confirmed_findings"] + t["not_reached"]
        t["recall"] = None if not lines else round(t["confirmed_lines"] / lines, 3)
        t["confirmed_share"] = None if not findings else round(t["confirmed_findings"] / findings, 3)
    return {"programs": per_program, "families": dict(sorted(fam.items())), "not_labels": excluded}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    g = sub.add_parser("gpu")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--time-limit", type=float, default=15.0)
    s = sub.add_parser("score")
    s.add_argument("--json", action="store_true")
    e = sub.add_parser("exec")
    e.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.cmd == "fetch":
        return fetch(a.mirror)
    if a.cmd == "gpu":
        return gpu(a.out, a.time_limit)
    if a.cmd == "exec":
        exec_program(a.program)
        return 0
    result = score()
    if a.json:
        print(json.dumps(result, indent=1))
        return 0
    for name, r in result["programs"].items():
        print(f"{name:30s} " + ("(no trace or program)" if r is None else
                                f"confirmed {r['confirmed']}, missed {r['missed']}, not reached {r['not-reached']}, stopped {r['stopped']}"))
    print(f"{'family':8s} {'recall':>8s} {'confirmed share':>16s}  lines confirmed/missed, findings confirmed/not reached")
    for family, t in result["families"].items():
        rec = "-" if t["recall"] is None else f"{100 * t['recall']:.0f}%"
        sh = "-" if t["confirmed_share"] is None else f"{100 * t['confirmed_share']:.0f}%"
        print(f"{family:8s} {rec:>8s} {sh:>16s}  {t['confirmed_lines']}/{t['missed_lines']}, {t['confirmed_findings']}/{t['not_reached']}")
    print(f"not labels (real syncs no linter should report): {len(result['not_labels'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
