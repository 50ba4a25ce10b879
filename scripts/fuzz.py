"""The large fuzz run: generated programs through `synclint check --select ALL --fix
[--unsafe-fixes]`'s per-file path (`tests/fuzzing.py` says what is checked).

    python scripts/fuzz.py --kind hypothesmith --count 10000 --seed 1 --out fuzz-out
    python scripts/fuzz.py --kind torch --count 10000 --seed 1 --out fuzz-out
    python scripts/fuzz.py --kind shapes --out fuzz-out [--file-timeout 20] [--only NAME ...]

`--kind shapes` runs the pathological shapes (`SHAPES`: long chains, literals, elif chains,
joined strings, deep nests, big files) at large sizes, each through `synclint check` in a
fresh process beside a good file, and reports time and peak memory per program
(docs/reliability.md, "Pathological shapes"); tests/test_reliability.py runs them small.

Every program that fails (an exception, an internal error, a position outside the file, a
fixed text that does not compile where the original did, on this Python or as Python 3.8, a
fix withheld for that reason, fixes that do not converge or change again when run on their
own output, more than `--timeout` seconds) is written
to OUT/<kind>-<n>.py with its problems in a comment; the program being checked is always in
OUT/current-<kind>.py, so a run killed by the parser (a segfault) leaves its culprit there.
The first 50 programs refused with one line (a parse error LibCST reports on code Python
compiles, a file nested too deeply) go to OUT/<kind>-<n>-refused.py.
Prints a summary as JSON (also OUT/<kind>-summary.json).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import fuzzing  # noqa: E402


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so the check's own `except Exception` lets it by."""


def _alarm(signum, frame):
    raise Hang()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=("hypothesmith", "torch", "shapes"), required=True)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=60, help="seconds one program may take")
    ap.add_argument("--out", type=Path, default=Path("fuzz-out"))
    ap.add_argument("--file-timeout", type=float, default=20.0, help="shapes: the time budget each check runs with")
    ap.add_argument("--only", nargs="*", default=(), help="shapes: only these (names of SHAPES)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.kind == "shapes":
        return shapes_run(args.out, args.file_timeout, args.only)
    signal.signal(signal.SIGALRM, _alarm)
    tally = collections.Counter()
    refused = collections.Counter()
    problems = collections.Counter()
    expected = collections.Counter()  # torch: codes of the INVALID examples composed ...
    fired = collections.Counter()  # ... and how often each fired in its program
    slowest = [0.0]
    start = time.time()

    def one(source: str, expect=()) -> None:
        n = tally["programs"]
        (args.out / f"current-{args.kind}.py").write_text(source)
        t0 = time.time()
        signal.alarm(args.timeout)
        try:
            outcome = fuzzing.check_program(source)
            found = outcome.problems
        except Hang:
            outcome, found = fuzzing.Outcome(), [f"took more than {args.timeout} s"]
        finally:
            signal.alarm(0)
        slowest[0] = max(slowest[0], time.time() - t0)
        tally["programs"] += 1
        tally["with findings"] += bool(outcome.codes)
        tally["with fixes"] += bool(outcome.fixes)
        tally["fixed texts checked"] += outcome.fixed_texts
        if outcome.refused:
            refused[outcome.refused.split(" (")[0]] += 1
            if sum(refused.values()) <= 50:  # kept to look at: a valid program refused is worth knowing
                (args.out / f"{args.kind}-{n}-refused.py").write_text(f"# {outcome.refused}\n" + source)
        for code in set(expect):
            expected[code] += 1
            fired[code] += code in outcome.codes
        if found:
            tally["failing programs"] += 1
            problems.update(p.split(":")[0] for p in found)
            comment = "".join(f"# {p}\n" for p in found)
            (args.out / f"{args.kind}-{n}.py").write_text(comment + source)
        if tally["programs"] % 500 == 0:
            print(f"{tally['programs']} programs, {tally['failing programs']} failing, "
                  f"{time.time() - start:.0f} s", file=sys.stderr, flush=True)

    if args.kind == "torch":
        examples = fuzzing.rule_examples()
        fixtures = fuzzing.fixture_sources(ROOT / "fixtures")
        for i in range(args.count):
            program, expect = fuzzing.torch_program(random.Random(args.seed * 1_000_003 + i), examples, fixtures)
            one(program, expect)
    else:
        _hypothesmith_run(args.count, args.seed, one)()
    summary = {
        "kind": args.kind,
        "seed": args.seed,
        **tally,
        "refused": dict(refused),
        "problems by kind": dict(problems),
        "slowest program s": round(slowest[0], 2),
        "total s": round(time.time() - start, 1),
        "python": sys.version.split()[0],
    }
    if expected:
        summary["expected codes that fired"] = f"{sum(fired.values())}/{sum(expected.values())}"
        summary["never fired when expected"] = sorted(c for c in expected if not fired[c])
    text = json.dumps(summary, indent=1)
    (args.out / f"{args.kind}-summary.json").write_text(text + "\n")
    print(text)
    return 1 if tally["failing programs"] else 0


def _hypothesmith_run(count: int, seed: int, one):
    """Hypothesis drives the generation (no shrinking, no database): programs from the
    grammar and from LibCST's nodes, half each; `import torch` is put first where it still
    compiles, so that the file is analysed, not only syntax-checked."""
    import hypothesmith
    from hypothesis import HealthCheck, Phase, given, settings, strategies as st
    from hypothesis import seed as hseed

    @hseed(seed)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()))
    def run(source: str) -> None:
        one(fuzzing.with_torch(source))

    return run


