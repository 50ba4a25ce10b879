"""Decoded cache files kept by a long-lived process (`synclint.run.decoded.Kept`, the daemon's,
which it hands to each run): a run answers as a fresh process would, whatever was kept from
the runs before it."""

import json
import os
import subprocess
import sys

import pytest

from synclint.run.decoded import FRESH, Kept


def _replace(path, doc):
    """Write as the cache does: a new file moved over the old one."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, path)


def test_a_file_is_decoded_once_while_it_stays_and_again_once_replaced(tmp_path):
    decoded = Kept()
    p = tmp_path / "0.json"
    _replace(p, {"a": [1, {"x": 1}]})
    first = decoded.load(p)
    assert decoded.load(p) is first
    calls = []
    make = lambda v: calls.append(v) or len(calls)  # noqa: E731
    assert decoded.made("what", first["a"], make) == decoded.made("what", first["a"], make) == 1
    _replace(p, {"a": [2, {"x": 2}]})
    second = decoded.load(p)
    assert second is not first and second == {"a": [2, {"x": 2}]}
    assert decoded.made("what", second["a"], make) == 2 and len(calls) == 2
    assert not any(k[1] == id(first["a"]) for k in decoded._made)  # what the old file made is dropped


def test_nothing_is_kept_in_a_one_shot_process(tmp_path):
    decoded = FRESH
    p = tmp_path / "0.json"
    _replace(p, {"a": 1})
    assert decoded.load(p) is not decoded.load(p)
    assert decoded.made("what", [1], lambda v: object()) is not decoded.made("what", [1], lambda v: object())


@pytest.mark.parametrize("decoded", [FRESH, Kept()])
def test_an_unreadable_file_raises_as_json_load_does(tmp_path, decoded):
    p = tmp_path / "0.json"
    p.write_text("{not json")
    with pytest.raises(ValueError):
        decoded.load(p)
    with pytest.raises(OSError):
        decoded.load(tmp_path / "missing.json")


# One process runs the checks in turn, keeping what it decoded (as the daemon does); each
# answer must be the one a fresh process gives for the same files.
STEPS = """
import json, os, sys
from pathlib import Path
from synclint.run import decoded
from synclint.run import pipeline
kept = decoded.Kept() if sys.argv[1] == "keep" else decoded.FRESH
out = []
for text in json.loads(sys.argv[2]):
    if text is not None:
        Path("helpers.py").write_text(text)
    setup = pipeline.configure(start=Path("."), decoded=kept)
    got = pipeline.run(setup, ["."])
    out.append(sorted((f.filename, f.row, f.code, f.hot) for f in got.findings))
print("@@" + json.dumps(out))
"""

TRAIN = ("import torch\nfrom helpers import make\n\ndef train(xs):\n    for x in xs:\n"
         "        y = make(x)\n        print(y.item())\n        z = y.cpu()\n")
GPU = "import torch\n\ndef make(x):\n    return torch.zeros(3, device='cuda') * x\n"
CPU = "import torch\n\ndef make(x):\n    return torch.zeros(3) * x\n"


def _steps(cwd, mode, texts):
    p = subprocess.run([sys.executable, "-c", STEPS, mode, json.dumps(texts)], cwd=cwd, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "SYNCLINT_NO_DAEMON": "1"})
    out, _, tail = p.stdout.rpartition("@@")
    assert tail, p.stderr
    return json.loads(tail)


def _kept_as_fresh(tmp_path, train: str, texts):
    """The answers of one process that keeps what it decoded, checking after each edit of
    `helpers.py` (None: none), `train.py` holding `train`; each is a fresh process's."""
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    (tmp_path / "train.py").write_text(train)
    kept = _steps(tmp_path, "keep", texts)
    assert kept == [_steps(tmp_path, "fresh", [t])[0] for t in texts]
    return kept


def test_a_process_that_keeps_answers_as_fresh_ones_do_across_edits(tmp_path):
    kept = _kept_as_fresh(tmp_path, TRAIN, [GPU, None, CPU, None, GPU, CPU + "\n# a comment\n", None])
    # the edits mattered: the other module's findings follow what `make` returns
    assert any(code == "SYN101" for _, _, code, _ in kept[0]) and not any(code == "SYN101" for _, _, code, _ in kept[2])


REPORT = 'import torch\nx = torch.ones(3, device="cuda")\n\ndef report():\n    print(x.sum().item())\n'
IN_LOOP = "from train import report\n\ndef run():\n    for _ in range(3):\n        report()\n"
ONCE = "from train import report\n\ndef run():\n    report()\n"


def test_heat_kept_between_checks_follows_an_edit_of_the_call_graph(tmp_path):
    """A kept process reuses the last check's heat only while no call graph or summary
    changed: `report()` moved out of the caller's loop (another module) makes its `.item()`
    cold, as in a fresh process."""
    kept = _kept_as_fresh(tmp_path, REPORT, [IN_LOOP, ONCE, None, IN_LOOP, IN_LOOP + "# a comment\n", ONCE])
    heat = [[hot for name, _, code, hot in step if name.endswith("train.py") and code == "SYN101"] for step in kept]
    assert heat[0] == [True] and heat[1] == [False] and heat[3] == [True]


TAKES = "import torch\n\ndef report(y):\n    for _ in range(3):\n        print(y.sum().item())\n"
PASSES_GPU = "import torch\nfrom train import report\n\nreport(torch.ones(3, device='cuda'))\n"
PASSES_CPU = "import torch\nfrom train import report\n\nreport(torch.ones(3))\n"


def test_tables_kept_between_checks_follow_an_edit_of_what_a_module_passes(tmp_path):
    """A kept process reuses the last checks' whole-project tables (what other modules pass
    each function) only while no summary changed: a caller that starts passing a CUDA tensor
    makes the callee's `.item()` a finding, as in a fresh process."""
    kept = _kept_as_fresh(tmp_path, TAKES, [PASSES_CPU, PASSES_GPU, None, PASSES_CPU, PASSES_CPU + "# a comment\n", PASSES_GPU])
    found = [any(name.endswith("train.py") and code == "SYN101" for name, _, code, _ in step) for step in kept]
    assert found == [False, True, True, False, False, True]


def test_the_daemons_runs_read_the_cache_through_what_it_keeps(tmp_path):
    """The daemon owns what it keeps decoded and hands it to each run (`run_check`): a check
    of an unchanged project decodes no cache file again."""
    from synclint.frontends.daemon import run_check

    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "helpers.py").write_text(GPU)
    spec = {"tty": False, "size": None, "encoding": "utf-8", "errors": "strict"}
    req = {"argv": ["check", "--output-format", "json", "."], "cwd": str(tmp_path),
           "env": {**os.environ, "SYNCLINT_NO_DAEMON": "1"}, "streams": [spec, spec, spec], "prog": "synclint"}
    kept, tables = Kept(), {}
    first = run_check(req, tables, kept)  # (writes the cache)
    assert run_check(req, tables, kept) == first
    files = dict(kept._files)
    assert files  # the cache's files were read through it
    assert run_check(req, tables, kept) == first
    assert all(kept._files[k][1] is doc for k, (_, doc) in files.items())  # not decoded again
