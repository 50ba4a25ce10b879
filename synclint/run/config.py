"""`[tool.synclint]` in the nearest pyproject.toml (or the file given with --config)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from synclint.parse.source import DEFAULT_MAX_CHARS
from synclint.semantic.declared import TEST_LOOP

KEYS = {"select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores", "hot-only", "cache-dir",
        "docs-url", "tests-hot-only", "file-timeout", "hot-functions", "cold-functions", "max-file-size"}
# Seconds one file's analysis may take in each phase. The largest real file we know, torch's
# 1.3 MB common_methods_invocations.py, takes 7 s and 15 s (its two phases) on a loaded
# 2-core machine, a generated 2 MB file with 26,000 findings 56 s and 207 s; a budget a
# loaded CI machine can trip on real code would fail builds at random, and 300 s still ends
# a hang (docs/reliability.md).
DEFAULT_FILE_TIMEOUT = 300.0
# A budget this long (11.6 days) or longer is no budget: the timers that enforce one take at
# most 2**31 ms (poll) and 2**63 ns (setitimer), and no analysis runs for days.
NO_BUDGET_FROM = 1_000_000.0


class ConfigError(ValueError):
    pass


@dataclass
class Config:
    select: Optional[List[str]] = None
    ignore: List[str] = field(default_factory=list)
    extend_select: List[str] = field(default_factory=list)
    exclude: List[str] = field(default_factory=list)  # `exclude`: patterns relative to `root`
    extend_exclude: List[str] = field(default_factory=list)  # `extend-exclude`: the same
    # --exclude (replaces `exclude`; None: not given) and --extend-exclude: relative to the
    # folder synclint was started in (`cli_base`), as in Ruff
    cli_exclude: Optional[List[str]] = None
    cli_extend_exclude: List[str] = field(default_factory=list)
    cli_base: Optional[Path] = None
    per_file_ignores: Dict[str, List[str]] = field(default_factory=dict)
    hot_only: bool = False
    # in test files (pytest's naming: test_*.py, *_test.py, conftest.py, tests/), report only
    # hot findings: a cold `.item()` in an assertion is what a test is for
    tests_hot_only: bool = True
    cache_dir: Optional[str] = None
    file_timeout: float = DEFAULT_FILE_TIMEOUT
    max_file_size: int = DEFAULT_MAX_CHARS  # characters (`source.size_problem`)
    docs_url: Optional[str] = None  # where rule pages are linked from (None: synclint.findings' default)
    # globs over qualified function names that run every step / rarely (`DeclaredHeat`)
    hot_functions: List[str] = field(default_factory=list)
    cold_functions: List[str] = field(default_factory=list)
    root: Path = field(default_factory=Path.cwd)  # paths in the config are relative to it
    path: Optional[Path] = None  # the file it came from
    # (where, selectors) for each rule list given, in the file and on the command line, so
    # that an unknown selector is named with the place it was written
    selector_sources: List[Tuple[str, List[str]]] = field(default_factory=list)

    def exclude_sets(self) -> List[Tuple[Path, List[str]]]:
        """(folder, patterns relative to it) for every exclusion in force."""
        base = self.cli_base or Path.cwd()
        return [(folder, patterns) for folder, patterns in (
            (self.root, self.exclude if self.cli_exclude is None else []), (self.root, self.extend_exclude),
            (base, self.cli_exclude or []), (base, self.cli_extend_exclude)) if patterns]


def _load_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            return _parse_toml(fh.read())
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:  # TOML is UTF-8 only
        raise ConfigError(f"{path}: not UTF-8: invalid byte 0x{e.object[e.start]:02x} at offset {e.start}") from None
    except ValueError as e:  # tomllib.TOMLDecodeError
        raise ConfigError(f"{path}: invalid TOML: {e}") from None


def find_config(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml with a `tool.synclint` entry, walking up from `start`.
    TOML spells it in several ways (`[tool.synclint]`, `[tool]` with `synclint = ...` or
    `synclint.select = ...`, an inline table), so a file that names synclint is parsed; one
    that does not parse is taken, for `load_config` to say why."""
    d = start if start.is_dir() else start.parent
    d = d.resolve()
    for parent in (d, *d.parents):
        candidate = parent / "pyproject.toml"
        if candidate.is_file():
            try:
                data = candidate.read_bytes()
            except OSError:
                continue
            if b"synclint" not in data:
                continue
            try:
                tool = _parse_toml(data).get("tool")
            except ValueError:  # invalid TOML or not UTF-8
                return candidate
            if tool is None or isinstance(tool, dict) and "synclint" not in tool:
                continue  # (synclint named elsewhere: a dependency, a comment)
            return candidate
    return None


def _parse_toml(data: bytes) -> dict:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(data.decode("utf-8"))


