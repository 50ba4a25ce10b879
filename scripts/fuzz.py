"""The large fuzz run: generated programs through `synclint check --select ALL --fix
[--unsafe-fixes]`'s per-file path (`tests/fuzzing.py` says what is checked).

    python scripts/fuzz.py --kind hypothesmith --count 10000 --seed 1 --out fuzz-out
    python scripts/fuzz.py --kind torch --count 10000 --seed 1 --out fuzz-out

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
    ap.add_argument("--kind", choices=("hypothesmith", "torch"), required=True)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=60, help="seconds one program may take")
    ap.add_argument("--out", type=Path, default=Path("fuzz-out"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
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


if __name__ == "__main__":
    sys.exit(main())
