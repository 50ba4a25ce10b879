"""`synclint daemon`: a pre-loaded interpreter whose answers are a local run's, byte for byte.

One daemon serves the module's project (started once); the tests that stop or kill a daemon
start their own. Every "through the daemon" test also checks that the daemon answered (its
count of checks grew), so that a silent local fallback cannot pass for it."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"),
                                reason="the daemon needs Unix sockets")

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "SYN101.py"
CLEAN = "import torch\nx = torch.ones(3)\nprint(x.shape)\n"
# The console script, as pip writes it: `prog` is "synclint" both ways
CLIENT = "import sys\nfrom synclint.frontends.client import main\nsys.exit(main())\n"


class Env:
    def __init__(self, rundir: Path, bin_dir: Path) -> None:
        self.rundir = rundir
        self.client = bin_dir / "synclint"
        self.client.write_text(CLIENT)
        self.env = {k: v for k, v in os.environ.items() if k != "SYNCLINT_NO_DAEMON"}
        self.env["TMPDIR"] = str(rundir)  # the sockets' folder: private to these tests
        self.builds = {}  # root -> synclint's build when its daemon started

    def run(self, args, cwd, local=False, env=None, timeout=120):
        e = dict(self.env, **(env or {}))
        if local:
            e["SYNCLINT_NO_DAEMON"] = "1"
        p = subprocess.run([sys.executable, str(self.client), *args], cwd=cwd, env=e, capture_output=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def daemon(self, cwd, *args, timeout=180):
        return subprocess.run([sys.executable, "-m", "synclint", "daemon", *args], cwd=cwd, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def socket_path(self, root) -> str:
        from synclint.frontends.client import socket_name

        return os.path.join(self.rundir, f"synclint-{os.getuid()}", socket_name(os.path.realpath(root)))

    def info(self, root):
        from synclint.frontends.daemon import probe

        state, info = probe(self.socket_path(root))
        return info if state == "live" else None

    def answered(self, root) -> int:
        info = self.info(root)
        if info is None:
            self.skip_if_rebuilt(root)
        assert info is not None, "the daemon is not running"
        return info["requests"]

    def skip_if_rebuilt(self, root):
        """synclint's own code changed since the daemon started (someone edits the checkout
        while the suite runs): the daemon refused, as it must; start a new one, skip the test."""
        from synclint.build import fingerprint

        if fingerprint() != self.builds.get(str(root)):
            self.start(root, "--idle-timeout", "600")
            pytest.skip("synclint's code changed while the test ran: its daemon refused and stopped")

    def start(self, root, *args):
        from synclint.build import fingerprint

        self.builds[str(root)] = fingerprint()
        r = self.daemon(root, "start", *args)
        assert r.returncode == 0, r.stderr
        info = self.info(root)
        assert info is not None
        return info["pid"]


def _project(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "pyproject.toml").write_text("[tool.synclint]\n")
    shutil.copyfile(FIXTURE, path / "train.py")
    (path / "clean.py").write_text(CLEAN)
    return path


def _gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a child of ours would linger as a zombie: `start` detaches it, so it is not
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    rundir = Path(tempfile.mkdtemp(prefix="sld", dir="/tmp"))  # short: socket paths end at ~100 bytes
    e = Env(rundir, tmp_path_factory.mktemp("bin"))
    yield e
    shutil.rmtree(rundir, ignore_errors=True)


@pytest.fixture(scope="module")
def served(env, tmp_path_factory):
    """The module's project, with a daemon serving it."""
    proj = _project(tmp_path_factory.mktemp("proj"))
    pid = env.start(proj, "--idle-timeout", "600")
    yield proj
    env.daemon(proj, "stop")
    if not _gone(pid, 5):
        _kill(pid)


@pytest.fixture
def own_daemon(env, tmp_path):
    """A project with a daemon of its own (for the tests that stop or kill it)."""
    proj = _project(tmp_path / "own")
    pid = env.start(proj)
    yield proj, pid
    env.daemon(proj, "stop")  # (or the one a change of synclint's code made it start instead)
    if not _gone(pid, 5):
        _kill(pid)


