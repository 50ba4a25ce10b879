"""`synclint daemon`: an interpreter that has already imported LibCST, the rules and the
command line, and runs `synclint check` for the `synclint` commands of one user and project.

It is a pre-loaded interpreter and nothing more. It keeps no findings or trees between
requests: each request is the click command run afresh in this process, in the client's
folder, with its arguments, environment and terminal, and answers with the bytes a local
run would have printed. What it keeps is what the cache's files decode to (`decoded`) and
what is made from exactly those summaries and call graphs (`Project.kept`, from the
server's own store, `Server.kept`, handed to each request through `cli.Program`):
the same inputs, so the same answers. What a run may reuse is on disk (`.synclint_cache/`), as for
a local run; the only thing that can go stale is the daemon's own code, so a client of
another build (`build.build_id`) is refused (it runs locally) and the daemon stops.

One request at a time, in the main thread: the per-file time budget is a SIGALRM
(`workers.time_limit`), and the worker processes a run forks inherit these imports, which
is the point. While a check runs, a thread sends the client a blank every HEARTBEAT_S: a
client that hears nothing for a while (`client.ANSWER_TIMEOUT`) knows the daemon is
stopped or stuck, and runs the check itself. The socket lives in a per-user folder of mode 0700 (`client.runtime_dir`),
named by a hash of the root's realpath; on Linux the peer's uid is checked as well.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import sys
import time
from typing import Callable, List, Optional, Tuple

import click

from synclint.build import build_id, fingerprint
from synclint.frontends.client import (PROTOCOL, daemon_may_run, exchange, find_daemons, private_dir, read_all,
                                       runtime_dir, socket_name)

DEFAULT_IDLE_TIMEOUT = 1800.0
MAX_REQUEST = 64 << 20  # an environment and an argv: far less
READ_TIMEOUT = 30.0  # a client that connects and sends nothing must not hold the daemon
HEARTBEAT_S = 1.0  # while a check runs, a blank to the client this often (see `_Heartbeat`)
WATCH_EVERY = 60.0  # how often an idle daemon checks that its socket file is still its own
START_TIMEOUT = 120.0  # the imports and a warm-up check: seconds on a slow, busy machine
BOOT = "import sys; del sys.path[0]; from synclint.frontends.cli import main; main(prog_name='synclint')"

# A small check at start: it imports and warms what every request uses (the text report,
# the rules, the semantic model), so that the first real request is as fast as the rest.
WARM_UP = (
    "import torch\n\n"
    "def train(model, loader, opt):\n"
    "    for x, y in loader:\n"
    "        x = x.cuda()\n"
    "        loss = model(x).sum()\n"
    "        if loss > 0:\n"
    "            print(loss.item(), x[x > 0].sum())\n"
)


class DaemonError(Exception):
    """A one-line reason the daemon cannot start, stop or answer."""


class _Stop(BaseException):
    """SIGTERM: leave the loop (and a running check) and remove the socket. A BaseException,
    so that no `except Exception` in the check takes it for the check's own error."""


# ---------------------------------------------------------------- where
def _names(root: str, d: Optional[str] = None) -> Tuple[str, str, str]:
    """The daemon of `root`: its socket, its facts file (pid, root) and its log."""
    d = d or runtime_dir()
    stem = os.path.join(d, socket_name(root)[:-len(".sock")])
    return stem + ".sock", stem + ".json", stem + ".log"


def _private_runtime_dir() -> str:
    d = runtime_dir()
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise DaemonError(f"cannot create {d}: {e.strerror}") from None
    if not private_dir(d):
        raise DaemonError(f"{d} is not private to this user (it must be your own folder, mode 0700, "
                          f"not a link): remove it and start again")
    return d


def current_build() -> str:
    return build_id(fingerprint())


