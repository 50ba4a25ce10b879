"""Score synclint on the hand-labelled corpus of real code (see eval/README.md).

    python scripts/eval_corpus.py fetch              # materialise ../synclint-corpus/ from local bare clones
    python scripts/eval_corpus.py score              # the dev split
    python scripts/eval_corpus.py score --split fresh --json out.json   # any split named in eval/labels/

`fetch` reads each labelled repository from `<mirror>/<owner>+<name>/repo` (the layout the
workplace's `fetch` tool leaves; `--mirror` to change it), writes its Python files at the
labelled commit under `../synclint-corpus/<owner>__<name>/`, and checks every labelled file's sha256.

`score` runs `synclint check` as a user would, on each repository's whole tree (so facts
can cross modules), keeps the findings in labelled files, and matches them to labels by
line: a finding whose rows cover a labelled line is right; one on a `[[maybe]]` line is not
counted; any other sync-family (SYN1-SYN4) finding in a labelled file is wrong.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "eval" / "labels"
# Outside the checkout: inside it, the checkout's .gitignore would apply to the corpus.
CORPUS = Path(os.environ.get("SYNCLINT_CORPUS", ROOT.parent / "synclint-corpus"))
SYNC_FAMILIES = ("1", "2", "3", "4")


@dataclass
class Repo:
    slug: str  # owner__name
    repo: str
    commit: str
    split: str
    sealed: bool  # labelled blind and not yet scored: `--split all` leaves it out
    files: List[dict]
    syncs: List[dict]
    maybes: List[dict]  # `[[maybe]]` and `[[setup]]` lines: neither a miss nor a false finding


def read_labels() -> List[Repo]:
    """Every label file, sealed splits included."""
    out = []
    for path in sorted(LABELS.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
            out.append(Repo(path.stem, data["repo"], data["commit"], data.get("split", "dev"), bool(data.get("sealed")),
                            data.get("file", []), data.get("sync", []),
                            data.get("maybe", []) + data.get("setup", [])))
        except (tomllib.TOMLDecodeError, KeyError) as e:
            # every command reads all label files (--split's choices), so say which one is bad
            raise SystemExit(f"{path}: not a label file ({type(e).__name__}: {e})")
    return out


def load_repos(split: str = "all") -> List[Repo]:
    # A sealed split is scored once, by name, never as part of `all` (which runs after
    # every change and would spend it).
    return [r for r in read_labels() if split == r.split or (split == "all" and not r.sealed)]


def splits() -> List[str]:
    """The split names the label files use, so a new split needs no change here."""
    return sorted({r.split for r in read_labels()})


def fetch(mirror: Path) -> int:
    bad = 0
    for r in read_labels():  # (sealed splits too: having their files spends nothing, scoring does)
        git_dir = mirror / r.repo.replace("/", "+") / "repo"
        if (git_dir / ".git").is_dir():
            git_dir = git_dir / ".git"  # (a snapshot `fetch` left as a working clone)
        dest = CORPUS / r.slug
        if not git_dir.is_dir():
            print(f"{r.repo}: no clone at {git_dir} (fetch github:{r.repo} first)")
            bad += 1
            continue
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", r.commit, "--", "*.py"],
                                 capture_output=True, check=False)
        if archive.returncode:
            print(f"{r.repo}: git archive failed: {archive.stderr.decode().strip()}")
            bad += 1
            continue
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        for f in r.files:
            p = dest / f["path"]
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
            if digest != f["sha256"]:
                print(f"{r.repo}:{f['path']}: sha256 differs from the label file")
                bad += 1
        print(f"{r.repo} @ {r.commit[:10]}: {len(r.files)} labelled files -> {dest}")
    return 1 if bad else 0


def run_synclint(root: Path, extra: List[str], python: str = sys.executable) -> List[dict]:
    """`synclint check` over one repository tree, with no user configuration."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "pyproject.toml"
        cfg.write_text("[tool.synclint]\n")
        cmd = [python, "-m", "synclint", "check", ".", "--output-format", "json", "--no-cache",
               "--exit-zero", "--config", str(cfg), *extra]
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 2) or "internal error" in proc.stderr:
        raise SystemExit(f"synclint failed on {root}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout or "[]")


@dataclass
class Tally:
    tp: int = 0  # findings on a labelled line
    fp: int = 0  # findings on an unlabelled line
    found: int = 0  # labels matched
    labels: int = 0
    hot_right: int = 0  # matched labels whose finding agrees on hot/cold
    fps: List[str] = field(default_factory=list)
    misses: List[str] = field(default_factory=list)

    def precision(self) -> Optional[float]:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    def recall(self) -> Optional[float]:
        return self.found / self.labels if self.labels else None


def score(repos: List[Repo], extra: List[str], python: str = sys.executable) -> Dict[str, object]:
    by_family: Dict[str, Tally] = defaultdict(Tally)  # "1".."4" and "all"
    by_heat: Dict[str, Tally] = defaultdict(Tally)  # "hot" / "cold" labels
    hot_only = Tally()
    heat_wrong: List[str] = []
    lines_total = files_total = 0
    for r in repos:
        root = CORPUS / r.slug
        if not root.is_dir():
            raise SystemExit(f"{root} is missing: run `python scripts/eval_corpus.py fetch` first")
        labelled = {f["path"] for f in r.files}
        files_total += len(labelled)
        lines_total += sum(f.get("lines", 0) for f in r.files)
        findings: Dict[str, List[dict]] = defaultdict(list)
        for f in run_synclint(root, extra, python):
            rel = os.path.relpath(os.path.join(root, f["filename"]), root)
            if rel in labelled and f["code"][3] in SYNC_FAMILIES:
                findings[rel].append(f)
        maybes = {(m["path"], m["line"]) for m in r.maybes}
        labels: Dict[Tuple[str, int], List[dict]] = defaultdict(list)
        for s in r.syncs:
            labels[(s["path"], s["line"])].append(s)
        for path, fs in findings.items():
            for f in fs:
                rows = range(f["location"]["row"], f["end_location"]["row"] + 1)
                hit = [labels[(path, row)] for row in rows if (path, row) in labels]
                fam = f["code"][3]
                where = f"{r.slug}/{path}:{f['location']['row']} {f['code']} {f['message'][:90]}"
                if hit:
                    by_family[fam].tp += 1
                    by_family["all"].tp += 1
                elif any((path, row) in maybes for row in rows):
                    continue
                else:
                    by_family[fam].fp += 1
                    by_family["all"].fp += 1
                    by_family["all"].fps.append(where)
        for (path, line), ls in labels.items():
            covering = [f for f in findings.get(path, ())
                        if f["location"]["row"] <= line <= f["end_location"]["row"]]
            for s in ls:
                fam = str(s["family"])
                heat = "hot" if s["hot"] else "cold"
                for t in (by_family[fam], by_family["all"], by_heat[heat]):
                    t.labels += 1
                    if covering:
                        t.found += 1
                        t.hot_right += any(f["hot"] == s["hot"] for f in covering)
                if not covering:
                    by_family["all"].misses.append(f"{r.slug}/{path}:{line} [{heat}] family {fam}: {s['what']}")
                elif not any(f["hot"] == s["hot"] for f in covering):
                    heat_wrong.append(f"{r.slug}/{path}:{line} labelled {heat}: {s['what']}")
                if s["hot"]:
                    hot_only.labels += 1
                    if any(f["hot"] for f in covering):
                        hot_only.found += 1
    allt = by_family["all"]
    return {
        "repos": [f"{r.repo}@{r.commit[:10]}" for r in repos],
        "files": files_total,
        "lines": lines_total,
        "families": {k: _row(t) for k, t in sorted(by_family.items())},
        "heat": {k: _row(t) for k, t in sorted(by_heat.items())},
        "hot_only_recall": hot_only.recall(),
        "hot_cold_right": allt.hot_right / allt.found if allt.found else None,
        "false_findings": allt.fps,
        "misses": allt.misses,
        "heat_wrong": heat_wrong,
    }


def _row(t: Tally) -> dict:
    return {"tp": t.tp, "fp": t.fp, "precision": t.precision(), "labels": t.labels,
            "found": t.found, "recall": t.recall()}


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.2f}"


