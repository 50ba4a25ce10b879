"""What a value is and where it lives, where new users tripped (issue 34, item 5): Python
values taken for tensors, a script's CPU default device, test modules that never reach a
GPU, code that runs on the host side of a DataLoader. Each case is a small project checked
as `synclint check DIR` checks it, its findings marked inline (`# error: SYN105`); each
near-miss (silent) has a twin where the value IS a CUDA tensor (reported)."""

import textwrap
from pathlib import Path

from synclint.registry import all_rules
from synclint.run.runner import check_files
from synclint.testing import expectations


def check(tmp_path: Path, files: dict) -> None:
    """Write `files` (name -> source) under `tmp_path`, check them as one project, and compare
    the findings (file, row, code) with the inline marks."""
    paths = []
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        paths.append(p)
    result = check_files([str(p) for p in paths], all_rules())
    assert not result.errors, result.errors
    got = {(Path(f.filename).resolve().relative_to(tmp_path.resolve()).as_posix(), f.row, f.code)
           for f in result.findings}
    expected = {(p.relative_to(tmp_path).as_posix(), row, code)
                for p in paths for (row, code) in expectations(p.read_text(encoding="utf-8"))}
    assert got == expected, f"missing {sorted(expected - got)}, unexpected {sorted(got - expected)}"


# --------------------------------------------------------------------------- test modules

MODEL = """
import torch
from torch import nn

MODELS = {}


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x).softmax(-1)

    @torch.no_grad()
    def predict(self, batch):
        return [self(x) for x in batch["inputs"]]


def build(cfg):
    return MODELS[cfg["type"]](**cfg)
"""


def test_a_test_module_that_never_reaches_a_gpu_runs_on_the_cpu(tmp_path):
    # mmaction2's recognizer tests: the model and its inputs never leave the host
    check(tmp_path, {
        "model.py": MODEL,
        "test_scorer.py": """
            import torch
            from model import build


            def test_scores_are_probabilities():
                model = build({"type": "Scorer"})
                score = model.predict({"inputs": [torch.rand(3, 4)]})[0]
                assert torch.min(score) >= 0
                assert score.sum(-1).allclose(torch.ones(3))
                assert score[0].argmax().item() in (0, 1)
                for param in model.parameters():
                    assert torch.equal(param, param.clone())
            """,
    })


def test_a_test_module_that_moves_to_the_gpu_is_still_checked(tmp_path):
    check(tmp_path, {
        "model.py": MODEL,
        "test_scorer.py": """
            import torch
            from model import build


            def test_scores_are_probabilities():
                model = build({"type": "Scorer"})
                score = model.predict({"inputs": [torch.rand(3, 4, device="cuda")]})[0]
                assert torch.min(score) >= 0  # error: SYN105
            """,
    })


def test_a_module_named_like_a_test_that_is_a_script_is_not_a_test(tmp_path):
    # faster-rcnn's `test_net.py` evaluates a model on its default device: not test code
    check(tmp_path, {
        "model.py": MODEL,
        "test_net.py": """
            import torch
            from model import build


            def evaluate(model, batches):
                for x in batches:
                    score = model.predict(x)[0]
                    if torch.min(score) < 0:  # error: SYN105
                        print("bad")


            if __name__ == "__main__":
                evaluate(build({"type": "Scorer"}), [{"inputs": [torch.rand(3, 4, device="cuda")]}])
            """,
    })


# --------------------------------------------------------------------------- a model moved to the host

EXPORT = """
import argparse

import torch
from model import build


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=str, default={default!r})
    return parser.parse_args()


def main():
    args = parse_args()
    device = {device}
    model = build({{"type": "Scorer"}})
    model.to(device)
    x = torch.randn(1, 4)
    x = x.clamp(-3, 3).to(device){copy}
    out = model(x)[0].score.detach().cpu(){read}
    torch.onnx.export(model, x, "model.onnx")


if __name__ == "__main__":
    main()
"""


