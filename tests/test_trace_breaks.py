"""Graph breaks in `synclint trace` (synclint/trace/dynamo.py), on CPU: a recorded trace of
fixtures/trace/compiled_step.py joined with the compile findings (confirmed, missed, not
reached), the trace file's `compile` part, and one live run of a tiny compiled program
(backend "eager", `--compile-only`), after which torch's logging is as it was."""

import json
import logging
from pathlib import Path

import pytest

from synclint.testing import run_cli
from synclint.trace.join import CONFIRMED, MISSED, NOT_REACHED, join
from synclint.trace.schema import Compile, GraphBreak, Recompilation, Trace, TraceError, from_json, load

REPO = Path(__file__).resolve().parent.parent
PROGRAM = "fixtures/trace/compiled_step.py"
RECORDED = REPO / "fixtures/trace/cpu-compiled-step.json"


def _line_of(text, path=REPO / PROGRAM):
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _copy_here(tmp_path):
    """The recorded trace, its root pointed at this checkout (it was taken in another)."""
    data = json.loads(RECORDED.read_text())
    data["meta"]["root"] = str(REPO)
    p = tmp_path / "trace.json"
    p.write_text(json.dumps(data))
    return p


def test_a_recorded_trace_lists_each_graph_break_confirmed_missed_or_not_reached(tmp_path):
    r = run_cli(["trace", "--load", str(_copy_here(tmp_path)), "--format", "json", "--no-cache"], REPO)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    rows = {(b["status"], b["line"]): b for b in doc["breaks"]}
    item, branch, mask = _line_of("scale = loss.item()"), _line_of("if loss > 10:"), _line_of("right = logits[")
    disabled, printed = _line_of("note(loss)  #"), _line_of("print(out.mean())")
    assert set(rows) == {(CONFIRMED, item), (CONFIRMED, branch), (CONFIRMED, mask), (MISSED, disabled),
                         (NOT_REACHED, printed)}
    assert [rows[(CONFIRMED, line)]["rules"] for line in (item, branch, mask)] == [["SYN601"], ["SYN602"], ["SYN604"]]
    assert [rows[(CONFIRMED, line)]["breaks"][0]["gb_id"] for line in (item, branch, mask)] == ["GB0124", "GB0170",
                                                                                                "GB0036"]
    # a break the rules leave alone (calling a torch.compiler.disable'd function) is shown, not hidden
    assert rows[(MISSED, disabled)]["breaks"][0]["gb_id"] == "GB0098" and rows[(MISSED, disabled)]["rules"] == []
    # `evaluate` is compiled but runs only with --eval: its break is predicted, not met
    assert rows[(NOT_REACHED, printed)]["rules"] == ["SYN603"] and rows[(NOT_REACHED, printed)]["count"] == 0
    assert doc["summary"]["breaks"] == {"confirmed": 3, "missed": 1, "not-reached": 1}
    assert doc["rows"] == []  # no syncs were recorded (--compile-only): no finding is refuted by their absence
    first = next(rc for rc in doc["recompiles"] if rc["function"] == "compute")
    assert first["line"] == _line_of("def compute(") and "size mismatch" in first["guards"][0]


def test_the_text_and_markdown_outputs_show_the_breaks_by_line(tmp_path):
    report = tmp_path / "r.md"
    r = run_cli(["trace", "--load", str(_copy_here(tmp_path)), "--no-cache", "--report", str(report)], REPO)
    assert r.exit_code == 0, r.output
    md = report.read_text()
    assert "## Graph breaks and recompilations" in md and "| `fixtures/trace/compiled_step.py:" in md
    assert "| where | status | rules | what blocked |" not in md  # --compile-only recorded no syncs
    assert "graph breaks only (--compile-only: no syncs recorded)" in r.output
    line = next(x for x in r.output.splitlines() if f"{PROGRAM}:{_line_of('if loss > 10:')} " in x)
    assert "confirmed" in line and "SYN602" in line and "GB0170 Data-dependent branching" in line
    assert "3 compile findings confirmed, 1 graph-break line missed by the rules, 1 compile finding with no break" \
        in r.output
    assert f"recompiled 1x: {PROGRAM}:{_line_of('def compute(')} compute: 0/0: tensor 'x' size mismatch" in r.output