# ---------------------------------------------------------------- pathological shapes
# Each program: this prologue, one shape at module level, then a loop with a finding whose
# row says the analysis reached the end. The `.cuda()` on a CPU factory is a finding with a
# fix, so that LibCST's own parser (which no time budget can stop) parses the file too.
PROLOGUE = 'import torch\n\nx = torch.ones(3, device="cuda")\nz = torch.zeros(3).cuda()\n'
EPILOGUE = "for _ in range(3):\n    v = x.item()\n"

# name -> (what it is, the shape of size n, CI's sizes and whether each is analysed (else
# refused in one line), the script's sizes)
YES, NO = True, False
SHAPES = {
    "subscript-chain": ("`x[0][0]...`", lambda n: "y = x" + "[0]" * n + "\n", ((1001, NO),), (1000, 5000)),
    "call-chain": ("`f(1)(1)...`", lambda n: "y = f" + "(1)" * n + "\n", ((1001, NO),), (1000, 5000)),
    "method-chain": ("`x.abs().abs()...`", lambda n: "y = x" + ".abs()" * n + "\n", ((501, NO),), (500, 3000)),
    "attribute-chain": ("`x.real.real...`", lambda n: "y = x" + ".real" * n + "\n", ((1001, NO),), (1000, 5000)),
    "plus-chain": ("`a + a + ...`", lambda n: "y = " + " + ".join(["a"] * n) + "\n", ((1002, NO),),
                   (1001, 100_000)),
    "comparison-chain": ("`a < a < ...`", lambda n: "y = " + " < ".join(["a"] * n) + "\n", ((1002, NO),),
                         (1001, 100_000)),
    "boolean-chain": ("`a and a and ...`", lambda n: "y = " + " and ".join(["a"] * n) + "\n", ((1002, NO),),
                      (1001, 100_000)),
    # each chain within the limit, their parse by LibCST too long in sum: analysed, the fix not offered
    "many-chains": ("lines of 1,000-link chains", lambda n: ("y = x" + "[0]" * 1000 + "\n") * n, ((11, YES),),
                    (10, 11, 200)),
    "one-line-list": ("a one-line list of numbers", lambda n: "y = [" + "1, " * n + "]\n", ((2000, YES),),
                      (500_000, 660_000)),
    "list-of-lines": ("a list, one number a line", lambda n: "y = [\n" + "    1,\n" * n + "]\n", ((2000, YES),),
                      (280_000,)),
    "dict-literal": ("a one-line dict", lambda n: "y = {" + ", ".join(f"{i}: {i}" for i in range(n)) + "}\n",
                     ((2000, YES),), (135_000,)),
    "joined-strings": ("string literals joined", lambda n: "y = (\n" + '    "a"\n' * n + ")\n",
                       ((3000, YES), (3001, NO)), (3000, 50_000)),
    "elif-chain": ("`elif` branches, each with a finding", lambda n: "for i in range(3):\n    if i < 0:\n        pass\n"
                   + "".join(f"    elif x.item() > {k}:\n        pass\n" for k in range(n)),
                   ((1001, NO),), (1000, 5000)),  # (1,000 in CI: the matrix's elif-chain)
    "nested-brackets": ("`((((...))))`", lambda n: "y = " + "(" * n + "1" + ")" * n + "\n", ((200, YES), (201, NO)),
                        (200, 3000)),
    "nested-calls": ("`f(f(f(...)))`", lambda n: "y = " + "f(" * n + "1" + ")" * n + "\n", ((201, NO),), (200, 3000)),
    "unary": ("`- - - ... 1`", lambda n: "y = " + "-" * n + "1\n", ((1001, NO),), (1000, 20_000)),
    "lambdas": ("`lambda: lambda: ...`", lambda n: "y = " + "lambda: " * n + "1\n", ((1001, NO),), (1000, 5000)),
    "ternary": ("`a if b else a if b else ...`", lambda n: "y = " + "a if b else " * n + "a\n", ((1001, NO),),
                (1000, 5000)),
    "nested-blocks": ("`if a:` nested", lambda n: "".join("    " * i + "if a:\n" for i in range(n)) + "    " * n
                      + "pass\n", ((99, YES),), (99, 101)),
    "f-strings": ("a one-line f-string of replacement fields", lambda n: "y = f'" + "{x}" * n + "'\n",
                  ((2000, YES),), (100_000, 660_000)),
    "dense-code": ("lines each with a finding and a fix", lambda n: "".join(
        f"def step_{i}(batch):\n    for _ in range(3):\n        y = torch.zeros(8).cuda()\n        print(y.item())\n"
        for i in range(n)), ((50, YES),), (18_000,)),
}