def probe(path: str, timeout: float = 5.0) -> Tuple[str, Optional[dict]]:
    """("live", its facts), ("busy", None) (connected, no answer: a long check is running),
    or ("dead", None) (no socket, or nobody listening on it)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(path)
    except OSError:
        s.close()
        return "dead", None
    s.close()
    answer = exchange(path, {"op": "status", "protocol": PROTOCOL}, timeout)
    if answer is None or answer.get("status") != "ok" or not isinstance(answer.get("info"), dict):
        return "busy", None
    return "live", answer["info"]


def _remove(*paths: str) -> None:
    for p in paths:
        try:
            os.unlink(p)
        except OSError:
            pass


# ---------------------------------------------------------------- one request
class _Sink(io.RawIOBase):
    """Where a request's stdout or stderr goes: appended to one log shared by both, in the
    order the writes were flushed, so that the client can replay them interleaved as a local
    run's would be on one terminal. `isatty` answers for the client's own stream."""

    def __init__(self, fd: int, log: List[list], tty: bool) -> None:
        super().__init__()
        self.fd, self.log, self.tty = fd, log, tty

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.tty

    def write(self, b) -> int:
        n = len(b)
        if n:
            if self.log and self.log[-1][0] == self.fd:
                self.log[-1][1] += bytes(b)
            else:
                self.log.append([self.fd, bytearray(b)])
        return n


def _stream(fd: int, log: List[list], spec: dict) -> io.TextIOWrapper:
    tty = spec.get("tty") is True
    return io.TextIOWrapper(io.BufferedWriter(_Sink(fd, log, tty)), encoding=str(spec.get("encoding") or "utf-8"),
                            errors=str(spec.get("errors") or "strict"),
                            line_buffering=tty or fd == 2)  # as Python sets up its own streams


def _sizes(streams: List[dict]) -> Callable:
    """os.get_terminal_size as the client's terminal answers it (click's help width and
    shutil.get_terminal_size ask it); other descriptors as before."""
    real = os.get_terminal_size
    try:
        own = {sys.__stdout__.fileno(): 1} if sys.__stdout__ is not None else {}
    except (OSError, ValueError, AttributeError):
        own = {}

    def get_terminal_size(fd: int = 1):
        fd = own.get(fd, fd)
        if fd not in (0, 1, 2):
            return real(fd)
        size = streams[fd].get("size")
        if not (isinstance(size, list) and len(size) == 2 and all(type(v) is int for v in size)):
            raise OSError(25, "Inappropriate ioctl for device")
        return os.terminal_size(size)

    return get_terminal_size


def run_check(req: dict, kept: dict, decoded) -> Tuple[int, List[Tuple[int, bytes]]]:
    """Run `synclint <argv>` as the client would have, here; (exit code, output chunks).
    `kept`: the daemon's store of whole-project tables, which every request shares;
    `decoded`: the cache's files it keeps decoded (`decoded.Kept`)."""
    import warnings

    from synclint.frontends import cli

    argv, cwd, env = req.get("argv"), req.get("cwd"), req.get("env")
    streams = req.get("streams")
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv) and isinstance(cwd, str)
            and isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
            and isinstance(streams, list) and len(streams) == 3 and all(isinstance(s, dict) for s in streams)):
        raise DaemonError("malformed request")
    log: List[list] = []
    out, err = _stream(1, log, streams[1]), _stream(2, log, streams[2])
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved = (sys.stdin, sys.stdout, sys.stderr, sys.argv, os.get_terminal_size, warnings.filters[:])
    umask = req.get("umask")
    old_umask = os.umask(umask) if type(umask) is int and 0 <= umask <= 0o777 else None
    cpus, old_cpus = req.get("cpus"), None
    if isinstance(cpus, list) and cpus and hasattr(os, "sched_setaffinity"):
        try:  # the client's CPUs: the workers a run starts are one per CPU it may use
            old_cpus = os.sched_getaffinity(0)
            os.sched_setaffinity(0, cpus)
        except (OSError, ValueError, TypeError):
            old_cpus = None
    try:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(), out, err
        sys.argv = [str(req.get("prog") or "synclint")] + argv
        os.get_terminal_size = _sizes(streams)
        try:
            cli.main.main(args=argv, prog_name=sys.argv[0], standalone_mode=True, obj=cli.Program(kept, decoded))
            code = 0
        except SystemExit as e:  # click's standalone mode ends every run so
            code = e.code
        if code is None:
            code = 0
        elif not isinstance(code, int):  # as the interpreter prints sys.exit("message")
            print(code, file=sys.stderr)
            code = 1
        for s in (out, err):
            s.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv, os.get_terminal_size, filters = saved
        warnings.filters[:] = filters  # and warnings shown once show again in the next run:
        getattr(warnings, "_filters_mutated", lambda: None)()
        warnings.onceregistry.clear()
        os.environ.clear()
        os.environ.update(saved_env)
        try:
            os.chdir(saved_cwd)
        except OSError:
            os.chdir("/")
        if old_umask is not None:
            os.umask(old_umask)
        if old_cpus is not None:
            try:
                os.sched_setaffinity(0, old_cpus)
            except OSError:
                pass
    return code & 0xFF, [(fd, bytes(b)) for fd, b in log]


