"""Content-hash caches under the cache directory (`.synclint_cache/`):

- `v<version>-<key>.json`, one per (rule selection, synclint build): each file's findings,
  valid while its bytes and what the project tells it (a digest of its `ProjectFacts`)
  are unchanged;
- `link-<version>-<key>/`: what re-linking needs, in `SHARDS` files (`_Sharded`);
- `summaries-<version>-<build>/`: each module's summary, by its bytes alone, likewise.

A file whose bytes and facts are unchanged is not parsed again; a run where no file of the
project changed reads only the first file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from synclint.build import VERSION, blake2b, fingerprint
from synclint.run.decoded import FRESH, Fresh


KEEP_FILES = 8  # cache files kept per cache directory (one per recent build and selection)
KEEP_ROOTS = 8  # project roots remembered (`Cache.remember_root`)


SHARDS = 16  # files a large table (module summaries, link data) is kept in


def content_hash(data: bytes) -> str:
    return blake2b(data, 16).hexdigest()


# A file's stamp vouches for its last digest only once the file has been left alone this
# long before it was read (its status change time, which every change of its content
# moves): an edit in the same tick of a coarse clock as the read it follows would otherwise
# keep the old stamp (git's "racy" files).
SETTLED_NS = 2_000_000_000


def _stamp_of(st: os.stat_result) -> list:
    """What a file's stat says of its content, as git's index keeps it: size, modification
    time, and the inode and status change time, which no one can set back (`cp -p`, `touch
    -r`, `rsync -t` and `tar` restore the modification time of a changed file)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def cache_path(directory: Path, codes: Sequence[str], hot_only: bool) -> Path:
    """The cache file for one (selection, build); `codes` may also be one selection key."""
    key = blake2b(f"{fingerprint()}|{','.join(codes)}|{hot_only}".encode(), 8).hexdigest()
    return directory / f"v{VERSION}-{key}.json"


def _drop_stale_temps(directory: Path) -> None:
    """Temp files of runs that were killed mid-save (an hour old: no run still writes them)."""
    import time

    for p in directory.glob(".tmp-*.json"):
        try:
            if time.time() - p.stat().st_mtime > 3600:
                p.unlink()
        except OSError:
            pass


def _make_directory(directory: Path) -> None:
    """The cache directory, with a `.gitignore` that keeps it out of version control."""
    directory.mkdir(parents=True, exist_ok=True)
    gi = directory / ".gitignore"
    if not gi.exists():
        gi.write_text("# created by synclint\n*\n")


class _Store:
    """One JSON file, read once and replaced atomically when changed; any unreadable or
    wrongly shaped content counts as empty (the cache is an optimisation, never an error)."""

    GLOB = "v*.json"  # the files of this kind, of every build and selection

    def __init__(self, directory: Path, path: Path, decoded: Fresh = FRESH) -> None:
        self.directory = directory
        self.path = path
        self.decoded = decoded  # how its files are read: as they are, or kept decoded (`Kept`)
        self.data: Dict[str, object] = {}
        self.dirty = False
        try:
            data = decoded.load(self.path)
            if isinstance(data, dict):
                self.data = dict(data)  # (a kept document is shared: its entries are replaced here, never changed)
        except (OSError, ValueError, RecursionError):  # unreadable, not JSON, absurdly nested
            pass

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            _make_directory(self.directory)
            _drop_stale_temps(self.directory)
            self._write()
            self._prune()
        except OSError:
            pass  # a read-only tree or a full disk: nothing is left behind

    def _write(self) -> None:
        """Replace the file with `data`, atomically (the folder exists)."""
        import tempfile  # only when writing: a warm run that changes nothing never does

        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                # dumps (C encoder), not dump (pure-Python streaming): a large cache is
                # written several times faster
                fh.write(json.dumps(self.data, separators=(",", ":")))
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise

    def _prune(self) -> None:
        """Each new synclint build or rule selection starts a new file: keep the newest few."""
        files = [p for p in self.directory.glob(self.GLOB) if p != self.path]
        if len(files) < KEEP_FILES:
            return
        files.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        for p in files[KEEP_FILES - 1:]:
            try:
                p.unlink()
            except OSError:
                pass


