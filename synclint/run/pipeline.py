"""One pipeline for `check`, `baseline` and the flake8 plugin: the configuration, the rule
selection, discovery, the runner (workers, cache, project linking, the time budget) and
the filters a finding passes (`# noqa`, per-file ignores, tests-hot-only, the baseline).

Each front end parses its options, calls `configure` and then `run` (files and folders),
`run_text` (stdin), `run_buffer` (a buffer that stands for a file: flake8's stdin) or
`run_editor` (the LSP's buffers), and hands the `Outcome` to `synclint.report.output`. A failure
a user can cause comes back as a `FileError` in the outcome or as a `PipelineError` (the
configuration, the selection, the baseline), so a fix to error handling made here is made
for every front end.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple, Union

from synclint.run.decoded import FRESH, Fresh
from synclint.findings import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, FileError, Finding, split_internal
from synclint.semantic.declared import DeclaredHeat

if TYPE_CHECKING:
    from synclint.run.config import Config


class PipelineError(Exception):
    """Nothing can be checked: a configuration, rule selection or baseline error."""


@dataclass
class Setup:
    """What a run is made with: the configuration and the rules it selects."""

    cfg: "Config"
    # a zero-argument callable while importing the rules can wait (see `configure`)
    rules: Union[Sequence[type], Callable[[], Sequence[type]]]
    cache_dir: Optional[Path] = None
    selection_key: Optional[str] = None
    # a long-lived process's store of whole-project tables, handed to each of its runs (see
    # `project.Project`); None: each run makes its own
    kept: Optional[Dict[str, list]] = None
    decoded: Fresh = FRESH  # how the cache's files are read (a daemon's keeps them decoded: `decoded.Kept`)

    def selected(self) -> Sequence[type]:
        try:
            if callable(self.rules):
                self.rules = self.rules()
        except Exception as e:
            _reraise(e)
        return self.rules

    @property
    def declared(self) -> DeclaredHeat:
        """What `hot-functions` and `cold-functions` say of how often functions run, and
        where the test files are."""
        return DeclaredHeat(tuple(self.cfg.hot_functions), tuple(self.cfg.cold_functions), str(self.cfg.root))


@dataclass
class Outcome:
    """Everything a front end reports about one run."""

    findings: List[Finding] = field(default_factory=list)
    # named paths that cannot be checked (found before any file is read), then the files
    # that could not be analysed
    missing: List[FileError] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    skipped: List[Tuple[str, str]] = field(default_factory=list)  # (path, why) the walk passed over
    checked: int = 0
    files: List[str] = field(default_factory=list)  # the files `run` checked (its discovery's)
    suppressed: Dict[str, int] = field(default_factory=dict)  # "noqa", "baseline" -> findings not shown
    at_setup: List[Finding] = field(default_factory=list)  # one-time transfers at setup, which rules leave alone

    @property
    def all_errors(self) -> List[FileError]:
        return self.missing + self.errors

    def exit_code(self, exit_zero: bool = False, *, count_findings: bool = True, changed: bool = False) -> int:
        """2 when anything could not be checked, else 1 for findings (or a diff), else 0."""
        if self.missing or self.errors:
            return EXIT_ERROR
        if (changed or (count_findings and self.findings)) and not exit_zero:
            return EXIT_FINDINGS
        return EXIT_CLEAN


def configure(*, config_file: Optional[Path] = None, start: Path = Path("."), select: Sequence[str] = (),
              ignore: Sequence[str] = (), extend_select: Sequence[str] = (), hot_only: bool = False,
              no_cache: bool = False, file_timeout: Optional[float] = None, lazy: bool = True,
              exclude: Optional[Sequence[str]] = None, extend_exclude: Sequence[str] = (),
              kept: Optional[Dict[str, list]] = None, decoded: Fresh = FRESH) -> Setup:
    """The configuration (`config_file`, or the nearest one above `start`) with the command
    line's choices on top (rule lists and patterns as given to `--select`: repeated,
    comma-separated; `exclude` None: not given), and the rules it selects. With `lazy`, a
    cache and a cache file for this selection, the rules are selected only when some file is not in the cache
    (a selection was valid when its cache file was written): a warm run imports no LibCST.
    The configuration's `docs-url` travels with it (`Setup.cfg`) to the report.
    `decoded`: how the runs read the cache's files (`Setup.decoded`)."""
    from synclint.run.config import (ConfigError, cache_dir_for, find_config, load_config, merge_cli,
                                     repository_root)

    try:
        if config_file and not config_file.exists():
            raise ConfigError(f"{config_file}: no such file")
        found = config_file if config_file else find_config(start)
        cfg = merge_cli(load_config(found),
                        _codes(select), _codes(ignore), _codes(extend_select), hot_only,
                        exclude=None if exclude is None else _codes(exclude), extend_exclude=_codes(extend_exclude),
                        file_timeout_s=file_timeout)
        if found is None:  # no configuration: the repository's root, else the working folder
            cfg.root = repository_root(start) or cfg.root
        cache_dir = cache_dir_for(cfg, no_cache)
        key = _selection_key(cfg)

        def selected_rules():
            from synclint.registry import SelectionError, match, select as select_rules

            for where, selectors in cfg.selector_sources:  # each list named where it was written
                for s in selectors:
                    try:
                        match(s)
                    except SelectionError as e:
                        raise SelectionError(f"{where}: {e}") from None
            return select_rules(cfg.select, cfg.ignore, cfg.extend_select)

        from synclint.run.cache import cache_path

        if not lazy or cache_dir is None or not cache_path(cache_dir, [key], cfg.hot_only).exists():
            rules = selected_rules()
        else:
            rules = selected_rules
    except Exception as e:
        _reraise(e)
    return Setup(cfg, rules, cache_dir, key, kept, decoded)