def _end_children() -> None:
    """Worker processes a run left (its pool closes them; a run cut short may not)."""
    import multiprocessing as mp

    for p in mp.active_children():
        p.kill()
        p.join(5)


def _collect(full: bool = False) -> None:
    """Free this request's cyclic garbage now, not at some later request's expense, and
    freeze what survives: it is alive (the cache files kept decoded, `synclint.run.decoded`),
    and scanning it again at every request cost an edit's re-check a third of its time.
    What becomes garbage once frozen is freed by its reference count (the kept documents
    hold no cycles); `full` (unfreeze, collect all, freeze) lets the rest go now and then."""
    import gc

    if full:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


# ---------------------------------------------------------------- the server
class Server:
    def __init__(self, root: str, build: str, idle_timeout: float, echo: Callable[[str], None]) -> None:
        from synclint.run.decoded import Kept

        self.root, self.build, self.idle_timeout, self.echo = root, build, idle_timeout, echo
        self.decoded = Kept()  # the cache's files, decoded once while they stay the same
        self.requests = 0
        self.started = time.time()
        self.stopping = ""
        self.kept: dict = {}  # the whole-project tables the requests share (`project.Project`)

    def info(self) -> dict:
        return {"pid": os.getpid(), "root": self.root, "build": self.build, "started": self.started,
                "requests": self.requests, "idle_timeout": self.idle_timeout, "python": sys.executable}

    def handle(self, conn: socket.socket) -> Optional[str]:
        """Answer one connection; "check" when it ran one (what keeps the daemon alive)."""
        if not _same_user(conn):
            return
        conn.settimeout(READ_TIMEOUT)
        data = read_all(conn, MAX_REQUEST)
        if data is None:
            return
        try:
            req = json.loads(data)
        except ValueError:
            return _reply(conn, {"status": "error", "reason": "not JSON"})
        if not isinstance(req, dict):
            return _reply(conn, {"status": "error", "reason": "not a request"})
        op = req.get("op")
        if req.get("protocol") != PROTOCOL:
            if op == "check":  # a client of another synclint: this one is the stale one
                self.stopping = "a client of another protocol asked"
            return _reply(conn, {"status": "refused", "reason": "protocol"})
        if op == "status":
            return _reply(conn, {"status": "ok", "exit": 0, "info": self.info()})
        if op == "stop":
            self.stopping = "asked to stop"
            return _reply(conn, {"status": "ok", "exit": 0, "info": self.info()})
        if op != "check":
            return _reply(conn, {"status": "refused", "reason": f"unknown request {op!r}"})
        if req.get("build") != self.build:
            self.stopping = "a client of another build asked (synclint's code changed)"
            return _reply(conn, {"status": "refused", "reason": "another build"})
        cwd = req.get("cwd")
        if not isinstance(cwd, str) or not _under(os.path.realpath(cwd), self.root):
            return _reply(conn, {"status": "refused", "reason": "outside the root"})
        if not daemon_may_run(req.get("argv")):
            return _reply(conn, {"status": "refused", "reason": "only `synclint check` runs here"})
        try:
            heartbeat = _Heartbeat(conn)
        except OSError:  # the client gave up waiting (this daemon was stopped or busy): not run
            return None
        try:
            try:
                code, chunks = run_check(req, self.kept, self.decoded)
            finally:
                heartbeat.stop()
        except _Stop:
            raise
        except BaseException as e:  # noqa: BLE001 - the client runs it locally; the daemon goes on
            self.echo(f"synclint daemon: a request failed ({type(e).__name__}: {e}); its client ran it locally")
            _reply(conn, {"status": "error", "reason": f"{type(e).__name__}: {e}"})
            return "check"
        self.requests += 1
        _reply(conn, {"status": "ok", "exit": code}, chunks)
        return "check"

    def after_request(self) -> None:
        _end_children()
        _collect(full=self.requests % 256 == 0)


