"""Byte-compare synclint's outputs before and after a change: a git ref against the working tree.

For each side, the code is copied to a temporary folder (the ref with `git archive`, the
working tree with its tracked and unignored files) and run as `python -m synclint` from
there (PYTHONPATH ahead of any installed copy, and PYTHONSAFEPATH so that the working
tree's own synclint/ in the current folder does not come first), both in the working
tree's folder on the working tree's files, without daemon or cache. Where the copy lies
differs by construction (the default rule links point into it): its path is replaced
with `<tree>` before comparing. What is compared, per target: stdout,
stderr and the exit code of `check --output-format F` for every format, of
`--statistics`, and of `--diff` and `--unsafe-fixes --diff` (the fixes, written nowhere).

    python scripts/compare_outputs.py                      # merge base with main vs working tree
    python scripts/compare_outputs.py --ref HEAD~3
    python scripts/compare_outputs.py --corpus --corpus-files 300   # also $SYNCLINT_CORPUS

Exit 0 when every byte agrees, 1 with the first differing lines of each difference.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

FORMATS = ["text", "concise", "json", "sarif", "github", "gitlab", "junit"]
RUNS = [[f"--output-format={f}"] for f in FORMATS] + [["--statistics"], ["--diff"], ["--unsafe-fixes", "--diff"]]
DEFAULT_CORPUS = "/work/synclint-corpus"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def copy_ref(repo: Path, ref: str, dest: Path) -> None:
    with tempfile.TemporaryFile() as tar:
        subprocess.run(["git", "archive", ref], cwd=repo, check=True, stdout=tar)
        tar.seek(0)
        with tarfile.open(fileobj=tar) as t:
            t.extractall(dest, filter="data")


def copy_worktree(repo: Path, dest: Path) -> None:
    names = git(repo, "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    for name in filter(None, names):
        src = repo / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def importable(tree: Path) -> None:
    """`rules/` is installed as synclint.rules (package-dir): the same from a plain folder."""
    link = tree / "synclint" / "rules"
    if not link.exists():
        link.symlink_to(Path("..") / "rules")


def run_all(tree: Path, cwd: Path, targets: list[list[str]]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONSAFEPATH": "1", "SYNCLINT_NO_DAEMON": "1",
           "NO_COLOR": "1", "COLUMNS": "100", "PYTHONHASHSEED": "0"}
    where = subprocess.run([sys.executable, "-c", "import synclint; print(synclint.__file__)"], cwd=cwd, env=env,
                           capture_output=True, text=True).stdout.strip()
    if not where.startswith(str(tree)):
        raise SystemExit(f"compare_outputs: {tree} is not the synclint that runs ({where})")
    places = []
    for root in {tree, tree.resolve()}:  # URIs first: they hold the path
        places = [(root.as_uri().encode(), b"file://<tree>")] + places + [(str(root).encode(), b"<tree>")]

    def neutral(data: bytes) -> bytes:
        for place, name in places:
            data = data.replace(place, name)
        return data

    out = {}
    for target in targets:
        for extra in RUNS:
            argv = [sys.executable, "-m", "synclint", "check", "--no-cache", *extra, *target]
            p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
            label = " ".join(extra) + " " + (target[0] if len(target) == 1 else f"{target[0]} (+{len(target) - 1})")
            out[label] = (p.returncode, neutral(p.stdout), neutral(p.stderr))
    return out


def corpus_targets(root: Path, limit: int | None) -> list[list[str]]:
    files = sorted(str(p) for p in root.rglob("*.py"))
    if limit:
        step = max(1, len(files) // limit)
        files = files[::step][:limit]  # an even spread over the projects, not the first ones
    return [files] if files else []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", help="git ref to compare with (default: merge base of HEAD and main)")
    ap.add_argument("--corpus", action="store_true", help=f"also the corpus ($SYNCLINT_CORPUS, else {DEFAULT_CORPUS})")
    ap.add_argument("--corpus-files", type=int, help="only this many corpus files, spread evenly")
    a = ap.parse_args()
    if sys.version_info < (3, 11):
        raise SystemExit("compare_outputs needs Python 3.11 or newer (PYTHONSAFEPATH)")
    repo = Path(git(Path.cwd(), "rev-parse", "--show-toplevel"))
    ref = a.ref or git(repo, "merge-base", "HEAD", "main")
    targets = [["fixtures"], ["examples"]]
    if a.corpus:
        root = Path(os.environ.get("SYNCLINT_CORPUS", DEFAULT_CORPUS))
        if not root.is_dir():
            print(f"compare_outputs: no corpus at {root}", file=sys.stderr)
            return 2
        targets += corpus_targets(root, a.corpus_files)
    with tempfile.TemporaryDirectory(prefix="synclint-compare-") as tmp:
        before, after = Path(tmp) / "before", Path(tmp) / "after"
        copy_ref(repo, ref, before)
        copy_worktree(repo, after)
        for tree in (before, after):
            importable(tree)
        results = [run_all(tree, repo, targets) for tree in (before, after)]
    differ = 0
    for label, old in results[0].items():
        new = results[1][label]
        if old == new:
            print(f"same   exit {old[0]}  {len(old[1]):>8} B out  {len(old[2]):>6} B err  {label}")
            continue
        differ += 1
        print(f"DIFFER {label}: exit {old[0]} -> {new[0]}")
        for name, o, n in (("stdout", old[1], new[1]), ("stderr", old[2], new[2])):
            if o != n:
                d = difflib.unified_diff(o.decode(errors="replace").splitlines(),
                                         n.decode(errors="replace").splitlines(), f"{ref}:{name}", f"worktree:{name}",
                                         lineterm="", n=1)
                print("\n".join(list(d)[:20]))
    print(f"{len(results[0]) - differ} of {len(results[0])} runs byte-identical ({ref[:12]} vs working tree)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
