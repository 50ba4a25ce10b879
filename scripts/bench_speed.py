#!/usr/bin/env python3
"""Measure how fast `synclint check` is, beside TorchFix 0.7 on the same files, and write
the table into docs/speed.md (issue 2, point 7).

    python scripts/bench_speed.py [--work-dir DIR] [--runs N] [--torchfix-runs N]
                                  [--torchfix PATH | --no-torchfix] [--cpus N] [--no-write]
                                  [--only ROWS]

What it does:
  1. Downloads (pip download --no-deps) the lightning, pytorch-lightning and lightning-fabric
     wheels of one release into WORK_DIR/wheels and unpacks their packages into WORK_DIR/tree:
     lightning/ (with lightning.pytorch and lightning.fabric), pytorch_lightning/ and
     lightning_fabric/ (the copy of lightning_fabric inside the pytorch-lightning wheel is
     the same code and is left out).
  2. Installs this checkout with pip (a wheel, as a user installs it, not the editable
     install of a development venv) into WORK_DIR/synvenv, unless --synclint names a command.
     Finds TorchFix 0.7.0 (--torchfix, or WORK_DIR/tfvenv) or installs it into its own venv
     there (`pip install torchfix==0.7.0`; its metadata asks for libcst<1.6, flake8, PyYAML,
     not for torch), so that neither tool's dependencies touch the other's.
  3. Times, with hyperfine when it is on PATH (otherwise a loop here, same statistics):
     cold `synclint check --no-cache` and `torchfix` on the whole tree, a second synclint run
     with nothing changed (the content-hash cache, on by default), and `synclint check` of one
     file, cold and warm, a re-check after editing one file, and cold runs over 25%, 50% and
     400% of the tree (files copied under WORK_DIR/scale) to show how cost grows with size;
     and, after the edit row, the warm, one-file and edit runs again with `synclint daemon`
     running in the tree (started before those rows, stopped after; every other row runs
     with SYNCLINT_NO_DAEMON=1, so that a daemon left running cannot answer it).
     Each timing is the median of N runs, with min-max.
  4. Prints a Markdown table with the machine (CPU, cores, load), Python, libcst, synclint and
     TorchFix versions and the date, and writes it into docs/speed.md between markers.

`--only warm,edit,daemon` times only those rows (keys: `python scripts/bench_speed.py
--help`) and prints their table without writing docs/speed.md.

Notes on what "cold" means here: no synclint cache, but the OS file cache is warm and
Python's bytecode caches exist (one unrecorded warm-up run comes first, and the script
clears PYTHONDONTWRITEBYTECODE for the tools it runs, as on a normal install).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "speed.md"
BEGIN, END = "<!-- bench_speed:begin -->", "<!-- bench_speed:end -->"
TORCHFIX_VERSION = "0.7.0"
PACKAGES = ("lightning", "pytorch-lightning", "lightning-fabric")
# Inside each wheel, the top-level packages kept (pytorch-lightning's wheel also carries a
# copy of lightning_fabric; the lightning-fabric wheel's own copy is used).
KEEP = {"lightning": ("lightning",), "pytorch_lightning": ("pytorch_lightning",),
        "lightning_fabric": ("lightning_fabric",)}
ONE_FILE = "lightning/pytorch/loops/training_epoch_loop.py"  # a training loop: what synclint is for
# The rows, by the key `--only` takes (in the table's order); "daemon" stands for the four daemon-* rows.
ROW_KEYS = ("cold", "torchfix", "fill", "warm", "one-cold", "one-warm", "mid-cold", "edit",
            "daemon-warm", "daemon-one-cold", "daemon-mid-cold", "daemon-edit", "bare", "python", "libcst", "scaling")
WITH_DAEMON = ", with `synclint daemon` running"


# The reference for a cold run: LibCST's parser over every file, in one process.
BARE_PARSE = (
    "import os, sys, libcst\n"
    "for root in sys.argv[1:]:\n"
    "    for d, _, fs in os.walk(root):\n"
    "        for f in fs:\n"
    "            if f.endswith('.py'):\n"
    "                libcst.parse_module(open(os.path.join(d, f), encoding='utf-8').read())\n"
)


def log(msg: str) -> None:
    print(f"[bench_speed] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- corpus and tools
def fetch_tree(work: Path, version: str) -> Path:
    wheels, tree = work / "wheels", work / "tree"
    stamp = tree / ".bench-version"
    if stamp.exists() and stamp.read_text().strip() == version:
        return tree
    wheels.mkdir(parents=True, exist_ok=True)
    want = [f"{p}=={version}" for p in PACKAGES]
    have = list(wheels.glob(f"*-{version}-*.whl"))
    if len(have) < len(PACKAGES):
        log(f"downloading {' '.join(want)}")
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary", ":all:", "-d", str(wheels), *want], check=True)
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    for whl in sorted(wheels.glob(f"*-{version}-*.whl")):
        dist = whl.name.split("-")[0]
        keep = KEEP.get(dist, ())
        with zipfile.ZipFile(whl) as z:
            for name in z.namelist():
                if name.split("/")[0] in keep and not name.endswith("/"):
                    z.extract(name, tree)
    stamp.write_text(version + "\n")
    return tree


def count_py(tree: Path) -> Dict[str, int]:
    files = lines = 0
    for p in tree.rglob("*.py"):
        files += 1
        with open(p, "rb") as fh:
            lines += sum(1 for _ in fh)
    return {"files": files, "lines": lines}


def median_file(tree: Path):
    """The median-size file (by lines) among those that mention torch: a typical module."""
    sized = []
    for p in sorted(tree.rglob("*.py")):
        text = p.read_bytes()
        if b"torch" in text:
            sized.append((text.count(b"\n"), p.relative_to(tree).as_posix()))
    sized.sort()
    lines, rel = sized[len(sized) // 2]
    return rel, lines


def scaled_trees(tree: Path, work: Path) -> List[tuple]:
    """(label, folder, its top-level folders) for 25% and 50% of the tree's files (every
    4th / every 2nd .py file by path, their folders kept, so imports still resolve) and for
    four copies of the tree side by side (copy0/..copy3/): how cold cost grows with size."""
    files = sorted(p.relative_to(tree) for p in tree.rglob("*.py"))
    base = work / "scale"
    out = []
    for label, step in (("25%", 4), ("50%", 2)):
        dest = base / label.rstrip("%")
        if not dest.exists():
            for rel in files[::step]:
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(tree / rel, dest / rel)
        out.append((label, dest, sorted(d.name for d in dest.iterdir() if d.is_dir())))
    four = base / "x4"
    if not four.exists():
        for i in range(4):
            for rel in files:
                (four / f"copy{i}" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(tree / rel, four / f"copy{i}" / rel)
    out.append(("400% (four copies)", four, [f"copy{i}" for i in range(4)]))
    return out


def find_torchfix(work: Path, given: Optional[str]) -> Path:
    if given:
        return Path(given)
    venv = work / "tfvenv"
    exe = venv / "bin" / "torchfix"
    if not exe.exists():
        log(f"installing torchfix=={TORCHFIX_VERSION} into {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        f"torchfix=={TORCHFIX_VERSION}"], check=True)
    return exe


def synclint_cmd(given: Optional[str], work: Path) -> List[str]:
    """The command timed: `given`, else synclint installed from this checkout as a user's
    `pip install` installs it (a wheel, not the editable install of a development venv,
    whose import hook costs every run about 20 ms), into WORK_DIR/synvenv, with the
    libcst, click, rich and pathspec versions of the running interpreter."""
    if given:
        return given.split()
    from importlib.metadata import version

    venv = work / "synvenv"
    py = venv / "bin" / "python"
    if not py.exists():
        log(f"making {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pins = [f"{d}=={version(d)}" for d in ("libcst", "click", "rich", "pathspec")]  # (the core dependencies)
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", *pins], check=True)
    # (again on every run: the checkout may have changed)
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(ROOT)],
                   check=True, cwd=work)
    return [str(venv / "bin" / "synclint")]


# ---------------------------------------------------------------- timing
_DAEMON_ROWS = [False]  # true while the daemon rows run: only they may use a daemon


def child_env() -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["NO_COLOR"] = "1"
    if _DAEMON_ROWS[0]:
        env.pop("SYNCLINT_NO_DAEMON", None)
    else:
        env["SYNCLINT_NO_DAEMON"] = "1"
    return env


def daemon_served(syn: List[str], tree: Path) -> Optional[int]:
    """How many checks the daemon serving `tree` has answered (None: none runs)."""
    r = subprocess.run(syn + ["daemon", "status"], cwd=tree, env=child_env(), capture_output=True, text=True)
    m = re.search(r"(\d+) checks answered", r.stdout)
    return int(m.group(1)) if r.returncode == 0 and m else None


def time_cmd(cmd: Sequence[str], cwd: Path, runs: int, warmup: int, prepare: Optional[str] = None) -> Dict:
    """Median/min/max wall seconds of `cmd` (exit status ignored: 1 means findings)."""
    if shutil.which("hyperfine"):
        with tempfile.TemporaryDirectory() as td:
            out = Path(td) / "hf.json"
            hf = ["hyperfine", "--style", "none", "--ignore-failure", "--runs", str(runs),
                  "--warmup", str(warmup), "--export-json", str(out)]
            if prepare:
                hf += ["--prepare", prepare]
            else:
                hf += ["-N"]
            hf.append(" ".join(_quote(c) for c in cmd))
            subprocess.run(hf, cwd=cwd, env=child_env(), check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            res = json.loads(out.read_text())["results"][0]
            times, cpu = res["times"], res["user"] + res["system"]
        tool = "hyperfine"
    else:
        import resource

        times, cpus = [], []
        for i in range(warmup + runs):
            if prepare:
                subprocess.run(prepare, shell=True, cwd=cwd, env=child_env())
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(cmd, cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if i >= warmup:
                times.append(time.perf_counter() - t)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        cpu = statistics.mean(cpus)
        tool = "python loop"
    return {"median": statistics.median(times), "min": min(times), "max": max(times),
            "runs": len(times), "cpu": cpu, "tool": tool}


def run_once(cmd: Sequence[str], cwd: Path):
    """(wall seconds, user+sys CPU seconds of the command and its children)."""
    import resource

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def summarize(samples, what: str, cmd: Sequence[str], busy: float) -> Dict:
    walls = [w for w, _ in samples]
    return {"median": statistics.median(walls), "min": min(walls), "max": max(walls), "runs": len(walls),
            "cpu": statistics.mean(c for _, c in samples), "tool": "python loop, interleaved",
            "what": what, "cmd": " ".join(_quote(c) for c in cmd), "busy": busy}


def _quote(s: str) -> str:
    return s if re.fullmatch(r"[\w@%+=:,./-]+", s) else "'" + s.replace("'", "'\\''") + "'"


def busy_cpus(seconds: float = 3.0) -> float:
    """How many CPUs other processes keep busy right now (from /proc/stat; this script idles
    meanwhile). Unlike the load average it does not remember this script's own last runs."""
    def sample():
        with open("/proc/stat", encoding="ascii") as fh:
            v = [int(x) for x in fh.readline().split()[1:]]
        return sum(v), v[3] + (v[4] if len(v) > 4 else 0)
    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except (OSError, ValueError):
        return 0.0
    n = os.cpu_count() or 1
    return n * (1 - (i1 - i0) / max(1, t1 - t0))