def test_what_a_model_moved_to_the_cpu_computes_lives_on_the_host(tmp_path):
    # mmaction2's ONNX exporters run with `--device cpu`: a model built by a registry (its
    # class unknown), moved to the CPU in place, computes host values, its outputs' fields too
    check(tmp_path, {"model.py": MODEL, "export.py": EXPORT.format(
        default="cpu", device='torch.device("cpu")', copy="", read="")})


def test_what_a_model_moved_to_the_gpu_computes_is_checked(tmp_path):
    check(tmp_path, {"model.py": MODEL, "export.py": EXPORT.format(
        default="cpu", device='torch.device("cuda")', copy="  # error: SYN304", read="  # error: SYN103")})


def test_a_device_option_that_defaults_to_the_cpu_may_hold_the_gpu(tmp_path):
    # makemore defaults `--device` to "cpu" and is run with `--device cuda` (the corpus labels
    # its GPU run): the option holds either device
    check(tmp_path, {"model.py": MODEL, "export.py": EXPORT.format(
        default="cpu", device="args.device", copy="  # error: SYN304", read="  # error: SYN103")})


# --------------------------------------------------------------------------- the host side of a DataLoader

SOUND = """
import random

import torch
from torch.utils.data import Dataset


def is_clipped(audio):
    return bool((audio.abs() > 0.99).any()){mark_clip}


def snr_mixer(clean, noise):
    mixed = clean + noise
    clipped = mixed.abs() > 0.99
    if clipped.any(){mark_any}
        mixed[clipped] = mixed[clipped] / 2{mark_mask}
    return mixed


def mix_samples(wavs):
    perm = torch.randperm(len(wavs))
    return snr_mixer(wavs, wavs[perm]){mark_index}


class SoundDataset(Dataset):
    def __init__(self, probs):
        self.probs = probs

    def sample_file(self, rng):
        return torch.multinomial(self.probs, 1, generator=rng).item()

    def __getitem__(self, index):
        return torch.rand(16) * self.sample_file(None)

    def __len__(self):
        return 10

    def collater(self, samples):
        wavs = torch.stack(samples){move}
        if is_clipped(wavs):
            wavs = wavs / 2
        return mix_samples(wavs)
"""


def test_helpers_reached_only_from_a_collate_function_or_getitem_run_on_the_host(tmp_path):
    # audiocraft's SoundDataset.collater -> mix_samples -> snr_mixer, AudioDataset.__getitem__
    # -> sample_file: DataLoader workers' code, on host tensors
    check(tmp_path, {"sound.py": SOUND.format(mark_clip="", mark_any=":", mark_mask="", mark_index="",
                                              move="")})


def test_the_same_helpers_on_tensors_known_to_be_on_the_gpu_are_checked(tmp_path):
    check(tmp_path, {"sound.py": SOUND.format(
        mark_clip="  # error: SYN104", mark_any=":  # error: SYN105", mark_mask="  # error: SYN202",
        mark_index="  # error: SYN305", move=".cuda()")})


def test_a_helper_the_training_step_also_calls_is_not_host_side(tmp_path):
    check(tmp_path, {
        "sound.py": SOUND.format(mark_clip="  # error: SYN104", mark_any=":", mark_mask="", mark_index="",
                                 move=""),
        "train.py": """
            import torch
            from sound import is_clipped


            def train(model, loader):
                for x in loader:
                    y = model(x.cuda(non_blocking=True))
                    if is_clipped(y):
                        print("clipped")
            """,
    })


MAPPER = """
import torch
from detectron2.data import DatasetMapper


class CustomDatasetMapper(DatasetMapper):
    def __call__(self, dataset_dict):
        dataset_dict = super().__call__(dataset_dict)
        classes = dataset_dict["instances"].gt_classes
        dataset_dict["pos_category_ids"] = sorted(set(classes.tolist())){mark}
        return dataset_dict
"""


