"""beyond-nanogpt's own architectures/train_moe.py run as a script with --compile on the CPU: its
__main__ block, its `torch.compile(model)`, its training loop (the loss, backward, clipping and AdamW
eagerly around the compiled model). Shrunk through the script's own flags: batch 2, hidden size 64
(the model's head size is fixed at 64, so one head), 2 layers, 3 steps; 4 experts, top-1 and capacity
factor 1.25 as by default.

Replaced: TinyStories, which the script streams from the Hugging Face hub (`datasets.load_dataset`),
by a stand-in stream of synthetic 16-character stories, and the GPT-2 tokenizer it downloads
(`transformers.GPT2Tokenizer.from_pretrained`) by a byte-level stand-in (vocabulary 256) that pads
with 0. The script's collate function moves each batch to its default `device='cuda'`; the stand-in's
ids ignore that move (there is no CUDA here) and the script then moves the batch to its own `device`,
the CPU, as written."""

import os
import random
import runpy
import sys
import types

import torch
from torch.utils.data import IterableDataset

SCRIPT = os.path.abspath(os.path.join("architectures", "train_moe.py"))


class _Stories(IterableDataset):
    def __init__(self, n=None):
        self.n = n

    def shuffle(self, buffer_size=None):
        return self

    def take(self, n):
        return _Stories(n)

    def __iter__(self):
        rng = random.Random(0)
        for _ in range(self.n or 10**9):
            yield {"text": "".join(rng.choice("abcdefghij klmnop") for _ in range(16))}


_datasets = types.ModuleType("datasets")
_datasets.load_dataset = lambda name, streaming=False, **k: {"train": _Stories()}
sys.modules["datasets"] = _datasets


class _Ids:
    """Token ids already on the CPU; `.to('cuda')` (collate_batch's default) keeps them there."""

    def __init__(self, t):
        self.t = t

    def to(self, *a, **k):
        return self.t


class _ByteTokenizer:
    pad_token = None
    eos_token = "\0"
    vocab_size = 256

    @classmethod
    def from_pretrained(cls, name):
        return cls()

    def __call__(self, texts, padding=True, truncation=True, max_length=512, return_tensors="pt"):
        rows = [list(t.encode("utf-8"))[:max_length] for t in texts]
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=torch.long)
        return {"input_ids": _Ids(ids)}


_transformers = types.ModuleType("transformers")
_transformers.GPT2Tokenizer = _ByteTokenizer
sys.modules["transformers"] = _transformers

sys.argv = [SCRIPT, "--batch_size", "2", "--seq_len", "16", "--hidden_dim", "64", "--nlayers", "2",
            "--steps", "3", "--compile", "--verbose"]
runpy.run_path(SCRIPT, run_name="__main__")
