import torch
import torch.nn as nn


class Matcher(nn.Module):
    def match(self, scores, boxes, where="gpu"):
        if where == "cpu":
            scores = scores.cpu()  # [once] only the call in the out-of-memory handler passes "cpu"
            boxes = boxes.cpu()  # [once] the same branch
        keep = scores > 0.5
        picked = boxes[keep]  # [per-step] near miss: after the branch, every call runs it
        return picked

    def score(self, scores, boxes, mode="fast"):
        if mode == "exact":
            print(scores.sum().item())  # [per-step] near miss: the per-step call passes "exact" too
        return scores

    def pick(self, scores, boxes, mode="fast"):
        if mode == "exact":
            print(boxes.sum().item())  # [per-step] near miss: a call passes a value not known here
        return boxes

    def forward(self, scores, boxes, kind):
        out = []
        for i in range(scores.shape[0]):
            try:
                got = self.match(scores[i], boxes[i])
                print(got.sum().item())  # [per-step] near miss: the try body runs every step
            except RuntimeError as e:
                if "out of memory" not in str(e):
                    raise
                print(scores[i].max().item())  # [once] the handler runs after an error only
                got = self.match(scores[i], boxes[i], "cpu")
            finally:
                print(boxes[i].min().item())  # [per-step] near miss: `finally` runs every time
            out.append(got)
            self.score(scores[i], boxes[i], "exact")
            self.pick(scores[i], boxes[i], mode=kind)
        return out


def train(model, loader, opt):
    it = iter(loader)
    for step in range(1000):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
            print(x.cuda().sum().item())  # [per-step] near miss: restarting an iterator is no error path
        loss = model(x.cuda(), y.cuda()).sum()  # [per-step] the step itself
        opt.zero_grad()
        loss.backward()
        opt.step()


class DeformAttn(nn.Module):
    def forward(self, value, shapes):
        try:
            out = torch.ops.msda.forward(value, shapes)
            print(out.sum().item())  # [per-step] near miss: the try body runs every step
        except:
            out = sample_pytorch(value, shapes)  # the compiled op failed: a fallback, not a step
            print(out.max().item())  # [once] a bare `except:` around no iterator runs after an error only
        return out


def sample_pytorch(value, shapes):
    return value.split(shapes.tolist())  # [once] reached only from the fallback


def train_bare(model, loader, opt):
    it = iter(loader)
    for step in range(1000):
        try:
            x = next(it)
        except:
            it = iter(loader)
            x = next(it)
            print(x.cuda().sum().item())  # [per-step] near miss: a bare `except:` restarting an iterator
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()


def save_frames(frames, path, retry=5):
    for _ in range(retry):
        try:
            pixels = frames.clamp(-1, 1).cpu()  # [once] a retry loop: it runs again only after an error
            write(pixels, path)
            return path
        except OSError:
            continue
    return None


def save_each(frames, path, retry=5):
    for _ in range(retry):
        try:
            pixels = frames.clamp(-1, 1).cpu()  # [per-step] near miss: the try body goes on to the next pass
            write(pixels, path)
        except OSError:
            continue
    return None


def write(pixels, path):
    pass


def export(model, x):
    out = model(x.cuda())
    save_frames(out, "a.mp4")
    save_each(out, "b.mp4")


class Checked(nn.Module):
    def forward(self, ids, mask):
        assert ids.dim() == 2, f"ids {ids.cpu()} must be 2-d"  # [once] the message: only on failure
        assert (mask.sum() > 0).item(), "empty mask"  # [per-step] near miss: the test runs every call
        return ids[mask > 0]  # [per-step] a boolean mask
