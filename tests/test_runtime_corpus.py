"""The runtime-truth corpus (fixtures/trace/corpus): real training programs traced on a GPU.

The traces are committed; the programs are other people's code and are not
(`python scripts/runtime_corpus.py fetch` materialises them). Without them this checks the
manifest and the traces; with them it scores the rules against the traces and holds
fixtures/trace/corpus/floor.toml."""

import os
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import runtime_corpus  # noqa: E402

from synclint.trace.lines import ran  # noqa: E402
from synclint.trace.schema import load  # noqa: E402


def test_manifest_and_traces_are_well_formed():
    programs = runtime_corpus.load_manifest()
    assert len(programs) >= 10 and len({p["name"] for p in programs}) == len(programs)
    assert len({p["repo"] for p in programs}) >= 4  # issue 8: several repositories
    for p in programs:
        assert len(p["commit"]) == 40 and len(p["sha256"]) == 64 and p["path"].endswith(".py"), p["name"]
        assert p["license"] and all(len(i["sha256"]) == 64 for i in p.get("imports", [])), p["name"]
        trace = load(str(runtime_corpus.CORPUS_DIR / f"{p['name']}.json"))
        m = trace.meta
        assert m["gpu"].startswith("NVIDIA") and m["exit_code"] == 0 and m["stopped"] in ("end", "time-limit"), p["name"]
        here = runtime_corpus.PROGRAMS / p["name"]
        own = {os.path.relpath(dest, here) for _, _, dest in runtime_corpus.program_files(p)}
        assert all(s.file in own for s in trace.sites if s.user), p["name"]
        # the lines that ran are recorded, and every line that synced is among them
        assert trace.lines and set(trace.lines) <= own, p["name"]
        assert all(ran(trace.lines.get(s.file), s.line, s.line) for s in trace.sites if s.user), p["name"]
    assert sum(1 for p in programs if load(str(runtime_corpus.CORPUS_DIR / f"{p['name']}.json")).sites) >= 10


def test_the_rules_hold_the_floor_on_the_corpus():
    programs = runtime_corpus.load_manifest()
    if not all(dest.is_file() for p in programs for _, _, dest in runtime_corpus.program_files(p)):
        pytest.skip(f"programs not materialised at {runtime_corpus.PROGRAMS} (python scripts/runtime_corpus.py fetch)")
    floor = tomllib.loads((runtime_corpus.CORPUS_DIR / "floor.toml").read_text())
    got = runtime_corpus.score()["families"]["all"]
    assert got["recall"] >= floor["recall"], got
    assert got["precision"] >= floor["precision"], got