def run(setup: Setup, paths: Sequence[str], *, force_exclude: bool = False, jobs: Optional[int] = None,
        baseline: Optional[Path] = None) -> Outcome:
    """Check the files under `paths` as one project."""
    from synclint.run.discovery import discover
    from synclint.run.runner import check_files

    known = _load_baseline(baseline)
    cfg = setup.cfg
    found = discover(paths, cfg.exclude_sets(), force_exclude)
    try:
        result = check_files(found.files, setup.rules, hot_only=cfg.hot_only, cache_dir=setup.cache_dir, jobs=jobs,
                             selection_key=setup.selection_key, file_timeout=cfg.file_timeout,
                             declared=setup.declared, max_chars=cfg.max_file_size, kept=setup.kept,
                             decoded=setup.decoded)
    except Exception as e:
        _reraise(e)
    out = Outcome(missing=found.errors, skipped=found.skipped, checked=len(found.files), files=found.files,
                  at_setup=result.at_setup)
    return _filtered(setup, out, result.findings, result.errors, known)


def run_text(setup: Setup, name: str, text: str) -> Outcome:
    """`text` checked on its own as if it were the file `name` (stdin): no project linking,
    since the modules around it may not be what the text's file will import."""
    from synclint.engine import LintError, lint_source

    try:
        found = lint_source(text, name, setup.selected(), hot_only=setup.cfg.hot_only,
                            declared=setup.declared, max_chars=setup.cfg.max_file_size)
    except LintError as e:
        return Outcome(errors=[FileError(name, str(e))], checked=1)
    return _filtered(setup, Outcome(checked=1), found, [], None)


def run_buffer(setup: Setup, path: str, source: str) -> Outcome:
    """A buffer's text (an editor's, flake8's stdin) checked as the file `path`: with what
    the project's other modules say when `path` is a file on disk (as `synclint check
    <path>` sees it, the buffer's text in place of the file's), else on its own."""
    if not os.path.isfile(path):
        return run_text(setup, path, source)
    return _one_file(setup, path, source)


