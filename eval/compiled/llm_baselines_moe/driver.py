"""llm-baselines' own src/main.py with --compile --moe on the CPU: the script's main(), its
train() (which compiles the model) and its evaluation, on the character-level Shakespeare dataset
path of the program (--dataset shakespeare-char), with a tiny MoE GPT (2 layers, width 32, 4
experts, top-2 gating, sequence length 32, batch 4), 6 iterations, evaluation every 3 (2 batches), no learning-rate schedule (the default one-cycle
schedule divides by zero over so few iterations).

Replaced: the Shakespeare text the program downloads (raw.txt) by synthetic text written to a
temporary datasets folder first (the program then tokenizes it itself), tiktoken's GPT-2 encoding
(GPTBase.__init__ loads it from the network and never uses it in training) by a stub, and wandb
(imported by main.py; logging is off) and Hugging Face datasets (imported by the data modules of
the hub corpora) by empty modules."""

import os
import random
import runpy
import sys
import tempfile
import types

sys.path.insert(0, "src")
sys.modules["wandb"] = types.ModuleType("wandb")
_tiktoken = types.ModuleType("tiktoken")
_tiktoken.get_encoding = lambda name: None
sys.modules["tiktoken"] = _tiktoken
_datasets = types.ModuleType("datasets")  # Hugging Face datasets: only the hub corpora use it
_datasets.load_dataset = None
sys.modules["datasets"] = _datasets

import torch  # noqa: E402

torch.set_num_threads(1)

data = tempfile.mkdtemp(prefix="llmb-data-")
os.makedirs(os.path.join(data, "shakespeare"))
rng = random.Random(0)
words = ["the", "king", "queen", "lord", "what", "say", "thou", "good", "night", "my", "love", "and"]
text = "\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(400))
with open(os.path.join(data, "shakespeare", "raw.txt"), "w", encoding="utf8") as f:
    f.write(text)

sys.argv = [
    "src/main.py", "--config_format", "base", 
    "--device", "cpu", "--dataset", "shakespeare-char", "--datasets_dir", data,
    "--results_base_folder", tempfile.mkdtemp(prefix="llmb-exps-"),
    "--model", "base", "--n_layer", "2", "--n_head", "2", "--n_embd", "32", "--sequence_length", "32",
    "--vocab_size", "96", "--batch_size", "4", "--acc_steps", "1", "--iterations", "6",
    "--eval_interval", "3", "--eval_batches", "2", "--warmup_steps", "1", "--scheduler", "none", "--opt", "adamw", "--lr", "1e-3",
    "--compile", "--moe", "--moe_num_experts", "4", "--moe_num_experts_per_tok", "2",
]
runpy.run_path("src/main.py", run_name="__main__")
