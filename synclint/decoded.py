"""The cache's files, decoded, kept between the runs of one long-lived process (the daemon).

Each run reads the cache's JSON files and decodes module summaries and call graphs from
them; an edit changes a few of them, so the next run in the daemon would decode the same
bytes again (about a fifth of an edit re-check on the Lightning tree). Kept here, a file is
known by its identity as it was read (device, inode, size, modification time in ns, from
the open file itself): the cache replaces its files atomically (a new inode) and never
writes one in place, so a changed file is never taken for the one kept, and a run's answer
is the one a fresh process gives. Off unless `keep()` was called: a one-shot run reads
each file once anyway.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, Tuple

_ON = False
# path -> (identity, the document)
_FILES: Dict[str, Tuple[tuple, Any]] = {}
# (what, id of a value inside a kept document) -> (that value, what `make` made of it): the
# value is held, so its id cannot be reused while the entry lives
_MADE: Dict[Tuple[str, int], Tuple[Any, Any]] = {}
_MADE_LIMIT = 50_000  # values made fresh in a run (a file linted again) are asked too: bound them


def keep() -> None:
    """Keep decoded files from now on (the daemon, before it serves)."""
    global _ON
    _ON = True


def load(path) -> Any:
    """The JSON document at `path`, as `json.load` gives it (OSError, ValueError alike). A
    kept document is shared: the caller copies what it changes."""
    with open(path, encoding="utf-8") as fh:
        if not _ON:
            return json.load(fh)
        st = os.fstat(fh.fileno())
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        key = os.fspath(path)
        hit = _FILES.get(key)
        if hit is not None and hit[0] == ident:
            return hit[1]
        data = json.load(fh)
    if hit is not None:
        _forget(hit[1])
    _FILES[key] = (ident, data)
    return data


def made(what: str, value: Any, make: Callable[[Any], Any]) -> Any:
    """`make(value)` for a value taken from a kept document, made once per value; made
    afresh when nothing is kept. What `make` returns must not be changed by its users."""
    if not _ON:
        return make(value)
    hit = _MADE.get((what, id(value)))
    if hit is not None and hit[0] is value:
        return hit[1]
    out = make(value)
    if len(_MADE) >= _MADE_LIMIT:
        _MADE.clear()
    _MADE[(what, id(value))] = (value, out)
    return out


def _forget(data: Any) -> None:
    """Drop what was made from a document that was replaced: from its entries (values of
    the document or of a table in it) and their parts, where `made` is asked."""
    if not _MADE or not isinstance(data, dict):
        return
    entries = [v for t in data.values() if isinstance(t, dict) for v in t.values()] + list(data.values())
    gone = {id(v) for v in entries}
    for v in entries:
        if isinstance(v, list):
            gone.update(id(x) for x in v)
    for k in [k for k in _MADE if k[1] in gone]:
        del _MADE[k]
