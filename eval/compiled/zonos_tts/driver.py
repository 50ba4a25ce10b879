"""Zonos's generate with the pure-torch transformer backbone, CPU: the real Zonos model class
built from a ZonosConfig as from_local builds it (bf16), then generate() on a synthetic prefix
conditioning (a cond and an uncond row, as prepare_conditioning concatenates them), cfg_scale 2.0,
min_p sampling, 12 new frames, no progress bar. generate compiles _decode_one_token itself
(torch.compile(dynamic=True), CUDA graphs being unavailable on the CPU).

The model is shrunk (2 layers of width 64, 4 heads, 2 KV heads; 9 codebooks kept) and randomly
initialised (the real checkpoint is downloaded from the hub). Replaced, because the compiled code
never uses them: the DAC autoencoder (a transformers DacModel downloaded from the hub; only its
num_codebooks = 9 is read by the model) and the text front end's imports (torchaudio, inflect,
kanjize, phonemizer/espeak, sudachipy), stubbed as empty modules; the prefix conditioner has no
conditioners (the prefix conditioning is passed in)."""

import sys
import types

import torch

for name in ("torchaudio", "inflect", "kanjize", "phonemizer", "phonemizer.backend", "sudachipy"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["inflect"].engine = lambda: None
sys.modules["kanjize"].number2kanji = None
sys.modules["phonemizer.backend"].EspeakBackend = None
sys.modules["sudachipy"].SplitMode = None


class _Dictionary:  # conditioning.py builds a tokenizer as a default argument, at import
    def __init__(self, **kwargs):
        pass

    def create(self):
        return None


sys.modules["sudachipy"].Dictionary = _Dictionary


class _DACStub:
    """What Zonos.__init__ and from_local read of DACAutoencoder."""

    num_codebooks = 9
    dac = torch.nn.Identity()


autoencoder = types.ModuleType("zonos.autoencoder")
autoencoder.DACAutoencoder = _DACStub
sys.modules["zonos.autoencoder"] = autoencoder

from zonos.backbone import BACKBONES  # noqa: E402
from zonos.config import BackboneConfig, PrefixConditionerConfig, ZonosConfig  # noqa: E402
from zonos.model import Zonos  # noqa: E402

torch.manual_seed(0)
config = ZonosConfig(
    backbone=BackboneConfig(d_model=64, n_layer=2, attn_mlp_d_intermediate=128,
                            attn_cfg={"num_heads": 4, "num_heads_kv": 2}),
    prefix_conditioner=PrefixConditionerConfig(conditioners=[], projection="none"),
)
model = Zonos(config, BACKBONES["torch"]).to("cpu", torch.bfloat16)
model.eval()
prefix = torch.randn(2, 6, 64, dtype=torch.bfloat16)
codes = model.generate(prefix, max_new_tokens=12, cfg_scale=2.0, batch_size=1,
                       sampling_params=dict(min_p=0.1), progress_bar=False)
print(codes.shape)