def test_a_dataset_mappers_call_runs_on_the_host(tmp_path):
    # Detic's CustomDatasetMapper: detectron2 calls a DatasetMapper in DataLoader workers
    check(tmp_path, {"mapper.py": MAPPER.format(mark=""), "other.py": "import mapper\n"})


# --------------------------------------------------------------------------- Python values taken for tensors

def test_a_method_no_tensor_has_refutes_an_assumed_tensor(tmp_path):
    # detectron2's `Instances.has("scores")` is a bool: no torch.Tensor has `has`
    check(tmp_path, {"heads.py": """
        import torch
        from torch import nn


        class Heads(nn.Module):
            def forward(self, features, proposals):
                if len(proposals) > 0 and proposals[0].has("scores"):
                    scores = [p.get("scores") for p in proposals]
                if proposals[0].gt(0.5).any():  # error: SYN105
                    return features
                return features * 2
        """})


def test_a_tensor_is_never_indexed_by_a_string(tmp_path):
    # mmaction2's `img_metas[ind]["img_key"]`: a dict's item, whatever `img_metas` was taken for
    check(tmp_path, {"head.py": """
        import torch
        from torch import nn


        class Head(nn.Module):
            def forward(self, x, img_metas):
                for ind in range(len(x)):
                    key = img_metas[ind]["img_key"]
                    video_id, timestamp = key.split(",")
                    stamp = int(timestamp)
                    count = int(x[ind].sum())  # error: SYN104
                return x
        """})


def test_a_type_test_narrows_to_a_python_number(tmp_path):
    # audiocraft's `get_alpha_bar(step)`: under `if type(step) is int:`, `step + 1` is an int
    check(tmp_path, {"schedule.py": """
        import torch


        class Schedule:
            def __init__(self):
                self.betas = torch.linspace(1e-4, 0.02, 1000, device="cuda")

            def alpha_bar(self, step):
                if type(step) is int:
                    return (1 - self.betas[:step + 1]).prod()
                return (1 - self.betas).cumprod(dim=0)[step]

            def first(self, step):
                if type(step) == torch.Tensor:
                    return self.betas[:step + 1]  # error: SYN110
                return self.betas[:step + 1]  # (past the return, step is no tensor)


        def train(loader):
            schedule = Schedule()
            for x in loader:
                step = torch.randint(0, 1000, (1,), device="cuda")
                a = schedule.alpha_bar(step) + schedule.first(step)
        """})


# --------------------------------------------------------------------------- a device known, and read right

def test_an_empty_cpu_fallback_says_nothing_of_the_other_paths_device(tmp_path):
    # Detic's `gt_classes = cat([p.gt_classes for p in proposals]) if len(proposals) else
    # torch.empty(0)`: the index made from it is where `cat` put it, not a host index
    check(tmp_path, {"loss.py": """
        import torch
        from detectron2.layers import cat, nonzero_tuple


        def box_loss(proposals, pred_deltas):
            gt_classes = cat([p.gt_classes for p in proposals]) if len(proposals) else torch.empty(0)
            fg_inds = nonzero_tuple(gt_classes >= 0)[0]
            return pred_deltas[fg_inds, gt_classes[fg_inds]].sum()


        def host_index(proposals):
            pred_deltas = torch.zeros(4, 4, device="cuda")
            gt_classes = torch.arange(4) if len(proposals) else torch.empty(0)
            fg_inds = torch.nonzero(gt_classes >= 0)[:, 0]
            return pred_deltas[fg_inds, gt_classes[fg_inds]].sum()  # error: SYN305


        def step(proposals):
            return box_loss(proposals, torch.zeros(4, 4, device="cuda"))
        """})


# --------------------------------------------------------------------------- a framework's grad mode

VINDLU = """
import torch
from mmengine.model import {base}


class Retrieval({base}):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(4, 2)

    def predict(self, inputs):
        self.eval()
        return self.head(inputs).softmax(-1){mark}
"""