def wait_quiet(max_s: float, threshold: float) -> None:
    """Wait (up to max_s) until other processes keep fewer than `threshold` CPUs busy."""
    if max_s <= 0:
        return
    t0 = time.time()
    while True:
        b = busy_cpus()
        if b < threshold or time.time() - t0 >= max_s:
            return
        log(f"{b:.2f} CPUs busy with other work (> {threshold}): waiting")
        time.sleep(10)


def loadavg() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


# ---------------------------------------------------------------- environment facts
def machine_info(syn: List[str], torchfix: Optional[Path]) -> Dict[str, str]:
    cpu = platform.processor() or ""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 0

    def out(cmd: Sequence[str]) -> str:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=120)
            return (r.stdout or r.stderr).strip()
        except (OSError, subprocess.SubprocessError):
            return "n/a"

    py = Path(syn[0]).resolve().parent / "python" if not syn[0].endswith("python") else Path(syn[0])
    if not py.exists():
        py = Path(sys.executable)
    info = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu or "unknown",
        "cores": str(cores),
        "os": f"{platform.system()} {platform.release()}",
        "python": out([str(py), "-c", "import platform; print(platform.python_version())"]),
        "libcst": out([str(py), "-c", "from importlib.metadata import version as v; print(v('libcst'))"]),
        "synclint": out(syn + ["--version"]).replace("synclint, version ", ""),
        "hyperfine": out(["hyperfine", "--version"]) if shutil.which("hyperfine") else "not used",
    }
    if torchfix is not None:
        tpy = torchfix.parent / "python"
        info["torchfix"] = out([str(torchfix), "--version"]).replace("TorchFix", "").strip()
        info["torchfix_libcst"] = out([str(tpy), "-c", "from importlib.metadata import version as v; print(v('libcst'))"])
    return info


