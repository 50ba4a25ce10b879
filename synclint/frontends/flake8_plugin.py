"""flake8 adapter: `flake8 --select=SYN PATHS` reports what `synclint check PATHS` reports,
the same findings at the same rows and columns (flake8 adds 1 to the column we yield, so we
yield it 0-based), with the project's `[tool.synclint]` honoured.

What synclint finds in a file depends on the rest of the project (what its imports return,
what its callers pass it, the call graph that decides heat), but flake8 hands a plugin one
file at a time. So once flake8 has parsed its options (`parse_options`, in its main process,
before it forks the workers that then inherit the result), synclint checks the files under
flake8's paths once, as one project, as `synclint check PATHS` does (its discovery, its
cache), and each file's `run()` takes its own findings from that check. A file under those
paths that synclint's discovery leaves out (`exclude`, .gitignore) gets none, as in `check`;
flake8's stdin, and a file outside the paths (flake8 run from its Python API), are checked
alone with the project modules they import, as `synclint check FILE` checks them.

The rules: flake8's own choices go on top of `[tool.synclint]`'s, as check's command line
does (`rules_for`). The engine is imported only once there is something to check: loading
the plugin (which flake8 does on every start, even for `flake8 --version`) costs nothing
beyond this module.

Options (command line or `[flake8]` config):
  --synclint-hot-only     report only findings in hot code (loops, forward, *_step)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from synclint.build import VERSION
from synclint.findings import INTERNAL_CODE  # a failure outside any rule (a bad install)

Line = Tuple[int, int, str]  # (row, 0-based column, "CODE message"), as flake8 takes it


def _internal_error(e: BaseException) -> str:
    return f"{INTERNAL_CODE} internal error in synclint ({type(e).__name__}); please report"


class Plugin:
    name = "synclint"
    version = VERSION

    # This flake8 run (set by `parse_options`, once per run; flake8 gives a plugin's instances
    # nothing else to share). None: the class is used without flake8's options (a test, a
    # tool calling `run()` itself), which checks each file alone with its configuration.
    flake8_run: Optional["Flake8Run"] = None

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

    @classmethod
    def parse_options(cls, option_manager, options, filenames) -> None:
        """flake8's options are final: check the project its paths make (see the module)."""
        cls.flake8_run = Flake8Run(options, filenames)

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        """This file's findings, and each error `check` prints for it (a rule that raised, the
        time budget, a broken configuration) under the rule's code or SYN000."""
        source = "".join(self.lines)
        if source.startswith("\ufeff"):
            source = source[1:]
        try:
            flake8_run = type(self).flake8_run or Flake8Run()
            lines = list(flake8_run.lines(self.filename, source))
        except Exception as e:  # noqa: BLE001 - never a traceback inside flake8's run
            lines = [(1, 0, _internal_error(e))]
        for row, column, text in lines:
            yield row, column, text, type(self)


class Flake8Run:
    """One flake8 run's side of synclint: its options, and the check of the files under its
    paths, made once (at construction: flake8's forked workers inherit it)."""

    def __init__(self, options=None, paths: Sequence[str] = ()) -> None:
        self.options = options
        self.hot_only = bool(getattr(options, "synclint_hot_only", False))
        self.stdin_name = (getattr(options, "stdin_display_name", None) or "stdin") if "-" in paths else None
        # flake8's own default path is "." (without options: no project check)
        self.paths = [p for p in paths if p != "-"] or (["."] if options is not None and "-" not in paths else [])
        self.roots = [os.path.abspath(p) for p in self.paths]
        self.found: Dict[str, List[Line]] = {}  # absolute path of each file checked -> its lines
        self.error: Optional[str] = None  # nothing could be checked (the configuration)
        if self.paths:
            try:
                self._check_project()
            except Exception as e:  # noqa: BLE001 - reported on each file, never a traceback
                self.error = _internal_error(e)

    def _check_project(self) -> None:
        from synclint.run import pipeline

        try:
            setup = self.setup(Path(self.paths[0]))  # the configuration `check PATHS` reads
            if not setup.rules:
                return
            outcome = pipeline.run(setup, self.paths, jobs=self._jobs())
        except pipeline.PipelineError as e:
            self.error = f"{INTERNAL_CODE} {e}"
            return
        for path in outcome.files:
            self.found[os.path.abspath(path)] = []
        by_file: Dict[str, pipeline.Outcome] = {}
        for e in outcome.errors:
            by_file.setdefault(os.path.abspath(e.path), pipeline.Outcome()).errors.append(e)
        for f in outcome.findings:
            by_file.setdefault(os.path.abspath(f.filename), pipeline.Outcome()).findings.append(f)
        from synclint.report.output import flake8_lines

        for path, one in by_file.items():
            self.found[path] = list(flake8_lines(one))

    def _jobs(self) -> Optional[int]:
        """flake8's --jobs for synclint's own worker processes (auto: synclint's default)."""
        jobs = getattr(self.options, "jobs", None)
        n = getattr(jobs, "n_jobs", -1)
        return n if not getattr(jobs, "is_auto", True) and n > 0 else None

    def setup(self, start: Path):
        """The configuration found from `start`, with the rules this run enables."""
        from synclint.run import pipeline

        setup = pipeline.configure(start=start, hot_only=self.hot_only, lazy=False)
        if self.options is not None:
            setup.rules = rules_for(self.options, setup.cfg)
            setup.selection_key = None  # the cache is keyed by these rules' codes
        return setup

    def lines(self, filename: str, source: str) -> Iterator[Line]:
        """What flake8 reports for `filename`, whose text is `source`."""
        if self.error:
            yield 1, 0, self.error
            return
        if filename != self.stdin_name:
            key = os.path.abspath(filename)
            if key in self.found:
                yield from self.found[key]
                return
            if any(key == r or key.startswith(r.rstrip(os.sep) + os.sep) for r in self.roots):
                return  # under the paths, left out by synclint's discovery (exclude, .gitignore)
        from synclint.run import pipeline
        from synclint.report.output import flake8_lines

        try:
            setup = self.setup(Path(filename))
        except pipeline.PipelineError as e:
            yield 1, 0, f"{INTERNAL_CODE} {e}"
            return
        if setup.rules:
            yield from flake8_lines(pipeline.run_buffer(setup, filename, source))


def rules_for(options, cfg) -> List[type]:
    """The rules a flake8 run enables: flake8's options go on top of `[tool.synclint]` as
    check's command line does. flake8 shows a code only where its select/ignore let it
    (`DecisionEngine`, its own precedence); of those, a rule runs when the configuration
    enables it (by default: the rules on by default) or when flake8's select names it
    more precisely than the plugin's prefix (`--extend-select=SYN901`, `--select=SYN1`).
    `--select=SYN` alone turns synclint on, as it does any plugin: the configuration still
    decides which rules, so `flake8 --select=SYN` reports what `synclint check` does. The
    configuration's `ignore` wins over everything, as it does over check's `--select`."""
    from flake8.style_guide import Decision, DecisionEngine

    from synclint.registry import all_rules, match, select

    decider = DecisionEngine(options)
    configured = set(select(cfg.select, cfg.ignore, cfg.extend_select))
    ignored: Set[type] = {r for s in cfg.ignore for r in match(s)}
    named = [s.upper() for s in (*(options.select or ()), *(options.extend_select or ())) if s]

    def chosen(code: str) -> bool:
        return any(code.startswith(s) and not "SYN".startswith(s) for s in named)

    return [r for r in all_rules()
            if r not in ignored and decider.decision_for(r.CODE) is Decision.Selected
            and (r in configured or chosen(r.CODE))]
