"""The worker pool: a run that dies leaves no worker behind."""

import os
import subprocess
import sys
import time

import pytest

CHILD = """
import os, sys
from synclint.workers import Pool
pool = Pool(2, [])
print(" ".join(str(p.pid) for p in pool.procs), flush=True)
os._exit(0)  # as a SIGKILL would: no cleanup, the pipes' ends simply vanish
"""


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers and /proc")
def test_workers_exit_when_the_main_process_dies():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    deadline = time.time() + 20
    while time.time() < deadline and any(os.path.exists(f"/proc/{p}") and _alive(p) for p in pids):
        time.sleep(0.1)
    alive = [p for p in pids if os.path.exists(f"/proc/{p}") and _alive(p)]
    for p in alive:
        os.kill(p, 9)
    assert not alive, "workers outlived the run"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return not any(line.startswith("State:") and ("Z" in line.split()[1]) for line in fh)
    except OSError:
        return False