# ---------------------------------------------------------------- the daemon rows
def time_daemon_rows(a, syn, tree, pkgs, want, add, one_lines, mid, mid_lines, edited, original, append_line):
    """Start `synclint daemon` in the tree, time the warm, one-file and edit runs through it
    (the same commands as their rows without it), stop it; {key: row}. Each row checks that
    the daemon answered every run (a daemon that refused would leave local timings)."""
    out = {}
    _DAEMON_ROWS[0] = True
    try:
        r = subprocess.run(syn + ["daemon", "start", "--idle-timeout", "3600"], cwd=tree, env=child_env(),
                           capture_output=True, text=True)
        if r.returncode != 0:
            log(f"synclint daemon did not start: {r.stderr.strip()}; no daemon rows")
            return out

        def timed(key, what, cmd, runs, warmup=1, prepare=None, setup=None):
            if key not in want:
                return
            if setup:
                subprocess.run(setup, cwd=tree, env=child_env(), stdout=subprocess.DEVNULL)
            before = daemon_served(syn, tree)
            row = add(what + WITH_DAEMON, cmd, runs=runs, warmup=warmup, prepare=prepare)
            after = daemon_served(syn, tree)
            row["cmd"] = " ".join(_quote(c) for c in syn) + " daemon start; " + row["cmd"]
            if before is None or after is None or after - before < runs + warmup:
                log(f"  the daemon answered {None if before is None or after is None else after - before} of "
                    f"{runs + warmup} runs: this row is not (only) the daemon's")
                row["what"] += " (**not all runs answered by the daemon**)"
            out[key] = row

        timed("daemon-warm", "synclint, second run, nothing changed (cache on, the default)",
              syn + ["check", "--exit-zero", *pkgs], a.runs * 2, setup=syn + ["check", "--exit-zero", *pkgs])
        timed("daemon-one-cold", f"synclint, one file ({one_lines} lines), cold (`--no-cache`)",
              syn + ["check", "--no-cache", "--exit-zero", ONE_FILE], a.runs * 2)
        timed("daemon-mid-cold", f"synclint, one median-size file ({mid_lines} lines), cold (`--no-cache`)",
              syn + ["check", "--no-cache", "--exit-zero", mid], a.runs * 2)
        try:
            timed("daemon-edit", "synclint, whole tree again after editing one file (cache on)",
                  syn + ["check", "--exit-zero", *pkgs], a.runs * 2, warmup=0, prepare=append_line,
                  setup=syn + ["check", "--exit-zero", *pkgs])
        finally:
            edited.write_bytes(original)
    finally:
        subprocess.run(syn + ["daemon", "stop"], cwd=tree, env=child_env(), capture_output=True)
        _DAEMON_ROWS[0] = False
    return out


