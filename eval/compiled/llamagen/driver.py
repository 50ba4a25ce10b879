"""LlamaGen's two compiled trainings, CPU, as their scripts run them (the steps are copied from
the scripts' loops, because main() needs torch.distributed with NCCL, an ImageFolder of ImageNet
or its pre-extracted codes, and LPIPS/VGG weights downloaded from the web):

1. the VQ tokenizer (tokenizer/tokenizer_image/vq_train.py): VQ_models["VQ-16"] with the
   script's defaults (codebook 16384 x 8, commit 0.25, entropy 0.0), compiled as line 167 does,
   in train mode; 3 generator steps on synthetic 32x32 images. Replaced: VQLoss (perceptual
   LPIPS, whose VGG weights are downloaded, and the discriminator) by its reconstruction and
   codebook terms; DDP (one process) is left out.
2. the class-conditional GPT (autoregressive/train/train_c2i.py): the real Transformer, shrunk
   (2 layers of width 64, 4 heads, a 4x4 token grid, 10 classes, 64 codes), compiled as line 168
   does, in train mode; 3 steps on synthetic codes and labels, with backward, gradient clipping,
   AdamW and the loop's loss.item()."""

import torch
import torch.nn.functional as F

from autoregressive.models.gpt import ModelArgs, Transformer
from tokenizer.tokenizer_image.vq_model import VQ_models

torch.manual_seed(0)

# 1. VQ tokenizer training
vq_model = VQ_models["VQ-16"](codebook_size=16384, codebook_embed_dim=8, commit_loss_beta=0.25,
                              entropy_loss_ratio=0.0, dropout_p=0.0)
optimizer = torch.optim.Adam(vq_model.parameters(), lr=1e-4, betas=(0.9, 0.95))
# The usage buffer is registered as an nn.Parameter, so it requires grad: on the CPU the
# in-place shift at vq_model.py:243 fails on that leaf, eager or compiled (the script's
# vq_model.to(device) on a GPU makes a non-leaf copy instead, whose history then reaches the
# next step's backward under compile). Here it is detached: the buffer never enters the loss.
vq_model.quantize.codebook_used = vq_model.quantize.codebook_used.detach()
vq_model = torch.compile(vq_model)  # vq_train.py:167
vq_model.train()
running_loss = 0
for step in range(3):
    imgs = torch.rand(2, 3, 32, 32) * 2 - 1
    optimizer.zero_grad()
    recons_imgs, codebook_loss = vq_model(imgs)
    loss_gen = F.mse_loss(recons_imgs, imgs) + codebook_loss[0] + codebook_loss[1] + codebook_loss[2]
    loss_gen.backward()
    torch.nn.utils.clip_grad_norm_(vq_model.parameters(), 1.0)
    optimizer.step()
    running_loss += loss_gen.item()
print("vq", running_loss, codebook_loss[3])

# 2. c2i GPT training
model = Transformer(ModelArgs(dim=64, n_layer=2, n_head=4, vocab_size=64, block_size=16, num_classes=10,
                              cls_token_num=1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=5e-2, betas=(0.9, 0.95))
model = torch.compile(model)  # train_c2i.py:168
model.train()
running_loss = 0
for step in range(3):
    x = torch.randint(0, 64, (2, 16))
    y = torch.randint(0, 10, (2,))
    z_indices = x.reshape(x.shape[0], -1)
    c_indices = y.reshape(-1)
    _, loss = model(cond_idx=c_indices, idx=z_indices[:, :-1], targets=z_indices)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    running_loss += loss.item()
print("gpt", running_loss)
