"""The `synclint` console script. `synclint check ...` is handed to a `synclint daemon` that
serves this directory (its root is here or above) when one answers; anything else, and any
failure of the daemon, runs the command line in this process (`synclint.cli:main`).

Everything before "a daemon answers" is stdlib and small on purpose: with no daemon the cost
is one listing of the (absent) socket folder, not click's import (25 ms) or LibCST's (400 ms).
The daemon's answer is the complete stdout, stderr and exit code of a local run, buffered
whole before anything is written, so that a daemon that dies mid-answer leaves no half output.
While it works it sends a blank every `daemon.HEARTBEAT_S`: a daemon silent for
`ANSWER_TIMEOUT` (stopped with Ctrl-Z or SIGSTOP, stuck, or busy with another client's
check) is given up with one line, and the check runs here.
"""

from __future__ import annotations

import os
import sys

# `check` options that write the checked files, read stdin, print help or run until Ctrl-C:
# run here (a daemon is for the read-only check; --help is rare and not worth matching
# click's width logic; a --watch session keeps its own process warm)
LOCAL_OPTIONS = frozenset(("--fix", "--diff", "--add-noqa", "--stdin-filename", "--help", "-h", "--watch", "-w"))
PROTOCOL = 1
NO_DAEMON_ENV = "SYNCLINT_NO_DAEMON"  # set (non-empty): never use a daemon
CONNECT_TIMEOUT = 2.0  # a connect to a live socket is immediate; a wedged one must not hang us
# Seconds without a byte from the daemon before the client gives up on it. It sends one every
# second while it works, but LibCST's parser holds the interpreter for seconds on a huge
# file (the largest torch file: 6 s on a quiet machine). SYNCLINT_DAEMON_TIMEOUT sets it.
ANSWER_TIMEOUT = 10.0
TIMEOUT_ENV = "SYNCLINT_DAEMON_TIMEOUT"
MAX_ANSWER = 1 << 30


def _blake2b(data: bytes, size: int):
    # `_blake2` is hashlib's own backend: 0.2 ms to import against hashlib's 4 ms (OpenSSL)
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b
    return blake2b(data, digest_size=size)


def runtime_dir() -> str:
    """The per-user folder of the sockets (mode 0700): $TMPDIR (else $TEMP, $TMP, /tmp) as
    tempfile.gettempdir() picks it, without importing tempfile."""
    base = "/tmp"
    for var in ("TMPDIR", "TEMP", "TMP"):
        v = os.environ.get(var)
        if v and os.path.isdir(v):
            base = v
            break
    return os.path.join(base, f"synclint-{os.getuid()}")


def socket_name(root: str) -> str:
    """A short name for the daemon of `root` (a realpath): AF_UNIX paths end at ~100 bytes."""
    return _blake2b(os.fsencode(root), 8).hexdigest() + ".sock"


