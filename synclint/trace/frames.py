"""Which Python frame a sync belongs to: the innermost frame of the user's code.

A sync is raised deep inside torch (a C++ hook calling back into Python, or a torch
Python function such as `Tensor.__format__`); the line that matters to the user is the
innermost frame whose file is theirs. "Theirs" is a file under one of the roots (the
working directory by default) that is not inside an installed package, the standard
library, torch or synclint itself.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass
from types import FrameType
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the synclint package


def _library_dirs() -> Tuple[str, ...]:
    dirs = {_HERE}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.realpath(p))
    for p in sys.path:
        if p.endswith(("site-packages", "dist-packages")):
            dirs.add(os.path.realpath(p))
    return tuple(sorted(dirs))


@dataclass(frozen=True)
class Place:
    """One frame, as the trace stores it: file (relative to the root when under it)."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.function}"


class UserCode:
    """Decides which files are the user's and turns frames into places.

    roots: directories whose files are the user's (default: the working directory).
    library: extra paths that are never the user's (added to site-packages, the standard
    library, torch and synclint)."""

    def __init__(self, roots: Sequence[str] = (), library: Iterable[str] = ()) -> None:
        self.roots = tuple(os.path.realpath(r) for r in (roots or [os.getcwd()]))
        self.library = _library_dirs() + tuple(os.path.realpath(p) for p in library)
        self._verdict: Dict[str, bool] = {}  # co_filename -> is the user's (cached: frames repeat)
        self._shown: Dict[str, str] = {}

    def is_user(self, filename: str) -> bool:
        v = self._verdict.get(filename)
        if v is None:
            v = self._decide(filename)
            self._verdict[filename] = v
        return v

    def _decide(self, filename: str) -> bool:
        if filename.startswith("<"):  # <string>, <frozen ...>: no file to show
            return False
        path = os.path.realpath(filename)
        if any(_under(path, d) for d in self.library):
            return False
        return any(_under(path, r) for r in self.roots)

    def shown(self, filename: str) -> str:
        """The file as the trace stores it: relative to the first root that holds it."""
        s = self._shown.get(filename)
        if s is None:
            path = os.path.realpath(filename)
            s = path
            for r in self.roots:
                if _under(path, r):
                    s = os.path.relpath(path, r).replace(os.sep, "/")
                    break
            self._shown[filename] = s
        return s

    def place(self, frame: FrameType) -> Place:
        return Place(self.shown(frame.f_code.co_filename), frame.f_lineno, frame.f_code.co_name)

    def attribute(self, frame: Optional[FrameType], depth: int = 8) -> "Attribution":
        """Walk outwards from `frame`: the innermost user frame, the user frames around it
        (the call path, innermost first) and the innermost library frame below it (`via`,
        e.g. torch/_tensor.py:__format__ for an f-string)."""
        via: Optional[str] = None
        first_lib: Optional[FrameType] = None
        user: List[FrameType] = []
        f = frame
        while f is not None and len(user) < depth:
            if self.is_user(f.f_code.co_filename):
                user.append(f)
            elif not user and not _is_machinery(f):
                if first_lib is None:
                    first_lib = f
                via = _library_place(f)  # walking outwards: ends as the one nearest the user
            f = f.f_back
        if not user:
            if first_lib is None:
                return Attribution(None, (), None, None)
            lib = Place(_library_place(first_lib).rsplit(":", 1)[0], first_lib.f_lineno, first_lib.f_code.co_name)
            return Attribution(lib, (), None, first_lib, user=False)
        return Attribution(self.place(user[0]), tuple(self.place(u) for u in user[1:]), via, user[0])


@dataclass(frozen=True)
class Attribution:
    site: Optional[Place]  # the user's line; else the innermost library frame; None: no frame
    callers: Tuple[Place, ...]  # the user frames that called it, innermost first
    via: Optional[str]  # the library function the sync happened in, nearest the user frame
    raise_frame: Optional[FrameType]  # where the guard raises: the frame of `site`
    user: bool = True  # False: no user frame on the stack (a library thread, say)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _is_machinery(frame: FrameType) -> bool:
    """Frames of the interception itself (torch's callback registry, synclint, warnings)."""
    fn = frame.f_code.co_filename
    return fn.startswith(_HERE) or fn.endswith(("torch/_utils.py", "warnings.py")) or fn.startswith("<frozen")


def _library_place(frame: FrameType) -> str:
    """`torch/_tensor.py:__format__`: a library frame named from its package down."""
    fn = frame.f_code.co_filename.replace(os.sep, "/")
    for marker in ("/site-packages/", "/dist-packages/", "/lib/python"):
        i = fn.rfind(marker)
        if i >= 0:
            fn = fn[i + len(marker):]
            if marker == "/lib/python":  # the standard library: drop the "3.12/" part
                fn = fn.split("/", 1)[-1]
            break
    return f"{fn}:{frame.f_code.co_name}"
