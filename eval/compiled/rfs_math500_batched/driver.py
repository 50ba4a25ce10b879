"""reasoning-from-scratch's ch03/02_math500-verifier-scripts/evaluate_math500_batched.py run as a script with
--compile on the CPU: its __main__ block, its load_model_and_tokenizer (which compiles the batched Qwen3Model),
its batched evaluation loop and the package's generate_text_basic_batched_cache_stop around the compiled model.
Shrunk through the script's own flags (2 examples per batch, 4 examples, 4 new tokens) and by shrinking the
module-level QWEN_CONFIG_06_B dict in place (2 layers, width 64, float32), which the program reads when it
builds the model.

Replaced: the Qwen3 0.6B checkpoint and tokenizer that download_qwen3_small fetches from the Hugging Face hub
(a stand-in writes a random state dict of the shrunk model and a byte-level tokenizer file with Qwen3's special
tokens, built with the tokenizers library the program uses), and the MATH-500 JSON that load_math500_test
downloads (four synthetic problems of different lengths, so that the batches are left-padded). Outputs (the
checkpoint, the tokenizer file, the script's .jsonl log) go to a temporary folder."""

import os
import runpy
import sys
import tempfile

import torch

ROOT = os.getcwd()
SCRIPT = os.path.join(ROOT, "ch03", "02_math500-verifier-scripts", "evaluate_math500_batched.py")

import reasoning_from_scratch.ch03 as ch03  # noqa: E402
import reasoning_from_scratch.qwen3_batched as qb  # noqa: E402

qb.QWEN_CONFIG_06_B.update(vocab_size=280, context_length=512, emb_dim=64, n_heads=4, n_layers=2,
                           hidden_dim=128, head_dim=16, n_kv_groups=2, dtype=torch.float32)


def _tokenizer_file(path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(qb.Qwen3Tokenizer._SPECIALS))
    tok.save(str(path))


def _download_qwen3_small(kind="base", tokenizer_only=False, out_dir="."):
    os.makedirs(out_dir, exist_ok=True)
    _tokenizer_file(os.path.join(out_dir, f"tokenizer-{kind}.json"))
    if not tokenizer_only:
        torch.manual_seed(0)
        model = qb.Qwen3Model(qb.QWEN_CONFIG_06_B)
        torch.save(model.state_dict(), os.path.join(out_dir, f"qwen3-0.6B-{kind}.pth"))


qb.download_qwen3_small = _download_qwen3_small

_PROBLEMS = [
    {"problem": "What is 1 + 1?", "answer": "2"},
    {"problem": "Compute the sum of the first ten positive integers.", "answer": "55"},
    {"problem": "Solve for x: 2x = 6.", "answer": "3"},
    {"problem": "How many sides does a regular hexagon have, and what is their count squared?", "answer": "36"},
]
ch03.load_math500_test = lambda local_path="math500_test.json", save_copy=True: list(_PROBLEMS)

os.chdir(tempfile.mkdtemp(prefix="rfs_math500_"))
sys.argv = [SCRIPT, "--device", "cpu", "--compile", "--dataset_size", "4", "--batch_size", "2",
            "--max_new_tokens", "4"]
runpy.run_path(SCRIPT, run_name="__main__")
