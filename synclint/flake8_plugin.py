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

import os
from typing import Any, Iterator, List, Sequence, Tuple

from synclint import __version__

# A failure outside any rule (the semantic model, a bad install): not a rule's code, but
# under SYN so that flake8 shows it exactly when synclint's codes are selected.
INTERNAL_CODE = "SYN000"


def _project_config(filename: str):
    """The file's `[tool.synclint]` (for the cache it shares with `synclint check`, and
    `tests-hot-only`); flake8's own options decide codes and per-file ignores."""
    try:
        from pathlib import Path

        from synclint.config import find_config, load_config

        return load_config(find_config(Path(filename).resolve().parent))
    except Exception:  # a broken config: the defaults, same findings
        return None


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
        try:
            from synclint.engine import LintError, lint_source
            from synclint.registry import all_rules
            from synclint.runner import check_source
        except Exception as e:  # noqa: BLE001 - a broken install: one line, not a traceback
            yield 1, 0, f"{INTERNAL_CODE} synclint cannot run ({type(e).__name__}: {e}); please report", type(self)
            return
        source = "".join(self.lines)
        if source.startswith("\ufeff"):
            source = source[1:]
        try:
            # Every rule runs; flake8's select/ignore (with the default ignore list set in
            # add_options) decides which codes are shown. A rule that raises comes back as
            # one line under its own code ("internal error in SYN503; please report").
            if self.filename in ("stdin", "-") or not os.path.isfile(self.filename):
                findings = lint_source(source, self.filename, all_rules(), hot_only=self.hot_only)
            else:  # with what the project's other modules say, as `synclint check` does
                from synclint.config import Config, cache_dir_for, drop_cold_in_tests

                cfg = _project_config(self.filename) or Config()
                findings = check_source(source, self.filename, all_rules(), hot_only=self.hot_only,
                                        cache_dir=cache_dir_for(cfg, False))
                findings = drop_cold_in_tests(cfg, findings)
        except (LintError, RecursionError, MemoryError):
            return  # flake8 reports a file that does not parse as E999 itself
        except Exception as e:  # noqa: BLE001 - never a traceback inside flake8's run
            yield 1, 0, f"{INTERNAL_CODE} internal error in synclint ({type(e).__name__}); please report", type(self)
            return
        for f in findings:
            yield f.row, f.column - 1, f"{f.code} {f.message}", type(self)
