"""nanoVLM's training step with compile=True, CPU: a tiny VLMConfig (ViT 32x32 images, patch 8,
width 32, 2 blocks; LM width 32, 2 blocks, vocabulary 102), torch.compile(model) as
train.py:342 does, then train.py's step (lines 394-428): the forward under bfloat16 autocast,
loss / accumulation, backward, clip_grad_norm_, optimizer.step(), loss.item(); 4 steps.
data.processors is replaced by a stand-in: its tokenizer is loaded from the Hugging Face hub, and
the model only reads `tokenizer.image_token_id` from it."""

import sys
import types

import torch

IMAGE_TOKEN = 100
processors = types.ModuleType("data.processors")
processors.get_tokenizer = lambda *a, **k: types.SimpleNamespace(image_token_id=IMAGE_TOKEN)
sys.modules["data.processors"] = processors

from models.config import VLMConfig  # noqa: E402
from models.vision_language_model import VisionLanguageModel  # noqa: E402

torch.manual_seed(0)
cfg = VLMConfig(vit_hidden_dim=32, vit_inter_dim=64, vit_patch_size=8, vit_img_size=32, vit_n_heads=2, vit_n_blocks=2,
                lm_hidden_dim=32, lm_inter_dim=64, lm_max_position_embeddings=64, lm_base_vocab_size=100,
                extra_token_amount=2, lm_vocab_size=102, lm_n_heads=4, lm_n_kv_heads=2, lm_n_blocks=2,
                lm_max_length=64, mp_pixel_shuffle_factor=2, mp_image_token_length=4)
model = VisionLanguageModel(cfg, load_backbone=False)
model = torch.compile(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
accumulation = 2

B, T, img_tokens = 2, 12, (32 // 8) ** 2 // 2 ** 2  # one image per sample, 4 tokens after pixel shuffle
for step in range(4):
    input_ids = torch.randint(0, 100, (B, T))
    input_ids[:, 1:1 + img_tokens] = IMAGE_TOKEN
    images = [torch.randn(1, 3, 32, 32) for _ in range(B)]
    attention_mask = torch.ones(B, T, dtype=torch.long)
    attention_mask[1, -2:] = 0
    labels = input_ids.clone()
    labels[:, :1 + img_tokens] = -100
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        _, loss = model(input_ids, images, attention_mask=attention_mask, targets=labels)
    loss = loss / accumulation
    loss.backward()
    if (step + 1) % accumulation == 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        optimizer.zero_grad()
    batch_loss = loss.item()
print("loss", batch_loss)
