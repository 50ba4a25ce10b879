"""Machine-readable output formats for `synclint check --output-format`."""

from __future__ import annotations

from typing import Sequence

from synclint.findings import FileError, Finding


def render(fmt: str, findings: Sequence[Finding], errors: Sequence[FileError]) -> str:
    if fmt == "json":
        from synclint.render import json_report

        return json_report(findings)
    raise ValueError(f"unknown output format {fmt!r}")
