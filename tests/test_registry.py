"""The rule contract holds for every rule: codes, names, files, docs, examples."""

import re
from pathlib import Path

import pytest

from synclint.registry import all_rules, default_rules, match, select

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


def test_codes_and_names_unique():
    rules = all_rules()
    assert len({r.CODE for r in rules}) == len(rules)
    assert len({r.NAME for r in rules}) == len(rules)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.CODE)
def test_one_rule_per_file_named_after_the_rule(rule):
    module = rule.__module__.rsplit(".", 1)[-1]
    assert module == rule.NAME.replace("-", "_")
    assert (RULES_DIR / f"{module}.py").is_file()
    camel = "".join(part.capitalize() for part in rule.NAME.split("-"))
    assert rule.__name__.lower() == camel.lower()


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.CODE)
def test_docs_and_messages(rule):
    assert rule.SUMMARY and rule.SUMMARY.endswith(".")
    assert not rule.NAME.startswith(("no-", "avoid-", "banned-"))
    assert "`" in rule.MESSAGE, "messages put code in backticks"
    if rule.FIX_TITLE:
        assert rule.FIX_TITLE[0].isupper() and not rule.FIX_TITLE.endswith(".")
    for row in rule.CATALOGUE:
        assert re.fullmatch(r"[A-G]\d+", row)


def test_every_family_has_rules():
    families = {r.CODE[3] for r in all_rules()}
    assert families >= {"1", "2", "3", "4", "5"}


def test_selection_semantics():
    every = set(all_rules())
    assert set(select(["ALL"])) == every
    assert set(select()) == set(default_rules())
    assert all(r.CODE.startswith("SYN1") for r in select(["SYN1"]))
    off = [r for r in all_rules() if not r.DEFAULT_ON]
    if off:
        assert off[0] in select(extend_select=[off[0].CODE])
    assert match("tensor-item")[0].CODE == "SYN101"


def test_rules_package_cannot_be_imported_twice():
    import importlib
    import sys

    sys.path.insert(0, str(RULES_DIR.parent))
    try:
        with pytest.raises(ImportError):
            importlib.import_module("rules")
    finally:
        sys.path.remove(str(RULES_DIR.parent))
        sys.modules.pop("rules", None)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.CODE)
def test_generated_rule_pages_are_current(rule):
    """docs/rules/<name>.md is generated (`python -m synclint.report.rule_docs`); it must match the rule."""
    from synclint.report.rule_docs import rule_markdown

    page = RULES_DIR.parent / "docs" / "rules" / f"{rule.NAME}.md"
    assert page.is_file(), f"run `python -m synclint.report.rule_docs` to generate {page.name}"
    assert page.read_text(encoding="utf-8") == rule_markdown(rule), "stale: run `python -m synclint.report.rule_docs`"


def test_bench_docs_and_readme_are_current():
    import subprocess
    import sys

    script = RULES_DIR.parent / "scripts" / "gen_bench_docs.py"
    r = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
