"""The compiled-code corpus: real programs that use torch.compile, run with synthetic data,
their graph breaks and recompilations recorded (see docs/compiled-corpus.md).

    pip install $(python scripts/compiled_corpus.py requirements)   # the programs' dependencies, torch pinned
    pip install --no-deps $(python scripts/compiled_corpus.py requirements --no-deps)   # those whose declared pins clash
    python scripts/compiled_corpus.py fetch                 # materialise the programs from local bare clones
    python scripts/compiled_corpus.py record                # run every driver as written, write recorded.json
    python scripts/compiled_corpus.py record timesfm --backend eager --compare   # same breaks with backend eager?
    python scripts/compiled_corpus.py score --code SYN6     # static compile findings against the recorded breaks

Each program is a folder of eval/compiled/: `program.toml` names the repository, commit and
files (the code itself is not in this repository, as for eval/labels), `driver.py` runs it
with synthetic data on the CPU, `expected.toml` is the reading made before any run (the lines
expected to break the graph, and why), and `recorded.json` is what Dynamo reported.

The hook (`CompileRecorder`: synclint.trace.dynamo's, which `synclint trace` uses too) listens
to Dynamo's own `graph_breaks` and `recompiles` log artifacts (what
TORCH_LOGS=graph_breaks,recompiles prints): every graph break is logged there once per
compilation, with the user line Dynamo stopped at, the reason, the registry's graph-break type
and a link carrying its GBxxxx id, and the user stack; a recompilation with the function and
the guards that failed. torch._dynamo.explain() needs the function and its arguments and sees
one call, and the counters carry no source line, so neither can record a whole program.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import runpy
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "eval" / "compiled"
# Outside the checkout: inside it, the checkout's .gitignore would apply to the code.
CORPUS = Path(os.environ.get("SYNCLINT_COMPILED_CORPUS", ROOT.parent / "synclint-compiled-corpus"))
TORCH = "torch==2.13.0"  # the version recorded.json was made with; pinned so pip never upgrades it

# The cases of issue 36 (point 2) that the static compile findings are scored on; a recorded
# break of any other kind (a torch.compiler.disable'd call, backward(), an untraceable
# library call) is kept in recorded.json as case "other" and not scored.
CASES = ("item", "tolist", "cpu_numpy", "scalar_conversion", "tensor_branch", "print_format",
         "bool_mask", "nonzero", "where1", "unique", "masked_select", "repeat_interleave",
         "dd_size", "host_to_tensor")


# ---------------------------------------------------------------------------------------------
# The recording hook: synclint's own (synclint/trace/dynamo.py), which `synclint trace` runs too

from synclint.trace.dynamo import DynamoRecorder as CompileRecorder  # noqa: E402


class ForceBackend:
    """Replaces torch.compile's backend (dropping mode and options, which only inductor takes)
    while active, to check that another backend gives the same breaks, faster."""

    def __init__(self, backend: str) -> None:
        self.backend = backend

    def __enter__(self) -> "ForceBackend":
        import torch

        self._orig = torch.compile
        orig, backend = torch.compile, self.backend

        def compile(model=None, **kw):
            kw["backend"] = backend
            kw.pop("mode", None)
            kw.pop("options", None)
            if model is None:
                return lambda m: orig(m, **kw)
            return orig(model, **kw)

        torch.compile = compile
        return self

    def __exit__(self, *exc) -> None:
        import torch

        torch.compile = self._orig


# ---------------------------------------------------------------------------------------------
# Cases: what kind of graph break, from Dynamo's type and the line that caused it


_DYNAMIC_SHAPE = {"GB0036", "GB0037", "GB0246"}


def case_of(gb_id: Optional[str], gb_type: str, context: str, code: str) -> str:
    """The issue-36 case of a recorded break (CASES), or "other"."""
    c = code
    if gb_id in ("GB0170", "GB0035", "GB0034", "GB0360") or gb_type.startswith("Data-dependent branching"):
        return "tensor_branch"
    if gb_id == "GB0124":  # Tensor.item(), also reached through int()/float()/tolist()/a size
        if ".tolist(" in c:
            return "tolist"
        if ".item(" in c:
            return "item"
        if re.search(r"\b(int|float|bool)\(", c):
            return "scalar_conversion"
        if re.search(r"\b(zeros|ones|empty|full|arange|randn|rand|randint|linspace|range)\(", c):
            return "dd_size"
        if re.search(r"\[[^\]]*\w\s*:\s*\w*|\[[^\]]*:\s*\w", c):  # a tensor as a slice bound: x[:, start : end]
            return "dd_size"
        return "item"
    if gb_id == "GB0109":
        return "tolist"
    if gb_id in ("GB0105", "GB0106"):
        return "cpu_numpy"
    if gb_id in ("GB0018", "GB0038", "GB0070", "GB7596"):
        return "dd_size"
    if gb_id in ("GB0231", "GB0185"):
        return "host_to_tensor"
    if gb_id in ("GB0569", "GB0291", "GB0020", "GB0021") or (
            gb_id == "GB0059" and re.search(r"builtin (print|format|str|repr)\b", context)):
        return "print_format"
    if gb_id == "GB0059" and re.search(r"builtin (int|float|bool)\b", context):
        return "scalar_conversion"
    if gb_id in _DYNAMIC_SHAPE:
        # Dynamo names the operator (aten.nonzero.default, aten.bincount.default...); nonzero is
        # also what a boolean mask and a one-argument where lower to, so the line tells those apart
        op = context
        # the line is read only when Dynamo names no operator: x.repeat_interleave(k)[mask] stops at
        # the mask's nonzero, not at the (static) repeat_interleave on the same line
        named = re.search(r"\baten\.\w+", op)
        for case, name in (("masked_select", "masked_select"), ("unique", "unique"),
                           ("repeat_interleave", "repeat_interleave")):
            if name in op or (not named and re.search(rf"\b{name}(_consecutive)?\(", c)):
                return case
        if "nonzero" not in op and "index" not in op:
            return "other"  # bincount, histc...: data-dependent sizes outside the cases
        for case, pat in (("nonzero", r"\b(nonzero|argwhere)\("), ("where1", r"\bwhere\(")):
            if re.search(pat, c):
                return case
        return "bool_mask" if "[" in c else "nonzero"
    return "other"


def case_of_source(code: str) -> str:
    """The case a line would be, read alone (for a static finding with no recorded break)."""
    for case, pat in (("tolist", r"\.tolist\("), ("item", r"\.item\("), ("cpu_numpy", r"\.(numpy|cpu)\("),
                      ("masked_select", r"masked_select\("), ("unique", r"\bunique\("),
                      ("repeat_interleave", r"repeat_interleave\("), ("nonzero", r"\b(nonzero|argwhere)\("),
                      ("where1", r"\bwhere\([^,]*\)"), ("print_format", r"\bprint\(|f\"|f'|\blog"),
                      ("tensor_branch", r"^\s*(if|elif|while|assert)\b"),
                      ("scalar_conversion", r"\b(int|float|bool)\(")):
        if re.search(pat, code):
            return case
    return "unknown"


# ---------------------------------------------------------------------------------------------
# Programs


@dataclass
class Program:
    name: str  # folder under eval/compiled/
    repo: str
    commit: str
    license: str
    files: List[dict]  # path, sha256, lines: the files read for expected.toml
    materialise: List[str]  # git pathspecs written to the corpus (default *.py)
    requirements: List[str]
    # installed with `pip install --no-deps`: a package whose declared pins clash with the corpus's
    # (transformer-lens declares numpy<2 on Python < 3.12 and runs with numpy 2)
    requirements_no_deps: List[str]
    note: str
    timeout_s: int = 900

    @property
    def folder(self) -> Path:
        return PROGRAMS / self.name

    @property
    def root(self) -> Path:
        return CORPUS / self.name


def load_programs(names: Sequence[str] = ()) -> List[Program]:
    out = []
    for path in sorted(PROGRAMS.glob("*/program.toml")):
        name = path.parent.name
        if names and name not in names:
            continue
        try:
            d = tomllib.loads(path.read_text())
            out.append(Program(name, d["repo"], d["commit"], d["license"], d.get("file", []),
                               d.get("materialise", ["*.py"]), d.get("requirements", []), d.get("requirements_no_deps", []), d.get("note", ""),
                               d.get("timeout_s", 900)))
        except (tomllib.TOMLDecodeError, KeyError) as e:
            raise SystemExit(f"{path}: not a program file ({type(e).__name__}: {e})")
    missing = set(names) - {p.name for p in out}
    if missing:
        raise SystemExit(f"no such program: {', '.join(sorted(missing))} (folders of {PROGRAMS})")
    return out


def load_expected(p: Program) -> dict:
    path = p.folder / "expected.toml"
    return tomllib.loads(path.read_text()) if path.exists() else {}


def fetch(programs: Iterable[Program], mirror: Path) -> int:
    bad = 0
    for p in programs:
        git_dir = mirror / p.repo.replace("/", "+") / "repo"
        if (git_dir / ".git").is_dir():
            git_dir = git_dir / ".git"
        if not git_dir.is_dir():
            print(f"{p.name}: no clone of {p.repo} at {git_dir} (fetch github:{p.repo} first)")
            bad += 1
            continue
        archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", p.commit, "--", *p.materialise],
                                 capture_output=True, check=False)
        if archive.returncode:
            print(f"{p.name}: git archive failed: {archive.stderr.decode().strip()}")
            bad += 1
            continue
        p.root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "-x", "-C", str(p.root)], input=archive.stdout, check=True)
        for f in p.files:
            fp = p.root / f["path"]
            digest = hashlib.sha256(fp.read_bytes()).hexdigest() if fp.exists() else None
            if digest != f["sha256"]:
                print(f"{p.name}: {f['path']}: sha256 differs from program.toml")
                bad += 1
        print(f"{p.name}: {p.repo} @ {p.commit[:10]} -> {p.root}")
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------
# Recording


def _rel(path: str, roots: Sequence[Tuple[str, Path]]) -> Tuple[str, bool]:
    """(path as recorded, inside the program?): relative to the program root, 'driver.py' for the
    driver, else site-packages-relative (torch/..., tensordict/...)."""
    if not os.path.isabs(path):  # "<frozen runpy>", "<string>": no file of the program
        return path, False
    ap = os.path.realpath(path)
    for label, r in roots:
        rp = os.path.realpath(r)
        if ap.startswith(rp + os.sep):
            rel = os.path.relpath(ap, rp)
            return (rel if label == "program" else f"{label}:{rel}"), label == "program"
    m = re.search(r"(?:site|dist)-packages/(.*)", ap)
    return (m.group(1) if m else path), False


def _code_at(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for i, text in enumerate(fh, 1):
                if i == line:
                    return text.strip()
    except OSError:
        pass
    return ""


def summarise(rec: CompileRecorder, root: Path, driver: Path) -> dict:
    """recorded.json's breaks and recompiles: one entry per (site, graph-break type), where the
    site is the innermost frame of the user stack inside the program (Dynamo's own "user code
    at" may be a torch or library line the program called)."""
    roots = [("program", root), ("driver", driver.parent)]
    breaks: Dict[Tuple[str, int, str], dict] = {}
    for b in rec.breaks:
        frames = [(_rel(f, roots), ln, fn) for f, ln, fn in b.stack] or [(_rel(b.file, roots), b.line, "?")]
        inside = [(p, ln, fn) for (p, ok), ln, fn in frames if ok]
        dyn_path, dyn_inside = _rel(b.file, roots)
        if inside:
            path, line, _ = inside[-1]
            abs_path = str(root / path)
        else:  # no program frame in the stack: where Dynamo says it stopped (maybe a library line)
            path, line, abs_path = dyn_path, b.line, b.file
        key = (path, line, b.gb_type)
        e = breaks.get(key)
        if e is None:
            code = _code_at(abs_path, line)
            e = breaks[key] = {
                "path": path, "line": line, "in_program": bool(inside) or dyn_inside, "code": code,
                "case": case_of(b.gb_id, b.gb_type, b.context, code),
                "gb_id": b.gb_id, "gb_type": b.gb_type, "context": b.context[:300],
                "explanation": b.explanation[:300],
                "dynamo_at": f"{dyn_path}:{b.line}",
                "stack": [f"{p}:{ln}" for (p, _), ln, _ in frames][-6:],
                "skips_frames": [], "count": 0,
            }
        e["count"] += 1
        if b.skipped:
            sk_path, _ = _rel(b.skipped[0], roots)
            frame = f"{sk_path}:{b.skipped[1]} {b.skipped[2]}"
            if frame not in e["skips_frames"]:
                e["skips_frames"].append(frame)
    recompiles: Dict[Tuple[str, int, str], dict] = {}
    for r in rec.recompiles:
        path, ok = _rel(r.file, roots)
        key = (path, r.line, r.function)
        e = recompiles.setdefault(key, {"path": path, "line": r.line, "function": r.function, "in_program": ok,
                                        "count": 0, "guards": []})
        e["count"] += 1
        for g in r.guards:
            g = re.sub(r"\s+", " ", g)[:240]
            if g not in e["guards"] and len(e["guards"]) < 8:
                e["guards"].append(g)
    order = lambda e: (not e["in_program"], e["path"], e["line"])  # noqa: E731
    return {"breaks": sorted(breaks.values(), key=order), "recompiles": sorted(recompiles.values(), key=order),
            "recompile_limit_hits": rec.limits[:10]}


def run_driver(name: str, backend: Optional[str], out: Path) -> int:
    """In a fresh interpreter (one program per process: Dynamo's caches and the programs'
    imports stay apart): run the driver from the program's root with the recorder on."""
    p = load_programs([name])[0]
    driver = p.folder / "driver.py"
    os.chdir(p.root)
    sys.path.insert(0, str(p.root))
    sys.argv = [str(driver)]
    import torch

    from contextlib import ExitStack

    error = None
    t0 = time.perf_counter()
    with ExitStack() as stack:
        rec = stack.enter_context(CompileRecorder())
        if backend:
            stack.enter_context(ForceBackend(backend))
        try:
            runpy.run_path(str(driver), run_name="__main__")
        except BaseException as e:  # recorded, not raised: the breaks up to the failure are truth too
            import traceback

            error = f"{type(e).__name__}: {e}"[:2000]
            traceback.print_exc()
    from torch._dynamo.utils import counters

    result = summarise(rec, p.root, driver)
    result.update({
        "unique_graphs": counters["stats"]["unique_graphs"],
        "seconds": round(time.perf_counter() - t0, 1),
        "torch": torch.__version__, "python": platform.python_version(),
        "backend": backend or "as-written", "error": error,
    })
    out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


def record(programs: List[Program], backend: Optional[str], compare: bool, python: str) -> int:
    bad = 0
    for p in programs:
        if not p.root.is_dir():
            print(f"{p.name}: {p.root} is missing (python scripts/compiled_corpus.py fetch)")
            bad += 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "recorded.json"
            log = Path(tmp) / "log.txt"
            cmd = [python, str(Path(__file__).resolve()), "_run", p.name, "--out", str(out)]
            if backend:
                cmd += ["--backend", backend]
            env = dict(os.environ, PYTHONHASHSEED="0", CUDA_VISIBLE_DEVICES="")
            try:
                with log.open("w") as fh:
                    proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=p.timeout_s)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
            if not out.exists():
                tail = log.read_text(errors="replace")[-3000:]
                print(f"{p.name}: the driver wrote no record (exit {rc}):\n{tail}")
                bad += 1
                continue
            got = json.loads(out.read_text())
        got = {"program": p.name, "repo": p.repo, "commit": p.commit,
               "date": datetime.date.today().isoformat(), **got}
        target = p.folder / ("recorded.json" if not compare else f"recorded.{backend or 'as-written'}.json")
        n_in = sum(1 for b in got["breaks"] if b["in_program"])
        status = f"error: {got['error'][:200]}" if got["error"] else "ok"
        print(f"{p.name}: {len(got['breaks'])} break sites ({n_in} in the program), "
              f"{len(got['recompiles'])} recompiled functions, {got['unique_graphs']} graphs, "
              f"{got['seconds']} s, backend {got['backend']}; {status}")
        if compare and not (p.folder / "recorded.json").exists():
            print("  no recorded.json to compare with")
        elif compare:
            base = json.loads((p.folder / "recorded.json").read_text())
            a = {(b["path"], b["line"], b["gb_type"]) for b in base["breaks"]}
            b_ = {(b["path"], b["line"], b["gb_type"]) for b in got["breaks"]}
            print(f"  vs recorded.json ({base['backend']}): "
                  + ("same break sites" if a == b_ else f"only there {sorted(a - b_)}; only here {sorted(b_ - a)}"))
        target.write_text(json.dumps(got, indent=1) + "\n")
        bad += bool(got["error"])
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------
# Scoring static findings against the recorded breaks


