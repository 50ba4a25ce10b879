import torch


class Greedy:
    def run(self, logits):
        return logits.argmax(-1).cpu()  # [per-step] one of the engine's modes, chosen at start-up


class Sampling:
    def run(self, logits):
        return torch.multinomial(logits.softmax(-1), 1).cpu()  # [per-step]


class Beam:
    def run(self, logits):
        return logits.topk(4).indices.cpu()  # [per-step]


class Constrained:
    def run(self, logits):
        return logits.masked_fill(logits < 0, 0).argmax(-1).cpu()  # [per-step]


class Speculative:
    def run(self, logits):
        return logits[:, :2].argmax(-1).cpu()  # [per-step] the fifth mode: as often as the others


class Unused:
    def run(self, logits):
        return logits.max().item()  # [once] near miss: no branch makes the engine's backend one


class Engine:
    def __init__(self):
        self.backend = None

    def init_model(self, mode):
        if mode == "greedy":
            self.backend = Greedy()
        elif mode == "sampling":
            self.backend = Sampling()
        elif mode == "beam":
            self.backend = Beam()
        elif mode == "constrained":
            self.backend = Constrained()
        else:
            self.backend = Speculative()

    def decode(self, logits):
        return self.backend.run(logits)


def serve(mode, batches):
    engine = Engine()
    engine.init_model(mode)
    for logits in batches:
        engine.decode(logits)
