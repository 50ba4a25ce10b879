"""Machine-readable output formats for `synclint check --output-format` (chosen by
`synclint.report.output`, the dispatcher of every format).

- `json`: the documented list of findings (see DESIGN.md).
- `sarif`: SARIF 2.1.0 for GitHub code scanning (and any SARIF viewer). Rules carry their
  help text; results carry a line-independent fingerprint (the baseline's).
- `github`: GitHub Actions workflow commands (`::warning file=...::message`), one per
  finding: annotations on the pull request without uploading anything.
- `junit`: JUnit XML (GitLab, Jenkins, Azure): a test suite per file, a failing test case
  per finding (the common JUnit schema allows one <failure> per test case).
- `gitlab`: a GitLab Code Quality report (`artifacts: reports: codequality`), the Code
  Climate issue subset GitLab reads; severity `major` in hot code, `minor` in cold code.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence
from urllib.parse import quote

from synclint.baseline import fingerprint_hash, fingerprints
from synclint.build import VERSION
from synclint.findings import FileError, Finding, rule_url
from synclint.registry import all_rules
from synclint.report.rule_docs import rule_markdown

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "synclint/v1"
DESCRIPTION_MAX = 1000  # GitHub code scanning truncates rule descriptions at about this length


def _clip(text: str, limit: int = DESCRIPTION_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# ---------------------------------------------------------------- paths


def _relative(filename: str, root: Optional[str] = None) -> Optional[str]:
    """`filename` relative to `root` (default: the working directory) with forward
    slashes, or None when it lies outside it."""
    root = os.path.abspath(root or os.getcwd())
    absolute = os.path.abspath(filename)
    try:
        rel = os.path.relpath(absolute, root)
    except ValueError:  # another drive
        return None
    if rel == ".." or rel.startswith(".." + os.sep):
        return None
    return rel.replace(os.sep, "/")


def _artifact_location(filename: str) -> dict:
    rel = _relative(filename)
    if rel is None:
        return {"uri": Path(os.path.abspath(filename)).as_uri()}
    return {"uri": quote(rel, safe="/"), "uriBaseId": "%SRCROOT%"}


# ---------------------------------------------------------------- SARIF


def _rule_text(rule) -> str:
    """`What it does` and `Why is this bad?` as plain text, for fullDescription."""
    doc = rule.DOC
    parts = []
    for heading in ("## What it does", "## Why is this bad?"):
        if heading in doc:
            body = doc.split(heading, 1)[1].split("\n## ", 1)[0]
            parts.append(" ".join(body.split()))
    return " ".join(parts) or rule.SUMMARY


def _rule_descriptor(rule, docs_url: Optional[str]) -> dict:
    try:
        markdown = rule_markdown(rule)
    except Exception:  # a page that cannot render must not cost the whole report
        markdown = rule.DOC
    url = rule_url(rule.NAME, rule.CODE, docs_url)
    return {
        "id": rule.CODE,
        "name": rule.NAME,
        "shortDescription": {"text": _clip(rule.SUMMARY or rule.NAME)},
        "fullDescription": {"text": _clip(_rule_text(rule))},
        "help": {"text": rule.DOC, "markdown": markdown},
        **({"helpUri": url} if url else {}),
        "defaultConfiguration": {"level": "warning", "enabled": bool(rule.DEFAULT_ON)},
        "properties": {
            "tags": ["performance", "pytorch", "cuda", rule.FAMILY],
            "precision": "high",
            "problem.severity": "warning",
            "fix": rule.FIX,
        },
    }


def _rules_index(descriptors: List[dict]) -> Optional[str]:
    """The folder the rule pages are linked in (the tool's documentation), if any."""
    for d in descriptors:
        if d.get("helpUri"):
            return d["helpUri"].rsplit("/", 1)[0] + "/"
    return None


def _fingerprints(findings: Sequence[Finding]) -> List[str]:
    return [fingerprint_hash(fp) for fp in fingerprints(findings, Path.cwd())]


def _sarif_fix(finding: Finding) -> Optional[dict]:
    fix = finding.fix
    if fix is None or not fix.edits:
        return None
    return {
        "description": {"text": f"{fix.message or finding.fix_title or 'Apply the fix'} ({fix.applicability} fix)"},
        "artifactChanges": [{
            "artifactLocation": _artifact_location(finding.filename),
            "replacements": [
                {
                    "deletedRegion": {
                        "startLine": e.start[0], "startColumn": e.start[1],
                        "endLine": e.end[0], "endColumn": e.end[1],
                    },
                    "insertedContent": {"text": e.content},
                }
                for e in fix.edits
            ],
        }],
    }


def sarif_log(findings: Sequence[Finding], errors: Sequence[FileError] = (), docs_url: Optional[str] = None) -> dict:
    rules = list(all_rules())
    index: Dict[str, int] = {r.CODE: i for i, r in enumerate(rules)}
    descriptors = [_rule_descriptor(r, docs_url) for r in rules]
    for f in findings:  # a code the registry does not know (a stale cache): still valid SARIF
        if f.code not in index:
            index[f.code] = len(descriptors)
            descriptors.append({
                "id": f.code, "name": f.name, "shortDescription": {"text": f.name},
                **({"helpUri": f.url(docs_url)} if f.url(docs_url) else {}), "defaultConfiguration": {"level": "warning"},
            })
    results = []
    for f, fp in zip(findings, _fingerprints(findings)):
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "warning" if f.hot else "note",
            "message": {"text": f"{f.message} ({'hot' if f.hot else 'cold'} code)"},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": _artifact_location(f.filename),
                    "region": {
                        "startLine": f.row, "startColumn": f.column,
                        "endLine": f.end_row, "endColumn": f.end_column,
                    },
                },
            }],
            "partialFingerprints": {FINGERPRINT_KEY: fp},
            "properties": {"hot": f.hot, "name": f.name, **({"rate": f.rate} if f.rate else {})},
        }
        fix = _sarif_fix(f)
        if fix is not None:
            result["fixes"] = [fix]
        results.append(result)
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{e.filename}: {e.reason}"},
            "locations": [{"physicalLocation": {"artifactLocation": _artifact_location(e.filename)}}],
        }
        for e in errors
    ]
    run = {
        "tool": {
            "driver": {
                "name": "synclint",
                "version": VERSION,
                "semanticVersion": VERSION,
                **({"informationUri": _rules_index(descriptors)} if _rules_index(descriptors) else {}),
                "rules": descriptors,
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": results,
        "invocations": [{
            "executionSuccessful": not errors,
            "toolExecutionNotifications": notifications,
        }],
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


# ---------------------------------------------------------------- GitHub Actions


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_annotations(findings: Sequence[Finding], errors: Sequence[FileError] = (), docs_url: Optional[str] = None) -> str:
    """Workflow commands: `warning` for hot findings, `notice` for cold ones, `error` for
    files that could not be checked."""
    lines = []
    for f in findings:
        level = "warning" if f.hot else "notice"
        path = _relative(f.filename) or os.path.abspath(f.filename)
        props = [
            f"file={_escape_property(path)}",
            f"line={f.row}",
            f"col={f.column}",
            f"endLine={f.end_row}",
            f"endColumn={f.end_column}",
            f"title={_escape_property(f'{f.code} {f.name}')}",
        ]
        heat = "hot" if f.hot else "cold"
        link = f" ({f.url(docs_url)})" if f.url(docs_url) else ""
        lines.append(f"::{level} {','.join(props)}::{_escape_data(f'{f.message} [{heat}]{link}')}")
    for e in errors:
        path = _relative(e.filename) or os.path.abspath(e.filename)
        lines.append(f"::error file={_escape_property(path)},title=synclint::{_escape_data(e.reason)}")
    return "\n".join(lines)


# ---------------------------------------------------------------- JUnit XML


def junit_xml(findings: Sequence[Finding], errors: Sequence[FileError] = (), docs_url: Optional[str] = None) -> str:
    import xml.etree.ElementTree as ET

    by_file: Dict[str, List[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.filename, []).append(f)
    errors_by_file: Dict[str, List[FileError]] = {}
    for e in errors:
        errors_by_file.setdefault(e.filename, []).append(e)

    root = ET.Element("testsuites", name="synclint")
    total = fails = errs = 0
    for filename in sorted(set(by_file) | set(errors_by_file)):
        path = _relative(filename) or filename
        fs = sorted(by_file.get(filename, []), key=Finding.sort_key)
        es = errors_by_file.get(filename, [])
        suite = ET.SubElement(root, "testsuite", name=path, tests=str(len(fs) + len(es)),
                              failures=str(len(fs)), errors=str(len(es)), skipped="0")
        for f in fs:
            heat = "hot" if f.hot else "cold"
            case = ET.SubElement(suite, "testcase", name=f"{f.code} {f.name} at {f.row}:{f.column}",
                                 classname=path, file=path, line=str(f.row))
            failure = ET.SubElement(case, "failure", message=f"{f.code} [{heat}] {f.message}", type=f.code)
            failure.text = f"{path}:{f.row}:{f.column}: {f.code} [{heat}] {f.message}\n{f.url(docs_url) or f'synclint explain {f.code}'}\n"
        for e in es:
            case = ET.SubElement(suite, "testcase", name="synclint check", classname=path, file=path)
            error = ET.SubElement(case, "error", message=e.reason, type="FileError")
            error.text = f"{path}: {e.reason}\n"
        total += len(fs) + len(es)
        fails += len(fs)
        errs += len(es)
    if total == 0:
        suite = ET.SubElement(root, "testsuite", name="synclint", tests="1", failures="0", errors="0", skipped="0")
        ET.SubElement(suite, "testcase", name="no findings", classname="synclint")
        total = 1
    root.set("tests", str(total))
    root.set("failures", str(fails))
    root.set("errors", str(errs))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


# ---------------------------------------------------------------- GitLab Code Quality


def gitlab_code_quality(findings: Sequence[Finding], errors: Sequence[FileError] = ()) -> List[dict]:
    """Code Quality issues. Paths are relative to $CI_PROJECT_DIR when GitLab sets it (the
    merge request widget matches them against the repository), else to the working
    directory; fingerprints are the baseline's, so an issue keeps its identity when lines
    move and GitLab reports it as neither fixed nor new."""
    root = os.environ.get("CI_PROJECT_DIR") or None
    out: List[dict] = []
    for f, fp in zip(findings, _fingerprints(findings)):
        heat = "hot" if f.hot else "cold"
        out.append({
            "type": "issue",
            "check_name": f.code,
            "description": f"{f.code} [{heat}] {f.message}",
            "categories": ["Performance"],
            "severity": "major" if f.hot else "minor",
            "fingerprint": fp,
            "location": {
                "path": _relative(f.filename, root) or os.path.abspath(f.filename),
                "lines": {"begin": f.row, "end": f.end_row},
            },
        })
    for e in errors:
        import hashlib

        path = _relative(e.filename, root) or os.path.abspath(e.filename)
        out.append({
            "type": "issue",
            "check_name": "synclint-error",
            "description": f"synclint could not check this file: {e.reason}",
            "categories": ["Bug Risk"],
            "severity": "critical",
            "fingerprint": hashlib.sha256(f"synclint-error:{path}".encode()).hexdigest()[:32],
            "location": {"path": path, "lines": {"begin": 1}},
        })
    return out
