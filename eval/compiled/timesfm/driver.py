"""TimesFM 2.5's PyTorch forecast with torch_compile=True (the default), CPU: the real
TimesFM_2p5_200M_torch wrapper, load_checkpoint (which compiles model.forward), compile() with a
ForecastConfig, then forecast() of 2 series of 50 points over a 200-step horizon (one prefill and
one autoregressive decode step). The model definition is shrunk (2 layers of width 64 instead of
20 of 1280; the patch and output sizes are kept) and its checkpoint is the randomly initialised
model saved by the wrapper's own _save_pretrained (the real one is downloaded from the hub)."""

import dataclasses
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, "src")

from timesfm import configs  # noqa: E402
from timesfm.timesfm_2p5 import timesfm_2p5_torch as tt  # noqa: E402

torch.manual_seed(0)
R, T = configs.ResidualBlockConfig, configs.TransformerConfig
tt.TimesFM_2p5_200M_torch_module.config = dataclasses.replace(
    tt.TimesFM_2p5_200M_torch_module.config,
    tokenizer=R(input_dims=64, hidden_dims=64, output_dims=64, use_bias=True, activation="swish"),
    stacked_transformers=configs.StackedTransformersConfig(num_layers=2, transformer=T(
        model_dims=64, hidden_dims=64, num_heads=4, attention_norm="rms", feedforward_norm="rms", qk_norm="rms",
        use_bias=False, use_rotary_position_embeddings=True, ff_activation="swish", fuse_qkv=True)),
    output_projection_point=R(input_dims=64, hidden_dims=64, output_dims=1280, use_bias=False, activation="swish"),
    output_projection_quantiles=R(input_dims=64, hidden_dims=64, output_dims=10240, use_bias=False,
                                  activation="swish"),
)

with tempfile.TemporaryDirectory() as ckpt:
    tt.TimesFM_2p5_200M_torch(torch_compile=False)._save_pretrained(ckpt)
    tfm = tt.TimesFM_2p5_200M_torch(torch_compile=True)
    tfm.load_checkpoint(ckpt)
tfm.compile(configs.ForecastConfig(max_context=64, max_horizon=256, per_core_batch_size=2))
t = np.arange(50, dtype=np.float32)
point, quantiles = tfm.forecast(horizon=200, inputs=[np.sin(t / 5), np.cos(t / 7) + 2])
print(point.shape, quantiles.shape)
