"""TiRex forecasting on the CPU through the program's own load_model(..., backend="torch",
compile=True), which compiles the sLSTM scan (src/tirex/base.py:80). Replaced: the trained
checkpoint downloaded from the hub (NX-AI/TiRex) by a tiny randomly initialised one of the same
format (a Lightning checkpoint with hyper_parameters and state_dict) written to a local file named
TiRex, which load_model reads as a local path (patch size 4, 2 sLSTM blocks of width 16 with 2
heads, a training context of 32 points: 8 tokens per scan). Then 3 forecasts of a batch of 3
synthetic series (one with NaNs) for 8 and 12 points, as a user calls model.forecast."""

import os
import sys

import torch

sys.path.insert(0, "src")

from tirex import load_model  # noqa: E402
from tirex.models.tirex import TiRexZero  # noqa: E402

torch.manual_seed(0)

hyper_parameters = {
    "model_config": {
        "input_patch_size": 4,
        "output_patch_size": 4,
        "quantiles": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
        "block_kwargs": {"embedding_dim": 16, "num_heads": 2, "num_blocks": 2, "ffn_proj_factor": 2.0},
        "input_ff_dim": 32,
    },
    "train_ctx_len": 32,
}
weights = TiRexZero(backend="torch", **hyper_parameters)
for p in weights.parameters():
    torch.nn.init.normal_(p, std=0.1)
os.makedirs("_driver_ckpt", exist_ok=True)
torch.save({"hyper_parameters": hyper_parameters, "state_dict": weights.state_dict()}, "_driver_ckpt/TiRex")

model = load_model("_driver_ckpt/TiRex", device="cpu", backend="torch", compile=True)
t = torch.arange(40, dtype=torch.float32)
context = torch.stack([torch.sin(t / 3), 0.1 * t, torch.cos(t / 5)])
context[1, 5:9] = float("nan")
for step, horizon in enumerate((8, 8, 12)):
    quantiles, mean = model.forecast(context=context + 0.01 * step, prediction_length=horizon)
print(quantiles.shape, mean.shape, float(mean.abs().sum()))