def _same_as_local(env, args, cwd, root=None):
    """Run `args` through the daemon and locally: equal exit codes and bytes; the result."""
    before = env.answered(root or cwd)
    got = env.run(args, cwd)
    if env.info(root or cwd) is None:
        env.skip_if_rebuilt(root or cwd)
    assert env.answered(root or cwd) == before + 1, "the daemon did not answer"
    want = env.run(args, cwd, local=True)
    assert got == want
    return got


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
@pytest.mark.parametrize("target,code", [("train.py", 1), ("clean.py", 0)])
def test_output_and_exit_code_equal_a_local_run(env, served, fmt, target, code):
    rc, out, err = _same_as_local(env, ["check", "--output-format", fmt, target], served)
    assert rc == code
    if fmt == "json":
        assert bool(json.loads(out)) == (code == 1)
    elif code == 1:
        assert b"train.py" in out


def test_usage_and_input_errors_exit_2_as_locally(env, served):
    rc, _, err = _same_as_local(env, ["check", "--select", "NO_SUCH_RULE", "."], served)
    assert rc == 2 and b"NO_SUCH_RULE" in err
    rc, _, err = _same_as_local(env, ["check", "--no-such-option"], served)
    assert rc == 2 and b"Usage: synclint check" in err
    rc, _, err = _same_as_local(env, ["check", "missing.py", "train.py"], served)
    assert rc == 2 and b"missing.py" in err


