"""minimind's pretraining with --use_moe 1 --use_compile 1, CPU: the script's own train_epoch
(trainer/train_pretrain.py) with its globals set as its __main__ block sets them (lines 116-151),
a 2-layer MoE model of width 64 (4 experts, top-1), 4 steps of synthetic tokens, gradient
accumulation 2, a log every 2 steps (loss.item() outside the compiled model).
HF `datasets` is stubbed: the script imports it only to load the jsonl corpus we replace."""

import argparse
import sys
import types
from contextlib import nullcontext

import torch
import transformers  # noqa: F401  (before the stub: transformers probes which packages are installed)

datasets = types.ModuleType("datasets")
for name in ("load_dataset", "Features", "Sequence", "Value"):
    setattr(datasets, name, None)
sys.modules["datasets"] = datasets

import trainer.train_pretrain as tp  # noqa: E402
from model.model_minimind import MiniMindConfig  # noqa: E402
from trainer.trainer_utils import init_model, setup_seed  # noqa: E402

setup_seed(42)
tp.args = argparse.Namespace(device="cpu", dtype="bfloat16", epochs=1, learning_rate=5e-4, accumulation_steps=2,
                             grad_clip=1.0, log_interval=2, save_interval=10**9, save_dir="/tmp", save_weight="pretrain")
tp.lm_config = MiniMindConfig(hidden_size=64, num_hidden_layers=2, use_moe=True, num_attention_heads=4,
                              num_key_value_heads=2, max_position_embeddings=256)
model, tokenizer = init_model(tp.lm_config, "none", tokenizer_path="model", device="cpu")
tp.autocast_ctx = nullcontext()
tp.scaler = torch.cuda.amp.GradScaler(enabled=False)
tp.optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
tp.model = torch.compile(model)

g = torch.Generator().manual_seed(0)
batches = []
for _ in range(4):
    ids = torch.randint(3, tp.lm_config.vocab_size, (2, 32), generator=g)
    labels = ids.clone()
    labels[:, 28:] = -100  # padding, as PretrainDataset marks it
    batches.append((ids, labels))
# iters > steps: the script saves a checkpoint at step == iters, which we do not want here
tp.train_epoch(0, batches, len(batches) + 1, 0, None)