class _Heartbeat:
    """A blank to the client now and every HEARTBEAT_S until `stop()`, from a thread of its
    own (blanks before the answer's header are JSON whitespace): the client tells a daemon
    at work from a stopped or stuck one. The first goes out at once, so that a request
    whose client has given up (it waited here while this daemon was stopped or busy) fails
    before it is run."""

    def __init__(self, conn: socket.socket) -> None:
        import threading

        self.conn, self.done = conn, threading.Event()
        conn.sendall(b" ")
        self.thread = threading.Thread(target=self._beat, name="synclint-heartbeat", daemon=True)
        self.thread.start()

    def _beat(self) -> None:
        while not self.done.wait(HEARTBEAT_S):
            try:
                self.conn.sendall(b" ")
            except OSError:  # the client went away: the check's answer finds that out too
                return

    def stop(self) -> None:
        """No blank after this returns (the answer follows on the same connection)."""
        self.done.set()
        self.thread.join()


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as this user (the folder's mode already keeps others out; this is the
    second lock, where the platform tells)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    import struct

    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                              struct.calcsize("3i")))
    except OSError:
        return False
    return uid == os.getuid()


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _reply(conn: socket.socket, head: dict, chunks: List[Tuple[int, bytes]] = ()) -> None:
    head = dict(head, chunks=[[fd, len(b)] for fd, b in chunks])
    data = json.dumps(head).encode() + b"\n" + b"".join(b for _, b in chunks)
    try:
        conn.settimeout(READ_TIMEOUT)
        conn.sendall(data)
    except OSError:  # the client went away (Ctrl-C): nothing to do
        pass