@dataclass
class Tally:
    tp: int = 0  # findings on a recorded break's line
    fp: int = 0  # findings on a line that did not break
    found: int = 0  # recorded breaks with a finding on their line
    breaks: int = 0
    fps: List[str] = field(default_factory=list)
    misses: List[str] = field(default_factory=list)

    def precision(self) -> Optional[float]:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    def recall(self) -> Optional[float]:
        return self.found / self.breaks if self.breaks else None


def _selected(code: str, codes: Sequence[str]) -> bool:
    return any(code == c or code.startswith(c) for c in codes)


def score_program(recorded: dict, expected: dict, findings: List[dict], codes: Sequence[str],
                  source: Optional[Path], tallies: Dict[str, Tally], files: Iterable[str]) -> None:
    """Adds one program to `tallies` (per case, and "all"). Only findings in `files` (the files
    read for expected.toml) count. A finding is right when its rows cover the line of a
    recorded break (any kind of break: the line does split the graph); a finding on a line
    listed in expected.toml's [[maybe]] (a break the driver cannot reach) is not counted; any
    other is wrong. Recall counts the recorded breaks of CASES only."""
    read = {os.path.normpath(f) for f in files}
    name = recorded.get("program", "?")
    truth: Dict[Tuple[str, int], str] = {}
    for b in recorded.get("breaks", []):
        if b["in_program"]:
            prev = truth.get((b["path"], b["line"]))
            truth[(b["path"], b["line"])] = b["case"] if prev in (None, "other") else prev
    # a [[cause]] is a line that Dynamo reported elsewhere (bincount at its first use, a backend
    # failure at the caller's line): a finding on the cause names that break
    alias: Dict[Tuple[str, int], Tuple[str, int]] = {}
    for c in expected.get("cause", []):
        at = (c["path"], c["break_line"])
        if at in truth:
            alias[(c["path"], c["line"])] = at
            truth[at] = c.get("case", truth[at])
    maybes = {(m["path"], m["line"]) for m in expected.get("maybe", [])}
    hit_lines = set()
    for f in findings:
        if not _selected(f["code"], codes):
            continue
        path = os.path.normpath(f["filename"])
        if path not in read:
            continue
        rows = range(f["location"]["row"], f["end_location"]["row"] + 1)
        hits = [alias.get((path, r), (path, r)) for r in rows if (path, r) in truth or (path, r) in alias]
        if hits:
            hit_lines.update(hits)
            case = truth[hits[0]]
            for k in (case, "all"):
                tallies[k].tp += 1
        elif any((path, r) in maybes for r in rows):
            continue
        else:
            code = ""
            if source is not None:
                code = _code_at(str(source / path), f["location"]["row"])
            case = case_of_source(code)
            where = f"{name}/{path}:{f['location']['row']} {f['code']} {code[:80]}"
            for k in (case, "all"):
                tallies[k].fp += 1
                tallies[k].fps.append(where)
    for (path, line), case in truth.items():
        if case not in CASES:
            continue
        for k in (case, "all"):
            tallies[k].breaks += 1
            if (path, line) in hit_lines:
                tallies[k].found += 1
            else:
                tallies[k].misses.append(f"{name}/{path}:{line} [{case}]")


