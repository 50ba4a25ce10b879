"""The join of a trace with the static findings, its outputs, and the CLI around them
(`synclint trace --load`, `synclint check --report --trace`), on CPU with a hand-made trace
of fixtures/trace/train_sites.py (the GPU run's recorded trace is checked in
test_trace_recorded.py)."""

import json
import re
from pathlib import Path

import pytest

from synclint.testing import run_cli
from synclint.trace.command import static_findings
from synclint.trace.join import CONFIRMED, MISSED, NOT_REACHED, join
from synclint.trace.output import render_json, render_markdown, render_text
from synclint.trace.schema import Site, Trace

REPO = Path(__file__).resolve().parent.parent
SCRIPT = "fixtures/trace/train_sites.py"


def _trace(root=str(REPO)):
    s = lambda line, kind, count, ms, **kw: Site(SCRIPT, line, "main", kind, count=count, blocked_ms=ms,  # noqa: E731
                                                 timed=count, **kw)
    sites = [
        s(53, "stream", 30, 40.0, debug_mode=30),  # .item()
        s(49, "stream", 30, 20.0, debug_mode=30, via="torch/_tensor.py:__getitem__"),  # mask
        s(45, "stream", 30, 1.0, debug_mode=30),  # x.to(device)
        s(46, "pageable-copy", 30, 2.0, debug_mode=0),
        s(54, "stream", 30, 0.5, debug_mode=30),
        s(56, "stream", 30, 0.4, debug_mode=30, via="torch/_tensor.py:__format__"),
        s(60, "event", 30, 0.2, debug_mode=0),
        s(61, "device", 30, 3.0, debug_mode=0),
        Site(SCRIPT, 24, "log_every", "stream", count=30, blocked_ms=0.3, timed=30, debug_mode=30,
             callers=[f"{SCRIPT}:58:main"]),
        Site("torch/utils/data/_utils/pin_memory.py", 20, "pin_memory", "stream", count=2, blocked_ms=0.1, timed=2,
             user=False, threads=["pin-thread"]),
    ]
    return Trace({"wall_ms": 200.0, "root": root, "gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0+cu130",
                  "date": "2026-11-26T10:00:00Z", "steps": 30, "command": ["python", SCRIPT]}, sites)


@pytest.fixture(scope="module")
def joined():
    trace = _trace()
    outcome = static_findings([str(REPO / SCRIPT)], str(REPO), no_cache=True)
    assert outcome.all_errors == []
    return join(trace, outcome.findings, str(REPO))


def _status(joined):
    return {(r.status, r.line): r for r in joined.rows}


def test_each_finding_and_each_sync_gets_its_label(joined):
    st = _status(joined)
    confirmed = {line for (status, line) in st if status == CONFIRMED}
    assert confirmed == {24, 45, 46, 49, 53, 54, 56}
    assert {line for (status, line) in st if status == NOT_REACHED} == {34}  # the DataLoader: no sync itself
    # Event.synchronize and torch.cuda.synchronize sit in a function that also times
    # itself, which the rules take as intentional; the library thread's sync has no user
    # line. (max() over the list of GPU losses the loop hands a helper: SYN108.)
    assert {line for (status, line) in st if status == MISSED} == {60, 61, 20}
    assert st[(CONFIRMED, 24)].codes == ["SYN108"]
    assert st[(CONFIRMED, 53)].codes == ["SYN101"] and st[(CONFIRMED, 53)].count == 30
    assert st[(CONFIRMED, 46)].codes == ["SYN303"] and "pageable" in st[(CONFIRMED, 46)].op
    assert st[(NOT_REACHED, 34)].codes == ["SYN504"] and st[(NOT_REACHED, 34)].sites == []
    assert st[(MISSED, 61)].op == "torch.cuda.synchronize()"


def test_rows_are_sorted_by_blocked_time_with_unreached_findings_last(joined):
    blocked = [r.blocked_ms for r in joined.rows if r.status != NOT_REACHED]
    assert blocked == sorted(blocked, reverse=True)
    assert joined.rows[-1].status == NOT_REACHED and joined.rows[0].line == 53


def test_text_table_shows_ms_and_share_of_wall(joined):
    text = render_text(joined)
    first = next(line for line in text.splitlines() if SCRIPT + ":53" in line)
    assert "confirmed" in first and "SYN101" in first and "40.0" in first and "20.0%" in first
    assert "272 syncs at 10 sites blocked the host 67.5 ms of 200.0 ms wall (33.7%), 30 steps" in text
    assert "7 findings confirmed, 3 sync sites missed by the rules, 1 finding not reached" in text


def test_the_headline_says_how_many_syncs_were_timed_when_not_all_were(joined):
    from synclint.trace.output import headline

    assert "timed" not in headline(joined)
    joined.trace.sites[0].timed -= 1  # its first sync taught the clock where to look
    assert "272 syncs at 10 sites (271 of them timed) blocked the host" in headline(joined)


