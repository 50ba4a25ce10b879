"""Time synclint versions side by side on the Lightning tree of `bench_speed.py`: interleaved
rounds of each row, CPU time and wall time, median and range.

On a shared machine wall time follows the load, and the versions of one table meet the
same load only when their runs take turns: round 1 runs A, B, C, round 2 again, and so
on. The CPU time (user + sys of the command and its children; through a daemon, the
daemon's own, read from /proc around each request) moves much less with the load.

Each version (a git ref, or `worktree` for the working tree's files) is copied out (`git
archive`), with `rules/` where the package imports it (`synclint/rules`), and run on
PYTHONPATH through a console script of its own (the daemon rows need the client); each
keeps its own cache, and the daemon rows use a copy of the tree per version (a daemon
serves one build).

    python scripts/bench_versions.py 8837462 HEAD worktree --rows warm,daemon-edit --rounds 8
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

from bench_speed import ONE_FILE, fetch_tree

ROOT = Path(__file__).resolve().parent.parent
ROWS = ("cold", "warm", "edit", "daemon-edit")


def snapshot(ref: str, dest: Path, python: str) -> Path:
    """`ref`'s package (or the working tree's, `worktree`) under `dest`, with its console script."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if ref == "worktree":
        names = subprocess.run(["git", "ls-files", "-z", "synclint", "rules"], cwd=ROOT, check=True,
                               capture_output=True).stdout.split(b"\0")
        for n in filter(None, names):
            src = ROOT / os.fsdecode(n)
            if src.is_file():
                (dest / os.fsdecode(n)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest / os.fsdecode(n))
    else:
        archive = subprocess.run(["git", "archive", ref, "synclint", "rules"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    if (dest / "rules").is_dir() and not (dest / "synclint" / "rules").exists():
        shutil.copytree(dest / "rules", dest / "synclint" / "rules")
    script = dest / "bin" / "synclint"
    script.parent.mkdir()
    script.write_text(f"#!{python}\nimport sys\nfrom synclint.frontends.client import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return dest


def env_for(snap: Path, daemon: bool = False) -> Dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(snap), NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (each version's bytecode is written once, in the warm-up)
    if daemon:
        env.pop("SYNCLINT_NO_DAEMON", None)
    else:
        env["SYNCLINT_NO_DAEMON"] = "1"
    return env


def timed(cmd: List[str], cwd: Path, env: Dict[str, str]):
    """(wall seconds, CPU seconds of the command and its children)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def process_cpu(pid: int) -> float:
    """CPU seconds of process `pid` and its waited-for children."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")


def append_line(path: Path) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"x_{time.time_ns()} = 1\n")


def run(a) -> str:
    work = Path(a.work_dir)
    tree = fetch_tree(work, a.lightning_version)
    pkgs = [p.name for p in sorted(tree.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    snaps = {ref: snapshot(ref, work / "versions" / re.sub(r"[^\w.-]", "_", ref), a.python) for ref in a.refs}
    rows = [r for r in a.rows.split(",") if r]
    edited = tree / ONE_FILE
    original = edited.read_bytes()
    out: Dict[str, Dict[str, List[tuple]]] = {row: {ref: [] for ref in a.refs} for row in rows}
    loads = [os.getloadavg()]
    check = ["check", "--exit-zero", *pkgs]
    try:
        for row in rows:
            if row == "daemon-edit":
                _daemon_edit(a, work, tree, pkgs, snaps, out[row])
                continue
            args = ["check", "--no-cache", "--exit-zero", *pkgs] if row == "cold" else check
            for ref, snap in snaps.items():  # warm-up: bytecode, a filled cache
                subprocess.run([str(snap / "bin" / "synclint"), *check], cwd=tree, env=env_for(snap),
                               stdout=subprocess.DEVNULL)
            for _ in range(a.rounds):
                for ref, snap in snaps.items():
                    if row == "edit":
                        append_line(edited)
                    out[row][ref].append(timed([str(snap / "bin" / "synclint"), *args], tree, env_for(snap)))
            edited.write_bytes(original)
    finally:
        edited.write_bytes(original)
    loads.append(os.getloadavg())
    return _table(a.refs, out, loads)


def _daemon_edit(a, work: Path, tree: Path, pkgs: List[str], snaps: Dict[str, Path], out) -> None:
    """Through `synclint daemon`, one per version in a copy of the tree: (wall, the client's
    CPU, the daemon's CPU) per edit."""
    check = ["check", "--exit-zero", *pkgs]
    copies, pids = {}, {}
    try:
        for ref, snap in snaps.items():
            copy = copies[ref] = work / "versions" / (snap.name + "-tree")
            if not copy.exists():
                shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".synclint_cache"))
            cli, env = [str(snap / "bin" / "synclint")], env_for(snap, daemon=True)
            subprocess.run(cli + ["daemon", "start", "--idle-timeout", "3600"], cwd=copy, env=env, check=True,
                           capture_output=True)
            for _ in range(2):
                subprocess.run(cli + check, cwd=copy, env=env, stdout=subprocess.DEVNULL)
            status = subprocess.run(cli + ["daemon", "status"], cwd=copy, env=env, capture_output=True, text=True)
            pids[ref] = int(re.search(r"pid (\d+)", status.stdout + status.stderr).group(1))
        for _ in range(a.rounds):
            for ref, snap in snaps.items():
                append_line(copies[ref] / ONE_FILE)
                time.sleep(0.3)  # (the daemon's collection after the last request is over)
                before = process_cpu(pids[ref])
                wall, client = timed([str(snap / "bin" / "synclint"), *check], copies[ref], env_for(snap, daemon=True))
                time.sleep(0.2)
                out[ref].append((wall, client, process_cpu(pids[ref]) - before))
    finally:
        for ref, snap in snaps.items():
            if ref in copies:
                subprocess.run([str(snap / "bin" / "synclint"), "daemon", "stop"], cwd=copies[ref],
                               env=env_for(snap, daemon=True), capture_output=True)
                shutil.copyfile(tree / ONE_FILE, copies[ref] / ONE_FILE)


def _cell(xs: List[float]) -> str:
    def t(x):
        return f"{x:.2f} s" if x >= 1 else f"{x * 1000:.0f} ms"

    return f"{t(statistics.median(xs))} ({t(min(xs))}-{t(max(xs))})"


def _table(refs: List[str], out, loads) -> str:
    lines = ["| row | what | " + " | ".join(refs) + " |", "|---|---|" + "---:|" * len(refs)]
    for row, by_ref in out.items():
        parts = ["wall", "CPU", "the daemon's CPU"] if row == "daemon-edit" else ["wall", "CPU"]
        for i, what in enumerate(parts):
            cells = [_cell([s[i] for s in by_ref[ref]]) if by_ref[ref] else "" for ref in refs]
            lines.append(f"| {row} | {what} | " + " | ".join(cells) + " |")
    n = max((len(v) for by_ref in out.values() for v in by_ref.values()), default=0)
    lines += ["", f"{n} interleaved rounds; load average before {loads[0][0]:.2f}, after {loads[-1][0]:.2f}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("refs", nargs="+", help="git refs, or `worktree` for the working tree's files")
    ap.add_argument("--rows", default="warm,daemon-edit", help=f"comma-separated, of {', '.join(ROWS)}")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--work-dir", default="/tmp/synclint-bench", help="bench_speed.py's (the tree is fetched there)")
    ap.add_argument("--lightning-version", default="2.6.6")
    ap.add_argument("--python", default=sys.executable, help="the interpreter the versions run on (with their dependencies)")
    a = ap.parse_args(argv)
    unknown = set(a.rows.split(",")) - set(ROWS)
    if unknown:
        ap.error(f"unknown rows: {', '.join(sorted(unknown))}")
    print(run(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
