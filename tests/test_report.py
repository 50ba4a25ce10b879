"""`synclint check --report FILE [--bench FILE]` on recorded bench data
(tests/data/bench-sample.json: an H200 run's shape, SYN101 faster, SYN201 slower,
SYN103 inside the noise)."""

import json
import re
from pathlib import Path

import pytest

from synclint.testing import run_cli as run

DATA = Path(__file__).resolve().parent / "data"
BENCH = DATA / "bench-sample.json"

SOURCE = (
    "import torch\n"
    "w = torch.ones(8, device='cuda')\n"
    "m = w > 0\n"
    "c = w.cpu()\n"
    "d = w.mean().item()\n"
    "for i in range(3):\n"
    "    a = w.sum().item()\n"
    "    b = w[m]\n"
)




def findings(cwd):
    r = run(["check", "--no-cache", "--output-format", "json", "train.py"], cwd)
    return json.loads(r.stdout)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE, encoding="utf-8")
    return tmp_path


def test_report_joins_findings_with_measured_speedups(project):
    r = run(["check", "--no-cache", "train.py", "--report", "report.md", "--bench", str(BENCH)], project)
    assert r.exit_code == 1, r.output
    text = (project / "report.md").read_text(encoding="utf-8")
    bench = json.loads(BENCH.read_text())
    # where and when it was measured
    assert "NVIDIA H200" in text and "2026-11-20" in text and "CUDA 12.8" in text
    # every finding appears, under its rule
    found = findings(project)
    for f in found:
        assert f"`train.py:{f['location']['row']}:{f['location']['column']}`" in text
    sections = re.findall(r"^## (SYN\d{3}) ", text, re.M)
    assert sorted(sections) == sorted({f["code"] for f in found})
    # hot groups first, the fastest measured fix first among them
    hot_codes = {f["code"] for f in found if f["hot"]}
    first_cold = next(i for i, c in enumerate(sections) if c not in hot_codes) if set(sections) - hot_codes else len(sections)
    assert set(sections[:first_cold]) == hot_codes
    assert sections[0] == "SYN101"
    # the speedups are the bench file's, the verdicts honest
    by_code = {r["code"]: r for r in bench["results"]}
    body = {c: text.split(f"## {c} ", 1)[1].split("\n## ", 1)[0] for c in sections}
    assert "4.00x faster" in body["SYN101"] and "1,520 µs" in body["SYN101"] and "380 µs" in body["SYN101"]
    assert by_code["SYN201"]["verdict"] == "slower"
    assert "not faster" in body["SYN201"] and "slower" in body["SYN201"] and "faster**" not in body["SYN201"].replace("not faster", "")
    assert "not faster" in body["SYN103"] and "no measurable gain" in body["SYN103"]
    # inside a group, hot findings first
    rows = re.findall(r"^\| `train.py:(\d+):\d+` \| (\*\*hot\*\*|cold) ", body["SYN101"], re.M)
    assert [h for _, h in rows] == ["**hot**", "cold"] and [int(r) for r, _ in rows] == [7, 5]


def test_rules_without_measurement_say_so(project):
    (project / "train.py").write_text(SOURCE + "n = torch.nonzero(w)\n", encoding="utf-8")
    run(["check", "--no-cache", "train.py", "--report", "r.md", "--bench", str(BENCH)], project)
    text = (project / "r.md").read_text(encoding="utf-8")
    codes = {f["code"] for f in findings(project)} - {"SYN101", "SYN103", "SYN201"}
    assert codes
    for c in codes:
        section = text.split(f"## {c} ", 1)[1].split("\n## ", 1)[0]
        assert "not measured" in section


def test_untimed_bench_shows_no_speedups(project, tmp_path):
    data = json.loads(BENCH.read_text())
    data["meta"].update(timed=False, gpu=None, cuda=None, device="cpu")
    for r in data["results"]:
        r.update(flagged_us=None, fixed_us=None, speedup=None, spread=None, verdict="not timed")
    bench = tmp_path / "cpu.json"
    bench.write_text(json.dumps(data))
    run(["check", "--no-cache", "train.py", "--report", "r.md", "--bench", str(bench)], project)
    text = (project / "r.md").read_text(encoding="utf-8")
    assert "not timed" in text and "x faster" not in text and "µs" not in text


