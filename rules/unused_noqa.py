from typing import List, Sequence, Set

from synclint.findings import Edit, Finding, Fix
from synclint.noqa import Directive, NoqaMap, Use, directives
from synclint.rule import Invalid, Rule, Valid


class UnusedNoqa(Rule):
    """
    ## What it does
    Flags `# noqa: SYN...` entries that silence nothing: the line has no finding of that
    rule (any more), or the code is not a synclint rule at all.

    ## Why is this bad?
    A stale `# noqa` hides the next real hazard written on that line, and it tells the
    reader that the line synchronizes when it no longer does. Like Ruff's RUF100, this
    keeps the suppressions honest.

    Only entries this run can judge are reported: codes of other tools (`E501`, `BLE001`)
    and a blanket `# noqa` are left alone, and so is a synclint code whose rule is not
    enabled in this run (it may be there for a run with another selection, or for the
    flake8 plugin). A file in which no rule can fire (it names neither torch nor tensors)
    is not parsed, so its comments are not judged either.

    ## Use instead
    Remove the unused code, or the whole comment when nothing is left in it:
    `synclint check --extend-select SYN901 --fix`.

    ## Fix safety
    The fix is safe: it removes only codes that silenced nothing in this run, keeps the
    other tools' codes and any text around the directive.

    ## Known problems
    The verdict is for the rules enabled and the code as it is: with `--hot-only`, the
    findings are still silenced by their comments (so their `noqa` is used), but SYN901's own
    reports are cold and therefore hidden.
    """

    CODE = "SYN901"
    NAME = "unused-noqa"
    MESSAGE = "Unused `noqa` directive ({detail})"
    FIX_TITLE = "Remove the unused `noqa` codes"
    FIX = "always"
    DEFAULT_ON = False
    VALID = [
        Valid("import torch\nx = torch.ones(3)  # noqa: E501\n"),
        Valid("import torch\nx = torch.ones(3)  # noqa\n"),
        # SYN101 is not enabled in this example's run: its `noqa` cannot be judged
        Valid("import torch\nv = torch.ones(3, device='cuda').item()  # noqa: SYN101\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nx = torch.ones(3)  # noqa: SYN999, E501\n",
            line=2,
            hot=False,
            message="Unused `noqa` directive (unknown: `SYN999`)",
            fixed="import torch\nx = torch.ones(3)  # noqa: E501\n",
        ),
        Invalid(
            "import torch\nx = torch.ones(3)  # noqa: SYN999\n",
            fixed="import torch\nx = torch.ones(3)\n",
        ),
        Invalid(
            "import torch\nx = torch.ones(3)  # type: ignore  # noqa: SYN999\n",
            fixed="import torch\nx = torch.ones(3)  # type: ignore\n",
        ),
    ]

    READS_NOQA = True

    @classmethod
    def noqa_findings(cls, source: str, filename: str, noqa: NoqaMap, used: Set[Use],
                      rules: Sequence[type]) -> List[Finding]:
        """One finding per directive with entries that silenced nothing (`used` is what the
        other rules' findings were silenced by)."""
        if not noqa:
            return []
        from synclint.registry import all_rules

        known = [r.CODE for r in all_rules()]
        enabled = [r.CODE for r in rules]
        lines = source.splitlines()
        out: List[Finding] = []
        for row, d in directives(source).items():
            if d.codes is None or any(cls.CODE.startswith(c.upper()) for c in d.codes):
                continue  # blanket, or this rule itself is silenced on the line
            unused, unknown = [], []
            for c in d.codes:
                cu = c.upper()
                if not cu.startswith("SYN"):
                    continue  # another tool's code
                if not any(k.startswith(cu) for k in known):
                    unknown.append(c)
                elif any(k.startswith(cu) for k in enabled) and (row, cu) not in used:
                    unused.append(c)
            if not unused and not unknown:
                continue
            detail = "; ".join(
                f"{label}: {', '.join(f'`{c}`' for c in codes)}"
                for label, codes in (("unused", unused), ("unknown", unknown)) if codes
            )
            kept = [c for c in d.codes if c not in unused and c not in unknown]
            line = lines[row - 1]
            out.append(Finding(
                code=cls.CODE, name=cls.NAME, message=cls.MESSAGE.format(detail=detail),
                filename=filename, row=row, column=d.start + 1, end_row=row, end_column=d.end + 1,
                hot=False, fix_title=cls.FIX_TITLE,
                fix=Fix("safe", cls.FIX_TITLE, (_edit(line, d, kept),)), noqa_rows=(row,),
            ))
        return out


def _edit(line: str, d: Directive, kept: List[str]) -> Edit:
    """The directive with only `kept` codes, or gone (with the blank before it) if none."""
    row = d.row
    if kept:
        return Edit((row, d.start + 1), (row, d.end + 1), "# noqa: " + ", ".join(kept))
    before = line[d.comment_start:d.start]
    after = line[d.end:d.comment_end]
    if before.strip():  # `# type: ignore  # noqa: SYN101`: keep the comment's start
        start = len(line[:d.start].rstrip())
        return Edit((row, start + 1), (row, d.end + 1), "")
    if after.strip().startswith("#"):  # `# noqa: SYN101  # why`: keep the next comment
        return Edit((row, d.start + 1), (row, d.end + 1 + len(after) - len(after.lstrip())), "")
    if after.strip():  # `# noqa: SYN101 because ...`: keep the text as a comment
        return Edit((row, d.start + 1), (row, d.end + 1), "#")
    start = len(line[:d.comment_start].rstrip())
    return Edit((row, start + 1), (row, d.comment_end + 1), "")