def _str_list(value, key: str, path: Path) -> List[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"{path}: [tool.synclint] {key} must be a list of strings")


def check_patterns(patterns: Sequence[str], where: str) -> List[str]:
    """`patterns` if each is a valid gitignore-style pattern, else a ConfigError naming
    `where` and the pattern: what pathspec refuses (`!`, a trailing `\\`, a range `[z-a]`)
    and an unclosed `[`, which git's matcher never matches and Ruff refuses."""
    if not patterns:  # (most runs: no pattern on the command line, and pathspec's import is a warm run's tenth)
        return []
    import re

    import pathspec

    for pattern in patterns:
        reason = "unclosed character class `[`" if _unclosed_bracket(pattern) else None
        try:
            pathspec.GitIgnoreSpec.from_lines([pattern])
        except (ValueError, re.error) as e:  # GitIgnorePatternError is a ValueError
            reason = re.sub(r" at position \d+$", "", str(e).removeprefix("Invalid git pattern: ").strip())
            if reason in (pattern, repr(pattern), f"'{pattern}'"):  # pathspec names no reason
                reason = "not a gitignore pattern"
        if reason:
            raise ConfigError(f"{where}: invalid pattern {pattern!r}: {reason}") from None
    return list(patterns)


def _unclosed_bracket(pattern: str) -> bool:
    """A `[` (not escaped) without its `]` (which may come first in the class: `[]a]`, `[!]a]`)."""
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] in "!^":
                j += 1
            close = pattern.find("]", j + 1)
            if close < 0:
                return True
            i = close
        i += 1
    return False


def load_config(path: Optional[Path]) -> Config:
    if path is None:
        return Config()
    data = _load_toml(path)
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table, not {type(tool).__name__} ({tool!r})")
    table = tool.get("synclint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.synclint] must be a table, not {type(table).__name__} ({table!r})")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        from difflib import get_close_matches

        keys = ", ".join(repr(k) + "".join(f" (did you mean {m!r}?)" for m in get_close_matches(k, KEYS, 1))
                         for k in unknown)
        raise ConfigError(f"{path}: unknown key{'s' if len(unknown) > 1 else ''} {keys} in [tool.synclint] "
                          f"(known: {', '.join(sorted(KEYS))})")
    cfg = Config(root=path.parent.resolve(), path=path)
    where = f"{path}: [tool.synclint]"
    if "select" in table:  # `select = []` selects no rule, as in Ruff (extend-select may add some)
        cfg.select = _str_list(table["select"], "select", path)
    cfg.ignore = _str_list(table.get("ignore", []), "ignore", path)
    cfg.extend_select = _str_list(table.get("extend-select", []), "extend-select", path)
    for key in ("exclude", "extend-exclude"):
        patterns = check_patterns(_str_list(table.get(key, []), key, path), f"{where} {key}")
        setattr(cfg, key.replace("-", "_"), patterns)
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{path}: [tool.synclint] per-file-ignores must be a table of pattern = [codes]")
    check_patterns(list(pfi), f"{where} per-file-ignores")
    cfg.per_file_ignores = {k: _str_list(v, f"per-file-ignores.{k}", path) for k, v in pfi.items()}
    cfg.selector_sources = [(f"{where} {key}", values) for key, values in (
        ("select", cfg.select or []), ("ignore", cfg.ignore), ("extend-select", cfg.extend_select))]
    cfg.selector_sources += [(f"{where} per-file-ignores {k!r}", v) for k, v in cfg.per_file_ignores.items()]
    hot = table.get("hot-only", False)
    if not isinstance(hot, bool):
        raise ConfigError(f"{path}: [tool.synclint] hot-only must be true or false")
    cfg.hot_only = hot
    tests_hot = table.get("tests-hot-only", True)
    if not isinstance(tests_hot, bool):
        raise ConfigError(f"{path}: [tool.synclint] tests-hot-only must be true or false")
    cfg.tests_hot_only = tests_hot
    cache_dir = table.get("cache-dir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise ConfigError(f"{path}: [tool.synclint] cache-dir must be a string")
    cfg.cache_dir = cache_dir
    cfg.file_timeout = file_timeout(table.get("file-timeout", DEFAULT_FILE_TIMEOUT), f"{path}: [tool.synclint] file-timeout")
    cfg.hot_functions = _str_list(table.get("hot-functions", []), "hot-functions", path)
    cfg.cold_functions = _str_list(table.get("cold-functions", []), "cold-functions", path)
    size = table.get("max-file-size", DEFAULT_MAX_CHARS)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"{path}: [tool.synclint] max-file-size must be a positive number of characters "
                          f"(got {size!r})")
    cfg.max_file_size = size
    docs_url = table.get("docs-url")
    if docs_url is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(docs_url) if isinstance(docs_url, str) else None
        if parts is None or parts.scheme not in ("https", "http", "file") or (parts.scheme != "file" and not parts.netloc):
            raise ConfigError(f"{path}: [tool.synclint] docs-url must be an https:// or file:// URL such as "
                              f"\"https://github.com/ORG/synclint/blob/v0.1.0/docs/rules\" (got {docs_url!r})")
        cfg.docs_url = docs_url
    return cfg


