"""EfficientMoE's JiTMoE trained for one epoch of 3 steps on the CPU by its own engine_jit.train_one_epoch:
the Denoiser of denoiser.py, its JiT of model_jit.py with `@torch.compile` on every block's forward and on
the final layer, the DSMoE feed-forwards of moe.py in every other block (interleave), AdamW over
misc.add_weight_decay's groups and the EMA update, as main_jit.py sets them up (lines 166-209).

Shrunk: a registry entry of the driver's own, 'JiT-T/16-E4', built like the program's JiT_B_16_E16 (the same
JiT class and moe_config keys, interleaved MoE, shared expert, group-limited top-2 routing) with depth 4,
width 64, 2 heads, 4 experts in 2 groups, 64x64 images of 16x16 patches, 4 in-context tokens from block 2;
batch 2, 10 classes.

Replaced or stubbed: ImageNet (main_jit.py's ImageFolder) by random uint8 images and labels in a DataLoader,
so main_jit.py itself (torchvision, tensorboard) is not run; cv2, torch_fidelity and util.fsdp_utils (only
imported by engine_jit for evaluation and FSDP) by empty modules. The program is written for CUDA: its
attention builds its zero bias with `.cuda()` (model_jit.py:98) and the training loop calls
`torch.cuda.synchronize()`; here `Tensor.cuda` returns the tensor and `torch.cuda.synchronize` does
nothing, so everything stays on the CPU. Inductor cannot compile that `.cuda()` on a CPU-only torch (Dynamo
puts the call in the graph, and inductor lowers it to a copy to a CUDA device: "Torch not compiled with CUDA
enabled", the first run), so the program's `@torch.compile` decorators get `backend="eager"` (set before
model_jit is imported): Dynamo's tracing, its graph breaks and its recompilations are the same front end
for every backend, and the graph then runs the (patched) `.cuda()` as written."""

import os
import sys
import types
from argparse import Namespace

import torch

sys.path.insert(0, os.path.join(os.getcwd(), "JiTMoE"))
for name in ("cv2", "torch_fidelity"):
    sys.modules[name] = types.ModuleType(name)
_fsdp = types.ModuleType("util.fsdp_utils")
_fsdp.fsdp_ema_update = lambda *a, **k: None
sys.modules["util.fsdp_utils"] = _fsdp

torch.Tensor.cuda = lambda self, *a, **k: self
torch.cuda.synchronize = lambda *a, **k: None

_compile = torch.compile


def _compile_eager(model=None, **kw):
    kw["backend"] = "eager"
    return _compile(model, **kw) if model is not None else (lambda m: _compile(m, **kw))


torch.compile = _compile_eager

import copy  # noqa: E402

import util.misc as misc  # noqa: E402
from denoiser import Denoiser  # noqa: E402
from engine_jit import train_one_epoch  # noqa: E402
from model_jit import JiT, JiT_models  # noqa: E402


def JiT_T_16_E4(**kwargs):
    moe_config = {"num_experts": 4, "hidden_size": 64, "moe_intermediate_size": 64, "n_group": 2,
                  "topk_group": 2, "num_experts_per_tok": 2, "routed_scaling_factor": 2.5, "interleave": True,
                  "use_shared_expert": True, "proj_drop": 0.0}
    return JiT(depth=4, hidden_size=64, num_heads=2, bottleneck_dim=16, in_context_len=4, in_context_start=2,
               patch_size=16, moe_config=moe_config, **kwargs)


JiT_models["JiT-T/16-E4"] = JiT_T_16_E4

# main_jit.py's defaults, shrunk (model, image size, batch, classes, epochs)
args = Namespace(model="JiT-T/16-E4", img_size=64, attn_dropout=0.0, proj_dropout=0.0, epochs=2,
                 warmup_epochs=1, batch_size=2, lr=1e-4, min_lr=0.0, lr_schedule="constant",
                 weight_decay=0.0, ema_decay1=0.9999, ema_decay2=0.9996, P_mean=-0.8, P_std=0.8,
                 noise_scale=1.0, t_eps=5e-2, label_drop_prob=0.1, sampling_method="heun",
                 num_sampling_steps=50, cfg=1.0, interval_min=0.0, interval_max=1.0, class_num=10,
                 log_freq=100)

torch.manual_seed(0)
device = torch.device("cpu")
model = Denoiser(args)
model.to(device)
model_without_ddp = model
param_groups = misc.add_weight_decay(model_without_ddp, args.weight_decay)
optimizer = torch.optim.AdamW(param_groups, lr=args.lr, betas=(0.9, 0.95))
model_without_ddp.ema_params1 = copy.deepcopy(list(model_without_ddp.parameters()))
model_without_ddp.ema_params2 = copy.deepcopy(list(model_without_ddp.parameters()))

images = torch.randint(0, 256, (6, 3, args.img_size, args.img_size), dtype=torch.uint8)
labels = torch.randint(0, args.class_num, (6,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=args.batch_size)
train_one_epoch(model, model_without_ddp, loader, optimizer, device, 0, log_writer=None, args=args)