def run_synclint(root: Path, codes: Sequence[str], python: str) -> List[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "pyproject.toml"
        cfg.write_text("[tool.synclint]\n")
        cmd = [python, "-m", "synclint", "check", ".", "--output-format", "json", "--no-cache", "--exit-zero",
               "--config", str(cfg), "--select", ",".join(codes)]
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1) or "internal error" in proc.stderr:
        raise SystemExit(f"synclint failed on {root}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout or "[]")


def score(programs: List[Program], codes: Sequence[str], findings_dir: Optional[Path], python: str) -> dict:
    tallies: Dict[str, Tally] = defaultdict(Tally)
    for p in programs:
        recorded = json.loads((p.folder / "recorded.json").read_text())
        if findings_dir is not None:
            path = findings_dir / f"{p.name}.json"
            findings = json.loads(path.read_text()) if path.exists() else []
            source = p.root if p.root.is_dir() else None
        else:
            if not p.root.is_dir():
                raise SystemExit(f"{p.root} is missing: run `python scripts/compiled_corpus.py fetch` first")
            findings, source = run_synclint(p.root, codes, python), p.root
        score_program(recorded, load_expected(p), findings, codes, source, tallies, [f["path"] for f in p.files])
    return {"programs": [p.name for p in programs], "codes": list(codes),
            "cases": {k: {"tp": t.tp, "fp": t.fp, "precision": t.precision(), "breaks": t.breaks,
                          "found": t.found, "recall": t.recall()} for k, t in sorted(tallies.items())},
            "false_findings": tallies["all"].fps, "misses": tallies["all"].misses}


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def print_score(s: dict) -> None:
    print(f"{len(s['programs'])} programs, codes {', '.join(s['codes'])}")
    print(f"{'case':<18} {'findings':>8} {'wrong':>6} {'precision':>9} {'breaks':>7} {'found':>6} {'recall':>7}")
    for k, r in s["cases"].items():
        print(f"{k:<18} {r['tp'] + r['fp']:>8} {r['fp']:>6} {_pct(r['precision']):>9} {r['breaks']:>7} "
              f"{r['found']:>6} {_pct(r['recall']):>7}")


# ---------------------------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="materialise the programs from local bare clones")
    f.add_argument("names", nargs="*")
    f.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    r = sub.add_parser("record", help="run the drivers, write recorded.json")
    r.add_argument("names", nargs="*")
    r.add_argument("--backend", default="as-written",
                   help="torch.compile backend forced on every compile call (eager, aot_eager, inductor), or "
                        "'as-written' for the program's own arguments (the default)")
    r.add_argument("--compare", action="store_true",
                   help="write recorded.<backend>.json instead and compare its break sites with recorded.json")
    r.add_argument("--python", default=sys.executable, help="interpreter with torch and the programs' requirements")
    s = sub.add_parser("score", help="precision and recall per case of static findings")
    s.add_argument("names", nargs="*")
    s.add_argument("--code", action="append", required=True, help="a code or prefix that is a compile finding")
    s.add_argument("--findings", type=Path, help="a folder of <program>.json synclint outputs (else run synclint)")
    s.add_argument("--json", type=Path, help="write the full result")
    s.add_argument("--verbose", "-v", action="store_true", help="list misses and false findings")
    s.add_argument("--python", default=sys.executable)
    q = sub.add_parser("requirements", help="print the programs' pinned requirements, torch first (for pip install)")
    q.add_argument("--no-deps", action="store_true", help="those to install with pip install --no-deps instead")
    x = sub.add_parser("_run")  # internal: one driver, in its own process
    x.add_argument("name")
    x.add_argument("--backend")
    x.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.cmd == "_run":
        return run_driver(a.name, a.backend, a.out)
    if a.cmd == "requirements":
        if a.no_deps:
            print("\n".join(sorted({r for p in load_programs() for r in p.requirements_no_deps}, key=str.lower)))
            return 0
        reqs = {r for p in load_programs() for r in p.requirements}
        print("\n".join([TORCH, *sorted(reqs, key=str.lower)]))
        return 0
    programs = load_programs(a.names)
    if a.cmd == "fetch":
        return fetch(programs, a.mirror)
    if a.cmd == "record":
        return record(programs, None if a.backend == "as-written" else a.backend, a.compare, a.python)
    result = score(programs, a.code, a.findings, a.python)
    print_score(result)
    if a.verbose:
        print("\nfalse findings:\n" + "\n".join("  " + x for x in result["false_findings"]))
        print("\nmissed:\n" + "\n".join("  " + x for x in result["misses"]))
    if a.json:
        a.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
