import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

    def _next_token(self, seq):
        return self(seq[:, -1:]).argmax(-1)

    def generate(self, prompt, steps):
        seq = prompt.clone()
        for _ in range(steps):
            nxt = self._next_token(seq)
            seq = torch.cat([seq, nxt], 1)
            print(nxt.sum().item())  # [per-token] the decoding loop, through the module's own method
        assert (seq >= 0).all()  # [per-epoch] after the decoding loop: once per generate() call
        return seq

    def score_all(self, xs):
        total = []
        for x in xs:
            out = self._next_token(x)
            total.append(out)
            print(out.max().item())  # [per-step] near miss: nothing is fed back
        assert (total[0] >= 0).all()  # [per-step] near miss: its loop does not decode
        return total

    def score_rows(self, feats):
        scores = torch.full((feats.size(0), 4), -100.0).to(feats.device)  # [per-step] near miss: rows written by index, no decoding
        for i in range(feats.size(0)):
            sims = feats[i]
            out = self.fc(sims[None])
            scores[i, :] = out[0]
        return scores

    def generate_into_state(self, steps):
        for _ in range(steps):
            logits = self(self.buf[:, -1:])
            nxt = logits.argmax(-1)
            self.buf = torch.cat([self.buf, nxt], 1)
            print(nxt.sum().item())  # [per-token] fed back through an attribute of self

    def accumulate(self, steps):
        for _ in range(steps):
            batch = next(self.batches).cuda()
            out = self(batch)
            self.last = out.sum().item()  # [per-step] near miss: a statistic stored on self is not what self.batches reads

    def refine(self, desc0, desc1):
        for i in range(len(self.layers)):
            desc0, desc1 = self.layers[i](desc0, desc1)
            keep = desc0.norm(dim=-1) > 0
            desc0 = desc0 * keep[..., None]
            print(desc0.sum().item())  # [per-step] near miss: a stack of layers, another module each iteration
        for i in range(len(self.layers)):
            desc0 = self.layers[i](desc0, desc1)
            scores = self.heads[i](desc0)
            keep = self._mask(scores)
            desc0 = desc0[:, keep]
            print(desc0.sum().item())  # [per-step] near miss: a helper of the module prunes what a layer made
        for block in self.blocks:
            out = block(desc1)
            desc1 = out.softmax(-1)
            print(desc1.max().item())  # [per-step] near miss: the same over the blocks themselves
        for step in range(4):
            logits = self.step(desc1)
            desc1 = logits.softmax(-1)
            print(desc1.max().item())  # [per-token] decoding: the loop's name is not the module's

    def step(self, x):
        return self.fc(x)

    def _mask(self, scores):
        return scores.argmax(-1)


def evaluate(loader):
    model = LM().cuda()
    for batch in loader:
        batch = batch.cuda(non_blocking=True)
        model.generate(batch, 8)
        model.score_all([batch])
        model.score_rows(batch)
        model.generate_into_state(8)
        model.accumulate(4)
        model.refine(batch, batch)


def sample_prompts(prompts, steps):
    model = LM().cuda()
    for prompt in prompts:
        seq = torch.tensor(prompt).cuda()  # [per-epoch] once per prompt: the loop runs a token loop per pass
        for _ in range(steps):
            logits = model(seq[:, -1:])
            nxt = logits.argmax(-1)
            seq = torch.cat([seq, nxt], 1)
            print(nxt.sum().item())  # [per-token] the token loop
        print(seq.shape, seq.max().item())  # [per-epoch] after it, once per prompt


def translate(loader, steps):
    model = LM().cuda()
    for batch in loader:
        seq = batch.cuda()
        for _ in range(steps):
            logits = model(seq[:, -1:])
            nxt = logits.argmax(-1)
            seq = torch.cat([seq, nxt], 1)
        print(seq.max().item())  # [per-step] near miss: a loop over a loader's batches steps, whatever it runs