def shape_program(name: str, n: int) -> str:
    return PROLOGUE + SHAPES[name][1](n) + EPILOGUE


def epilogue_row(program: str) -> int:
    """The row of the finding the epilogue holds (`x.item()`)."""
    return program.count("\n")


def shapes_run(out: Path, budget: float, only=()) -> int:
    """Each shape at its large sizes through `synclint check` in a fresh process: the
    outcome, time and peak memory; a failure is a traceback or an internal error, a line
    other than the finding or one refusal for the file, the good file's finding missing, or
    a run longer than its two phases' budgets and the good file's check alone by more than
    SLACK_S."""
    baseline = _shape_check("", budget)["wall"]  # the interpreter's start, imports, the good file
    rows, failing = [], 0
    for name, (what, _, _, sizes) in SHAPES.items():
        if only and name not in only:
            continue
        for n in sizes:
            program = shape_program(name, n)
            row = _shape_row(name, what, n, program, _shape_check(program, budget), budget, baseline)
            failing += bool(row["problems"])
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    (out / "shapes-summary.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"budget {budget:g} s a phase; the good file alone: {baseline:.1f} s\n")
    print("| shape | size | characters | outcome | wall | CPU | peak memory |\n|---|---:|---:|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['shape']} ({r['what']}) | {r['n']:,} | {r['chars']:,} | {r['outcome']} | {r['wall s']:.1f} s "
              f"| {r['cpu s']:.1f} s | {r['peak MB']:,.0f} MB |")
    print(json.dumps({"programs": len(rows), "failing": failing, "python": sys.version.split()[0]}))
    return 1 if failing else 0


def _shape_check(program: str, budget: float) -> dict:
    """`synclint check bad.py good.py` on `program` (none: the good file alone), in a fresh
    process measured from outside (`_MEASURED`)."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        Path(d, "good.py").write_text(PROLOGUE + EPILOGUE)
        files = ["good.py"]
        if program:
            Path(d, "bad.py").write_text(program)
            files.insert(0, "bad.py")
        cmd = [sys.executable, "-m", "synclint", "check", "--no-cache", "--no-source", "--output-format", "concise",
               "--file-timeout", f"{budget:g}", *files]
        # through a process of its own, whose only child the check is: its resources are the check's
        p = subprocess.run([sys.executable, "-c", _MEASURED, *cmd], cwd=d, capture_output=True, text=True,
                           env=dict(os.environ, SYNCLINT_NO_DAEMON="1"))
        return json.loads(p.stdout)


SLACK_S = 10.0  # a loaded machine's noise; what no budget stops (LibCST's parse) is bounded well below
MEMORY_BOUND_MB = 4608  # what `max-file-size`'s default promises (docs/configuration.md)

# Runs the command line it is given; prints its exit code, output, wall and CPU time and
# peak memory (of its only child, the command) as JSON.
_MEASURED = """
import json, resource, subprocess, sys, time
start = time.monotonic()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": p.returncode, "stdout": p.stdout, "stderr": p.stderr, "wall": time.monotonic() - start,
                  "cpu": u.ru_utime + u.ru_stime, "peak_kb": u.ru_maxrss}))
"""


def _shape_row(name, what, n, program, run: dict, budget: float, baseline: float) -> dict:
    stdout, stderr, wall = run["stdout"], run["stderr"], run["wall"]
    lines = stdout.splitlines() + stderr.splitlines()
    finding = f"bad.py:{epilogue_row(program)}:9: SYN101"
    mine = [ln for ln in stderr.splitlines() if ln.startswith("synclint: error: bad.py")]
    problems = []
    if any("Traceback" in ln or "internal error" in ln for ln in lines):
        problems.append("a traceback or an internal error")
    if not any(ln.startswith("good.py:") for ln in lines):
        problems.append("the good file's finding is missing")
    if not (len(mine) == 1 or any(ln.startswith(finding) for ln in lines)) or len(mine) > 1:
        problems.append("neither the finding nor one line for the file")
    if wall > 2 * budget + baseline + SLACK_S:
        problems.append(f"{wall:.0f} s, past two phases' budgets ({budget:g} s each)")
    if run["peak_kb"] > MEMORY_BOUND_MB * 1024 or any("worker died" in ln for ln in mine):
        problems.append(f"{run['peak_kb'] / 1024:,.0f} MB at most (the bound: {MEMORY_BOUND_MB:,} MB), or a worker died")
    outcome = mine[0].split(": ", 3)[3].split(" (")[0] if mine else "analysed"
    return {"shape": name, "what": what, "n": n, "chars": len(program), "exit": run["code"], "outcome": outcome,
            "wall s": round(wall, 2), "cpu s": round(run["cpu"], 2), "peak MB": round(run["peak_kb"] / 1024),
            "problems": problems, "line": mine[0] if mine else None}


if __name__ == "__main__":
    sys.exit(main())
