"""Which synclint this is: its version and the fingerprint of its build.

A leaf (stdlib only, and only `os`/`sys` at import): the console script's fast path reads it
before deciding whether a daemon answers, the cache keys its files by it, and a daemon
refuses a client of another build."""

from __future__ import annotations

import os
import sys

VERSION = "0.1.0"

# The folders whose sources make up the engine (beside the package's own, and the rules');
# bench/ and trace/ do not change what a check finds. A folder that is absent is skipped.
SOURCE_FOLDERS = ("frontends", "run", "report", "parse", "semantic")


def blake2b(data: bytes, size: int):
    # `_blake2` is hashlib's own backend: 0.2 ms to import against hashlib's 4 ms (OpenSSL)
    try:
        from _blake2 import blake2b as new
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b as new
    return new(data, digest_size=size)


def package_root() -> str:
    return os.path.dirname(os.path.abspath(__file__))


def fingerprint() -> str:
    """The synclint build: changes when any engine or rule source file changes (development
    installs too). The cache keys its files by it; a daemon refuses a client of another."""
    import synclint.rules

    h = blake2b(VERSION.encode(), 8)
    root = package_root()
    folders = [root] + [os.path.join(root, d) for d in SOURCE_FOLDERS] + [synclint.rules.__path__[0]]
    for d in folders:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            if n.endswith((".py", ".toml")):
                st = os.stat(os.path.join(d, n))
                h.update(f"{n}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def build_id(fp: str) -> str:
    """The build a daemon must share with its client: synclint's code, where it is installed,
    and the interpreter (another venv may hold other versions of LibCST or click)."""
    return f"{fp}|{package_root()}|{sys.prefix}|{sys.version}"
