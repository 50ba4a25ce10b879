"""The CI examples in docs/: valid for their CI system (the GitHub workflow and GitLab CI
JSON schemas vendored by check-jsonschema), quoted verbatim in docs/ci.md, and their
synclint commands run as written in a project with a hazard."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
GITHUB = ROOT / "docs" / "examples" / "github" / "workflows" / "synclint.yml"
GITLAB = ROOT / "docs" / "examples" / "gitlab-ci.yml"
HAZARD = "import torch\nw = torch.ones(8, device='cuda')\nfor i in range(3):\n    v = w.sum().item()\n"


def _shell(script, cwd, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _steps():
    wf = yaml.safe_load(GITHUB.read_text())
    return wf["jobs"]["synclint"]["steps"]


def test_examples_are_quoted_verbatim_in_ci_md():
    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    for path in (GITHUB, GITLAB):
        assert path.read_text(encoding="utf-8").rstrip() in doc, path


@pytest.mark.parametrize("path, schema", [(GITHUB, "vendor.github-workflows"), (GITLAB, "vendor.gitlab-ci")])
def test_examples_validate_against_their_ci_schema(path, schema):
    """check-jsonschema (its vendored SchemaStore schemas, no network) as CI systems parse YAML."""
    pytest.importorskip("check_jsonschema")
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_github_workflow_shape():
    wf = yaml.safe_load(GITHUB.read_text())
    job = wf["jobs"]["synclint"]
    assert job["permissions"]["security-events"] == "write"
    uses = [s.get("uses", "") for s in job["steps"]]
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "synclint.sarif" and upload.get("if") == "always()"
    assert any(u.startswith("actions/checkout@") for u in uses)
    assert "--output-format github" in job["steps"][-1]["run"]


def test_github_workflow_commands_run(tmp_path):
    (tmp_path / "train.py").write_text(HAZARD)
    summary = tmp_path / "summary.md"
    runs = [s["run"] for s in _steps() if "run" in s and "pip install" not in s["run"]]
    record, gate = runs
    proc = _shell(record, tmp_path, {"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0, proc.stderr
    sarif = json.loads((tmp_path / "synclint.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"
    assert summary.read_text().startswith("# synclint report")
    proc = _shell(gate, tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.startswith("::warning file=train.py,line=4,col=9,")


def test_gitlab_job_commands_run(tmp_path):
    (tmp_path / "train.py").write_text(HAZARD)
    job = yaml.safe_load(GITLAB.read_text())["synclint"]
    script = "\n".join(line for line in job["script"] if "pip install" not in line)
    proc = _shell(script, tmp_path)
    assert proc.returncode == 1  # findings fail the job; the artifacts are still written
    for p in job["artifacts"]["paths"]:
        assert (tmp_path / p).exists(), p
    (issue,) = json.loads((tmp_path / job["artifacts"]["reports"]["codequality"]).read_text())
    assert issue["check_name"] == "SYN101" and issue["location"] == {"path": "train.py", "lines": {"begin": 4, "end": 4}}
    root = ET.parse(tmp_path / job["artifacts"]["reports"]["junit"]).getroot()
    assert root.get("failures") == "1"
    assert root.find("testsuite/testcase").get("file") == "train.py"
