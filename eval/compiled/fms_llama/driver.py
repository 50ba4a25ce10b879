"""fms's scripts/inference.py with --compile, run as written on the CPU (--device_type cpu): it
loads a LLaMA with load_fms_llama, compiles it with torch.compile(model) and generates 100 tokens
greedily for its own prompt, with float16 as the default dtype.

Replaced, because they are downloaded: the Meta-format weights, by a tiny params.json (width 64, 4
heads, 2 layers) and an empty consolidated.00.pth (load_fms_llama loads with strict=False, so the
model keeps its own random initialisation; the vocabulary stays at the 32,000 it hard-codes), and
the SentencePiece tokenizer, by a byte-level stand-in that knows the "<s>", "</s>" and "<unk>" the
script asks for (fms's own char_tokenizer cannot convert "<s>")."""

import json
import runpy
import sys
import tempfile
from pathlib import Path

import torch

from fms.utils import tokenizers


class _ByteTokenizer(tokenizers.BaseTokenizer):
    special = {"<unk>": 0, "<s>": 1, "</s>": 2}

    def tokenize(self, text):
        return list(text)

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            return self.special[tokens] if tokens in self.special else 3 + ord(tokens) % 253
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def convert_ids_to_tokens(self, ids):
        return [chr(32 + int(i) % 95) for i in ids]

    def convert_tokens_to_string(self, tokens):
        return "".join(tokens)


tokenizers.get_tokenizer = lambda name: _ByteTokenizer()

weights = Path(tempfile.mkdtemp())
(weights / "params.json").write_text(json.dumps(
    {"dim": 64, "n_heads": 4, "n_layers": 2, "multiple_of": 32, "norm_eps": 1e-5}))
torch.save({}, weights / "consolidated.00.pth")
torch.manual_seed(0)
sys.argv = ["scripts/inference.py", "--device_type", "cpu", "--model_path", str(weights),
            "--tokenizer", "stand-in", "--compile"]
runpy.run_path("scripts/inference.py", run_name="__main__")
