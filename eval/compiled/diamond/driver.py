"""DIAMOND's world-model environment with compile_wm, CPU: the real WorldModelEnv, Denoiser,
DiffusionSampler and RewEndModel (tiny: 16x16 images, 2 conditioning frames, 8 channels), the two
predictors compiled as trainer.py lines 183-184 do, then reset() and 4 step()s of 2 environments
with random actions. The sampler's settings are config/trainer.yaml's (3 denoising steps, Euler,
no churn). The data loader is replaced by a stand-in that yields random segments (the real one
reads an Atari replay dataset); wandb, which src/utils.py imports to log, is stubbed.
envs/world_model_env.py is loaded by path: envs/__init__.py also imports the Atari env (ale_py)."""

import importlib.util
import sys
import types

import torch

sys.path.insert(0, "src")
wandb = types.ModuleType("wandb")
sys.modules["wandb"] = wandb

from data import Batch  # noqa: E402
from models.diffusion import Denoiser, DenoiserConfig, DiffusionSamplerConfig, InnerModelConfig  # noqa: E402
from models.rew_end_model import RewEndModel, RewEndModelConfig  # noqa: E402

spec = importlib.util.spec_from_file_location("world_model_env", "src/envs/world_model_env.py")
wme = importlib.util.module_from_spec(spec)
spec.loader.exec_module(wme)

torch.manual_seed(0)
N_ACT, N_COND, B = 4, 2, 2
denoiser = Denoiser(DenoiserConfig(
    InnerModelConfig(img_channels=3, num_steps_conditioning=N_COND, cond_channels=16, depths=[1, 1],
                     channels=[8, 8], attn_depths=[0, 0], num_actions=N_ACT),
    sigma_data=0.5, sigma_offset_noise=0.3)).eval()
rew_end_model = RewEndModel(RewEndModelConfig(lstm_dim=16, img_channels=3, img_size=16, cond_channels=16,
                                              depths=[1, 1], channels=[8, 8], attn_depths=[0, 0],
                                              num_actions=N_ACT)).eval()


class Loader:
    """What WorldModelEnv reads of its DataLoader: batch_sampler.batch_size and batches of segments."""

    batch_sampler = types.SimpleNamespace(batch_size=B)

    def __iter__(self):
        while True:
            obs = torch.rand(B, N_COND, 3, 16, 16) * 2 - 1
            act = torch.randint(0, N_ACT, (B, N_COND))
            z = torch.zeros(B, N_COND)
            yield Batch(obs, act, z, z.long(), z.long(), torch.ones(B, N_COND, dtype=torch.bool), [{}] * B, [])


cfg = wme.WorldModelEnvConfig(horizon=15, num_batches_to_preload=2,
                              diffusion_sampler=DiffusionSamplerConfig(num_steps_denoising=3, order=1, s_churn=0.0))
rl_env = wme.WorldModelEnv(denoiser, rew_end_model, Loader(), cfg)
rl_env.predict_next_obs = torch.compile(rl_env.predict_next_obs, mode="reduce-overhead")
rl_env.predict_rew_end = torch.compile(rl_env.predict_rew_end, mode="reduce-overhead")

obs, _ = rl_env.reset()
for _ in range(4):
    obs, rew, end, trunc, info = rl_env.step(torch.randint(0, N_ACT, (B,)))
print(obs.shape, rew, end)
