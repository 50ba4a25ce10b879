"""Folders without `__init__.py` that are packages all the same (PEP 420 namespace packages),
known from their own files: a relative import (`from .base import GPTBase` in
`src/models/utils.py`) works only when its folder is imported as a package (`from
models.utils import get_model` in `src/main.py`), so its modules are `models.base`,
`models.utils`, not top-level `base` and `utils` (which another folder's `base.py` would
shadow). Read from the files' text, before any parse: module names come first."""

from __future__ import annotations

import os
import re
from typing import Iterable, Set

# `from . import x`, `from .mod import x`, `from ..pkg.mod import x`: the leading dots
_RELATIVE = re.compile(rb"^[ \t]*from[ \t]+(\.+)", re.MULTILINE)


def namespace_packages(paths: Iterable[str]) -> Set[str]:
    """The folders (absolute) that a relative import in one of `paths` reaches: the file's own
    folder for one dot, and one folder further up per further dot, up to a folder that holds a
    regular package (a source root: its packages' names start there). Only folders without
    `__init__.py` whose parent has none are read for (the others are placed already)."""
    out: Set[str] = set()
    for path in paths:
        d = os.path.dirname(path)
        if d in out or _placed(d):
            continue
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError:
            continue
        levels = [len(m.group(1)) for m in _RELATIVE.finditer(text)]
        for _ in range(max(levels, default=0)):
            if _holds_package(d):
                break  # a source root (mmdetection3d's, holding `mmdet3d/`): absolute imports start there
            out.add(d)
            d = os.path.dirname(d)
    return out


def _holds_package(d: str) -> bool:
    """A folder with a regular package in it (a subfolder with `__init__.py`)."""
    try:
        return any(e.is_dir() and os.path.exists(os.path.join(e.path, "__init__.py")) for e in os.scandir(d))
    except OSError:
        return False


def _placed(d: str) -> bool:
    return os.path.exists(os.path.join(d, "__init__.py")) or os.path.exists(
        os.path.join(os.path.dirname(d), "__init__.py"))
