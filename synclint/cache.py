"""Content-hash cache: a file whose bytes, rule selection and synclint build are unchanged
is not parsed again. One JSON file per (selection, build) under the cache directory."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from synclint import __version__


def _build_fingerprint() -> str:
    """Changes when any engine or rule source file changes (development installs too)."""
    h = hashlib.blake2b(__version__.encode(), digest_size=8)
    import synclint
    import synclint.rules

    for d in (synclint.__path__[0], synclint.rules.__path__[0]):
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            if n.endswith(".py"):
                st = os.stat(os.path.join(d, n))
                h.update(f"{n}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


KEEP_FILES = 8  # cache files kept per cache directory (one per recent build and selection)


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def cache_path(directory: Path, codes: Sequence[str], hot_only: bool) -> Path:
    """The cache file for one (selection, build); `codes` may also be one selection key."""
    key = hashlib.blake2b(
        f"{_build_fingerprint()}|{','.join(codes)}|{hot_only}".encode(), digest_size=8
    ).hexdigest()
    return directory / f"v{__version__}-{key}.json"


class Cache:
    def __init__(self, directory: Path, codes: Sequence[str], hot_only: bool) -> None:
        self.path = cache_path(directory, codes, hot_only)
        self.directory = directory
        self.entries: Dict[str, List] = {}
        self.dirty = False
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
            if isinstance(data, dict):
                self.entries = data
        except (OSError, ValueError):
            pass

    def get(self, path: str, digest: str) -> Optional[Tuple[list, Optional[str]]]:
        e = self.entries.get(os.path.abspath(path))
        if e and e[0] == digest:
            return e[1], e[2]
        return None

    def put(self, path: str, digest: str, findings: list, error: Optional[str]) -> None:
        self.entries[os.path.abspath(path)] = [digest, findings, error]
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            gi = self.directory / ".gitignore"
            if not gi.exists():
                gi.write_text("# created by synclint\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.entries, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
            self._prune()
        except OSError:
            pass  # a read-only tree: the cache is an optimisation, never an error

    def _prune(self) -> None:
        """Each new synclint build or rule selection starts a new file: keep the newest few."""
        files = [p for p in self.directory.glob("v*.json") if p != self.path]
        if len(files) < KEEP_FILES:
            return
        files.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        for p in files[KEEP_FILES - 1:]:
            try:
                p.unlink()
            except OSError:
                pass