def test_colours_follow_the_clients_terminal(env, served):
    pty = pytest.importorskip("pty")
    import fcntl
    import struct
    import termios

    def on_tty(local):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 97, 0, 0))
        e = dict(env.env, SYNCLINT_NO_DAEMON="1") if local else env.env
        p = subprocess.Popen([sys.executable, str(env.client), "check", "train.py", "nothere.py"], cwd=served,
                             env=e, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        out = b""
        while True:
            try:
                b = os.read(master, 1 << 16)
            except OSError:  # the child closed the terminal
                break
            if not b:
                break
            out += b
        os.close(master)
        return p.wait(timeout=120), out

    before = env.answered(served)
    got = on_tty(False)
    assert env.answered(served) == before + 1
    assert got == on_tty(True)
    assert got[0] == 2 and b"\x1b[" in got[1]  # coloured, as on a terminal; stderr and stdout in order


def test_an_edit_between_requests_changes_the_answer(env, served):
    f = served / "edited.py"
    f.write_text("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    print(x.sum().item())\n")
    rc, out, _ = _same_as_local(env, ["check", "edited.py"], served)
    assert rc == 1 and b"SYN101" in out
    f.write_text(CLEAN + "# no finding any more\n")
    rc, out, _ = _same_as_local(env, ["check", "edited.py"], served)
    assert rc == 0 and b"SYN101" not in out
    f.write_text("import torch\nx = torch.ones(3, device='cuda')\nfor _ in range(3):\n    y = x.sum().item()\n")
    rc, out, _ = _same_as_local(env, ["check", "edited.py", "--output-format", "json"], served)
    assert rc == 1 and json.loads(out)[0]["location"]["row"] == 4
    # The project's config is read afresh too.
    sub = served / "configured"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[tool.synclint]\nignore = [\"SYN101\"]\n")
    shutil.copyfile(FIXTURE, sub / "t.py")
    rc, out, _ = _same_as_local(env, ["check", "t.py"], sub, root=served)
    assert rc == 0
    (sub / "pyproject.toml").write_text("[tool.synclint]\ndocs-url = \"https://example.com/rules\"\n")
    rc, out, _ = _same_as_local(env, ["check", "t.py", "--output-format", "json"], sub, root=served)
    assert rc == 1 and json.loads(out)[0]["url"].startswith("https://example.com/rules/")
    (sub / "pyproject.toml").write_text("[tool.synclint]\n")  # the link goes back to the default
    rc, out, _ = _same_as_local(env, ["check", "t.py", "--output-format", "json"], sub, root=served)
    assert rc == 1 and "example.com" not in json.loads(out)[0]["url"]


def test_no_cache_through_the_daemon(env, served):
    sub = served / "nocache"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[tool.synclint]\n")  # its own root: its cache would be here
    shutil.copyfile(FIXTURE, sub / "t.py")
    rc, out, _ = _same_as_local(env, ["check", "--no-cache", "t.py"], sub, root=served)
    assert rc == 1 and b"SYN101" in out
    assert not (sub / ".synclint_cache").exists()
    _same_as_local(env, ["check", "t.py"], sub, root=served)
    assert (sub / ".synclint_cache").is_dir()


def test_worker_processes_end_with_the_request(env, served):
    many = served / "many"
    many.mkdir()
    for i in range(10):  # above the pool's threshold: the check forks workers
        shutil.copyfile(FIXTURE, many / f"m{i}.py")
    rc, out, _ = _same_as_local(env, ["check", "-j", "2", "--no-cache", "many"], served)
    assert rc == 1
    _same_as_local(env, ["check", "-j", "2", "many"], served)
    pid = env.info(served)["pid"]
    children = [p for p in os.listdir("/proc") if p.isdigit() and _ppid(p) == pid] if os.path.isdir("/proc") else []
    assert children == []


def _ppid(pid: str):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_a_client_below_the_root_uses_it_and_one_outside_does_not(env, served, tmp_path):
    sub = served / "pkg"
    sub.mkdir(exist_ok=True)
    shutil.copyfile(FIXTURE, sub / "a.py")
    _same_as_local(env, ["check", "a.py"], sub, root=served)
    outside = _project(tmp_path / "elsewhere")
    before = env.answered(served)
    got = env.run(["check", "train.py"], outside)
    assert env.answered(served) == before
    assert got == env.run(["check", "train.py"], outside, local=True) and got[0] == 1


def test_a_request_that_fails_leaves_the_daemon_serving(env, served):
    from synclint.build import build_id, fingerprint
    from synclint.frontends.client import PROTOCOL, exchange

    req = {"op": "check", "protocol": PROTOCOL, "build": build_id(fingerprint()), "argv": ["check", "train.py"],
           "prog": "synclint", "cwd": str(served), "env": dict(env.env),
           "streams": [{"encoding": "no-such-codec"}] * 3}
    answer = exchange(env.socket_path(served), req, 30)
    assert answer is not None and answer["status"] == "error"
    assert exchange(env.socket_path(served), {"op": "nonsense", "protocol": PROTOCOL}, 30)["status"] == "refused"
    _same_as_local(env, ["check", "train.py"], served)


def test_only_its_user_can_reach_it(env, served):
    d = os.path.dirname(env.socket_path(served))
    assert os.stat(d).st_mode & 0o777 == 0o700
    os.chmod(d, 0o755)  # a folder others may enter: the client does not trust it
    try:
        before = env.answered(served)
        got = env.run(["check", "train.py"], served)
        assert env.answered(served) == before
        assert got == env.run(["check", "train.py"], served, local=True)
    finally:
        os.chmod(d, 0o700)


def test_fix_diff_and_stdin_run_locally(env, served):
    from synclint.frontends.client import daemon_may_run

    assert daemon_may_run(["check", "src", "--output-format", "json", "-j", "2", "--no-cache"])
    for argv in (["check", "--fix"], ["check", "--diff", "."], ["check", "--add-noqa"], ["check", "-"],
                 ["check", "--stdin-filename=a.py", "-"], ["check", "-h"], ["check", "--help"], ["check", "-vh"],
                 ["rules"], ["daemon", "status"], []):
        assert not daemon_may_run(argv), argv
    before = env.answered(served)
    rc, out, _ = env.run(["check", "--diff", "train.py"], served)
    assert env.answered(served) == before and rc in (0, 1)


def test_without_a_daemon_the_client_imports_nothing_heavy(tmp_path):
    probe = ("import sys\nfrom synclint.frontends.client import via_daemon\n"
             "print(via_daemon(['check', '.']), sorted(m for m in ('click', 'rich', 'libcst', 'json', 'socket', "
             "'hashlib', 'synclint.frontends.cli') if m in sys.modules))\n")
    e = dict(os.environ, TMPDIR=str(tmp_path))
    e.pop("SYNCLINT_NO_DAEMON", None)
    p = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=e, capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "None []", p.stderr


def test_a_daemon_of_another_build_is_refused_and_stops(env, own_daemon):
    proj, pid = own_daemon
    other = ("import sys\nimport synclint.frontends.client as c\nc.fingerprint = lambda: 'another build'\n"
             "sys.argv[0] = 'synclint'\nsys.exit(c.main())\n")
    p = subprocess.run([sys.executable, "-c", other, "check", "train.py"], cwd=proj, env=env.env,
                       capture_output=True, timeout=120)
    local = env.run(["check", "train.py"], proj, local=True)
    assert (p.returncode, p.stdout, p.stderr) == local
    assert _gone(pid)
    assert not os.path.exists(env.socket_path(proj))


def test_a_killed_daemon_falls_back_to_a_local_run(env, own_daemon):
    proj, pid = own_daemon
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid)
    assert os.path.exists(env.socket_path(proj))  # left behind
    for args in (["check", "train.py"], ["check", "--output-format", "json", "."]):
        got = env.run(args, proj)
        assert got == env.run(args, proj, local=True)
        assert b"Traceback" not in got[2]
    r = env.daemon(proj, "status")
    assert r.returncode == 1 and "had died" in r.stdout
    assert not os.path.exists(env.socket_path(proj))


