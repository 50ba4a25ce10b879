"""Generated programs through the lint and fix path: no exception, no internal error, every
position inside the file, every fix compiling and converging (`fuzzing.check_program`).
A sample of each kind here; `scripts/fuzz.py` runs 10,000 of each (docs/reliability.md)."""

import random
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import fuzzing

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


# Generation is the slow part and its speed varies with the machine: no deadline; a fixed
# seed (derandomize) so that CI runs the same programs every time.
@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate, Phase.shrink],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()))
def test_any_valid_program_is_linted_and_fixed_cleanly(source):
    outcome = fuzzing.check_program(fuzzing.with_torch(source))
    assert outcome.problems == []


def test_torch_programs_are_linted_and_fixed_cleanly_and_exercise_the_rules():
    examples, fixtures = fuzzing.rule_examples(), fuzzing.fixture_sources(FIXTURES)
    outcomes = []
    for i in range(120):
        program, _ = fuzzing.torch_program(random.Random(i), examples, fixtures)
        outcome = fuzzing.check_program(program)
        assert outcome.problems == [], (program, outcome.problems)
        assert outcome.refused is None, (program, outcome.refused)
        outcomes.append(outcome)
    # the generator is worth running only while it reaches the rules and the fixer
    assert sum(bool(o.codes) for o in outcomes) >= 0.7 * len(outcomes)
    assert sum(bool(o.fixes) for o in outcomes) >= 0.25 * len(outcomes)


@pytest.mark.parametrize("problem", ["position", "compile", "internal"])
def test_check_program_reports_what_it_is_meant_to_catch(monkeypatch, problem):
    """The property test can fail: a finding outside the file, a fix that leaves code that
    does not compile, a rule that raised are each reported."""
    from synclint.findings import Edit, Finding, Fix

    real = fuzzing.lint

    def broken(source):
        found = real(source)
        if problem == "position":
            return [Finding("SYN101", "tensor-item", "m", "fuzz.py", 99, 1, 99, 5, True)] + found
        if problem == "internal":
            return [Finding("SYN101", "tensor-item", "internal error in SYN101; please report", "fuzz.py",
                            1, 1, 1, 1, True, internal=True)]
        if "a=1, a=1" in source:
            return []  # fixed: LibCST parses it, Python does not compile it
        return [Finding("SYN101", "tensor-item", "m", "fuzz.py", 2, 1, 2, 2, True,
                        fix=Fix("safe", "m", (Edit((2, 1), (2, 6), "x = f(a=1, a=1)"),)))]

    monkeypatch.setattr(fuzzing, "lint", broken)
    outcome = fuzzing.check_program("import torch\nx = 1\n")
    assert outcome.problems, problem


# Files on which the sweeps and the fuzz runs found a crash (docs/reliability.md, "Fuzz"
# and "Sweeps"): each must now go through lint and fix cleanly.
FOUND = {
    # CPython 3.13's test/support/__init__.py: one side of `if(a and b):` was rebuilt as
    # an `if` without the space LibCST requires (semantic/heat.py, lazy_init)
    "if-without-space": "import torch\ndef f(xs, cache):\n    for x in xs:\n"
                        "        if(cache is None and x is not None):\n            cache = x\n",
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_what_the_sweeps_and_fuzz_runs_found(name):
    outcome = fuzzing.check_program(FOUND[name])
    assert outcome.problems == [] and outcome.refused is None
