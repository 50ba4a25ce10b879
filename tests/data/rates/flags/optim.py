"""An optimizer that collects metrics only when its caller's flag says so (OLMo's
`clip_grads_and_collect_metrics(collect_param_metrics=...)`); `[cold]`: not hot, whatever
rate the file alone gives its guarded line."""
import torch


class Optimizer(torch.optim.Optimizer):
    @torch.no_grad()
    def collect(self, global_step, collect_param_metrics: bool = True):
        self._collecting = collect_param_metrics
        for group in self.param_groups:
            for p in group["params"]:
                if collect_param_metrics:
                    print(p.grad.norm().item())  # [every-n-steps]
        return self._norms(collect_param_metrics=collect_param_metrics)

    def _norms(self, collect_param_metrics: bool = True):
        if collect_param_metrics:
            return [p.norm().item() for g in self.param_groups for p in g["params"]]  # [cold]
        return None

    def after(self):
        if self._collecting:
            print(self.param_groups[0]["params"][0].sum().item())  # [cold]

    def report(self, always: bool):
        if always:
            print(self.param_groups[0]["params"][0].max().item())  # [per-step]