def test_a_stopped_daemon_costs_the_timeout_then_a_local_run(env, own_daemon):
    """A daemon stopped (Ctrl-Z, SIGSTOP) still accepts connections: the client hung until
    killed. It gives up after SYNCLINT_DAEMON_TIMEOUT seconds of silence with one line, and
    the daemon, continued, drops the request its client gave up and serves the next."""
    proj, pid = own_daemon
    before = env.answered(proj)
    os.kill(pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        rc, out, err = env.run(["check", "train.py"], proj, env={"SYNCLINT_DAEMON_TIMEOUT": "1"}, timeout=30)
        took = time.monotonic() - start
    finally:
        os.kill(pid, signal.SIGCONT)
    local = env.run(["check", "train.py"], proj, local=True)
    assert (rc, out) == local[:2] and rc == 1
    said = (f"synclint: the daemon serving {os.path.realpath(proj)} sent nothing for 1 s (stopped, stuck, "
            f"or busy with another check); checking here\n").encode()
    assert err == said + local[2]
    assert took < 20  # the 1 s wait and a local run
    assert env.answered(proj) == before  # the request given up was not run
    _same_as_local(env, ["check", "train.py"], proj)


def test_a_daemon_that_never_answers_is_given_up(env, tmp_path):
    """A socket that accepts and never answers (a wedged daemon) costs the timeout."""
    proj = _project(tmp_path / "wedged")
    path = env.socket_path(proj)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(4)
        got = env.run(["check", "train.py"], proj, env={"SYNCLINT_DAEMON_TIMEOUT": "0.5"}, timeout=30)
    finally:
        listener.close()
        os.unlink(path)
    local = env.run(["check", "train.py"], proj, local=True)
    assert got[:2] == local[:2] and got[2].endswith(local[2]) and b"sent nothing for 0.5 s" in got[2]


def test_stop_removes_the_socket(env, own_daemon):
    proj, pid = own_daemon
    r = env.daemon(proj, "status")
    assert r.returncode == 0 and "running" in r.stdout
    r = env.daemon(proj, "stop")
    assert r.returncode == 0 and "stopped" in r.stderr
    assert _gone(pid)
    assert not os.path.exists(env.socket_path(proj))
    assert env.daemon(proj, "status").returncode == 1
    assert env.daemon(proj, "stop").returncode == 0  # nothing to stop: still fine


def test_start_twice_keeps_one(env, own_daemon):
    proj, pid = own_daemon
    r = env.daemon(proj, "start")
    assert r.returncode == 0 and "already running" in r.stderr
    assert env.info(proj)["pid"] == pid


def test_idle_timeout_ends_the_daemon(env, tmp_path):
    proj = _project(tmp_path / "idle")
    p = subprocess.Popen([sys.executable, "-m", "synclint", "daemon", "run", "--idle-timeout", "1"], cwd=proj,
                         env=env.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert "idle for 1 s" in err and "Traceback" not in err
    assert not os.path.exists(env.socket_path(proj))


def test_help_teaches(env, tmp_path):
    r = subprocess.run([sys.executable, "-m", "synclint", "daemon", "--help"], capture_output=True, text=True,
                       env=env.env, cwd=tmp_path, timeout=60)
    assert r.returncode == 0
    for words in ("pre-commit", "exactly", "synclint daemon stop", "--no-cache"):
        assert words in r.stdout, words
    for sub in ("start", "stop", "status", "run"):
        r = subprocess.run([sys.executable, "-m", "synclint", "daemon", sub, "--help"], capture_output=True,
                           text=True, env=env.env, cwd=tmp_path, timeout=60)
        assert r.returncode == 0 and len(r.stdout.splitlines()) > 4, sub
