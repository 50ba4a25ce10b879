"""gpt-fast's own generate.main on the CPU, with compilation on as its defaults have it, the
prefill compiled too (--compile_prefill), so that both
compiled functions run: decode_one_token and prefill. Speculative decoding (model_forward,
compiled when a draft model is given) is not run: at this commit it fails eagerly in
speculative_decode (`torch.cat([cur_token.view(1), draft_tokens])` of a 1-d and a 2-d tensor,
since decode_n_tokens returns [batch, 1] tokens), before any compiled call. Replaced: the
downloaded checkpoint by randomly initialised weights of the repository's smallest
configuration (stories15M: 6 layers of width 288), saved where main looks for it
(checkpoints/stories15M/model.pth), and the SentencePiece
tokenizer (a downloaded file) by a stand-in whose decode joins token ids, passed through the
module's get_tokenizer; the prompt is main's own synthetic one (an int: random token ids)."""

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, os.getcwd())

import generate  # noqa: E402
from model import Transformer  # noqa: E402


class StandInTokenizer:
    def encode(self, text):
        return [ord(c) % 32000 for c in text]

    def decode(self, ids):
        return " ".join(str(i) for i in ids)

    def bos_id(self):
        return 1

    def eos_id(self):
        return 2


torch.manual_seed(0)
ckpt = Path("checkpoints/stories15M/model.pth")
ckpt.parent.mkdir(parents=True, exist_ok=True)
torch.save(Transformer.from_name("stories15M").state_dict(), ckpt)
(ckpt.parent / "tokenizer.model").write_bytes(b"")
generate.get_tokenizer = lambda path, name: StandInTokenizer()

generate.main(prompt=8, num_samples=2, max_new_tokens=6, top_k=20, temperature=0.8,
              checkpoint_path=ckpt, compile=True, compile_prefill=True,
              draft_checkpoint_path=None, device="cpu")
