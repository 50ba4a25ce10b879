"""The fixtures' SYN1xx-SYN4xx expectations against what really synced on a GPU.

tests/data/gpu-sync-record.json is written on a CUDA machine by scripts/record_syncs.py
(each fixture run under `torch.cuda.set_sync_debug_mode("warn")`, the innermost fixture
line of each sync recorded). For every fixture:

* every line marked `# error: SYN1xx..SYN4xx` must have synced, unless the debug mode
  cannot see that rule's sync (its BENCH has `debug_mode_sees=False`, or the rule is in
  BLIND_SPOTS below: sync-catalogue section 1, rows B5, G1, G2);
* every line that synced must be marked with a SYN1xx-SYN4xx code or `# unflagged-sync:`.

A line counts for the whole statement it belongs to (a multi-line call synced on its
second line still matches the mark on its first); for `if`/`while`/`for` only the header.
Until the record exists the tests skip; once it exists, a fixture missing from it fails.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Dict, Set, Tuple

import pytest

from synclint.bench.pairs import rule_modules
from synclint.testing import expectations, fixture_paths, unflagged_sync_rows

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
RECORD = ROOT / "tests" / "data" / "gpu-sync-record.json"

# Syncs that set_sync_debug_mode cannot see (sync-catalogue.md section 1, "Not hooked").
BLIND_SPOTS = {
    "SYN303": "pageable non_blocking host-to-device copy: the driver stages and blocks (catalogue B5)",
    "SYN401": "torch.cuda.synchronize() is cudaDeviceSynchronize, not hooked (catalogue G1)",
    "SYN402": "Event.synchronize() is cudaEventSynchronize, not hooked (catalogue G2)",
}
BLIND_ROWS = {"B5", "G1", "G2", "G5"}

_RULES = {r.CODE: r for _, got in rule_modules() if not isinstance(got, Exception) for r in got}


def blind_reason(code: str) -> str:
    """Why the debug mode cannot confirm a `code` finding ('' when it can)."""
    if code in BLIND_SPOTS:
        return BLIND_SPOTS[code]
    rule = _RULES.get(code)
    if rule is None:
        return ""
    bench = getattr(rule, "BENCH", None)
    if bench is not None and not bench.debug_mode_sees:
        return "its BENCH pair says debug_mode_sees=False"
    rows = set(getattr(rule, "CATALOGUE", ()) or ())
    if rows and rows <= BLIND_ROWS:
        return f"catalogue rows {sorted(rows)} are debug-mode blind spots"
    return ""


def statement_spans(source: str) -> Dict[int, Tuple[int, int]]:
    """Line -> (first, last) line of the innermost statement holding it (header only for compound ones)."""
    spans: Dict[int, Tuple[int, int]] = {}

    def visit(stmts) -> None:
        for s in stmts:
            bodies = []
            for field in ("body", "orelse", "finalbody"):
                v = getattr(s, field, None)
                if isinstance(v, list) and v and isinstance(v[0], ast.stmt):
                    bodies.append(v)
            for h in getattr(s, "handlers", None) or []:
                bodies.append(h.body)
            for c in getattr(s, "cases", None) or []:
                bodies.append(c.body)
            if bodies:
                first_body = min(b[0].lineno for b in bodies)
                head = (s.lineno, max(s.lineno, first_body - 1))
                for row in range(head[0], head[1] + 1):
                    spans[row] = head
                for b in bodies:
                    visit(b)
            else:
                span = (s.lineno, s.end_lineno or s.lineno)
                for row in range(span[0], span[1] + 1):
                    spans[row] = span

    visit(ast.parse(source).body)
    return spans


def _load_record():
    if not RECORD.is_file():
        return None
    return json.loads(RECORD.read_text(encoding="utf-8"))


RECORD_DATA = _load_record()


# SYN9xx fixtures test comments (`# noqa` used or not): their syncing lines are silenced on
# purpose, so a GPU record would only restate the SYN1xx fixtures.
@pytest.mark.parametrize("path", [p for p in fixture_paths(FIXTURES) if not p.name.startswith("SYN9")],
                         ids=lambda p: p.name)
def test_fixture_matches_gpu_record(path):
    if RECORD_DATA is None:
        pytest.skip("no GPU record yet (tests/data/gpu-sync-record.json): run scripts/record_syncs.py on a GPU")
    entry = RECORD_DATA.get("fixtures", {}).get(path.name)
    assert entry is not None, (
        f"{path.name} is not in {RECORD.relative_to(ROOT)}: re-record on a GPU "
        "(bash scripts/gpu_run.sh, or python scripts/record_syncs.py tests/data/gpu-sync-record.json)"
    )
    source = path.read_text(encoding="utf-8")
    stale = entry.get("sha256") and entry["sha256"] != hashlib.sha256(path.read_bytes()).hexdigest()
    hint = " (the fixture changed since it was recorded: re-record it on a GPU)" if stale else ""
    assert entry.get("error") is None, f"{path.name} raised on the GPU: {entry['error']}{hint}"

    lines = source.splitlines()
    spans = statement_spans(source)

    def span(row: int) -> Tuple[int, int]:
        return spans.get(row, (row, row))

    synced: Set[int] = set(entry.get("synced_lines", []))
    synced_spans = {span(r) for r in synced}
    marked = {(row, code) for (row, code) in expectations(source) if code[3] in "1234"}
    marked_spans = {span(row) for row, _ in marked}
    unflagged_spans = {span(r) for r in unflagged_sync_rows(source)}

    problems = []
    for row, code in sorted(marked):
        if span(row) in synced_spans or blind_reason(code):
            continue
        problems.append(f"line {row} is marked {code} but did not sync on the GPU: {lines[row - 1].strip()}")
    for row in sorted(synced):
        if span(row) in marked_spans or span(row) in unflagged_spans:
            continue
        problems.append(
            f"line {row} synced on the GPU but carries no SYN1xx-SYN4xx mark nor `# unflagged-sync:`: {lines[row - 1].strip()}"
        )
    assert not problems, f"{path.name}{hint}:\n  " + "\n  ".join(problems)


def test_statement_spans():
    src = "import torch\nx = f(\n    a,\n    b)\nif (x >\n    0):\n    y = 1\nelse:\n    y = 2\n"
    s = statement_spans(src)
    assert s[3] == (2, 4) and s[2] == (2, 4)
    assert s[6] == (5, 6) and s[7] == (7, 7) and s[9] == (9, 9)


def test_blind_spots_are_in_the_catalogue_sense():
    assert blind_reason("SYN401") and blind_reason("SYN402") and blind_reason("SYN303")
    assert not blind_reason("SYN101")


def _recorder():
    import importlib.util

    spec = importlib.util.spec_from_file_location("record_syncs", ROOT / "scripts" / "record_syncs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _FakeCuda:
    modes = []

    @staticmethod
    def set_sync_debug_mode(mode):
        _FakeCuda.modes.append(mode)

    @staticmethod
    def synchronize():
        return None


class _FakeTorch:
    cuda = _FakeCuda

    @staticmethod
    def manual_seed(seed):
        return None


def test_recorder_attributes_each_sync_to_the_innermost_fixture_line(tmp_path):
    """The showwarning hook and the frame walk, without a GPU: a fake sync warning raised
    three frames below the fixture, three times from one line (warn mode dedup must not hide them)."""
    rec = _recorder()
    (tmp_path / "synclint_fake_ops.py").write_text(
        "import warnings\ndef item():\n    warnings.warn('called a synchronizing CUDA operation')\n"
    )
    fx = tmp_path / "SYN999.py"
    fx.write_text(
        "import synclint_fake_ops as ops\n"
        "\n"
        "def step():\n"
        "    ops.item()\n"
        "\n"
        "for _ in range(3):\n"
        "    step()\n"
        "ops.item()\n"
        "print('printed output is swallowed')\n"
        "assert __name__ == '__main__'\n"
    )
    res = rec.record_one(fx, _FakeTorch)
    assert res["error"] is None
    assert res["synced_lines"] == [4, 8]
    assert res["counts"] == {"4": 3, "8": 1}
    assert _FakeCuda.modes[-2:] == ["warn", "default"]
    bad = tmp_path / "SYN998.py"
    bad.write_text("x = 1\nraise ValueError('boom')\n")
    res = rec.record_one(bad, _FakeTorch)
    assert res["error"].startswith("ValueError: boom") and "line 2" in res["error"]
    (tmp_path / "SYN999.fixed.py").write_text("x = 1\n")
    assert [p.name for p in rec.fixture_paths(tmp_path, ['SYN998', 'SYN999.py'])] == ["SYN998.py", "SYN999.py"]
    assert "SYN999.fixed.py" not in [p.name for p in rec.fixture_paths(tmp_path)]
