"""fixtures/projects/<rule-name>/: multi-file projects checked as `synclint check DIR` checks
them (`check_files`, one project at a time, every rule on). As in tests/test_fixtures.py, each
finding is marked inline (`# error: SYN101 [hot]`), each mark is found, and an unmarked line
that gets a finding fails.

Each project crosses a module boundary three ways: a helper of the other module returns the
value, a function of the other module takes it as a parameter from its callers here, and an
attribute of an object whose class the other module defines holds it. Each crossing has a
near-miss beside it (the CPU twin, the call with host values) that must stay clean."""

from pathlib import Path

import pytest

from synclint.registry import all_rules
from synclint.run.runner import check_files
from synclint.testing import expectations

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"
DIRS = sorted(p for p in PROJECTS.iterdir() if p.is_dir()) if PROJECTS.is_dir() else []


def _sources(project: Path):
    return sorted(project.rglob("*.py"))


@pytest.mark.parametrize("project", DIRS, ids=lambda p: p.name)
def test_project(project):
    files = _sources(project)
    assert len(files) >= 2, "a project crosses at least one module boundary"
    result = check_files([str(p) for p in files], all_rules())
    assert not result.errors, result.errors
    got = {(Path(f.filename).resolve().relative_to(project).as_posix(), f.row, f.code): f.hot
           for f in result.findings}
    expected = {}
    for p in files:
        for (row, code), hot in expectations(p.read_text(encoding="utf-8")).items():
            expected[(p.relative_to(project).as_posix(), row, code)] = hot
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"missing {missing}, unexpected {extra}"
    wrong_heat = sorted(k for k, hot in expected.items() if hot is not None and got[k] != hot)
    assert not wrong_heat, f"hot/cold differs at {wrong_heat}"


@pytest.mark.parametrize("project", DIRS, ids=lambda p: p.name)
def test_project_crosses_modules(project):
    """At least one finding lies in a module other than the one whose code reaches it, so the
    project is not two single-file fixtures side by side: some marked module imports another."""
    files = _sources(project)
    names = {p.stem for p in files}
    marked = [p for p in files if expectations(p.read_text(encoding="utf-8"))]
    assert marked, "a project marks at least one finding"
    imports_sibling = [
        p for p in files
        if any(f"from {n} import" in p.read_text(encoding="utf-8") for n in names - {p.stem})
    ]
    assert imports_sibling, "no module imports another module of the project"


def test_every_rule_has_a_project():
    """Each rule (but SYN901, about `# noqa` comments) is marked in some project."""
    marked = set()
    for project in DIRS:
        for p in _sources(project):
            marked |= {code for _, code in expectations(p.read_text(encoding="utf-8"))}
    wanted = {r.CODE for r in all_rules() if r.CODE != "SYN901"}
    assert sorted(wanted - marked) == []