def file_timeout(value, where: str) -> float:
    """A time budget in seconds: a positive number; `inf` (and anything from
    NO_BUDGET_FROM on, which no timer can hold) is no budget."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"{where} must be a positive number of seconds (got {value!r})")
    return math.inf if value >= NO_BUDGET_FROM else float(value)


def per_file_ignored(cfg: Config, filename: str) -> List[str]:
    """Codes/prefixes/names ignored for `filename` by per-file-ignores."""
    if not cfg.per_file_ignores:
        return []
    import pathspec

    try:
        rel = os.path.relpath(os.path.abspath(filename), cfg.root)
    except ValueError:  # another drive on Windows
        rel = filename
    rel = rel.replace(os.sep, "/")
    out: List[str] = []
    for pattern, codes in cfg.per_file_ignores.items():
        spec = pathspec.GitIgnoreSpec.from_lines([pattern])
        if spec.match_file(rel) or spec.match_file(os.path.basename(rel)):
            out.extend(codes)
    return out


def drop_per_file_ignored(cfg: Config, findings: list) -> list:
    """Findings minus those that per-file-ignores silences (codes, prefixes or names), minus
    cold ones in test files (`tests-hot-only`, on by default), and minus those a `# noqa`
    silenced (the runner hands them on only to be counted)."""
    findings = drop_cold_in_tests(cfg, [f for f in findings if not f.suppressed])
    if not cfg.per_file_ignores:
        return findings
    kept = []
    for f in findings:
        ignored = per_file_ignored(cfg, f.filename)
        if ignored and any(f.code.startswith(c.upper()) or f.name == c for c in ignored):
            continue
        kept.append(f)
    return kept


def drop_cold_in_tests(cfg: Config, findings: list) -> list:
    """Of test files, only the findings in a loop (rate `test-loop`), unless
    `tests-hot-only = false`: a test reads values back on purpose."""
    if not cfg.tests_hot_only:
        return findings
    from synclint.paths import is_test_file

    return [f for f in findings
            if f.hot or f.rate == TEST_LOOP or not is_test_file(str(cfg.root), f.filename)]


def repository_root(start: Path) -> Optional[Path]:
    """The nearest folder at or above `start` that holds a repository (`.git`, a folder or a
    worktree's file, or `.hg`): a project without a configuration file is rooted there, so a
    file checked from a subfolder finds the cache its package's check left (and its heat)."""
    d = (start if start.is_dir() else start.parent).resolve()
    for parent in (d, *d.parents):
        if (parent / ".git").exists() or (parent / ".hg").is_dir():
            return parent
    return None


def cache_dir_for(cfg: Config, no_cache: bool) -> Optional[Path]:
    """Where the content-hash cache lives (None with --no-cache): `cache-dir`, relative to the config."""
    if no_cache:
        return None
    cache_dir = Path(cfg.cache_dir) if cfg.cache_dir else cfg.root / ".synclint_cache"
    return cache_dir if cache_dir.is_absolute() else cfg.root / cache_dir


def merge_cli(cfg: Config, select: Sequence[str], ignore: Sequence[str], extend_select: Sequence[str], hot_only: bool,
              *, exclude: Optional[Sequence[str]] = None, extend_exclude: Sequence[str] = (),
              file_timeout_s: Optional[float] = None) -> Config:
    """Command-line options win over the file, as in Ruff: --select and --exclude replace
    the file's list, --ignore, --extend-select and --extend-exclude add to it; patterns
    given here are relative to the current folder."""
    if select:
        cfg.select = list(select)
    cfg.ignore = cfg.ignore + list(ignore)
    cfg.extend_select = cfg.extend_select + list(extend_select)
    cfg.selector_sources = [(opt, list(values)) for opt, values in (
        ("--select", select), ("--ignore", ignore), ("--extend-select", extend_select)) if values] + cfg.selector_sources
    cfg.hot_only = cfg.hot_only or hot_only
    if exclude is not None:
        cfg.cli_exclude = check_patterns(exclude, "--exclude")
    cfg.cli_extend_exclude = check_patterns(extend_exclude, "--extend-exclude")
    if exclude is not None or extend_exclude:
        cfg.cli_base = Path.cwd()
    if file_timeout_s is not None:
        cfg.file_timeout = file_timeout(file_timeout_s, "--file-timeout")
    return cfg
