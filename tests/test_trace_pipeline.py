"""`synclint trace` and `synclint.guard` see the findings `synclint check` reports: the same
pipeline (configuration, selection, noqa, per-file ignores, project linking, baseline), on
CPU with a recorded trace of a small two-file project."""

import json
from types import SimpleNamespace

from synclint.testing import run_cli
from synclint.trace.schema import Site, Trace

CONFIG = '[tool.synclint.per-file-ignores]\n"helpers.py" = ["SYN106"]\n'
HELPERS = '''def report(loss, step):
    print(f"step {step}: {loss}")
    return loss.max().item()
'''
TRAIN = '''import torch

from helpers import report


def main():
    model = torch.nn.Linear(4, 4).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        x = torch.randn(8, 4, device="cuda")
        loss = model(x).sum()
        loss.backward()
        opt.step()
        a = loss.item()
        b = loss.item() * 2  # noqa: SYN101
        c = float(loss)
        d = report(loss, step)
        print(a, b, c, d)


main()
'''


def _project(tmp_path):
    """The project, with a baseline taken before `float(loss)` and the helper's `.item()` were
    written (so it holds `a = loss.item()` alone)."""
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    (tmp_path / "helpers.py").write_text(HELPERS.replace("    return loss.max().item()\n", "    return 0\n"))
    (tmp_path / "train.py").write_text(TRAIN.replace("        c = float(loss)\n", "        c = 0\n"))
    r = run_cli(["baseline", ".", "-o", "baseline.json", "--no-cache"], tmp_path)
    assert r.exit_code == 0, r.output
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def _line(text, source):
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_trace_load_reports_the_findings_check_reports_under_the_same_configuration(tmp_path):
    root = _project(tmp_path)
    sites = [Site("train.py", _line(text, TRAIN), "main", "stream", count=10, blocked_ms=1.0, timed=10)
             for text in ("a = loss.item()", "b = loss.item()", "c = float(loss)")]
    sites += [Site("helpers.py", _line(text, HELPERS), "report", "stream", count=10, blocked_ms=1.0, timed=10,
                   via="torch/_tensor.py:__format__" if "print" in text else None)
              for text in ("print(f", "loss.max().item()")]
    (root / "trace.json").write_text(Trace({"root": str(root), "wall_ms": 100.0}, sites).dumps())

    check = run_cli(["check", ".", "--baseline", "baseline.json", "--output-format", "json", "--no-cache"], root)
    assert check.exit_code == 1, check.output
    checked = sorted((f["filename"], f["location"]["row"], f["code"], f["message"]) for f in json.loads(check.output))
    traced = run_cli(["trace", "--load", "trace.json", "--baseline", "baseline.json", "--format", "json",
                      "--no-cache"], root)
    assert traced.exit_code == 0, traced.output
    doc = json.loads(traced.output)
    joined = sorted((f["filename"], f["location"]["row"], f["code"], f["message"])
                    for row in doc["rows"] for f in row["findings"])
    assert joined == checked
    # what the configuration, the noqa and the baseline leave out is a sync no shown finding covers
    assert [(f, row, code) for f, row, code, _ in checked] == [
        ("helpers.py", _line(".item()", HELPERS), "SYN101"), ("train.py", _line("float(loss)", TRAIN), "SYN104")]
    missed = {(r["file"], r["line"]) for r in doc["rows"] if r["status"] == "missed"}
    assert missed == {("train.py", _line("a = loss", TRAIN)), ("train.py", _line("b = loss", TRAIN)),
                      ("helpers.py", _line("print(f", HELPERS))}
    assert doc["summary"]["suppressed"] == {"noqa": 1, "baseline": 1}
    text = run_cli(["trace", "--load", "trace.json", "--baseline", "baseline.json", "--no-cache"], root).output
    assert "Not shown: 1 by # noqa, 1 by the baseline." in text
    # from elsewhere: the trace's root is the project, the findings are named as check names them there
    far = run_cli(["trace", "--load", f"{root.name}/trace.json", "--baseline", f"{root.name}/baseline.json",
                   "--format", "json", "--no-cache"], root.parent)
    near = run_cli(["check", root.name, "--baseline", f"{root.name}/baseline.json", "--output-format", "json",
                    "--no-cache"], root.parent)
    assert sorted(f["filename"] for row in json.loads(far.output)["rows"] for f in row["findings"]) == \
        sorted(f["filename"] for f in json.loads(near.output)) == [f"{root.name}/helpers.py", f"{root.name}/train.py"]
    assert {r["status"] for r in json.loads(far.output)["rows"]} == {"confirmed", "missed"}


def test_trace_load_with_a_broken_configuration_says_so_in_one_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\nselect = [\"NOPE\"]\n")
    (tmp_path / "t.py").write_text("x = 1\n")
    trace = Trace({"root": str(tmp_path)}, [Site("t.py", 1, "<module>", "stream", count=1)])
    (tmp_path / "trace.json").write_text(trace.dumps())
    r = run_cli(["trace", "--load", "trace.json", "--no-cache"], tmp_path)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "NOPE" in r.output


def _event(path, line, kind="stream"):
    """A sync as the guard meets it, on `path`'s `line`."""
    site = SimpleNamespace(file=str(path), line=line)
    where = SimpleNamespace(site=site, via=None, user=True,
                            raise_frame=SimpleNamespace(f_code=SimpleNamespace(co_filename=str(path))))
    return SimpleNamespace(where=where, kind=kind, thread="MainThread")


def test_the_guard_names_the_rules_the_users_configuration_selects(tmp_path):
    from synclint.trace.guard import _describe

    (tmp_path / "plain").mkdir()
    (tmp_path / "quiet").mkdir()
    (tmp_path / "quiet" / "pyproject.toml").write_text('[tool.synclint]\nignore = ["SYN101", "SYN401"]\n')
    for folder in ("plain", "quiet"):
        (tmp_path / folder / "train.py").write_text(TRAIN.replace("from helpers import report\n", "")
                                                    .replace("        d = report(loss, step)\n", "        d = 0\n"))
    item = _line("a = loss.item()", TRAIN) - 1  # (the import line is gone)
    plain = _describe(_event(tmp_path / "plain" / "train.py", item), None)
    quiet = _describe(_event(tmp_path / "quiet" / "train.py", item), None)
    assert plain.rules == ("SYN101 tensor-item",) and quiet.rules == ()
    # the rule for a kind the debug mode cannot see is named only where it is selected
    assert _describe(_event(tmp_path / "plain" / "train.py", 3, "device"), None).rules == ("SYN401",)
    assert _describe(_event(tmp_path / "quiet" / "train.py", 3, "device"), None).rules == ()
