"""Grad mode comes from the callers, across the project (issue 34's new-user reads: SYN502 on
mmtracking's `forward_test`, run only inside a tracker's `with torch.no_grad():`, and on
FramePack's CLIP encoder, called only from the demos' `@torch.no_grad()` worker). A function
every caller runs with autograd off (a `with` block, a decorated caller, or a caller that
itself runs so) is not inference code missing `no_grad`; near misses: one caller without
`no_grad` keeps the finding, so does a call of its name on an object the project cannot
resolve, and so does a function no code of the project calls."""

import textwrap
from pathlib import Path

from synclint.registry import all_rules
from synclint.run.runner import check_files
from synclint.testing import expectations

ENCODERS = """
import torch


def encode_image(encoder, x):
    encoder.eval()
    return encoder(x)


def run_inference(model, x):
    model.eval()
    return model(x)


def predict_boxes(model, x):
    model.eval()
    return model(x)  # error: SYN502


def infer_depth(model, x):
    model.eval()
    return model(x)  # error: SYN502


def evaluate_unused(model, x):
    model.eval()
    return model(x)  # error: SYN502
"""

DEMO = """
import torch
from encoders import encode_image, run_inference, predict_boxes, infer_depth

model = torch.nn.Linear(4, 4).cuda()


@torch.no_grad()
def worker(x):
    return encode_image(model, x)


def track(x):
    return run_inference(model, x)


def main(xs):
    with torch.inference_mode():
        for x in xs:
            track(x)
            predict_boxes(model, x)
    worker(xs[0])
    with torch.no_grad():
        infer_depth(model, xs[0])


def serve(registry, x):
    return registry.build("depth").infer_depth(model, x)
    for x in xs:
        predict_boxes(model, x)
"""


def test_a_function_every_caller_runs_without_grad_is_not_flagged(tmp_path):
    paths = []
    for name, text in {"encoders.py": ENCODERS, "demo.py": DEMO}.items():
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        paths.append(p)
    result = check_files([str(p) for p in paths], all_rules())
    assert not result.errors, result.errors
    got = {(Path(f.filename).name, f.row, f.code) for f in result.findings if f.code == "SYN502"}
    expected = {(p.name, row, code) for p in paths for (row, code) in expectations(p.read_text(encoding="utf-8"))}
    assert got == expected, f"missing {sorted(expected - got)}, unexpected {sorted(got - expected)}"


def test_the_grad_off_functions_and_the_calls_that_decide_them_are_cached(tmp_path):
    # (an entry of a shape the cache does not read back would be linted again every run)
    paths = []
    for name, text in {"encoders.py": ENCODERS, "demo.py": DEMO}.items():
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        paths.append(str(p))
    cache = tmp_path / ".synclint_cache"
    first = check_files(paths, all_rules(), cache_dir=cache, jobs=1)
    again = check_files(paths, all_rules(), cache_dir=cache, jobs=1)
    rows = sorted((Path(f.filename).name, f.row) for f in first.findings if f.code == "SYN502")
    assert rows == [("encoders.py", 16), ("encoders.py", 21), ("encoders.py", 26)]
    assert sorted((Path(f.filename).name, f.row) for f in again.findings if f.code == "SYN502") == rows
    assert not any(again.linted)
