"""`synclint rules`: a header, a heading per family, one greppable line per rule, cut at a
word to fit $COLUMNS."""

import json

from click.testing import CliRunner

from synclint.frontends.cli import main
from synclint.registry import all_rules
from synclint.rule import FAMILIES


def rules_output(columns=None, *args):
    """`synclint rules ARGS` piped, with $COLUMNS set to `columns` (None: unset)."""
    r = CliRunner(env={"COLUMNS": None if columns is None else str(columns)}).invoke(main, ["rules", *args])
    assert r.exit_code == 0, r.output
    return r.stdout.splitlines()


def rule_lines(lines):
    return [l for l in lines if l.startswith("SYN") and not l[3:6].endswith("xx")]


def test_columns_80_a_header_a_heading_per_family_and_no_broken_words():
    lines = rules_output(80)
    rules = all_rules()
    assert lines[0].split() == ["CODE", "DEFAULT", "FIX", "NAME:", "SUMMARY"]
    assert len(rule_lines(lines)) == len(rules)
    family = None
    for line in lines[1:]:
        assert len(line) <= 80, line
        if not line:
            continue
        if line[4:6] == "xx":  # `SYN1xx  device-to-host read-back (21 rules)`
            family = line.split(None, 1)[1].rsplit(" (", 1)[0]
            continue
        code, default, fix, rest = line.split(None, 3)
        rule = next(r for r in rules if r.CODE == code)
        assert family == rule.FAMILY  # each rule under its own family's heading
        assert default == ("on" if rule.DEFAULT_ON else "off")
        assert fix == {"always": "always", "sometimes": "some", "never": "never"}[rule.FIX]
        name, _, summary = rest.partition(": ")
        assert name == rule.NAME + (" (hot only)" if rule.HOT_ONLY else "")  # the mark of `HOT_ONLY`
        full = rule.SUMMARY.removeprefix("Flags ")
        if summary.endswith("…"):
            kept = summary[:-1]
            # cut between words: what is kept is a prefix that ends where a word ends
            assert full.startswith(kept) and (kept == "" or full[len(kept)] == " "), (kept, full)
        else:
            assert summary == full
    headings = [l for l in lines if l[4:6] == "xx"]
    assert len(headings) == len({r.FAMILY for r in rules})
    assert all(any(f in h for h in headings) for f in FAMILIES.values())


def test_piped_without_columns_lines_are_whole_and_greppable():
    lines = rules_output(None)
    masks = [l for l in lines if "boolean GPU mask" in l]
    assert {l.split()[0] for l in masks} == {"SYN201", "SYN202"}
    assert all(not l.endswith("…") for l in lines)


def test_off_by_default_rules_are_visible():
    off = [l.split()[0] for l in rule_lines(rules_output(80)) if l.split()[1] == "off"]
    assert off == [r.CODE for r in all_rules() if not r.DEFAULT_ON] and off


def test_table_at_80_columns_keeps_every_column():
    table = rules_output(80, "--format", "table")
    assert "synclint rules" in table[0] and "┃" in "\n".join(table)
    header = next(l for l in table if "code" in l and "┃" in l)
    assert [c.strip() for c in header.strip("┃").split("┃")] == ["code", "default", "fix", "name", "summary"]
    row = next(l for l in table if "SYN101" in l)
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[:4] == ["SYN101", "on", "never", "tensor-item"] and cells[4]  # the summary is not squeezed out
    assert all(len(l) <= 80 for l in table)
    assert "┃" not in "\n".join(rules_output(120))


def test_json_is_unchanged():
    rows = json.loads("\n".join(rules_output(80, "--output-format", "json")))
    assert [sorted(r) for r in rows] == [["code", "default", "family", "fix", "has_bench", "hot_only", "name",
                                          "summary", "url"]] * len(all_rules())  # (hot_only: added, session 33)
    assert [r["code"] for r in rows] == [r.CODE for r in all_rules()]