def test_the_compile_part_round_trips_and_older_traces_have_none():
    trace = load(str(RECORDED))
    assert trace.compile is not None and trace.meta["compile"].startswith("torch._logging artifacts")
    assert from_json(json.loads(trace.dumps()), "again").compile == trace.compile
    old = {"schema": "synclint-trace", "version": 1, "meta": {}, "sites": []}
    assert from_json(old, "old.json").compile is None
    assert join(from_json(old, "old.json"), [], str(REPO)).breaks == []
    bad = dict(old, compile={"breaks": [{"line": 3}]})
    with pytest.raises(TraceError, match=r"^bad\.json: compile\.breaks\[0\] has no 'file'$"):
        from_json(bad, "bad.json")


def test_a_break_in_a_library_line_is_charged_to_the_users_line_that_called_it(tmp_path):
    from synclint.trace.dynamo import Break, DynamoRecorder, compile_record
    from synclint.trace.frames import UserCode

    user_file = tmp_path / "train.py"
    user_file.write_text("import torch\n\ndef step(x):\n    return torch.nn.functional.helper(x)\n")
    lib = "/usr/lib/python3/site-packages/torch/nn/functional.py"
    rec = DynamoRecorder()
    rec.breaks.append(Break(lib, 120, "Data-dependent branching", "GB0170", "", "", [(str(user_file), 4, "step"),
                                                                                        (lib, 120, "helper")]))
    got = compile_record(rec, UserCode([str(tmp_path)])).breaks
    assert [(b.file, b.line, b.function, b.dynamo_at, b.user) for b in got] == [
        ("train.py", 4, "step", "torch/nn/functional.py:120", True)]
    assert got[0].source == "return torch.nn.functional.helper(x)"


TINY = '''import torch


@torch.compiler.disable
def helper(x):
    return x + 1


def step(x):
    y = x * 2
    v = y.sum().item()  # BREAK
    if y.mean() > 0:  # BREAK
        y = y + 1
    return helper(y) + v  # BREAK


fn = torch.compile(step, backend="eager")
fn(torch.ones(4, device="cpu"))
'''


def _logging_settings():
    from torch._logging import _internal as tl

    state = tl._get_log_state()
    loggers = {q: (logging.getLogger(q).level, logging.getLogger(q).propagate)
               for q in tl.log_registry.get_artifact_log_qnames()}
    return sorted(state.artifact_names), dict(state.log_qname_to_level), loggers


def test_a_live_compiled_run_records_its_breaks_quietly_and_restores_torchs_logging(tmp_path, capfd):
    pytest.importorskip("torch")
    import torch._dynamo

    (tmp_path / "tiny.py").write_text(TINY)
    before = _logging_settings()
    r = run_cli(["trace", "--compile-only", "--no-cache", "--format", "json", "-o", "t.json", "--",
                 "python", "tiny.py"], tmp_path)
    assert r.exit_code == 0, r.output
    after = _logging_settings()  # (compiling imports modules with loggers of their own: compare those there before)
    assert after[:2] == before[:2] and {q: after[2][q] for q in before[2]} == before[2]
    assert "Graph break in user code" not in capfd.readouterr().err  # the user did not ask torch to print them
    breaks = load(str(tmp_path / "t.json")).compile.breaks
    marked = [i for i, line in enumerate(TINY.splitlines(), 1) if line.endswith("# BREAK")]
    assert [(b.file, b.line) for b in breaks] == [("tiny.py", line) for line in marked]
    assert [b.gb_id for b in breaks] == ["GB0124", "GB0170", "GB0098"]
    rows = {b["line"]: (b["status"], b["rules"]) for b in json.loads(r.output[r.output.index("{"):])["breaks"]}
    assert rows == {marked[0]: (CONFIRMED, ["SYN601"]), marked[1]: (CONFIRMED, ["SYN602"]), marked[2]: (MISSED, [])}
    torch._dynamo.reset()


FULLGRAPH = '''import torch


@torch.compile(backend="eager", fullgraph=True)
def normalized(x):
    scale = x.abs().amax()
    print(scale)  # BREAK
    return x / scale


normalized(torch.ones(3))
'''


