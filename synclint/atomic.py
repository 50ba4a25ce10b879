"""Write a source file back as it was, with new text: readers see the old file or the new
one, never half of it.

The file keeps its encoding (a PEP 263 cookie's), its UTF-8 BOM, its mode and, where we
may, its owner. A symlink is followed: its target is the file, and the link stays a link.
A file with other hard links is the one exception to "never half": replacing it would
detach this name from the others, so it is rewritten in place (one write, then fsync).
"""

from __future__ import annotations

import codecs
import os
import tempfile
from pathlib import Path
from typing import Union


def write_text_atomic(path: Union[str, Path], text: str, encoding: str = "utf-8", bom: bool = False) -> None:
    """Raises OSError (or UnicodeEncodeError) with nothing changed and no temp file left."""
    path = os.path.realpath(os.fspath(path))
    data = (codecs.BOM_UTF8 if bom else b"") + text.encode(encoding)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and st.st_nlink > 1:
        with open(path, "r+b") as fh:
            fh.write(data)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
        return
    fd, tmp = tempfile.mkstemp(prefix=".synclint-", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, st.st_mode & 0o7777)
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:  # not ours to give away: the new file is the writer's
                pass
        else:  # a new file: the mode open() would give it
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