class _Sharded:
    """A table too large to rewrite whole on every run (module summaries, link data), kept in
    SHARDS files in a folder of its own: a run that changes a few entries (an edit) rewrites
    a few files. Each file is replaced atomically; an entry is only used when its content
    digest matches, so shards of different runs side by side are safe."""

    GLOB = ""  # the folders of this kind, of every build and selection

    def __init__(self, directory: Path, folder: Path, decoded: Fresh = FRESH) -> None:
        self.directory, self.folder, self.decoded = directory, folder, decoded
        self.parts = [_Store(folder, folder / f"{i}.json", decoded) for i in range(SHARDS)]

    def _part(self, key: str) -> _Store:
        # (not crc32: it is linear, and paths that differ in a digit or two left shards empty)
        return self.parts[blake2b(key.encode(), 2).digest()[0] % SHARDS]

    def get(self, key: str):
        return self._part(key).data.get(key)

    def set(self, key: str, value) -> None:
        part = self._part(key)
        if part.data.get(key) != value:
            part.data[key] = value
            part.dirty = True

    def save(self) -> None:
        dirty = [p for p in self.parts if p.dirty]
        if not dirty:
            return
        try:
            _make_directory(self.directory)
            self.folder.mkdir(exist_ok=True)
            _drop_stale_temps(self.folder)
            for p in dirty:
                p._write()
        except OSError:
            return  # a read-only tree or a full disk: each shard is whole, old or new
        self._prune()

    def _prune(self) -> None:
        """Keep the newest few builds' and selections' tables (and no older single files)."""
        import shutil

        old = [p for p in self.directory.glob(self.GLOB) if p != self.folder]
        if len(old) < KEEP_FILES and not any(p.is_file() for p in old):
            return
        old.sort(key=lambda p: (p.is_dir(), p.stat().st_mtime), reverse=True)
        for p in old[KEEP_FILES - 1:] + [p for p in old[:KEEP_FILES - 1] if p.is_file()]:
            try:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
            except OSError:
                pass


class Cache(_Store):
    """Per file, what a run reports: [content digest, findings, error, functions made hot by
    other modules], and the digest of the whole project at the last run (when it matches,
    nothing anywhere changed: this small file is all a run reads). What re-linking needs
    (the project questions a lint asked and its answers' digest, the call graph, the second
    walk's summary) is kept apart in a `link-` file (`_Links`), read only when something
    changed.

    An entry as the runner sees it is one list: [digest, answers digest, findings, graph,
    error, [hot scopes, scopes that call a clock], second-walk summary, questions, what its facts were made from
    (`Project.made_from`)]."""

    def __init__(self, directory: Path, codes: Sequence[str], hot_only: bool, decoded: Fresh = FRESH) -> None:
        super().__init__(directory, cache_path(directory, codes, hot_only), decoded)
        files = self.data.get("files")
        if not isinstance(files, dict):
            self.data = {"files": {}, "project": None}
        stamps = self.data.get("stamps")
        self.data["stamps"] = dict(stamps) if isinstance(stamps, dict) else {}
        self.data["files"] = dict(self.data["files"])  # (changed below, and perhaps shared: `decoded`)
        self.entries: Dict[str, list] = self.data["files"]  # type: ignore[assignment]
        # absolute path -> [size, modification time, status change time (ns), inode, content digest] (`stamped`)
        self.stamps: Dict[str, list] = self.data["stamps"]  # type: ignore[assignment]
        self._links: Optional[_Links] = None

    @property
    def links(self) -> "_Links":
        if self._links is None:
            self._links = _Links(self.directory, self.path.with_name("link-" + self.path.stem[1:]), self.decoded)
        return self._links

    @property
    def project(self) -> Optional[str]:
        p = self.data.get("project")
        return p if isinstance(p, str) else None

    @project.setter
    def project(self, key: Optional[str]) -> None:
        if key != self.data.get("project"):
            self.data["project"] = key
            self.dirty = True

    @property
    def roots(self) -> List[str]:
        """The project roots of the last runs, the latest first (`remember_root`)."""
        roots = self.data.get("roots")
        return [r for r in roots if isinstance(r, str)] if isinstance(roots, list) else []

    def remember_root(self, root: str) -> None:
        """Keep `root` first among the last `KEEP_ROOTS` runs' roots: a file checked alone
        later takes the root its package's check had (`paths.project_root`)."""
        roots = [root] + [r for r in self.roots if r != root][:KEEP_ROOTS - 1]
        if roots != self.data.get("roots"):
            self.data["roots"] = roots
            self.dirty = True

    def stamped(self, key: str, st: os.stat_result) -> Optional[str]:
        """The content digest of the file at absolute path `key` when its stat says what it
        said when the file was last read (`_stamp_of`): a warm run stats the files instead of
        reading and hashing them (as Ruff's cache and git's index do)."""
        s = self.stamps.get(key)
        if isinstance(s, list) and len(s) == 5 and s[:4] == _stamp_of(st) and isinstance(s[4], str):
            return s[4]
        return None

    def stamp(self, key: str, st: os.stat_result, digest: str, now_ns: int) -> None:
        """Remember that the file with `st` (taken before it was read at `now_ns`) has `digest`;
        not for a file changed within `SETTLED_NS` of that read."""
        if now_ns - max(st.st_mtime_ns, st.st_ctime_ns) < SETTLED_NS:
            return
        s = _stamp_of(st) + [digest]
        if self.stamps.get(key) != s:
            self.stamps[key] = s
            self.dirty = True

    def result(self, key: str, digest: str) -> Optional[list]:
        """What the last run reported for the file at absolute path `key` (nothing changed
        anywhere): an entry without its linking parts."""
        e = self.entries.get(key)
        if isinstance(e, list) and len(e) == 4 and e[0] == digest and self.decoded.made("result shaped", e, _result_shaped):
            return [e[0], "", e[1], None, e[2], e[3], None, [], None]
        return None

    def get(self, path: str, digest: str) -> Optional[list]:
        key = os.path.abspath(path)
        r = self.result(key, digest)
        link = self.links.get(key) if r is not None else None
        if isinstance(link, list) and len(link) == 6 and link[0] == digest and self.decoded.made("link shaped", link, _link_shaped):
            return [digest, link[1], r[2], link[2], r[4], r[5], link[3], link[4], link[5]]
        return None  # absent, stale or of the wrong shape: analysed again and rewritten

    def put(self, path: str, entry: list) -> None:
        key = os.path.abspath(path)
        digest, answers, found, graph, error, hot, summary, questions, made_from = entry
        entry = [digest, found, error, hot]
        if self.entries.get(key) != entry:
            self.entries[key] = entry
            self.dirty = True
        self.links.set(key, [digest, answers, graph, summary, questions, made_from])

    def save(self) -> None:
        super().save()
        if self._links is not None:
            self._links.save()


