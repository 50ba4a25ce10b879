"""The runtime-truth corpus (fixtures/trace/corpus): real training programs traced on a GPU.

The traces are committed; the programs are other people's code and are not
(`python scripts/runtime_corpus.py fetch` materialises them). Without them this checks the
manifest and the traces; with them it scores the rules against the traces and holds
fixtures/trace/corpus/floor.toml."""

import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import runtime_corpus  # noqa: E402

from synclint.trace.schema import load  # noqa: E402


def test_manifest_and_traces_are_well_formed():
    programs = runtime_corpus.load_manifest()
    assert len(programs) >= 8 and len({p["name"] for p in programs}) == len(programs)
    for p in programs:
        assert len(p["commit"]) == 40 and len(p["sha256"]) == 64 and p["path"].endswith(".py"), p["name"]
        trace = load(str(runtime_corpus.CORPUS_DIR / f"{p['name']}.json"))
        m = trace.meta
        assert m["gpu"].startswith("NVIDIA") and m["exit_code"] == 0 and m["stopped"] in ("end", "time-limit"), p["name"]
        assert all(s.file == "main.py" for s in trace.sites if s.user), p["name"]
    assert sum(1 for p in programs if load(str(runtime_corpus.CORPUS_DIR / f"{p['name']}.json")).sites) >= 7


def test_the_rules_hold_the_floor_on_the_corpus():
    programs = runtime_corpus.load_manifest()
    if not all((runtime_corpus.PROGRAMS / p["name"] / "main.py").is_file() for p in programs):
        pytest.skip(f"programs not materialised at {runtime_corpus.PROGRAMS} (python scripts/runtime_corpus.py fetch)")
    floor = tomllib.loads((runtime_corpus.CORPUS_DIR / "floor.toml").read_text())
    got = runtime_corpus.score()["families"]["all"]
    assert got["recall"] >= floor["recall"], got
    assert got["confirmed_share"] >= floor["confirmed_share"], got