def test_default_is_the_shipped_results_or_says_there_are_none(project):
    from importlib.resources import files

    shipped = files("synclint").joinpath("data/bench.json")
    r = run(["check", "--no-cache", "train.py", "--report", "r.md"], project)
    text = (project / "r.md").read_text(encoding="utf-8")
    if shipped.is_file():
        meta = json.loads(shipped.read_text(encoding="utf-8"))["meta"]
        assert str(meta["date"])[:10] in text and "shipped with synclint" in text
        if meta.get("gpu"):
            assert meta["gpu"] in text
    else:
        assert "No bench results" in text and "no bench results" in r.output


def test_missing_shipped_results_fall_back_clearly(project, monkeypatch):
    import synclint.report.savings

    monkeypatch.setattr(synclint.report.savings, "SHIPPED", "data/no-such-bench.json")
    r = run(["check", "--no-cache", "train.py", "--report", "r.md"], project)
    assert r.exit_code == 1  # the findings decide the exit code, not the missing data
    text = (project / "r.md").read_text(encoding="utf-8")
    assert "No bench results" in text and "--bench FILE" in text and "x faster" not in text
    assert "## SYN101 " in text  # the findings are still listed


def test_no_findings(tmp_path):
    (tmp_path / "clean.py").write_text("import torch\nx = torch.ones(3)\n")
    r = run(["check", "--no-cache", "clean.py", "--report", "r.md", "--bench", str(BENCH)], tmp_path)
    assert r.exit_code == 0
    assert "No findings." in (tmp_path / "r.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("content, message", [
    ("{broken", "not valid JSON"),
    ('{"results": []}', "not a `synclint bench` results file"),
])
def test_unusable_bench_file_is_an_error(project, content, message):
    bad = project / "bad.json"
    bad.write_text(content)
    (project / "r.md").write_text("previous report\n")
    r = run(["check", "--no-cache", "train.py", "--report", "r.md", "--bench", "bad.json"], project)
    assert r.exit_code == 2 and message in r.output
    assert (project / "r.md").read_text() == "previous report\n"  # untouched


def test_atomic_write_leaves_no_temporary_files(project):
    (project / "r.md").write_text("old\n")
    run(["check", "--no-cache", "train.py", "--report", "r.md", "--bench", str(BENCH)], project)
    assert (project / "r.md").read_text(encoding="utf-8").startswith("# synclint report")
    assert not [p for p in project.iterdir() if p.name.startswith(".synclint-")]
    r = run(["check", "--no-cache", "train.py", "--report", "no/such/dir/r.md", "--bench", str(BENCH)], project)
    assert r.exit_code == 2 and "cannot write" in r.output


def test_every_figure_says_its_sizes_and_regime(project, tmp_path):
    """Sizes from the bench JSON; the regime from the result where the bench records one,
    else from the harness setting (meta.background_us); an interval only where recorded."""
    data = json.loads(BENCH.read_text())
    by_code = {r["code"]: r for r in data["results"]}
    by_code["SYN101"]["sizes"] = {"n": 10_000_000}
    by_code["SYN101"]["regime"] = {"name": "launch-bound"}
    by_code["SYN101"]["speedup_interval"] = [3.5, 4.5]
    data["meta"]["background_us"] = 1000.0
    bench = tmp_path / "b.json"
    bench.write_text(json.dumps(data))
    run(["check", "--no-cache", "train.py", "--report", "r.md", "--bench", str(bench)], project)
    text = (project / "r.md").read_text(encoding="utf-8")
    row = next(l for l in text.splitlines() if l.startswith("| [SYN101"))
    assert "4.00x faster" in row and "n=10,000,000; launch-bound; interval 3.50x–4.50x" in row
    section = text.split("## SYN101 ", 1)[1].split("\n## ", 1)[0]
    assert "**4.00x faster** at n=10,000,000; launch-bound" in section
    timed = [c for c in by_code if c != "SYN101" and by_code[c].get("flagged_us") is not None]
    for c in {f["code"] for f in findings(project)} & set(timed):
        line = next(l for l in text.splitlines() if l.startswith(f"| [{c}"))
        assert "steady-state loop, 1.0 ms of GPU work queued" in line and "interval" not in line


def test_report_quotes_a_file_name_that_would_break_its_line(tmp_path):
    """A file name holding a newline or a terminal control is shown quoted, as git shows it
    (and as the text output does), not written raw into the report's table."""
    name = "odd\nname.py"
    (tmp_path / name).write_text(SOURCE, encoding="utf-8")
    r = run(["check", "--no-cache", name, "--report", "report.md", "--bench", str(BENCH)], tmp_path)
    assert r.exit_code == 1, r.output
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert '`"odd\\nname.py":' in text
    assert "odd\nname.py" not in text
