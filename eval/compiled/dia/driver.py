"""Dia's generate with use_torch_compile=True, as example/simple.py calls it, on the CPU: the real
Dia class built from a DiaConfig (float32), then generate() on a short two-speaker text, no audio
prompt, 40 frames at most; generate compiles its bound method _decoder_step itself
(torch.compile(mode="default")) and calls it once per frame.

The model is shrunk (encoder: 1 layer of width 32; decoder: 2 layers of width 32, 4 query heads
over 2 KV heads; text and audio lengths 128; the 9 channels, delay pattern and vocabularies are the
defaults) and randomly initialised (normal, std 0.02: DenseGeneral's weights are torch.empty until
a checkpoint is loaded; the real one is downloaded from the hub). Replaced, because the compiled
code never uses them: the DAC codec (descript-audio-codec, downloaded; Dia only calls it to encode
an audio prompt and to decode the generated codes) by a stub whose decode returns its input, and
torchaudio (imported for load_audio) by an empty module."""

import sys
import types

import torch

sys.modules["dac"] = types.ModuleType("dac")
sys.modules["torchaudio"] = types.ModuleType("torchaudio")

from dia.config import DataConfig, DecoderConfig, DiaConfig, EncoderConfig, ModelConfig  # noqa: E402
from dia.model import Dia  # noqa: E402


class _Quantizer:
    def from_codes(self, codes):
        return (codes.float(),)


class _DACStub:
    """What dia.audio.decode reads of the DAC model."""

    quantizer = _Quantizer()

    def decode(self, z):
        return z


torch.manual_seed(0)
config = DiaConfig(
    model=ModelConfig(
        encoder=EncoderConfig(n_layer=1, n_embd=32, n_hidden=64, n_head=2, head_dim=16),
        decoder=DecoderConfig(n_layer=2, n_embd=32, n_hidden=64, gqa_query_heads=4, kv_heads=2,
                              gqa_head_dim=16, cross_query_heads=2, cross_head_dim=16),
    ),
    data=DataConfig(text_length=128, audio_length=128),
)
dia = Dia(config, compute_dtype="float32", device=torch.device("cpu"))
with torch.no_grad():
    for p in dia.model.parameters():
        p.normal_(0.0, 0.02)
dia.model.eval()
dia.dac_model = _DACStub()
text = "[S1] Dia is an open weights text to dialogue model. [S2] Wow. Amazing. (laughs)"
out = dia.generate(text, max_tokens=40, use_torch_compile=True)
print(None if out is None else out.shape)