def _preload(echo: Callable[[str], None]) -> None:
    """Import what a check uses and run one on a small file, so that requests find it all
    loaded (and forked workers inherit it)."""
    import importlib
    import shutil
    import tempfile

    from synclint.registry import all_rules

    all_rules()
    for name in ("synclint.run.pipeline", "synclint.run.runner", "synclint.engine", "synclint.project", "synclint.solver",
                 "synclint.report.output",
                 "synclint.report.render", "synclint.report.formats", "synclint.baseline", "synclint.report.savings", "synclint.run.cache",
                 "synclint.run.workers", "multiprocessing.connection", "synclint.semantic.facts"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    d = tempfile.mkdtemp(prefix="synclint-warm-")
    try:
        with open(os.path.join(d, "warm.py"), "w", encoding="utf-8") as fh:
            fh.write(WARM_UP)
        spec = {"tty": False, "size": None, "encoding": "utf-8", "errors": "strict"}
        for fmt in ("text", "json"):
            run_check({"argv": ["check", "--no-cache", "--output-format", fmt, "warm.py"], "cwd": d,
                       "env": dict(os.environ), "streams": [spec, spec, spec], "prog": "synclint"}, {})
    except Exception as e:  # noqa: BLE001 - only a warm-up: a real request will say what is wrong
        echo(f"synclint daemon: the warm-up check failed ({type(e).__name__}: {e})")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def serve(idle_timeout: float = DEFAULT_IDLE_TIMEOUT, echo: Callable[[str], None] = lambda m: None) -> int:
    """`synclint daemon run`: serve the current folder until stopped or idle."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
        raise DaemonError("the daemon needs Unix sockets (Linux or macOS)")
    root = os.path.realpath(os.getcwd())
    build = current_build()  # before the imports it vouches for: an edit meanwhile makes it refuse, not lie
    d = _private_runtime_dir()
    path, facts, log = _names(root, d)
    if len(os.fsencode(path)) > 100:
        raise DaemonError(f"the socket path {path} is too long for a Unix socket: set TMPDIR to a shorter folder")
    state, info = probe(path)
    if state != "dead":
        pid = f" (pid {info['pid']})" if info else ""
        raise DaemonError(f"a synclint daemon already serves {root}{pid}: `synclint daemon stop` first")
    os.chdir(root)
    _preload(echo)
    from synclint.run.workers import collect_less

    collect_less()
    server = Server(root, build, idle_timeout, echo)
    previous = signal.signal(signal.SIGTERM, _on_term)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = os.path.join(d, f".{os.getpid()}.tmp")
    ino = None
    try:
        _remove(tmp)
        listener.bind(tmp)
        os.chmod(tmp, 0o600)
        listener.listen(16)
        os.replace(tmp, path)  # in place only once it listens: a client never meets a half-made socket
        ino = os.stat(path).st_ino
        with open(facts, "w", encoding="utf-8") as fh:
            json.dump({"pid": os.getpid(), "root": root}, fh)
        echo(f"synclint daemon: serving {root} on {path} (pid {os.getpid()}, "
             f"stops after {idle_timeout:g} s idle)")
        why = _loop(server, listener, path, ino)
        echo(f"synclint daemon: stopped ({why})")
    except _Stop:
        echo("synclint daemon: stopped (SIGTERM)")
    except KeyboardInterrupt:
        echo("synclint daemon: stopped (interrupted)")
    finally:
        if ino is not None:  # before the socket closes: a `start` that follows may open a new log
            _remove(log)
        listener.close()
        signal.signal(signal.SIGTERM, previous)
        _remove(tmp)
        if ino is not None and _inode(path) == ino:  # a newer daemon's socket is not ours to remove
            _remove(path, facts)
        _end_children()
    return 0


def _on_term(signum, frame):
    raise _Stop


def _inode(path: str) -> Optional[int]:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _loop(server: Server, listener: socket.socket, path: str, ino: int) -> str:
    """Answer requests until stopped, idle for idle_timeout, or the socket file is gone or
    replaced (a newer daemon for the same root, or a cleaned /tmp); why it ended."""
    last = time.monotonic()
    while True:
        if server.stopping:
            return server.stopping
        left = server.idle_timeout - (time.monotonic() - last)
        if left <= 0:
            return f"idle for {server.idle_timeout:g} s"
        if _inode(path) != ino:
            return "its socket file was removed or replaced"
        listener.settimeout(min(left, WATCH_EVERY))
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        with conn:
            try:
                op = server.handle(conn)
            except OSError:  # a client that sent nothing for READ_TIMEOUT, or went away
                op = None
            except Exception as e:  # noqa: BLE001 - one bad connection must not end the daemon
                server.echo(f"synclint daemon: a connection failed ({type(e).__name__}: {e})")
                op = None
        if op == "check":  # `status` polls do not keep an unused daemon alive
            server.after_request()
            last = time.monotonic()


# ---------------------------------------------------------------- the commands' work
def start(idle_timeout: float, echo: Callable[[str], None]) -> int:
    """`synclint daemon start`: launch `synclint daemon run` in the background for the current
    folder and return once it answers."""
    import subprocess

    if not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
        raise DaemonError("the daemon needs Unix sockets (Linux or macOS)")
    root = os.path.realpath(os.getcwd())
    d = _private_runtime_dir()
    path, facts, log = _names(root, d)
    state, info = probe(path)
    if state == "busy" or (state == "live" and info.get("build") == current_build()):
        pid = info["pid"] if info else _facts_pid(facts)
        echo(f"synclint daemon already running for {root} (pid {pid}).")
        return 0
    if state == "live" and not _stop_at(path, facts, info):  # another build: replace it
        raise DaemonError(f"the daemon of another build for {root} did not stop (pid {info.get('pid')})")
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-c", BOOT, "daemon", "run", "--idle-timeout", repr(idle_timeout)],
                                cwd=root, stdin=subprocess.DEVNULL, stdout=fh, stderr=fh, start_new_session=True,
                                close_fds=True)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        code = proc.poll()
        if code is not None:
            raise DaemonError(f"the daemon did not start: {_last_line(log) or f'exit code {code}'}")
        state, info = probe(path, 1.0)
        if state == "live" and info.get("pid") == proc.pid:
            break
        if time.monotonic() > deadline:
            proc.terminate()
            raise DaemonError(f"the daemon did not answer within {START_TIMEOUT:g} s (its log: {log})")
        time.sleep(0.05)
    proc.returncode = 0  # it lives on by design: no "still running" warning when this process ends
    echo(f"synclint daemon started for {root} (pid {proc.pid}); `synclint check` under this folder now "
         f"runs in it. It stops after {_duration(idle_timeout)} without a check, or with "
         f"`synclint daemon stop`.")
    return 0


def _last_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = [ln.strip() for ln in fh if ln.strip()]
    except OSError:
        return ""
    return lines[-1].removeprefix("synclint: error: ") if lines else ""


def _duration(s: float) -> str:
    if s >= 120 and s % 60 == 0:
        return f"{s / 60:g} min"
    return f"{s:g} s"


def _stop_at(path: str, facts: str, info: Optional[dict], wait: float = 10.0) -> bool:
    """Ask the daemon at `path` to stop (SIGTERM to its pid when it does not answer: busy);
    whether it is gone."""
    answer = exchange(path, {"op": "stop", "protocol": PROTOCOL}, 5.0)
    if answer is None or answer.get("status") != "ok":  # (busy, or stopped: SIGTERM waits for SIGCONT)
        pid = (info or {}).get("pid") or _facts_pid(facts)
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
    deadline = time.monotonic() + wait
    while os.path.lexists(path) and time.monotonic() < deadline:
        if probe(path, 1.0)[0] == "dead":
            break
        time.sleep(0.05)
    gone = probe(path, 1.0)[0] == "dead"
    if gone:
        _remove(path, facts)
    return gone


def _facts_pid(facts: str) -> Optional[int]:
    try:
        with open(facts, encoding="utf-8") as fh:
            pid = json.load(fh).get("pid")
    except (OSError, ValueError, AttributeError):
        return None
    return pid if type(pid) is int and pid > 0 else None


def _nearest() -> Optional[Tuple[str, str, str]]:
    """(root, socket, facts file) of the daemon the client here would use."""
    found = find_daemons()
    if not found:
        return None
    root, path = found[0]
    return root, path, _names(root)[1]


def _nearest_probed():
    """`_nearest()` and what its socket answers: (root, socket, facts, state, info); a dead
    daemon's socket and facts are removed."""
    near = _nearest()
    if near is None:
        return None
    root, path, facts = near
    state, info = probe(path)
    if state == "dead":
        _remove(path, facts)
    return root, path, facts, state, info


def stop(echo: Callable[[str], None]) -> int:
    """`synclint daemon stop`: stop the daemon serving this folder (its root is here or above)."""
    near = _nearest_probed()
    if near is None:
        echo(f"No synclint daemon serves {os.getcwd()}.")
        return 0
    root, path, facts, state, info = near
    if state == "dead":
        echo(f"The synclint daemon for {root} was not running; removed its socket.")
        return 0
    if not _stop_at(path, facts, info):
        raise DaemonError(f"the daemon for {root} did not stop (pid {(info or {}).get('pid') or _facts_pid(facts)})")
    echo(f"synclint daemon for {root} stopped.")
    return 0


def status(echo: Callable[[str], None]) -> int:
    """`synclint daemon status`: 0 when a daemon serves this folder, 1 when none does."""
    near = _nearest_probed()
    if near is None:
        echo(f"No synclint daemon serves {os.getcwd()}. Start one with `synclint daemon start`.")
        return 1
    root, path, facts, state, info = near
    if state == "dead":
        echo(f"No synclint daemon serves {os.getcwd()} (the one for {root} had died; removed its socket).")
        return 1
    if state == "busy":
        echo(f"synclint daemon for {root}: running a check (pid {_facts_pid(facts)}); socket {path}.")
        return 0
    up = time.time() - float(info.get("started") or time.time())
    same = info.get("build") == current_build()
    echo(f"synclint daemon for {root}: running (pid {info.get('pid')}, up {_duration(round(up))}, "
         f"{info.get('requests')} checks answered, stops after {_duration(info.get('idle_timeout') or 0)} idle); "
         f"socket {path}.")
    if not same:
        echo("It runs another build of synclint than this one: it will refuse the next check and stop "
             "(`synclint daemon start` replaces it now).")
    return 0


# ---------------------------------------------------------------- the `synclint daemon` commands


@click.group()
def daemon():
    """Keep synclint loaded in a background process, so checks skip its start-up.

    \b
    Every `synclint check` pays for importing LibCST and the rules (about
    half a second on a small machine) before it reads a file. A
    daemon has done that once: `synclint check` in its folder (or below)
    hands the run to it and prints its answer. For pre-commit hooks,
    scripts and editors that run `synclint check` on save (with an LSP
    client, `synclint lsp` is the better fit).

    \b
    The output and exit code are exactly those of a local run: the daemon
    keeps no findings between runs (the .synclint_cache/ works as usual,
    --no-cache too), runs each check afresh in your folder with your
    arguments and environment, and refuses a client whose synclint code
    differs from its own (then stops; the check runs locally). --fix,
    --diff, --add-noqa and stdin (`-`) always run locally.

    \b
      synclint daemon start     in the project's root, once per session
      synclint daemon status    is one running for this folder?
      synclint daemon stop      stop it (it also stops after 30 min idle)

    Set SYNCLINT_NO_DAEMON=1 to run a check locally although a daemon runs.
    """


def _daemon_call(fn) -> None:
    from synclint.report.output import fail

    try:
        code = fn()
    except DaemonError as e:
        raise fail(str(e))
    raise click.exceptions.Exit(code)


_IDLE_HELP = "Stop after this many seconds without a check."


@daemon.command("start")
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=1800, show_default=True,
              metavar="SECONDS", help=_IDLE_HELP)
