"""The cache's files, decoded: as read (`FRESH`, a one-shot run reads each file once anyway),
or kept between the runs of one long-lived process (`Kept`, the daemon's, which it owns and
hands to each run).

Each run reads the cache's JSON files and decodes module summaries and call graphs from
them; an edit changes a few of them, so the next run in the daemon would decode the same
bytes again (about a fifth of an edit re-check on the Lightning tree). Kept, a file is
known by its identity as it was read (device, inode, size, modification time in ns, from
the open file itself): the cache replaces its files atomically (a new inode) and never
writes one in place, so a changed file is never taken for the one kept, and a run's answer
is the one a fresh process gives.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, Tuple

_MADE_LIMIT = 50_000  # values made fresh in a run (a file linted again) are asked too: bound them


class Fresh:
    """Every file decoded as it is read, every value made as it is asked."""

    def load(self, path) -> Any:
        """The JSON document at `path`, as `json.load` gives it (OSError, ValueError alike). A
        kept document is shared: the caller copies what it changes."""
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)

    def made(self, what: str, value: Any, make: Callable[[Any], Any]) -> Any:
        """`make(value)` for a value taken from a loaded document (kept: made once per value).
        What `make` returns must not be changed by its users."""
        return make(value)


    def text(self, key: str, digest: str):
        """The text of the file at absolute path `key` as decoded when its bytes had `digest`
        (kept: the last run's, while the file's stamp vouches for the same bytes), else None."""
        return None

    def keep_text(self, key: str, digest: str, text: str) -> None:
        """Remember `text`, the file at `key` decoded from bytes of `digest` (kept only)."""


FRESH = Fresh()  # (it holds nothing: one serves every run)


class Kept(Fresh):
    """Decoded files and what was made of their values, kept while the files stay the same."""

    def __init__(self) -> None:
        self._files: Dict[str, Tuple[tuple, Any]] = {}  # path -> (identity, the document)
        # (what, id of a value inside a kept document) -> (that value, what `make` made of it):
        # the value is held, so its id cannot be reused while the entry lives
        self._made: Dict[Tuple[str, int], Tuple[Any, Any]] = {}
        # absolute path -> (content digest, the text decoded from it): an edit's re-check reads,
        # hashes and decodes only the files whose stamps changed (a tenth of it on Lightning)
        self._texts: Dict[str, Tuple[str, str]] = {}

    def load(self, path) -> Any:
        with open(path, encoding="utf-8") as fh:
            st = os.fstat(fh.fileno())
            ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            key = os.fspath(path)
            hit = self._files.get(key)
            if hit is not None and hit[0] == ident:
                return hit[1]
            data = json.load(fh)
        if hit is not None:
            self._forget(hit[1])
        self._files[key] = (ident, data)
        return data

    def made(self, what: str, value: Any, make: Callable[[Any], Any]) -> Any:
        hit = self._made.get((what, id(value)))
        if hit is not None and hit[0] is value:
            return hit[1]
        out = make(value)
        if len(self._made) >= _MADE_LIMIT:
            self._made.clear()
        self._made[(what, id(value))] = (value, out)
        return out

    def text(self, key: str, digest: str):
        hit = self._texts.get(key)
        return hit[1] if hit is not None and hit[0] == digest else None

    def keep_text(self, key: str, digest: str, text: str) -> None:
        self._texts[key] = (digest, text)

    def _forget(self, data: Any) -> None:
        """Drop what was made from a document that was replaced: from its entries (values of
        the document or of a table in it) and their parts, where `made` is asked."""
        if not self._made or not isinstance(data, dict):
            return
        entries = [v for t in data.values() if isinstance(t, dict) for v in t.values()] + list(data.values())
        gone = {id(v) for v in entries}
        for v in entries:
            if isinstance(v, list):
                gone.update(id(x) for x in v)
        for k in [k for k in self._made if k[1] in gone]:
            del self._made[k]
