"""minimind-v's SFT with --use_moe 1 --use_compile 1, CPU: the script's own train_epoch
(trainer/train_sft_vlm.py) with its globals set as its __main__ block sets them (lines 131-160),
a 2-layer MoE language model of width 64 (4 experts, top-1), freeze_llm=1 (the default), 4 steps
of synthetic tokens with one image each (64 image-pad tokens, the VLMConfig default), a log
every 2 steps (loss.item() outside the compiled model).

Replaced: the SigLIP checkpoint (downloaded from the hub; without it the program's
get_vision_model returns None) by a randomly initialised transformers SiglipVisionModel of the
same kind, shrunk (2 layers, width 32, 32x32 images in 16x16 patches, so 4 patch tokens, and
image_hidden_size 32); the parquet dataset by synthetic batches in the collate function's
form. HF `datasets` and the program's dataset module (PIL, pyarrow) are stubbed: only the
dataset class we replace uses them."""

import argparse
import sys
import types
from contextlib import nullcontext

import torch
import transformers  # noqa: F401  (before the stub: transformers probes which packages are installed)
from transformers import SiglipVisionConfig, SiglipVisionModel

datasets = types.ModuleType("datasets")
datasets.Dataset = None
sys.modules["datasets"] = datasets
lm_dataset = types.ModuleType("dataset.lm_dataset")
lm_dataset.VLMDataset = None
sys.modules["dataset.lm_dataset"] = lm_dataset

import trainer.train_sft_vlm as ts  # noqa: E402
from model.model_vlm import VLMConfig  # noqa: E402
from trainer.trainer_utils import init_vlm_model, setup_seed  # noqa: E402

setup_seed(42)
ts.args = argparse.Namespace(device="cpu", dtype="bfloat16", epochs=1, learning_rate=5e-4, accumulation_steps=1,
                             grad_clip=1.0, log_interval=2, save_interval=10**9, save_dir="/tmp",
                             save_weight="sft_vlm")
ts.vlm_config = VLMConfig(hidden_size=64, num_hidden_layers=2, use_moe=True, num_attention_heads=4,
                          num_key_value_heads=2, max_position_embeddings=256, image_hidden_size=32,
                          image_token_len=4)
model, tokenizer, _ = init_vlm_model(ts.vlm_config, from_weight="none", tokenizer_path="model",
                                     vision_model_path="/nonexistent", device="cpu", freeze_llm=1)
vision = SiglipVisionModel(SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                              num_attention_heads=2, image_size=32, patch_size=16)).eval()
for p in vision.parameters():
    p.requires_grad = False
model.vision_encoder = vision
ts.autocast_ctx = nullcontext()
ts.scaler = torch.cuda.amp.GradScaler(enabled=False)
ts.optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
ts.model = torch.compile(model)

g = torch.Generator().manual_seed(0)
marker = ts.vlm_config.image_ids[0]
batches = []
for _ in range(4):
    ids = torch.randint(20, ts.vlm_config.vocab_size, (2, 32), generator=g)
    ids[:, 3:3 + ts.vlm_config.image_token_len] = marker  # the image's pad tokens, as the chat prompt places them
    labels = ids.clone()
    labels[:, :10] = -100  # the prompt, as generate_labels masks it
    pixel_values = {"pixel_values": torch.randn(2, 1, 3, 32, 32, generator=g)}  # one image per sample
    batches.append((ids, labels, pixel_values))
# iters > steps: the script saves a checkpoint at step == iters, which we do not want here
ts.train_epoch(0, batches, len(batches) + 1, 0, None)
