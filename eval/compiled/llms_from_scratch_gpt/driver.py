"""LLMs-from-scratch ch05/10, the single-GPU script, CPU: its own main() (the model compiled as
line 414 does, bf16, fused AdamW, train_model_simple_with_timing with evaluation every 10 steps
and a 50-token greedy sample through the compiled model after each epoch), with a GPT shrunk to
2 layers of width 64, 4 heads, context 32, vocabulary 512, 1 epoch, batch 4, no dataloader workers.

Replaced: the novel downloaded from Project Gutenberg (main reads middlemarch.txt when it exists:
the driver writes a synthetic one in a temporary folder), tiktoken's GPT-2 encoding (downloaded:
a byte-level stand-in whose ids stay under the shrunk vocabulary), requests and matplotlib
(imported, not used by main)."""

import os
import random
import sys
import tempfile
import types

for name in ("requests", "matplotlib", "matplotlib.pyplot"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["matplotlib"].pyplot = sys.modules["matplotlib.pyplot"]


class _Bytes:
    def encode(self, text, allowed_special=()):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return bytes(i % 256 for i in ids).decode("utf-8", errors="replace")


tiktoken = types.ModuleType("tiktoken")
tiktoken.get_encoding = lambda name: _Bytes()
sys.modules["tiktoken"] = tiktoken

import importlib.util  # noqa: E402

here = os.path.join(os.getcwd(), "ch05", "10_llm-training-speed")
spec = importlib.util.spec_from_file_location("opt_single_gpu", os.path.join(here, "01_opt_single_gpu.py"))
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)

_loader = script.create_dataloader_v1


def create_dataloader_v1(*args, num_workers=0, **kwargs):  # two shared cores: no worker processes
    return _loader(*args, num_workers=0, **kwargs)


script.create_dataloader_v1 = create_dataloader_v1

rng = random.Random(0)
words = ["dorothea", "casaubon", "lydgate", "middlemarch", "the", "of", "and", "a", "town", "letter"]
text = " ".join(rng.choice(words) for _ in range(1400))
os.chdir(tempfile.mkdtemp())
with open("middlemarch.txt", "w", encoding="utf-8") as fh:
    fh.write(text)

config = {"vocab_size": 512, "context_length": 32, "emb_dim": 64, "n_heads": 4, "n_layers": 2,
          "drop_rate": 0.1, "qkv_bias": False}
settings = {"learning_rate": 5e-4, "num_epochs": 1, "batch_size": 4, "weight_decay": 0.1}
train_losses, val_losses, tokens_seen, model = script.main(config, settings)
print(train_losses, val_losses)
