"""Write a source file back as it was, with new text: readers see the old file or the new
one, never half of it, and a run killed at any moment leaves no temp file behind.

The file keeps its encoding (a PEP 263 cookie's), its UTF-8 BOM, its mode and, where we
may, its owner. A symlink is followed: its target is the file, and the link stays a link.
A file with other hard links is the one exception to "never half": replacing it would
detach this name from the others, so it is rewritten in place (one write, then fsync).

A file read, changed and written back (`replacing=` the bytes read: `--fix`) is written
only where it still holds those bytes, checked under an exclusive lock (`flock`) on the
file right before the rename: a second synclint run fixing it meanwhile, or an editor
saving it, is not overwritten (`FileChanged`); two synclint runs take the lock in turn,
so neither can slip between the other's check and rename. And only where this user may
write the file itself (a rename needs the folder only): a read-only file (mode 0444) or
one owned by another user is left alone (`PermissionError`).
"""

from __future__ import annotations

import codecs
import errno
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Tuple, Union

AT_FDCWD, AT_SYMLINK_FOLLOW = -100, 0x400  # <fcntl.h>, Linux
LOCK_WAIT = 10.0  # seconds to wait for the lock on a file being replaced


class FileChanged(OSError):
    """The file no longer holds what was read from it: it is left as it now is."""


def write_text_atomic(path: Union[str, Path], text: str, encoding: str = "utf-8", bom: bool = False,
                      replacing: Optional[bytes] = None) -> None:
    """Raises OSError (or UnicodeEncodeError) with nothing changed and no temp file left;
    with `replacing` (the bytes read from the file), FileChanged where the file holds other
    bytes now and PermissionError where this user may not write it."""
    path = os.path.realpath(os.fspath(path))
    data = (codecs.BOM_UTF8 if bom else b"") + text.encode(encoding)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if replacing is not None and st is not None:
        _refuse_unwritable(path, st)
    if st is not None and st.st_nlink > 1:
        with open(path, "r+b") as fh, _locked_unchanged(path, replacing, fh):
            fh.seek(0)
            fh.write(data)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
        return
    directory = os.path.dirname(path)
    _drop_stale_temps(directory)
    fd, tmp = _temp_file(directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if st is not None:
                os.fchmod(fh.fileno(), st.st_mode & 0o7777)
                try:
                    os.fchown(fh.fileno(), st.st_uid, st.st_gid)
                except OSError:  # not ours to give away: the new file is the writer's
                    pass
            else:  # a new file: the mode open() would give it
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fh.fileno(), 0o666 & ~umask)
            os.fsync(fh.fileno())
            with _locked_unchanged(path, replacing):
                if tmp is None:  # unnamed until complete: named only for the rename, at once
                    tmp = _name(fh.fileno(), directory)
                os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def _refuse_unwritable(path: str, st: os.stat_result) -> None:
    """PermissionError for a file whose permissions say this user may not write it. The
    superuser may write anything, so a file without any write permission is read-only for
    everyone."""
    mode = st.st_mode & 0o7777
    if not mode & 0o222:
        raise PermissionError(errno.EACCES, f"the file is read-only (mode {mode:04o})", path)
    if not os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
        raise PermissionError(errno.EACCES, f"no permission to write the file (owner uid {st.st_uid}, "
                                            f"mode {mode:04o})", path)


@contextmanager
def _locked_unchanged(path: str, expected: Optional[bytes], fh=None) -> Iterator[None]:
    """Held while the file at `path` is replaced or rewritten: an exclusive lock on it,
    after checking that it still holds `expected` (FileChanged if not). No-op without
    `expected`. The lock is the file's (its inode's): one taken on a file another run has
    meanwhile replaced is dropped and taken again on the file now at `path`."""
    if expected is None:
        yield
        return
    try:
        import fcntl  # noqa: F401
        lockable = True
    except ImportError:  # no flock (Windows): the check alone, with its short window
        lockable = False
    while True:
        handle = fh or open(path, "rb")
        try:
            if lockable:
                _lock(handle.fileno(), path)
            if not os.path.samestat(os.fstat(handle.fileno()), os.stat(path)):
                if fh is None:
                    continue  # replaced while we waited for the lock: lock the new one
                raise FileChanged(errno.EAGAIN, "the file was replaced since it was read", path)
            handle.seek(0)
            if handle.read() != expected:
                raise FileChanged(errno.EAGAIN, "the file changed since it was read", path)
            yield
            return
        finally:  # closing the handle drops the lock (after the rename or the write)
            if fh is None:
                handle.close()


def _lock(fd: int, path: str) -> None:
    """An exclusive lock on the file: another synclint run holds it for a rename at most, so
    waiting longer than LOCK_WAIT means some other program holds it (OSError)."""
    import fcntl
    import time

    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise OSError(errno.EAGAIN, f"the file stayed locked by another program for {LOCK_WAIT:.0f} s", path)
            time.sleep(0.005)


def _temp_file(directory: str) -> Tuple[int, Optional[str]]:
    """(fd, name) of a new file in `directory`. On Linux the file has no name (O_TMPFILE)
    while it is written, so a run killed then (SIGKILL: no cleanup runs) leaves nothing;
    the name is then None. Elsewhere a named temp file."""
    if _linkat() is not None and hasattr(os, "O_TMPFILE"):
        try:
            return os.open(directory, os.O_TMPFILE | os.O_WRONLY, 0o600), None
        except OSError:  # a filesystem without O_TMPFILE
            pass
    return tempfile.mkstemp(prefix=".synclint-", suffix=".tmp", dir=directory)


def _name(fd: int, directory: str) -> str:
    """A fresh temp name for the unnamed file `fd`. `os.link` cannot do this (it calls
    link(2), which will not follow /proc/self/fd/N), hence linkat(2) itself."""
    import ctypes
    import secrets

    linkat = _linkat()
    while True:
        name = os.path.join(directory, f".synclint-{secrets.token_hex(8)}.tmp")
        if linkat(AT_FDCWD, f"/proc/self/fd/{fd}".encode(), AT_FDCWD, os.fsencode(name), AT_SYMLINK_FOLLOW) == 0:
            return name
        err = ctypes.get_errno()
        if err != 17:  # EEXIST: draw another name
            raise OSError(err, os.strerror(err), name)


_LINKAT: list = []


def _linkat():
    """libc's linkat where there is one (Linux with /proc), else None."""
    if not _LINKAT:
        fn = None
        if os.path.isdir("/proc/self/fd"):
            try:
                import ctypes

                fn = ctypes.CDLL(None, use_errno=True).linkat
                fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
                fn.restype = ctypes.c_int
            except (OSError, AttributeError):
                fn = None
        _LINKAT.append(fn)
    return _LINKAT[0]


def _drop_stale_temps(directory: str) -> None:
    """Named temp files of a run killed mid-write where O_TMPFILE is not available, once a
    minute old (no run is still writing them)."""
    import glob
    import time

    for p in glob.glob(os.path.join(glob.escape(directory), ".synclint-*.tmp")):
        try:
            if time.time() - os.stat(p).st_mtime > 60:
                os.unlink(p)
        except OSError:
            pass
