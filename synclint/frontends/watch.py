"""`synclint check --watch`: a check, then another each time a file it depends on changes
(a Python file under the paths, a `.gitignore`, a `pyproject.toml`, the `--config` file),
until Ctrl-C.

Each check is the whole `check` in this process: LibCST and the rules stay imported, and
the cache (`.synclint_cache/`) answers for every file that did not change, so a re-check
analyses only the changed files and what the project says about them (with `--no-cache`,
every file again). File events come from watchfiles (the `watch` extra: `pip install
'synclint[watch]'`, the Rust `notify` library: inotify, FSEvents, ReadDirectoryChangesW);
without it, the files' sizes and modification times are compared once a second.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

import click

from synclint.run.discovery import ALWAYS_SKIP

POLL_SECONDS = 1.0
# Names besides `*.py` whose change can change a check's answer
WATCHED_NAMES = frozenset(("pyproject.toml", ".gitignore"))


def watch(check_once: Callable[[], int], paths: List[str], *, config_file=None, quiet: bool = False,
          changes: Optional[Iterable[Set[str]]] = None) -> int:
    """Run `check_once`, then again after each batch of `changes` (by default, the changes
    to `paths` and `config_file` as they happen) until Ctrl-C; exit 0 then. `quiet`: no
    line of our own between the checks."""
    say = (lambda m: None) if quiet else (lambda m: click.echo(m, err=True))
    roots = [os.path.abspath(p) for p in paths if os.path.exists(p)]
    extra = {os.path.abspath(config_file)} if config_file else set()
    if changes is None:
        changes = _changes(roots + sorted(extra), roots=roots, extra=extra, say=say)
    try:
        _clear()
        check_once()
        say(f"synclint: watching {', '.join(paths)} for changes (Ctrl-C to stop)")
        for batch in changes:
            _clear()
            names = sorted(os.path.relpath(p) for p in batch)
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            say(f"[{time.strftime('%H:%M:%S')}] {', '.join(names[:3])}{more} changed; checking again")
            check_once()
            say("synclint: watching for changes (Ctrl-C to stop)")
    except KeyboardInterrupt:
        pass
    return 0


def _clear() -> None:
    """A fresh screen for each report, as Ruff's watch mode does (only on a terminal: a log
    keeps every report)."""
    if sys.stdout.isatty():
        click.clear()


def relevant(path: str, roots: List[str], extra: Set[str] = frozenset()) -> bool:
    """A change to `path` (absolute) can change a check's answer: an `extra` file, or a
    Python file, a `.gitignore` or a `pyproject.toml` under one of `roots` and not in a tool
    folder below it (a venv, synclint's own cache)."""
    if path in extra:
        return True
    name = os.path.basename(path)
    if not (name.endswith(".py") or name in WATCHED_NAMES):
        return False
    for root in roots:
        rel = os.path.relpath(path, root)
        if rel == "." or not rel.startswith(".."):
            return not any(p in ALWAYS_SKIP or p.endswith(".egg-info") for p in rel.split(os.sep)[:-1])
    return False


def _changes(watched: List[str], *, roots: List[str], extra: Set[str], say) -> Iterator[Set[str]]:
    """Batches of changed paths among `watched`: watchfiles' events, or polling without it."""
    try:
        import watchfiles
    except ImportError:
        say(f"synclint: watchfiles is not installed (pip install 'synclint[watch]'); "
            f"looking for changes every {POLL_SECONDS:g} s")
        return poll(watched, POLL_SECONDS, roots=roots, extra=extra)
    return ({p for _, p in batch} for batch in watchfiles.watch(
        *watched, watch_filter=lambda _change, p: relevant(p, roots, extra)))  # (Ctrl-C: KeyboardInterrupt)


def poll(watched: List[str], interval: float, *, roots: List[str], extra: Set[str] = frozenset()
         ) -> Iterator[Set[str]]:
    """Batches of the relevant paths among `watched` (files and folders, absolute) that
    appeared, went or changed size or modification time since the last look, looking every
    `interval` seconds. The first look is taken now, not at the first `next`: a save made
    while the first check runs is a change."""
    return _polled(_snapshot(watched, roots, extra), watched, interval, roots, extra)


def _polled(before: Dict[str, Tuple[int, int]], watched: List[str], interval: float, roots: List[str],
            extra: Set[str]) -> Iterator[Set[str]]:
    while True:
        time.sleep(interval)
        now = _snapshot(watched, roots, extra)
        changed = {p for p in before.keys() | now.keys() if before.get(p) != now.get(p)}
        before = now
        if changed:
            yield changed


def _snapshot(watched: List[str], roots: List[str], extra: Set[str]) -> Dict[str, Tuple[int, int]]:
    out: Dict[str, Tuple[int, int]] = {}

    def note(path: str) -> None:
        try:
            st = os.stat(path)
        except OSError:
            return
        out[path] = (st.st_mtime_ns, st.st_size)

    for top in watched:
        if not os.path.isdir(top):
            note(top)
            continue
        for d, dirs, files in os.walk(top):
            dirs[:] = [x for x in dirs if x not in ALWAYS_SKIP and not x.endswith(".egg-info")]
            for f in files:
                full = os.path.join(d, f)
                if relevant(full, roots, extra):
                    note(full)
    return out