def private_dir(path: str) -> bool:
    """`path` is a real folder of ours that nobody else may enter (not a symlink planted in
    a shared /tmp, not group- or world-accessible)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.getuid() and not st.st_mode & 0o077


def find_daemons(cwd: str | None = None) -> list:
    """(root, socket path) of each daemon whose root is `cwd` or a folder above it, nearest
    first. With no daemon at all this is one failed listdir."""
    d = runtime_dir()
    try:
        names = os.listdir(d)
    except OSError:
        return []
    if not names or not private_dir(d):
        return []
    names = set(names)
    p = cwd or os.getcwd()  # the kernel's answer is already the physical path (a realpath)
    out = []
    while True:
        n = socket_name(p)
        if n in names:
            out.append((p, os.path.join(d, n)))
        parent = os.path.dirname(p)
        if parent == p:
            return out
        p = parent


def fingerprint() -> str:
    """The synclint build: changes when any engine or rule source file changes (development
    installs too). The cache keys its files by it; a daemon refuses a client of another."""
    import synclint
    import synclint.rules

    h = _blake2b(synclint.__version__.encode(), 8)
    root = synclint.__path__[0]
    for d in (root, os.path.join(root, "parse"), os.path.join(root, "semantic"), synclint.rules.__path__[0]):
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
    import synclint

    return f"{fp}|{synclint.__path__[0]}|{sys.prefix}|{sys.version}"


def daemon_may_run(argv) -> bool:
    """Only a read-only `check`: not --fix/--diff/--add-noqa, stdin (`-`) or help."""
    if not argv or argv[0] != "check":
        return False
    for tok in argv[1:]:
        if tok == "--":
            break
        if tok == "-" or tok.split("=", 1)[0] in LOCAL_OPTIONS:
            return False
        if tok[:1] == "-" and tok[:2] != "--" and ("h" in tok or "w" in tok):  # -h, -w among short flags (-vw)
            return False
    return True


def _terminal(stream, fd: int):
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError, OSError):
        tty = False
    size = None
    if tty:
        try:
            size = list(os.get_terminal_size(fd))
        except (OSError, ValueError):
            pass
    return tty, size


def request(argv) -> dict:
    """What a local run would see, for the daemon to reproduce."""
    streams = []
    for stream, fd in ((sys.stdin, 0), (sys.stdout, 1), (sys.stderr, 2)):
        tty, size = _terminal(stream, fd) if stream is not None else (False, None)
        streams.append({"tty": tty, "size": size, "encoding": getattr(stream, "encoding", None) or "utf-8",
                        "errors": getattr(stream, "errors", None) or "strict"})
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = None
    return {"op": "check", "protocol": PROTOCOL, "build": build_id(fingerprint()), "argv": list(argv),
            "prog": os.path.basename(sys.argv[0]), "cwd": os.getcwd(), "env": dict(os.environ),
            "streams": streams, "umask": umask, "cpus": cpus}


def exchange(path: str, req: dict, timeout=None) -> dict | None:
    """Send `req` to the daemon at `path`; its answer (the header, with the output as
    `chunks` of (fd, bytes)), `{"status": "silent"}` when it sent nothing for `timeout`
    seconds, or None if it is not there, dies or answers garbage."""
    import json

    try:  # the C module under `socket`: 1 ms to import against 5 ms (selectors, enum)
        import _socket as socket
    except ImportError:  # pragma: no cover
        import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(CONNECT_TIMEOUT)
        s.connect(path)
        s.settimeout(timeout)  # (per receive: the daemon's blanks while it works restart it)
        s.sendall(json.dumps(req).encode("utf-8", "surrogatepass"))
        s.shutdown(socket.SHUT_WR)  # the request is complete
        data = read_all(s, MAX_ANSWER)
    except TimeoutError:
        return {"status": "silent"}
    except (OSError, ValueError, TypeError):
        return None
    finally:
        s.close()
    return None if data is None else parse_answer(data)


def answer_timeout() -> float:
    """`ANSWER_TIMEOUT`, or the seconds SYNCLINT_DAEMON_TIMEOUT gives."""
    try:
        t = float(os.environ.get(TIMEOUT_ENV) or ANSWER_TIMEOUT)
    except ValueError:
        return ANSWER_TIMEOUT
    return t if 0 < t < 1e9 else ANSWER_TIMEOUT


def read_all(conn, limit: int) -> bytes | None:
    """What `conn` sends until it closes its side; None past `limit` bytes."""
    parts, n = [], 0
    while True:
        b = conn.recv(1 << 20)
        if not b:
            return b"".join(parts)
        parts.append(b)
        n += len(b)
        if n > limit:
            return None


def parse_answer(data: bytes) -> dict | None:
    """`{header JSON}\\n` then the chunks' bytes, exactly as many as the header says."""
    import json

    nl = data.find(b"\n")
    if nl < 0:
        return None
    try:
        head = json.loads(data[:nl])
    except ValueError:
        return None
    if not isinstance(head, dict):
        return None
    if head.get("status") != "ok":
        return head
    code, sizes = head.get("exit"), head.get("chunks")
    if type(code) is not int or not 0 <= code <= 255 or not isinstance(sizes, list):
        return None
    chunks, at = [], nl + 1
    for item in sizes:
        if (not isinstance(item, list) or len(item) != 2 or item[0] not in (1, 2)
                or type(item[1]) is not int or item[1] < 0):
            return None
        chunks.append((item[0], data[at:at + item[1]]))
        at += item[1]
    if at != len(data):
        return None  # cut short or padded: not the answer the header announced
    head["chunks"] = chunks
    return head


def write_answer(answer: dict) -> int:
    """Write the output as the local run would have, in its order; its exit code."""
    try:
        for fd, data in answer["chunks"]:
            stream = sys.stdout if fd == 1 else sys.stderr
            stream.buffer.write(data)
            stream.buffer.flush()
    except BrokenPipeError:  # `synclint check | head`: as a local run, exit 2 and say nothing
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.close()
            except OSError:
                pass
        os._exit(2)
    return answer["exit"]


def via_daemon(argv) -> int | None:
    """The exit code of `synclint ARGV` answered by a daemon, its output written; None when
    no daemon for this directory answered (the caller runs it here)."""
    if os.environ.get(NO_DAEMON_ENV) or not daemon_may_run(argv) or sys.stdout is None or sys.stderr is None:
        return None
    try:
        daemons = find_daemons()
    except (OSError, ValueError, AttributeError):  # no cwd any more, no os.getuid (Windows)
        return None
    if not daemons:
        return None
    answer = None
    try:
        req = request(argv)
        for root, path in daemons:  # nearest first
            wait = answer_timeout()
            answer = exchange(path, req, wait)
            if answer is not None and answer.get("status") == "ok":
                break
            if answer is not None and answer.get("status") == "silent":
                sys.stderr.write(f"synclint: the daemon serving {root} sent nothing for {wait:g} s (stopped, "
                                 f"stuck, or busy with another check); checking here\n")
                sys.stderr.flush()
            answer = None
    except KeyboardInterrupt:  # as click says it
        sys.stderr.write("\nAborted!\n")
        return 1
    except Exception:  # noqa: BLE001 - never a traceback from the fast path: run it here
        return None
    return None if answer is None else write_answer(answer)


def main():
    code = via_daemon(sys.argv[1:])
    if code is not None:
        return code
    from synclint.cli import main as cli

    return cli()