# ---------------------------------------------------------------- the run
def run(a) -> str:
    work = Path(a.work_dir).resolve()
    if ROOT in work.parents or work == ROOT:
        sys.exit("--work-dir must lie outside the repository (its pyproject.toml would configure the run)")
    work.mkdir(parents=True, exist_ok=True)
    if a.cpus:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: a.cpus])
    tree = fetch_tree(work, a.lightning_version)
    size = count_py(tree)
    one = tree / ONE_FILE
    one_lines = sum(1 for _ in open(one, "rb"))
    mid, mid_lines = median_file(tree)
    syn = synclint_cmd(a.synclint, work)
    want = set(ROW_KEYS) if a.only is None else a.only
    tf = None if a.no_torchfix or "torchfix" not in want else find_torchfix(work, a.torchfix)
    info = machine_info(syn, tf)
    info["load_before"] = loadavg()
    log(f"tree: {size['files']} files, {size['lines']} lines; synclint = {' '.join(syn)}")

    cache = tree / ".synclint_cache"
    rm_cache = f"rm -rf {_quote(str(cache))}"
    pkgs = [p.name for p in sorted(tree.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    rows = []

    def add(what, cmd, cwd=tree, runs=a.runs, warmup=1, prepare=None):
        wait_quiet(a.wait_quiet, a.quiet_load)
        busy = busy_cpus(1.0)
        log(f"timing: {what}")
        r = time_cmd(cmd, cwd, runs, warmup, prepare)
        r["busy"] = busy
        r["what"] = what
        r["cmd"] = " ".join(_quote(c) for c in cmd)
        rows.append(r)
        log(f"  median {r['median']:.3f} s (min {r['min']:.3f}, max {r['max']:.3f}, n={r['runs']})")
        return r

    # Findings on the tree (and a warm-up that leaves bytecode caches behind).
    stats = subprocess.run(syn + ["check", "--no-cache", "--statistics", "--exit-zero", *pkgs], cwd=tree,
                           capture_output=True, text=True, env=child_env())
    syn_findings = sum(int(l.split()[0]) for l in stats.stdout.splitlines() if l.strip()[:1].isdigit())
    cold_cmd = syn + ["check", "--no-cache", "--exit-zero", *pkgs]
    tf_row = cold = warm = one_cold = one_warm = mid_cold = edit = bare = None
    tf_findings = tf_checked = None
    if tf is None:
        if "cold" in want:
            cold = add("synclint, cold (`--no-cache`), whole tree", cold_cmd)
    else:
        r = subprocess.run([str(tf), *pkgs], cwd=tree, capture_output=True, text=True, env=child_env())
        tf_findings = sum(1 for l in r.stdout.splitlines() if re.match(r"^\S+:\d+:\d+: TOR\d+", l))
        m = re.search(r"Finished checking (\d+) files", r.stderr + r.stdout)
        tf_checked = int(m.group(1)) if m else None
        # Interleaved (synclint, TorchFix, synclint per round) so that a slow spell of a
        # shared machine hits both tools alike, not one timing block.
        wait_quiet(a.wait_quiet, a.quiet_load)
        busy = busy_cpus(1.0)
        log(f"timing: synclint cold and TorchFix, {a.torchfix_runs} interleaved rounds")
        syn_t, tf_t = [], []
        for i in range(a.torchfix_runs):
            syn_t.append(run_once(cold_cmd, tree))
            tf_t.append(run_once([str(tf), *pkgs], tree))
            syn_t.append(run_once(cold_cmd, tree))
            log(f"  round {i + 1}: synclint {syn_t[-2][0]:.2f} s, {syn_t[-1][0]:.2f} s; TorchFix {tf_t[-1][0]:.2f} s")
        cold = summarize(syn_t, "synclint, cold (`--no-cache`), whole tree", cold_cmd, busy)
        tf_row = summarize(tf_t, "TorchFix 0.7.0, whole tree (its default rules)", [str(tf), *pkgs], busy)
        rows.extend([cold, tf_row])
    if "fill" in want:
        add("synclint, first run with the cache on (fills it)", syn + ["check", "--exit-zero", *pkgs],
            runs=max(3, a.runs // 2), warmup=0, prepare=rm_cache)
    if "warm" in want:
        subprocess.run(syn + ["check", "--exit-zero", *pkgs], cwd=tree, env=child_env(), stdout=subprocess.DEVNULL)
        warm = add("synclint, second run, nothing changed (cache on, the default)",
                   syn + ["check", "--exit-zero", *pkgs], runs=a.runs * 2)
    if "one-cold" in want:
        one_cold = add(f"synclint, one file ({one_lines} lines), cold (`--no-cache`)",
                       syn + ["check", "--no-cache", "--exit-zero", ONE_FILE], runs=a.runs * 2)
    if "one-warm" in want:
        subprocess.run(syn + ["check", "--exit-zero", ONE_FILE], cwd=tree, env=child_env(), stdout=subprocess.DEVNULL)
        one_warm = add(f"synclint, one file ({one_lines} lines), warm", syn + ["check", "--exit-zero", ONE_FILE],
                       runs=a.runs * 2)
    if "mid-cold" in want:
        mid_cold = add(f"synclint, one median-size file ({mid_lines} lines), cold (`--no-cache`)",
                       syn + ["check", "--no-cache", "--exit-zero", mid], runs=a.runs * 2)
    # Re-check of the whole tree after an edit of one file (a new line each run, so the
    # file really changed): only that file, and the files whose facts it changes, are
    # analysed again.
    edited = tree / ONE_FILE
    original = edited.read_bytes()
    append_line = f"echo \"x_$(date +%s%N) = 1\" >> {_quote(str(edited))}"
    if "edit" in want:
        subprocess.run(syn + ["check", "--exit-zero", *pkgs], cwd=tree, env=child_env(), stdout=subprocess.DEVNULL)
        try:
            edit = add("synclint, whole tree again after editing one file (cache on)",
                       syn + ["check", "--exit-zero", *pkgs], runs=a.runs * 2, warmup=0, prepare=append_line)
        finally:
            edited.write_bytes(original)
    # The same runs answered by `synclint daemon` (a process that has imported LibCST and
    # the rules already): started in the tree before these rows, stopped after them.
    daemon_rows = {}
    if any(k.startswith("daemon-") for k in want):
        daemon_rows = time_daemon_rows(a, syn, tree, pkgs, want, add, one_lines, mid, mid_lines, edited,
                                       original, append_line)
    if "bare" in want:
        bare = add("reference: bare LibCST parse of every file, one process",
                   [sys.executable, "-c", BARE_PARSE, *pkgs], runs=a.runs)
    if "python" in want:
        add("reference: `python -c pass` (interpreter start)", [sys.executable, "-c", "pass"], runs=a.runs * 2)
    if "libcst" in want:
        add("reference: `python -c 'import libcst'`", [sys.executable, "-c", "import libcst"], runs=a.runs * 2)
    # How cold cost grows with the project's size (the 100% row is the cold row above).
    scaling = []
    if not a.no_scaling and "scaling" in want:
        for label, folder, tops in scaled_trees(tree, work):
            shutil.rmtree(folder / ".synclint_cache", ignore_errors=True)
            r = add(f"synclint, cold (`--no-cache`), {label} of the tree", syn + ["check", "--no-cache", "--exit-zero", *tops],
                    cwd=folder, runs=max(2, a.runs // 2))
            scaling.append((label, count_py(folder), r))
        if cold is not None:
            scaling.insert(2, ("100%", size, cold))
    info["load_after"] = loadavg()
    shutil.rmtree(cache, ignore_errors=True)

    # ------------------------------------------------------------ the table
    def cell(r):
        return f"{r['median']:.3f} s" if r["median"] >= 1 else f"{r['median'] * 1000:.0f} ms"

    def spread(r):
        f = (lambda x: f"{x:.2f}") if r["median"] >= 1 else (lambda x: f"{x * 1000:.0f}")
        return f"{f(r['min'])}-{f(r['max'])} {'s' if r['median'] >= 1 else 'ms'}"

    targets = {}
    if cold is not None and bare is not None:
        # two targets, each met or not on its own: issue 7's (the bare parse) and issue 2's
        # (TorchFix), with the ratio each was measured at
        parse_ratio = cold["median"] / bare["median"]
        met = [f"{'yes' if parse_ratio <= 1 else '**no**'} ({parse_ratio:.2f}x the parse)"]
        if tf_row:
            tf_ratio = tf_row["median"] / cold["median"]
            met.append(f"{'yes' if tf_ratio >= 15 else '**no**'} ({tf_ratio:.1f}x faster)")
        targets[id(cold)] = ("≤ bare LibCST parse" + ("; ≥ 15x faster than TorchFix" if tf_row else ""), "; ".join(met))
    for r, limit in ((edit, 0.5), (warm, 0.1), (one_cold, 0.25), (one_warm, 0.25), (mid_cold, 0.25),
                     (daemon_rows.get("daemon-edit"), 0.5), (daemon_rows.get("daemon-warm"), 0.1),
                     (daemon_rows.get("daemon-one-cold"), 0.25), (daemon_rows.get("daemon-mid-cold"), 0.25)):
        if r is not None:
            targets[id(r)] = (f"≤ {limit:g} s", r["median"] <= limit)
    lines = [
        BEGIN,
        f"Measured {info['date']} by `python scripts/bench_speed.py` (do not edit by hand).",
        "",
        f"**Code base:** the `.py` files of lightning {a.lightning_version}, pytorch-lightning {a.lightning_version} "
        f"and lightning-fabric {a.lightning_version} from PyPI (wheels, unpacked): **{size['files']} files, "
        f"{size['lines']:,} lines** (`{'`, `'.join(pkgs)}`). synclint reports {syn_findings} findings there"
        + (f"; TorchFix checks {tf_checked} files and reports {tf_findings}." if tf_row else "."),
        "",
        "| what | median wall | min-max | CPU (user+sys, mean) | runs | target | met |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        t, ok = targets.get(id(r), ("", None))
        met = "" if ok is None else ok if isinstance(ok, str) else ("yes" if ok else "**no**")
        lines.append(f"| {r['what']} | {cell(r)} | {spread(r)} | {r['cpu']:.2f} s | {r['runs']} | {t} | {met} |")
    if tf_row and cold:
        lines += ["", f"**Cold synclint vs TorchFix: {tf_row['median'] / cold['median']:.1f}x faster** in wall "
                      f"time (medians; same files, same machine, same run), "
                      f"{tf_row['cpu'] / cold['cpu']:.1f}x less CPU time."]
    if scaling:
        unit = (cold or scaling[-1][2])["cpu"] / (size if cold else scaling[-1][1])["lines"]
        lines += ["", "How the cold check grows with the code base (files chosen by path: every 4th, every "
                  "2nd, all, and four copies of the tree side by side):", "",
                  "| share of the tree | files | lines | median wall | CPU (user+sys) | CPU per 10k lines | vs 100% |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for label, sz, r in scaling:
            per = r["cpu"] / sz["lines"]
            lines.append(f"| {label} | {sz['files']} | {sz['lines']:,} | {cell(r)} | {r['cpu']:.2f} s | "
                         f"{per * 10000:.2f} s | {per / unit:.2f}x |")
    lines += [
        "",
        "| machine | |",
        "|---|---|",
        f"| CPU | {info['cpu']} |",
        f"| cores used | {info['cores']} (synclint and TorchFix each start one worker per core) |",
        f"| load average before / after (1, 5, 15 min) | {info['load_before']} ; {info['load_after']} |",
        f"| CPUs kept busy by other processes just before each timing | "
        f"max {max(r['busy'] for r in rows):.2f}, median {statistics.median(r['busy'] for r in rows):.2f} |",
        f"| OS | {info['os']} |",
        f"| Python | {info['python']} |",
        f"| synclint | {info['synclint']} (libcst {info['libcst']}) |",
    ]
    if tf_row:
        lines.append(f"| TorchFix | {info['torchfix']} (libcst {info['torchfix_libcst']}, own venv) |")
    lines += [
        f"| timing | synclint cold and TorchFix: interleaved rounds timed here; the rest: "
        f"{rows[-1]['tool']} ({info['hyperfine']}); wall time, exit status ignored |",
        "",
        "Commands, run in the unpacked tree:",
        "",
    ]
    lines += [f"- {r['what']}: `{r['cmd']}`" for r in rows]
    lines += [END]
    return "\n".join(lines) + "\n"


INTRO = """# Speed

synclint is meant to run on every commit, so speed is designed in: files that cannot hold a
finding are not parsed, each file is parsed once and walked once for all rules, the files are
spread over one worker process per core, and a content-hash cache (on by default, in
`.synclint_cache/`, keyed by the file's bytes, the rule selection and the synclint build) makes
a second run read nothing but the cache: it does not even import LibCST or the rules.

The table below is written by `python scripts/bench_speed.py`; run it again to re-measure on
your machine. Timings on a shared machine vary with its load, which the table records.

"""


def write_doc(table: str) -> None:
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else INTRO + BEGIN + "\n" + END + "\n"
    if BEGIN not in text or END not in text:
        text = text.rstrip("\n") + "\n\n" + BEGIN + "\n" + END + "\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + table.rstrip("\n") + tail, encoding="utf-8")
    log(f"wrote {DOC}")


def _row_keys(value: str) -> set:
    keys = set()
    for k in (k.strip() for k in value.split(",")):
        if k == "daemon":
            keys.update(r for r in ROW_KEYS if r.startswith("daemon-"))
        elif k in ROW_KEYS:
            keys.add(k)
        elif k:
            raise argparse.ArgumentTypeError(f"unknown row {k!r} (rows: {', '.join(ROW_KEYS)}, daemon)")
    if not keys:
        raise argparse.ArgumentTypeError("no rows named")
    if "torchfix" in keys:
        keys.add("cold")
    return keys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "synclint-bench"),
                    help="where the wheels, the unpacked tree and TorchFix's venv go (default: %(default)s)")
    ap.add_argument("--lightning-version", default="2.6.6")
    ap.add_argument("--runs", type=int, default=5, help="runs per synclint timing (warm and one-file: twice this)")
    ap.add_argument("--torchfix-runs", type=int, default=3)
    ap.add_argument("--torchfix", help="path to a torchfix 0.7.0 executable (default: install one into WORK_DIR/tfvenv)")
    ap.add_argument("--no-torchfix", action="store_true", help="skip TorchFix (the table then has no comparison)")
    ap.add_argument("--synclint", help="command that runs synclint (default: this checkout installed with pip, "
                                       "not editable, into WORK_DIR/synvenv). The daemon rows need the console "
                                       "script (synclint.frontends.client:main): `python -m synclint` never asks "
                                       "a daemon, and those rows then say so")
    ap.add_argument("--cpus", type=int, help="pin this run (and its children) to the first N CPUs")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                    help="before each timing, wait up to this long for the machine to be idle")
    ap.add_argument("--quiet-load", type=float, default=0.3,
                    help="CPUs kept busy by other processes below which the machine counts as idle")
    ap.add_argument("--no-scaling", action="store_true", help="skip the 25%%, 50%% and 400%% cold runs")
    ap.add_argument("--no-write", action="store_true", help=f"print the table, do not write {DOC.relative_to(ROOT)}")
    ap.add_argument("--only", metavar="ROWS", type=_row_keys,
                    help="time only these rows, comma-separated, and print their table without writing it: "
                         + ", ".join(ROW_KEYS) + " (torchfix: the interleaved cold and TorchFix rounds; "
                         "daemon: the four daemon-* rows)")
    a = ap.parse_args(argv)
    if a.only is not None:
        a.no_write = True  # a partial table never replaces the whole one
    table = run(a)
    print(table)
    if not a.no_write:
        write_doc(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
