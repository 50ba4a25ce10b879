import torch


def verify(logits, candidates, greedy):
    """A speculative decoder's check of its draft (EAGLE's `evaluate_posterior`): the
    accepted length is a GPU value on one path and a counter on the other."""
    if greedy:
        match = (candidates[:, 1:] == logits[:, :-1].argmax(-1)).int()
        accept_length = match.cumprod(1).sum(1).max()
        if accept_length == 0:
            best = torch.tensor(0, device=candidates.device)  # [per-step] a GPU value's test: every draft can miss
        else:
            best = match.sum(1).argmax()
        return best, accept_length
    accept_length = 1
    for i in range(1, candidates.shape[1]):
        if i != accept_length:
            break
        accept_length += 1
    return 0, accept_length


def generate(model, ids, steps):
    seen = 0
    for _ in range(steps):
        logits = model(ids)
        if seen == 0:
            torch.tensor([1.0], device="cuda").sum().item()  # [once] near miss: the counter's first step
        seen += 1
        best, n = verify(logits, ids, True)
        ids = torch.cat([ids, logits[:, -1:].argmax(-1)], 1)
    return ids
