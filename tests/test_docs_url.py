"""Rule links point at real pages: docs/rules/<name>.md of this checkout by default, or the
`[tool.synclint] docs-url` base, the same in JSON, SARIF, GitHub annotations and the report."""

import json
import textwrap
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from synclint.findings import RULE_PAGES, rule_url
from synclint.testing import run_cli as run

HAZARD = textwrap.dedent(
    """\
    import torch

    x = torch.ones(3, device="cuda")
    for _ in range(3):
        v = x.sum().item()
    """
)
BASE = "https://github.com/ORG/synclint/blob/v0.1.0/docs/rules"


def _project(tmp_path, docs_url=None):
    (tmp_path / "train.py").write_text(HAZARD, encoding="utf-8")
    conf = "[tool.synclint]\n" + (f'docs-url = "{docs_url}"\n' if docs_url else "")
    (tmp_path / "pyproject.toml").write_text(conf, encoding="utf-8")


def test_default_links_open_the_checkouts_rule_page(tmp_path):
    _project(tmp_path)
    r = run(["check", "--no-cache", "--output-format", "json", "train.py"], tmp_path)
    (f,) = json.loads(r.stdout)
    parts = urlsplit(f["url"])
    assert parts.scheme == "file"
    page = Path(url2pathname(parts.path))
    assert page == RULE_PAGES / "tensor-item.md" and page.is_file()
    assert page.read_text(encoding="utf-8").startswith("# tensor-item (SYN101)")


def test_configured_base_is_used_by_every_output(tmp_path):
    _project(tmp_path, BASE)
    want = f"{BASE}/tensor-item.md"
    r = run(["check", "--no-cache", "--output-format", "json", "train.py"], tmp_path)
    assert json.loads(r.stdout)[0]["url"] == want
    r = run(["check", "--no-cache", "--output-format", "sarif", "train.py"], tmp_path)
    driver = json.loads(r.stdout)["runs"][0]["tool"]["driver"]
    assert {d["id"]: d["helpUri"] for d in driver["rules"]}["SYN101"] == want
    assert driver["informationUri"] == BASE + "/"
    r = run(["check", "--no-cache", "--output-format", "github", "train.py"], tmp_path)
    assert f"({want})" in r.stdout
    r = run(["check", "--no-cache", "--report", "report.md", "train.py"], tmp_path)
    assert f"[tensor-item]({want})" in (tmp_path / "report.md").read_text(encoding="utf-8")
    r = run(["rules", "--output-format", "json"], tmp_path)
    assert json.loads(r.stdout)[0]["url"] == want


def test_one_runs_docs_url_does_not_reach_the_next_run_in_the_same_process(tmp_path):
    """A daemon or --watch runs many checks in one process: a project without `docs-url`
    links to the default pages even after a check of one with it."""
    configured, plain = tmp_path / "configured", tmp_path / "plain"
    for d in (configured, plain):
        d.mkdir()
    _project(configured, BASE)
    _project(plain)
    r = run(["check", "--no-cache", "--output-format", "json", "train.py"], configured)
    assert json.loads(r.stdout)[0]["url"] == f"{BASE}/tensor-item.md"
    r = run(["check", "--no-cache", "--output-format", "json", "train.py"], plain)
    assert urlsplit(json.loads(r.stdout)[0]["url"]).scheme == "file"


def test_template_with_code_or_name():
    assert rule_url("tensor-item", "SYN101", "https://example.org/r/{code}.html") == "https://example.org/r/SYN101.html"
    assert rule_url("tensor-item", "SYN101", "https://example.org/{name}/") == "https://example.org/tensor-item/"


def test_a_docs_url_that_is_not_a_url_is_a_one_line_error(tmp_path):
    _project(tmp_path, "synclint.dev/rules")
    r = run(["check", "--no-cache", "train.py"], tmp_path)
    assert r.exit_code == 2
    (line,) = r.stderr.strip().splitlines()
    assert "pyproject.toml" in line and "docs-url must be" in line