def daemon_start(idle_timeout):
    """Start a daemon for the current folder (the project's root) in the background.

    \b
    Returns once it answers (a second or two: it imports LibCST and the
    rules and runs a small check first). Then `synclint check` in this
    folder or below runs in it, with the same output and exit code as
    without it. One daemon per user and folder; starting it again is a
    no-op, or replaces one of another synclint build.
    Stop it with `synclint daemon stop`; it stops by itself after
    --idle-timeout seconds without a check.
    """
    _daemon_call(lambda: start(idle_timeout, lambda m: click.echo(m, err=True)))


@daemon.command("stop")
def daemon_stop():
    """Stop the daemon serving the current folder (started here or in a folder above).

    Exit 0 also when none was running. A check it is running is cut short
    (its client then runs the check locally).
    """
    _daemon_call(lambda: stop(lambda m: click.echo(m, err=True)))


@daemon.command("status")
def daemon_status():
    """Say whether a daemon serves the current folder: its root, pid, uptime and the
    number of checks it answered. Exit 0 if one runs, 1 if none does."""
    _daemon_call(lambda: status(click.echo))


@daemon.command("run")
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=1800, show_default=True,
              metavar="SECONDS", help=_IDLE_HELP)
def daemon_run(idle_timeout):
    """Run the daemon in the foreground (what `start` launches; for tests and debugging).

    \b
    Serves the current folder until Ctrl-C, SIGTERM, `synclint daemon stop`,
    or --idle-timeout seconds without a check. Logs one line when it starts
    and stops, and one per failed request, on stderr.
    """
    _daemon_call(lambda: serve(idle_timeout, lambda m: click.echo(m, err=True)))