def test_mmengines_predict_runs_with_autograd_off(tmp_path):
    # mmaction2's VindLURetrievalMC.predict: mmengine's ValLoop/TestLoop run it under no_grad
    check(tmp_path, {"retrieval.py": VINDLU.format(base="BaseModel", mark=""), "other.py": "import retrieval\n"})


def test_another_bases_predict_is_still_checked(tmp_path):
    # (a BaseModule's `predict`, a head's, is reached only from the model's: no_grad too)
    check(tmp_path, {"retrieval.py": VINDLU.format(base="BaseDataPreprocessor", mark="  # error: SYN502"),
                     "other.py": "import retrieval\n"})


def test_a_tensor_that_an_in_place_add_gave_autograd_history_is_no_longer_grad_free(tmp_path):
    # audiocraft's `ce = torch.zeros([]); for k ...: ce += F.cross_entropy(...)`, then
    # `ce = ce / K`: ce carries the losses' history, so `ce /= K` is no safe twin
    check(tmp_path, {"loss.py": """
        import torch
        import torch.nn.functional as F


        def codebook_loss(logits, targets):
            ce = torch.zeros([], device="cuda")
            for k in range(4):
                ce += F.cross_entropy(logits[:, k], targets[:, k])
            ce = ce / 4
            return ce


        def counts(targets):
            total = torch.zeros(8, device="cuda")
            with torch.no_grad():
                for k in range(4):
                    total += targets[:, k].float()
                total = total / 4  # error: SYN501
            return total
        """})


# --------------------------------------------------------------------------- tensors with no elements

def test_a_tensor_known_to_hold_no_elements_copies_nothing_when_moved(tmp_path):
    # mmyolo's assigner visualisers: `torch.zeros([0], dtype=torch.int64).to(device)` for an
    # image without boxes; a copy of zero bytes returns before any memcpy, so nothing waits
    check(tmp_path, {"assign.py": """
        import torch


        def no_boxes(loader, device):
            for images in loader:
                labels = torch.zeros([0], dtype=torch.int64).to(device)
                boxes = torch.empty(0, 4).cuda()
                scores = torch.zeros((0,)).float().to(device, non_blocking=True)
                points = torch.tensor([]).to(device)
                keep = torch.zeros(size=(2, 0)).to(device)
                template = torch.rand(3, 4)
                none = template.new_zeros((0, 4))
                picked = none.long().to(device)
                made = torch.tensor([], device=device)
                yield labels, boxes, scores, points, keep, picked, made
        """})


def test_emptiness_travels_with_a_helpers_return_to_another_module(tmp_path):
    check(tmp_path, {
        "boxes.py": """
            import torch


            def no_labels():
                return torch.zeros(0, dtype=torch.long)


            def one_label():
                return torch.zeros(1, dtype=torch.long)
            """,
        "train.py": """
            from boxes import no_labels, one_label


            def train(loader, device):
                for images in loader:
                    none = no_labels().to(device)
                    one = one_label().to(device)  # error: SYN304
                    yield none, one
            """,
    })


def test_a_tensor_whose_size_is_not_known_to_be_zero_is_still_moved(tmp_path):
    # the near misses: a size from a variable, a 0-d tensor (one element), a literal 0 that is
    # an index or a value, and a name that holds an empty tensor on one path only
    check(tmp_path, {"assign.py": """
        import torch


        def some_boxes(loader, device, n):
            for images in loader:
                labels = torch.zeros([n], dtype=torch.int64).to(device)  # error: SYN301
                counts = torch.zeros(n).to(device)  # error: SYN301
                scalar = torch.zeros([]).to(device)  # error: SYN301
                first = torch.zeros(5)[0].to(device)  # error: SYN304
                zero = torch.tensor([0]).to(device)  # error: SYN302
                either = torch.zeros(0) if n else torch.ones(3)
                moved = either.to(device)  # error: SYN304
                template = torch.rand(3, 4)
                rows = template.new_zeros((n, 4)).to(device)  # error: SYN304
                made = torch.tensor([0], device=device)  # error: SYN302
                yield labels, counts, scalar, first, zero, moved, rows, made
        """})


