"""Detection on the hand-labelled corpus of real code must not fall below eval/floor.toml.

The corpus is other people's code and is not in this repository (eval/README.md); where it
has been materialised (`python scripts/eval_corpus.py fetch`) this test scores the dev split
and compares it with the floor. Without the corpus it checks that the labels are well formed.
"""

import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import eval_corpus  # noqa: E402


def test_labels_are_well_formed():
    repos = eval_corpus.read_labels()
    assert len(repos) >= 10 and sum(len(r.files) for r in repos) >= 40
    # dev is developed against; the others are labelled blind and scored once (then spent)
    assert all(re.fullmatch(r"dev|holdout|fresh|blind\d*", r.split) for r in repos), {r.split for r in repos}
    # a sealed split is never half scored: all its files are sealed, and `all` leaves it out
    for split in eval_corpus.splits():
        sealed = {r.sealed for r in repos if r.split == split}
        assert len(sealed) == 1, split
        assert (split in {r.split for r in eval_corpus.load_repos("all")}) != sealed.pop(), split
    for r in repos:
        lines = {f["path"]: f["lines"] for f in r.files}
        assert len(r.commit) == 40, r.repo
        for s in r.syncs:
            assert s["path"] in lines and s["family"] in (1, 2, 3, 4) and isinstance(s["hot"], bool), (r.repo, s)
        for s in r.syncs + r.maybes:
            assert s["path"] in lines and 1 <= s["line"] <= lines[s["path"]], (r.repo, s)
            assert s["why"].strip(), (r.repo, s)


def test_dev_split_holds_the_floor():
    repos = eval_corpus.load_repos("dev")
    if not all((eval_corpus.CORPUS / r.slug).is_dir() for r in repos):
        pytest.skip(f"corpus not materialised at {eval_corpus.CORPUS} (python scripts/eval_corpus.py fetch)")
    floor = tomllib.loads((ROOT / "eval" / "floor.toml").read_text())
    got = eval_corpus.score(repos, [])
    allf = got["families"]["all"]
    assert allf["precision"] >= floor["precision"], allf
    assert allf["recall"] >= floor["recall"], allf
    assert got["hot_only_recall"] >= floor["hot_only_recall"]
    assert got["hot_cold_right"] >= floor["hot_cold_right"]
