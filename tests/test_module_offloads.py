"""Moving a module to the host is an offload, not a read-back (issue 34, item 5): the items
of `.modules()` / `.children()` are modules, and so are the components a diffusers pipeline
registers (`register_modules`) from parameters annotated with a model class of a pretrained
package (a tokenizer class so annotated is a tokenizer, whose encodings are on the host). Each case is a small project checked as `synclint check DIR` checks it, findings
marked inline; the near-misses (a module's parameters, a pipeline's output, a tensor
registered by the pipeline) stay reported."""

import textwrap
from pathlib import Path

from synclint.registry import all_rules
from synclint.run.runner import check_files
from synclint.testing import expectations


def check(tmp_path: Path, files: dict) -> None:
    paths = []
    for name, text in files.items():
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        paths.append(p)
    result = check_files([str(p) for p in paths], all_rules())
    assert not result.errors, result.errors
    got = {(Path(f.filename).name, f.row, f.code) for f in result.findings}
    expected = {(p.name, row, code) for p in paths for (row, code) in expectations(p.read_text(encoding="utf-8"))}
    assert got == expected, f"missing {sorted(expected - got)}, unexpected {sorted(got - expected)}"


MEMORY = """
import torch
from torch import nn

cpu = torch.device("cpu")
gpu = torch.device("cuda")


def offload(model):
    for m in model.modules():
        if hasattr(m, "weight"):
            m.to(device=cpu)
    for name, m in model.named_modules():
        m.cpu()
    model.to(device=cpu)


def offload_children(model: nn.Module):
    for m in model.children():
        m.to(cpu)


def read_weights(model):
    for p in model.parameters():
        p.to(device=cpu)  # error: SYN103
"""


def test_the_items_of_modules_and_children_are_modules_and_their_moves_offloads(tmp_path):
    # (FramePack's `offload_model_from_device_for_memory_preservation`)
    check(tmp_path, {"memory.py": MEMORY})


PIPELINE = """
import torch
from diffusers import DiffusionPipeline
from transformers import T5EncoderModel, T5Tokenizer


class Pipe(DiffusionPipeline):
    def __init__(self, tokenizer: T5Tokenizer, text_encoder: T5EncoderModel, latents: torch.Tensor):
        super().__init__()
        self.register_modules(tokenizer=tokenizer, text_encoder=text_encoder, latents=latents)

    def __call__(self, prompt, offload_to_cpu=False):
        full = self.tokenizer(prompt, padding="longest", return_tensors="pt").input_ids
        cut = self.tokenizer(prompt, max_length=8, truncation=True, return_tensors="pt").input_ids
        if not torch.equal(full, cut):
            print("truncated")
        ids = cut.to("cuda")  # error: SYN304
        self.text_encoder = self.text_encoder.to("cuda")
        emb = self.text_encoder(ids)[0]
        if offload_to_cpu:
            self.text_encoder = self.text_encoder.cpu()
        first = self.latents.cpu()  # error: SYN103
        return emb.cpu(), first  # error: SYN103
"""

ANNOTATED = """
import torch
from diffusers import AutoencoderKL


class Decoder:
    def __init__(self, ae: AutoencoderKL):
        self.ae = ae.to("cuda")

    def decode(self, z, offload=False):
        x = self.ae.decode(z).sample
        if offload:
            self.ae = self.ae.cpu()
        return x.cpu()  # error: SYN103
"""


def test_a_pipelines_registered_components_of_a_model_class_are_modules(tmp_path):
    # (LTX-Video's `self.text_encoder = self.text_encoder.cpu()` under `offload_to_cpu`, and
    # its `torch.equal` of two encodings of the registered tokenizer, both on the host)
    check(tmp_path, {"pipeline.py": PIPELINE, "decoder.py": ANNOTATED})


WEIGHT_INIT = """
import torch
from torch import nn


def init_params(net):
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            if m.bias:
                nn.init.constant_(m.bias, 0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(3, 3, 4)
        for m in self.modules():
            if isinstance(m, nn.ConvTranspose2d):
                m.weight.data.copy_(torch.zeros(3, 3, 4, 4))


net = Net().cuda()
for m in net.modules():
    if m.bias:  # error: SYN105
        pass
"""


def test_a_submodules_weights_live_where_its_module_is_known_to(tmp_path):
    # (weight-init loops over `self.modules()` in `__init__`, or over a network handed to a
    # helper: where the module lives is not known, so neither is a submodule's weight;
    # pytorch-fcn, pytorch-classification); a model moved to the GPU: its submodules' are there
    check(tmp_path, {"init.py": WEIGHT_INIT})
