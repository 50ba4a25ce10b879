"""nanomoe's own trainers/train_muon.py run as its README runs it (`python train_muon.py`), on the CPU:
the script's __main__ block, its `torch.compile(model)` of the MoE GPT, its `@torch.compile`d
Newton-Schulz step inside its own Muon optimizer, its training loop and its evaluation every 10 steps.

Shrunk: the script keeps its hyperparameters in module-level constants, so the driver compiles the
script's own text with seven of those lines rewritten in place (same line numbers, so Dynamo reports
the script's lines): batch 2, sequence 16, 4 iterations (one evaluation, at step 0), width 32, 2 heads,
2 layers, 4 experts (top-2 and capacity factor as written).

Replaced: the FineWeb-Edu token shards the script reads (finewebedu10B/finewebedu_train_*.bin, made by
an external tokenizer run) by one synthetic shard of random uint16 token ids written to a temporary
working folder, and mlflow (experiment tracking) by a stub that records nothing. Checkpoints go to the
temporary folder."""

import os
import re
import sys
import tempfile
import types
from contextlib import contextmanager

import numpy as np

SCRIPT = os.path.abspath(os.path.join("trainers", "train_muon.py"))

_mlflow = types.ModuleType("mlflow")
_mlflow.set_experiment = lambda *a, **k: None
_mlflow.log_param = lambda *a, **k: None
_mlflow.log_metric = lambda *a, **k: None
_mlflow.log_artifact = lambda *a, **k: None


@contextmanager
def _start_run(*a, **k):
    yield None


_mlflow.start_run = _start_run
sys.modules["mlflow"] = _mlflow

SHRINK = {  # constant line of the script -> the same line, shrunk
    "batch_size = 32": "batch_size = 2",
    "block_size = 512": "block_size = 16",
    "max_iters = 100": "max_iters = 4",
    "n_embed = 384": "n_embed = 32",
    "n_head = 6": "n_head = 2",
    "n_layer = 6": "n_layer = 2",
    "num_experts = 8": "num_experts = 4",
}

src = open(SCRIPT, encoding="utf-8").read()
for old, new in SHRINK.items():
    src, n = re.subn(rf"^{re.escape(old)}$", new, src, flags=re.M)
    assert n == 1, (old, n)

work = tempfile.mkdtemp(prefix="nanomoe_")
os.makedirs(os.path.join(work, "finewebedu10B"))
rng = np.random.default_rng(0)
rng.integers(0, 50257, size=4096, dtype=np.uint16).tofile(
    os.path.join(work, "finewebedu10B", "finewebedu_train_000000.bin"))
os.chdir(work)

sys.argv = [SCRIPT]
code = compile(src, SCRIPT, "exec")
exec(code, {"__name__": "__main__", "__file__": SCRIPT})
