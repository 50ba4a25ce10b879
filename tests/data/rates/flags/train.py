"""A trainer whose flag holds every N steps (`global_step % interval == 0`, or off), made
by a method, kept in a local, passed to another module's optimizer; near misses: a flag
that one path sets True, and a parameter another call passes True."""
import torch
from dataclasses import dataclass

from flags_pkg.optim import Optimizer


@dataclass
class Trainer:
    model: torch.nn.Module
    optim: Optimizer
    cfg: object
    global_step: int = 0

    def should_log_metrics(self) -> bool:
        if self.cfg.wandb is None:
            return False
        return self.global_step % self.cfg.log_interval == 0

    def should_dump(self) -> bool:
        if self.cfg.debug:
            return True
        return self.global_step % self.cfg.dump_interval == 0

    def train_step(self, batch):
        loss = self.model(batch.cuda()).sum()
        loss.backward()
        flag = self.should_log_metrics()
        metrics = self.optim.collect(self.global_step, collect_param_metrics=flag)
        self.optim.step()
        self.optim.after()
        self.optim.report(always=flag)
        if flag:
            print(loss.item())  # [every-n-steps]
        if self.should_dump():
            print(loss.mean().item())  # [per-step]
        return metrics

    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
            self.optim.report(always=True)
            self.global_step += 1
