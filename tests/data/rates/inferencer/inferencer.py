"""An mmengine inferencer serves one call of the user's: `__call__` and the methods it runs
(`preprocess`, `forward`, `visualize`, `postprocess`) run once per request, though `__call__`
and `forward` are hot by their names; a loop over the request's predictions adds nothing.
Near misses: a callable object of no such framework, and a metric's `process`, stay per step."""
import torch
from mmengine.evaluator import BaseMetric
from mmengine.infer import BaseInferencer


class ImageInferencer(BaseInferencer):
    def __call__(self, inputs, **kwargs):
        with torch.no_grad():
            return self.base_call(inputs)

    def base_call(self, inputs):
        data = self.preprocess(inputs)
        preds = self.forward(data)
        imgs = self.visualize(preds)
        return self.postprocess(preds, imgs)

    def preprocess(self, inputs):
        return torch.tensor(inputs).cuda()  # [once] the request's inputs

    def forward(self, data):
        preds = self.model(data)
        print(preds.sum().item())  # [once] the model runs once per call
        return preds

    def visualize(self, preds):
        return [p.cpu() for p in preds]  # [once] the request's images

    def postprocess(self, preds, imgs):
        return [self._pred2dict(p) for p in preds]

    def _pred2dict(self, pred):
        return {"score": pred.max().item()}  # [once] one prediction of the request


class Scorer:
    def __call__(self, pred):
        return pred.max().item()  # [per-step] near miss: a callable object of no inferencer


class Psnr(BaseMetric):
    def process(self, data_batch, data_samples):
        for s in data_samples:
            self.results.append(s["pred"].mean().item())  # [per-step] near miss: a metric's per-batch hook
