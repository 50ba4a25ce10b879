"""`synclint rules`: one greppable line per rule, cut at a word to fit $COLUMNS."""

import os
import subprocess
import sys

from synclint.registry import all_rules


def rules_output(columns=None, *args):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    r = subprocess.run([sys.executable, "-m", "synclint", "rules", *args], capture_output=True,
                       text=True, env=env, check=True)
    return r.stdout.splitlines()


def test_columns_80_one_line_per_rule_and_no_broken_words():
    lines = rules_output(80)
    rules = all_rules()
    assert len(lines) == len(rules)
    for line, rule in zip(lines, rules):
        assert len(line) <= 80, line
        code, default, fix, rest = line.split(None, 3)
        assert code == rule.CODE
        assert default == ("on" if rule.DEFAULT_ON else "off")
        assert fix == {"always": "always", "sometimes": "some", "never": "never"}[rule.FIX]
        name, _, summary = rest.partition(": ")
        assert name == rule.NAME
        full = rule.SUMMARY.removeprefix("Flags ")
        if summary.endswith("…"):
            kept = summary[:-1]
            # cut between words: what is kept is a prefix that ends where a word ends
            assert full.startswith(kept) and (kept == "" or full[len(kept)] == " "), (kept, full)
        else:
            assert summary == full


def test_piped_without_columns_lines_are_whole_and_greppable():
    lines = rules_output(None)
    masks = [l for l in lines if "boolean GPU mask" in l]
    assert {l.split()[0] for l in masks} == {"SYN201", "SYN202"}
    assert all(not l.endswith("…") for l in lines)


def test_table_only_on_request():
    table = "\n".join(rules_output(120, "--format", "table"))
    assert "synclint rules" in table and "┃" in table
    assert "┃" not in "\n".join(rules_output(120))