# --------------------------------------------------------------------------- called only by another module's data pipeline

POINTS = """
import torch


class Points:
    def __init__(self, points, device=None):
        points = torch.stack(points)
        if device is not None:
            points = points.to(device=device)
        if points.abs().max() > 1:{mark_check}
            points = points / points.abs().max()
        self.points = points


def centred(points):
    points = torch.stack(points)
    return points - points.mean(0), int(points.shape[0] > 0 and points.std() > 0){mark_std}
"""

PIPELINE = """
from mmcv.transforms import BaseTransform
from points import Points, centred


class LoadPoints(BaseTransform):
    def transform(self, results):
        return self._load(results)

    def _load(self, results):
        results["points"] = Points(results["raw"])
        results["centred"] = centred(results["raw"])
        return results
"""


def test_what_only_another_modules_data_pipeline_calls_runs_on_the_host(tmp_path):
    # mmyolo's `Keypoints(...)`: made only by `LoadAnnotations._load_kps` in another module,
    # a transform that DataLoader workers run; its constructor runs there, on host tensors
    check(tmp_path, {
        "points.py": POINTS.format(mark_check="", mark_std=""),
        "pipeline.py": PIPELINE,
    })


def test_the_same_code_called_by_a_training_step_too_is_checked(tmp_path):
    check(tmp_path, {
        "points.py": POINTS.format(mark_check="  # error: SYN105",
                                   mark_std="  # error: SYN104"),
        "pipeline.py": PIPELINE,
        "train.py": """
            import torch
            from points import Points, centred


            def train(model, loader):
                for x in loader:
                    y = model(x.cuda(non_blocking=True))
                    p = Points([y], device="cuda")
                    c = centred([y])
            """,
    })


MMDET_TRANSFORM = """
import torch
from mmdet.datasets.transforms import LoadAnnotations as {base}


class LoadCounts({base}):
    def transform(self, results):
        counts = torch.stack(results["counts"])
        if counts.sum() > 0:{mark}
            results["counts"] = counts
        return results
"""


def test_a_subclass_of_an_openmmlab_data_transform_runs_on_the_host(tmp_path):
    # mmyolo's `LoadAnnotations(mmdet.datasets.transforms.LoadAnnotations)`: mmdet's
    # transforms are mmcv `BaseTransform`s, run by the dataset's pipeline in the workers
    check(tmp_path, {"loading.py": MMDET_TRANSFORM.format(base="Base", mark=""), "other.py": "import loading\n"})


def test_a_method_named_transform_of_another_library_class_is_still_checked(tmp_path):
    check(tmp_path, {"loading.py": MMDET_TRANSFORM.format(base="Base", mark="  # error: SYN105").replace(
        "mmdet.datasets.transforms", "mmdet.models.layers"), "other.py": "import loading\n"})


def test_a_not_is_cuda_branch_that_moves_its_tensor_to_the_gpu_runs_where_cuda_is(tmp_path):
    # VAR's dist.allreduce / allgather: `if not t.is_cuda: cu = t.detach().cuda()` is a CPU
    # tensor on a CUDA machine (a blocking copy there, and `cu.cpu()` a read-back). Near misses:
    # a `not x.is_cuda` branch that stays on the host is the CUDA-less path; an `x.is_cuda`
    # test's else branch too
    check(tmp_path, {"dist.py": """
        import torch
        import torch.distributed as tdist


        def allreduce(t: torch.Tensor):
            if not t.is_cuda:
                cu = t.detach().cuda()  # error: SYN304
                tdist.all_reduce(cu)
                t.copy_(cu.cpu())  # error: SYN103
            else:
                tdist.all_reduce(t)


        def to_numpy(t: torch.Tensor):
            if not t.is_cuda:
                return t.numpy()
            return t.cpu().numpy()  # error: SYN103


        def stats(t: torch.Tensor):
            if t.is_cuda:
                return t.sum()
            else:
                return t.cpu().sum()
        """})