def test_json_output_is_versioned_and_complete(joined):
    doc = json.loads(render_json(joined))
    assert doc["schema"] == "synclint-trace-join" and doc["version"] == 1
    assert doc["summary"] == {"confirmed": 7, "missed": 3, "not-reached": 1, "syncs": 272,
                              "blocked_ms": 67.5, "wall_ms": 200.0, "suppressed": {}}
    row = doc["rows"][0]
    assert (row["line"], row["status"], row["rules"], row["count"], row["wall_share"]) == (53, "confirmed", ["SYN101"], 30, 20.0)
    assert row["findings"][0]["code"] == "SYN101"


def test_markdown_report_lists_every_row(joined):
    md = render_markdown(joined)
    assert md.count("\n| `") == len(joined.rows)
    assert "| `fixtures/trace/train_sites.py:61` | missed by the rules | - | torch.cuda.synchronize() | 30 |" in md


def test_trace_load_joins_a_recorded_trace(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(_trace(root="/elsewhere/on/the/gpu/machine").dumps())
    r = run_cli(["trace", "--load", str(p), "--report", str(tmp_path / "r.md")], REPO)
    assert r.exit_code == 0, r.output
    assert re.search(r"train_sites\.py:53 .*confirmed .*SYN101", r.output)
    assert (tmp_path / "r.md").read_text().startswith("# synclint trace")


def test_trace_load_of_a_bad_file_is_one_line_exit_2(tmp_path):
    p = tmp_path / "run.json"
    p.write_text('{"schema": "nope"}')
    r = run_cli(["trace", "--load", str(p)], REPO)
    assert r.exit_code == 2 and r.output.strip() == f"synclint trace: {p}: not a synclint trace (no \"schema\": \"synclint-trace\")"


def test_trace_without_a_gpu_says_so_in_one_line_exit_2(tmp_path):
    from synclint.trace.intercept import cuda_state

    if cuda_state() is None:
        pytest.skip("a CUDA device is present")
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    r = run_cli(["trace", "--", "python", str(script)], tmp_path)
    assert r.exit_code == 2
    lines = [line for line in r.output.splitlines() if line.startswith("synclint")]
    assert len(lines) == 1 and "no CUDA GPU is visible" in lines[0] and "Traceback" not in r.output
    assert "ran" not in r.output and not (tmp_path / "synclint-trace.json").exists()


def test_trace_help_teaches_the_feature():
    r = run_cli(["trace", "--help"], REPO)
    assert r.exit_code == 0
    for piece in ("synclint trace -- python train.py", "--steps", "--warmup", "--load", "confirmed", "missed"):
        assert piece in r.output


def test_check_report_with_a_trace_shows_the_cost_measured_per_finding(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(_trace().dumps())
    report = tmp_path / "report.md"
    r = run_cli(["check", SCRIPT, "--no-cache", "--report", str(report), "--trace", str(p)], REPO)
    assert r.exit_code == 1, r.output
    md = report.read_text()
    assert "in your run |" in md and "## Syncs the rules missed" in md
    row = next(line for line in md.splitlines() if "train_sites.py:53:" in line)
    assert row.endswith("30 syncs, 40.0 ms (20.0% of wall) |")
    row = next(line for line in md.splitlines() if "train_sites.py:34:" in line)
    assert row.endswith("not reached / no sync in the run |")
    assert "`fixtures/trace/train_sites.py:61` | torch.cuda.synchronize()" in md


def test_check_trace_needs_report_and_a_usable_trace(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    r = run_cli(["check", SCRIPT, "--no-cache", "--trace", str(bad)], REPO)
    assert r.exit_code == 2 and "--trace goes with --report" in r.output
    r = run_cli(["check", SCRIPT, "--no-cache", "--report", str(tmp_path / "r.md"), "--trace", str(bad)], REPO)
    assert r.exit_code == 2 and f"{bad}: not a synclint trace" in r.output and not (tmp_path / "r.md").exists()


def test_a_trace_with_line_records_tells_ran_without_a_sync_from_not_run():
    from synclint.trace.lines import ran
    from synclint.trace.output import status_words
    from synclint.trace.schema import load

    trace = load(str(REPO / "fixtures/trace/h100-train-sites-lines.json"))
    assert trace.lines is not None and trace.meta["lines"] == "sys.monitoring"
    findings = static_findings([str(REPO / SCRIPT)], str(REPO), no_cache=True).findings
    joined = join(trace, findings, str(REPO))
    loader = next(r for r in joined.rows if r.status == NOT_REACHED)
    # the DataLoader is built before the 3 warm-up steps: the window never ran its line
    assert loader.codes == ["SYN504"] and loader.ran is False and status_words(loader) == "not run in the window"
    assert "0 findings ran without a sync, 1 not run in the window." in render_text(joined)
    confirmed_line = next(r for r in joined.rows if r.status == CONFIRMED).line
    assert ran(trace.lines[SCRIPT], confirmed_line, confirmed_line)
