"""A facade over the inferencers (mmagic's `Inferencers`): its `__call__`, hot by its name,
hands the user's request to the inferencer its task picked, whose framework runs it once per
call. Near miss: a callable that hands each call to a callable of no such framework."""
from infer_pkg.inferencer import ImageInferencer, Scorer


class Inferencers:
    def __init__(self, task):
        if task == "image":
            self.inferencer = ImageInferencer()
        else:
            self.inferencer = None

    def __call__(self, **kwargs):
        return self.inferencer(**kwargs)


class Criterion:
    def __init__(self):
        self.scorer = Scorer()

    def __call__(self, pred):
        return self.scorer(pred) + pred.cuda().sum().item()  # [per-step] near miss: hot by its name still
