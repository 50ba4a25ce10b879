"""flake8 adapter: `flake8 --select=SYN` reports the same findings, rows and columns as
`synclint check` (flake8 adds 1 to the column we yield, so we yield it 0-based).

The engine is imported lazily, in `run()`: loading the plugin (which flake8 does on
every start, even for `flake8 --version`) costs nothing beyond this module. Rules that
are off by default in synclint are added to flake8's default ignore list, so plain
`flake8` behaves like `synclint check`; `flake8 --select=SYN` (an explicit select)
enables every rule, like `synclint check --select ALL`.

Options (command line or `[flake8]` config):
  --synclint-hot-only     report only findings in hot code (loops, forward, *_step)
"""

from __future__ import annotations

from typing import Any, Iterator, List, Sequence, Tuple

from synclint import __version__
from synclint.findings import INTERNAL_CODE  # a failure outside any rule (a bad install)


def _off_by_default_codes() -> List[str]:
    try:
        from synclint.registry import all_rules

        return [r.CODE for r in all_rules() if not r.DEFAULT_ON]
    except Exception:  # a broken rule pack must not take flake8 down with it
        return []


class Plugin:
    name = "synclint"
    version = __version__

    hot_only = False

    def __init__(self, tree: Any, lines: Sequence[str], filename: str = "stdin") -> None:
        self.tree = tree  # unused: synclint parses with LibCST; requesting it makes flake8
        # skip us (and report E999 itself) when the file does not parse
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager) -> None:
        option_manager.add_option(
            "--synclint-hot-only",
            action="store_true",
            default=False,
            parse_from_config=True,
            help="synclint: report only findings in hot code (loop bodies, forward, *_step, "
            "functions called from loops).",
        )
        codes = _off_by_default_codes()
        if codes:
            option_manager.extend_default_ignore(codes)

    @classmethod
    def parse_options(cls, options) -> None:
        cls.hot_only = bool(getattr(options, "synclint_hot_only", False))

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        """The file through synclint's pipeline (`pipeline.run_buffer`), every rule on:
        flake8's select/ignore (with the default ignore list set in add_options) decides
        which codes are shown. A file's error (a rule that raised, the time budget) is the
        line `check` prints for it, under the rule's code or SYN000."""
        try:
            from synclint.output import flake8_lines
            from synclint.pipeline import run_buffer
        except Exception as e:  # noqa: BLE001 - a broken install: one line, not a traceback
            yield 1, 0, f"{INTERNAL_CODE} synclint cannot run ({type(e).__name__}: {e}); please report", type(self)
            return
        source = "".join(self.lines)
        if source.startswith("\ufeff"):
            source = source[1:]
        try:
            lines = list(flake8_lines(run_buffer(self.filename, source, hot_only=self.hot_only)))
        except Exception as e:  # noqa: BLE001 - never a traceback inside flake8's run
            yield 1, 0, f"{INTERNAL_CODE} internal error in synclint ({type(e).__name__}); please report", type(self)
            return
        for row, column, text in lines:
            yield row, column, text, type(self)
