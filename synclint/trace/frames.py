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
        self._machinery: Dict[str, bool] = {}
        self._shown: Dict[str, str] = {}
        self._via: Dict[object, str] = {}  # code object -> "torch/_tensor.py:__format__"

    def _is_machinery(self, filename: str) -> bool:
        v = self._machinery.get(filename)
        if v is None:
            v = self._machinery[filename] = _is_machinery_file(filename)
        return v

    def _via_of(self, frame: FrameType) -> str:
        v = self._via.get(frame.f_code)
        if v is None:
            v = self._via[frame.f_code] = _library_place(frame)
        return v

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

    def attribute(self, frame: Optional[FrameType]) -> "Attribution":
        """Walk outwards from `frame` to the innermost user frame, noting the library frame
        nearest to it (`via`, e.g. torch/_tensor.py:__format__ for an f-string). The walk
        stops there: the callers are read only when a listener asks (a new site)."""
        via_frame: Optional[FrameType] = None
        first_lib: Optional[FrameType] = None
        f = frame
        while f is not None:
            filename = f.f_code.co_filename
            if self.is_user(filename):
                via = self._via_of(via_frame) if via_frame is not None else None
                return Attribution(self.place(f), via, f, True, self)
            if not self._is_machinery(filename):
                if first_lib is None:
                    first_lib = f
                via_frame = f  # walking outwards: ends as the one nearest the user
            f = f.f_back
        if first_lib is None:
            return Attribution(None, None, None, False, self)
        lib = Place(_library_place(first_lib).rsplit(":", 1)[0], first_lib.f_lineno, first_lib.f_code.co_name)
        return Attribution(lib, None, first_lib, False, self)

    def innermost(self, frame: Optional[FrameType]) -> Optional[Place]:
        """Just the innermost user frame's place (the debug-mode cross-check needs no more)."""
        f = frame
        while f is not None:
            if self.is_user(f.f_code.co_filename):
                return self.place(f)
            f = f.f_back
        return None


@dataclass(frozen=True)
class Attribution:
    site: Optional[Place]  # the user's line; else the innermost library frame; None: no frame
    via: Optional[str]  # the library function the sync happened in, nearest the user frame
    raise_frame: Optional[FrameType]  # the frame of `site` (the guard raises there)
    user: bool = True  # False: no user frame on the stack (a library thread, say)
    code: Optional["UserCode"] = None

    def callers(self, depth: int = 6) -> Tuple[Place, ...]:
        """The user frames that called the site's frame, innermost first. Read while the
        stack is live (inside the callback): frames are not kept."""
        if not self.user or self.raise_frame is None or self.code is None:
            return ()
        out: List[Place] = []
        f = self.raise_frame.f_back
        while f is not None and len(out) < depth:
            if self.code.is_user(f.f_code.co_filename):
                out.append(self.code.place(f))
            f = f.f_back
        return tuple(out)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _is_machinery_file(fn: str) -> bool:
    """Files of the interception itself (torch's callback registry, synclint, warnings)."""
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