def _one_file(setup: Setup, path: str, source: str) -> Outcome:
    """A file's unsaved text, with what the project's other modules say (read from disk,
    their summaries cached), as `synclint check <path>` sees it."""
    from synclint.run.runner import check_files

    try:
        result = check_files([path], setup.selected(), hot_only=setup.cfg.hot_only, cache_dir=setup.cache_dir,
                             jobs=1, sources={path: source}, cache_findings=False, selection_key=setup.selection_key,
                             file_timeout=setup.cfg.file_timeout, declared=setup.declared,
                             max_chars=setup.cfg.max_file_size, kept=setup.kept, decoded=setup.decoded)
    except Exception as e:
        _reraise(e)
    return _filtered(setup, Outcome(checked=1), result.findings, result.errors, None)


def run_editor(path: Optional[str], source: str, kept: Optional[Dict[str, list]] = None) -> Tuple[Outcome, "Config"]:
    """An editor's buffer (the LSP): its file's own configuration and rule selection, with
    what the project's other modules say when the buffer is a file on disk, as `synclint
    check <file>` sees it (`kept`: the editor's store of whole-project tables). Raises
    `PipelineError` for a broken configuration."""
    start = Path(path).resolve().parent if path else Path.cwd()
    if not start.is_dir():
        start = Path.cwd()
    setup = configure(start=start, lazy=False, kept=kept)
    return run_buffer(setup, path or "<editor>", source), setup.cfg


def lint_fixed(setup: Setup, name: str) -> Callable[[str], List[Finding]]:
    """The function `fixes.fix_text` re-lints each fixed text of `name` with: the check's
    rules and filters, so that a finding per-file-ignores silences is not fixed either (a
    rule's internal error stays among the findings, for `split_internal`)."""
    from synclint.run.config import drop_per_file_ignored
    from synclint.engine import lint_source

    def lint(text: str) -> List[Finding]:
        return drop_per_file_ignored(setup.cfg, lint_source(text, name, setup.selected(), hot_only=setup.cfg.hot_only,
                                                            declared=setup.declared))

    return lint


def _filtered(setup: Setup, out: Outcome, findings: List[Finding], errors: List[FileError],
              known: Optional[Tuple[set, Path]]) -> Outcome:
    """`out` with the findings a user is shown: a rule's internal error is its file's error
    line; `# noqa`, per-file ignores, tests-hot-only and the baseline leave findings out
    (those of noqa and the baseline are counted)."""
    from synclint.run.config import drop_per_file_ignored

    findings, internal = split_internal(findings)
    out.errors = list(errors) + internal
    out.suppressed = {"noqa": sum(1 for f in findings if f.suppressed == "noqa")}
    findings = drop_per_file_ignored(setup.cfg, findings)
    if known is not None:
        from synclint.baseline import without_known

        before = len(findings)
        findings = without_known(findings, *known)
        out.suppressed["baseline"] = before - len(findings)
    out.findings = findings
    return out


def _load_baseline(path: Optional[Path]) -> Optional[Tuple[set, Path]]:
    if path is None:
        return None
    from synclint.baseline import BaselineError, load_baseline

    try:
        return load_baseline(path), Path(path).resolve().parent
    except BaselineError as e:
        raise PipelineError(str(e)) from None


def _codes(values: Sequence[str]) -> List[str]:
    """`--select SYN1,SYN2 --select SYN401` -> ['SYN1', 'SYN2', 'SYN401']."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _selection_key(cfg) -> str:
    """Everything the rule selection (and its validation) is made from, for the cache key."""
    pfi = sorted({c for codes in cfg.per_file_ignores.values() for c in codes})
    chosen = None if cfg.select is None else sorted(cfg.select)  # (`select = []` is no rule)
    heat = (cfg.hot_functions, cfg.cold_functions)  # (the heat of cached findings depends on them)
    return "select=" + repr((chosen, sorted(cfg.ignore), sorted(cfg.extend_select), pfi)) + (
        f"|heat={heat!r}" if any(heat) else "")


def _reraise(e: Exception):
    """A configuration or selection error as a PipelineError; anything else as it is."""
    from synclint.run.config import ConfigError
    from synclint.registry import SelectionError

    if isinstance(e, (ConfigError, SelectionError)):
        raise PipelineError(str(e)) from None
    raise e
