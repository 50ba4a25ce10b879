"""fixtures/*.py: every finding is marked inline (`# error: SYN101 [hot]`), every mark is
found; unmarked lines must stay clean with every rule enabled."""

from pathlib import Path

import pytest

from synclint.registry import all_rules
from synclint.testing import expectations, fixed_source, fixture_paths, lint_with

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize("path", fixture_paths(FIXTURES), ids=lambda p: p.name)
def test_fixture(path):
    source = path.read_text(encoding="utf-8")
    expected = expectations(source)
    findings = lint_with(all_rules(), source)
    got = {(f.row, f.code): f.hot for f in findings}
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"missing {missing}, unexpected {extra}"
    wrong_heat = sorted(k for k, hot in expected.items() if hot is not None and got[k] != hot)
    assert not wrong_heat, f"hot/cold differs at {wrong_heat}"


@pytest.mark.parametrize("path", fixture_paths(FIXTURES), ids=lambda p: p.name)
def test_fixture_safe_fixes(path):
    """With safe fixes applied, a fixture becomes its `.fixed.py` twin; without a twin, safe
    fixing must change nothing (its rules offer only unsafe fixes, or none)."""
    source = path.read_text(encoding="utf-8")
    twin = path.with_suffix(".fixed.py")
    expected = twin.read_text(encoding="utf-8") if twin.exists() else source
    assert fixed_source(all_rules(), source, unsafe=False) == expected


def test_kernels_written_in_a_kernel_language_report_nothing_in_their_bodies():
    """tests/data/kernels.py, marked as a fixture is (not one of fixtures/: a GPU run cannot
    import TileLang to record it): Triton and TileLang kernel bodies give no finding, even
    where a kernel reads a CUDA tensor its factory was given; the host loop still does."""
    source = (Path(__file__).resolve().parent / "data" / "kernels.py").read_text(encoding="utf-8")
    got = {(f.row, f.code): f.hot for f in lint_with(all_rules(), source)}
    assert got == expectations(source)


def test_a_helpers_return_behind_a_type_test_counts_only_where_the_argument_passes_it():
    """tests/data/type_tests.py, marked as a fixture is: `to_scalar(loss)` of a CUDA loss is
    the `.item()` branch's Python float, not the parameter `return value` gives back for
    non-tensors; `to_host`'s tensor path gives the tensor back."""
    source = (Path(__file__).resolve().parent / "data" / "type_tests.py").read_text(encoding="utf-8")
    got = {(f.row, f.code): f.hot for f in lint_with(all_rules(), source)}
    assert got == expectations(source)
