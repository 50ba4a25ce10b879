"""LeanRL PPO (continuous) with --compile on Pendulum-v1 (gymnasium's classic control, no
MuJoCo), CPU, 4 iterations of 16 steps, 2 minibatches, 2 epochs. wandb is stubbed (it only logs)."""

import runpy
import sys
import types

wandb = types.ModuleType("wandb")
wandb.init = lambda *a, **k: None
wandb.log = lambda *a, **k: None
sys.modules["wandb"] = wandb

sys.argv = ["ppo_continuous_action_torchcompile.py", "--compile", "--no-cuda", "--env-id", "Pendulum-v1",
            "--num-steps", "16", "--num-minibatches", "2", "--update-epochs", "2",
            "--total-timesteps", "64", "--measure-burnin", "1"]
runpy.run_path("leanrl/ppo_continuous_action_torchcompile.py", run_name="__main__")