def print_table(s: Dict[str, object]) -> None:
    print(f"{len(s['repos'])} repositories, {s['files']} files, {s['lines']} lines")
    print(f"{'family':<8} {'findings':>8} {'wrong':>6} {'precision':>9} {'labels':>7} {'found':>6} {'recall':>7}")
    for k, row in s["families"].items():
        print(f"{k:<8} {row['tp'] + row['fp']:>8} {row['fp']:>6} {_pct(row['precision']):>9} "
              f"{row['labels']:>7} {row['found']:>6} {_pct(row['recall']):>7}")
    for k, row in s["heat"].items():
        print(f"{k + ' labels':<12} recall {_pct(row['recall'])} ({row['found']}/{row['labels']})")
    print(f"hot-only recall {_pct(s['hot_only_recall'])}; hot/cold right on {_pct(s['hot_cold_right'])} of found labels")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="materialise the corpus from local bare clones")
    f.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    s = sub.add_parser("score", help="precision and recall per family, hot and cold apart")
    s.add_argument("--split", choices=(*splits(), "all"), default="dev")
    s.add_argument("--json", type=Path, help="write the full result (with every miss and false finding)")
    s.add_argument("--verbose", "-v", action="store_true", help="list misses and false findings")
    s.add_argument("--python", default=sys.executable,
                   help="interpreter whose synclint to score (e.g. a venv with an older release)")
    s.add_argument("synclint_args", nargs="*", help="extra arguments for `synclint check` (after --)")
    a = ap.parse_args(argv)
    if a.cmd == "fetch":
        return fetch(a.mirror)
    result = score(load_repos(a.split), a.synclint_args, a.python)
    print_table(result)
    if a.verbose:
        print("\nfalse findings:")
        print("\n".join("  " + x for x in result["false_findings"]))
        print("\nmissed:")
        print("\n".join("  " + x for x in result["misses"]))
    if a.json:
        a.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