def test_a_break_that_fullgraph_makes_the_programs_error_is_recorded_where_it_stopped(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "full.py").write_text(FULLGRAPH)
    r = run_cli(["trace", "--compile-only", "--no-cache", "--format", "json", "-o", "t.json", "--",
                 "python", "full.py"], tmp_path)
    assert r.exit_code == 1  # the program's own
    doc = json.loads(r.output[r.output.index("{"):])
    assert doc["meta"]["stopped"] == "error"
    line = FULLGRAPH.splitlines().index("    print(scale)  # BREAK") + 1
    [row] = doc["breaks"]
    assert (row["status"], row["line"], row["rules"]) == (CONFIRMED, line, ["SYN603"])
    assert row["breaks"][0]["gb_id"] == "GB0059" and row["breaks"][0]["error"] is True
    assert "compile error under fullgraph=True" in row["findings"][0]["message"]


def test_breaks_the_user_asked_torch_to_print_are_still_printed(capfd):
    pytest.importorskip("torch")
    import torch._dynamo  # noqa: F401  (its loggers)
    from torch._logging import _internal as tl

    from synclint.trace.dynamo import DynamoRecorder

    message = "Graph break in user code at /x/train.py:3\nGraph Break Reason: Data-dependent branching\n" \
              "  Explanation: x\n"
    log = logging.getLogger("torch._dynamo.symbolic_convert.__graph_breaks")
    saved = tl._get_log_state()
    try:
        for asked in (False, True):
            tl._set_log_state(tl.LogState({}, {"graph_breaks"} if asked else set()))
            tl._init_logs()
            with DynamoRecorder() as rec:
                log.debug(message)
            assert [(b.file, b.line, b.gb_type) for b in rec.breaks] == [("/x/train.py", 3, "Data-dependent branching")]
            assert ("Graph break in user code at /x/train.py:3" in capfd.readouterr().err) is asked
            assert tl._get_log_state().artifact_names == ({"graph_breaks"} if asked else set())
    finally:
        tl._set_log_state(saved)
        tl._init_logs()


def test_only_compile_findings_that_predict_a_break_are_joined_with_breaks():
    from synclint.findings import Finding

    def finding(code, row, message):
        return Finding(code, "n", message, str(REPO / "t.py"), row, 1, row, 9, True)

    trace = Trace({}, [], compile=Compile([GraphBreak("t.py", 3, "f", "Data-dependent branching", "GB0170", count=1)],
                                          [Recompilation("t.py", 1, "f", 1)]))
    findings = [finding("SYN602", 3, "x: a graph break (GB0170) splits `f` here"),
                finding("SYN101", 3, "eager read"),  # not a compile finding: joined with syncs only
                finding("SYN601", 5, "x: no graph break (`capture_scalar_outputs` captures it), but the host waits"),
                finding("SYN603", 7, "x: a compile error under fullgraph=True (GB0059)")]
    joined = join(trace, findings, str(REPO))
    assert [(r.status, r.line, r.codes) for r in joined.breaks] == [(CONFIRMED, 3, ["SYN602"]),
                                                                     (NOT_REACHED, 7, ["SYN603"])]


def test_check_report_with_a_trace_says_per_compile_finding_whether_the_graph_broke(tmp_path):
    report = tmp_path / "report.md"
    r = run_cli(["check", PROGRAM, "--no-cache", "--report", str(report), "--trace", str(_copy_here(tmp_path))], REPO)
    assert r.exit_code == 1, r.output
    md = report.read_text()
    item = next(line for line in md.splitlines() if f"compiled_step.py:{_line_of('scale = loss.item()')}:" in line)
    assert "| graph break (GB0124 Unsupported Tensor.item()" in item and "compilations) |" in item
    printed = next(line for line in md.splitlines() if f"compiled_step.py:{_line_of('print(out.mean())')}:" in line)
    assert printed.endswith("| no graph break in the run |")
    assert "## Graph breaks the rules missed" in md and f"`{PROGRAM}:{_line_of('note(loss)  #')}` | GB0098" in md