class _Links(_Sharded):
    GLOB = "link-*"


class SummaryCache(_Sharded):
    """Module summaries by content digest: a file's summary depends on nothing else."""

    GLOB = "summaries-*"

    def __init__(self, directory: Path, decoded: Fresh = FRESH) -> None:
        key = blake2b(fingerprint().encode(), 8).hexdigest()
        super().__init__(directory, directory / f"summaries-{VERSION}-{key}", decoded)

    def get(self, path: str, digest: str) -> Optional[tuple]:  # type: ignore[override]
        """(summary JSON, the summary, error, its `summary_version`) when the file's bytes are
        those of `digest`."""
        e = super().get(os.path.abspath(path))
        if not (isinstance(e, list) and len(e) == 4 and e[0] == digest and isinstance(e[3], str)):
            return None
        summary = self.decoded.made("summary", e, _summary)
        return None if summary is False else (e[1], summary, e[2], e[3])

    def put(self, path: str, digest: str, summary: Optional[dict], error: Optional[str], version: str) -> None:
        self.set(os.path.abspath(path), [digest, summary, error, version])


# A cache file can be valid JSON of another shape (another build's, an edit, a bad disk):
# an entry is used only if it reads back as exactly what this build writes.
_BAD_SHAPE = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def _result_shaped(e: list) -> bool:
    from synclint.findings import Finding

    try:
        return ((e[2] is None or isinstance(e[2], str)) and isinstance(e[3], list) and len(e[3]) in (2, 3, 4, 5)
                and (len(e[3]) == 2 or isinstance(e[3][2], dict))  # (3: its compiled regions)
                and (len(e[3]) < 4 or all(isinstance(s, str) for s in e[3][3]))  # (4: its grad-off functions)
                and (len(e[3]) < 5 or all(isinstance(s, str) for s in e[3][4].values()))  # (5: its setup functions)
                and all(isinstance(q, str) and isinstance(chain, str) for q, chain in e[3][0])  # (hot: with its chain)
                and all(isinstance(s, str) or s is None for s in e[3][1])  # (None: module-level code)
                and all(Finding.from_json(d).to_cache() == d for d in e[1]))
    except _BAD_SHAPE:
        return False


def _link_shaped(e: list) -> bool:
    try:
        # (the questions, e[4], are checked where they are asked again: `ProjectFacts.answers_digest`)
        if not (isinstance(e[1], str) and (e[3] is None or isinstance(e[3], dict)) and isinstance(e[4], list)):
            return False
        m = e[5]  # [positions read, digest] or None
        if m is not None and not (isinstance(m, list) and len(m) == 2 and isinstance(m[0], list)
                                  and all(type(i) is int for i in m[0]) and isinstance(m[1], str)):
            return False
        g = e[2]  # a call graph: checked by shape (rebuilding each one was a third of a warm run)
        return g is None or (isinstance(g, list) and len(g) in (5, 6, 8, 9) and all(isinstance(x, list) for x in g[1:])
                             and all(isinstance(c, list) and len(c) == 3 for c in g[0]))
    except _BAD_SHAPE:
        return False


def _summary(e: list):
    """The entry's summary (None for none), or False when the entry is not one this build wrote."""
    if not (e[2] is None or isinstance(e[2], str)):
        return False
    if e[1] is None:
        return None
    from synclint.semantic.facts import ModuleSummary

    try:
        summary = ModuleSummary.from_json(e[1])
        return summary if summary.to_json() == e[1] else False
    except _BAD_SHAPE:
        return False
