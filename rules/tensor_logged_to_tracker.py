from typing import List

import libcst as cst

from synclint.rule import Invalid, Rule, Valid
from synclint.rules._helpers import arg, dict_values, is_true, kwarg, lightning_logged, receiver, short
from synclint.semantic import EVIDENT
from synclint.semantic import library as L
from synclint.semantic import values as V


class TensorLoggedToTracker(Rule):
    """
    ## What it does
    Flags a GPU tensor handed to an experiment tracker that reads it back to the host:
    TensorBoard's `writer.add_scalar(tag, t)` (and `add_scalars`, `add_histogram`,
    `add_image(s)`, `add_audio`, `add_video`, `add_embedding`, `add_pr_curve`), from
    `torch.utils.tensorboard` or `tensorboardX` (or a class derived from its writer);
    `wandb.log({"loss": t})`; torchvision's `save_image(t, path)`; a Hugging Face
    `evaluate` metric's `add_batch(predictions=..., references=...)`; and a LightningModule's
    `self.log(name, t, prog_bar=True)` (or `self.log_dict`) of a value kept per step, and
    the per-step `self.log` of a `validation_step` or `test_step`.

    ## Why is this bad?
    The tracker converts the tensor on the calling thread: TensorBoard's writer runs
    `make_np`, which is `x.detach().cpu().numpy()` (`torch/utils/tensorboard/_convert_np.py`);
    wandb's `json_friendly` calls `.item()` on a 0-d tensor and `.cpu().numpy()` otherwise;
    `save_image` copies to the CPU to encode the image; `evaluate` stores the batch through
    `datasets`' `cast_to_python_objects`, which calls `.detach().cpu().numpy()`; Lightning
    converts the values its progress bar shows (`convert_tensors_to_scalars`, `.item()`) each
    time the bar refreshes, every batch by default, and the values its logger writes, at
    every step of an evaluation loop (every `log_every_n_steps` in training). Each is a blocking device-to-host
    copy that waits for every kernel queued before it, once per value logged: three
    `add_scalar` calls in a logging step are three syncs.

    ## Use instead
    Read the values once per logging step, in one transfer, and log the numbers:

    ```python
    if step % log_every == 0:
        loss_v, acc_v = torch.stack([loss.detach(), acc]).tolist()   # one sync
        writer.add_scalar("loss", loss_v, step)
        writer.add_scalar("acc", acc_v, step)
    ```

    Logging every step is hot (tagged `[hot]`); under a logging guard it is reported
    `[cold]`, and batching the values still saves a sync per extra value.

    ## Cost
    One blocking device-to-host copy per value logged: what SYN103 (`.cpu()`) and SYN101
    (`.item()`) measure with `synclint bench`. This rule has no benchmark pair of its own:
    the trackers are not installed where the harness runs.

    ## Known problems
    The writer must be known to be a tracker's: built from its class in the project (a
    local, an attribute, a parameter its callers pass), not returned by an unknown helper.
    A dict passed to `wandb.log` or `add_scalars` is checked when it is written out at the
    call (`{"loss": loss}`). Other trackers (MLflow, Comet, Neptune) are not known yet.
    """

    CODE = "SYN117"
    NAME = "tensor-logged-to-tracker"
    MESSAGE = "`{call}` copies GPU tensor `{value}` to the host to log it and waits for all queued GPU work"
    FIX_TITLE = "Read the logged values once per logging step (`torch.stack([...]).tolist()`) and log the numbers"
    CATALOGUE = ("B1", "A1")
    VALID = [
        # Lightning keeps a logged tensor on the GPU unless the progress bar shows it every step
        # (or an evaluation step logs it per step): per epoch, or for the logger every N steps
        Valid(
            "import torch\nimport pytorch_lightning as pl\nclass Model(pl.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n        self.net = torch.nn.Linear(4, 1)\n"
            "    def training_step(self, batch, batch_idx):\n        loss = self.net(batch).mean()\n"
            "        self.log('train/loss', loss)\n"
            "        self.log('train/epoch_loss', loss, prog_bar=True, on_step=False, on_epoch=True)\n"
            "        return loss\n"
            "    def validation_step(self, batch, batch_idx):\n        loss = self.net(batch).mean()\n"
            "        self.log('val/loss', loss, prog_bar=True)\n"
        ),
        # the value is a Python number already (its `.item()` is SYN101's)
        Valid(
            "import torch\nfrom torch.utils.tensorboard import SummaryWriter\nwriter = SummaryWriter()\n"
            "w = torch.randn(4, 4, device='cuda')\nfor step in range(10):\n    loss = w.sum()\n"
            "    writer.add_scalar('loss', 1.5, step)\n"
        ),
        # a CPU tensor: the conversion copies nothing from the GPU
        Valid(
            "import torch\nfrom torch.utils.tensorboard import SummaryWriter\nwriter = SummaryWriter()\n"
            "for step in range(10):\n    writer.add_histogram('w', torch.randn(100), step)\n"
        ),
        # not a tracker's writer: a project class with a method of the same name
        Valid(
            "import torch\n"
            "class Meter:\n"
            "    def __init__(self):\n"
            "        self.total = torch.zeros((), device='cuda')\n"
            "    def add_scalar(self, name, value):\n"
            "        self.total += value\n"
            "meter = Meter()\n"
            "w = torch.randn(4, device='cuda')\n"
            "for step in range(10):\n"
            "    meter.add_scalar('loss', w.sum())\n"
        ),
        # a project's own `Logger.log_value` that keeps the tensor: not tensorboard_logger's
        Valid(
            "import torch\n"
            "class Logger:\n"
            "    def __init__(self):\n"
            "        self.seen = {}\n"
            "    def log_value(self, name, value, step):\n"
            "        self.seen[name] = value\n"
            "logger = Logger()\n"
            "w = torch.randn(4, device='cuda')\n"
            "for step in range(10):\n"
            "    logger.log_value('loss', w.sum(), step)\n"
        ),
        # the values read once, then logged as numbers
        Valid(
            "import torch\nimport wandb\n"
            "w = torch.randn(4, device='cuda')\n"
            "for step in range(10):\n"
            "    loss, acc = w.sum(), w.mean()\n"
            "    if step % 10 == 0:\n"
            "        loss_v, acc_v = torch.stack([loss.detach(), acc]).tolist()\n"
            "        wandb.log({'loss': loss_v, 'acc': acc_v})\n"
        ),
        # a helper whose every caller logs a CPU tensor
        Valid(
            "import torch\nfrom torchvision.utils import save_image\n"
            "def dump(images, path):\n"
            "    save_image(images, path)\n"
            "for i in range(3):\n"
            "    dump(torch.rand(4, 3, 8, 8), f'{i}.png')\n"
        ),
        # a project's own logger with the same method names, not a writer
        Valid(
            "import torch\nclass Logger:\n    def add_scalar(self, tag, value, step):\n        self.last = value\n"
            "log = Logger()\nx = torch.ones(2, device='cuda')\nfor step in range(3):\n    log.add_scalar('x', x.sum(), step)\n"
        ),
        # a metric fed host values (`.tolist()` is SYN102's), and a project's own `metric`
        Valid(
            "import torch\nimport evaluate\nmetric = evaluate.load('accuracy')\n"
            "for x, y in batches:\n    p = model(x.cuda()).argmax(-1)\n"
            "    metric.add_batch(predictions=p.tolist(), references=y)\n"
        ),
    ]
    INVALID = [
        # Lightning's progress bar shows the loss as a number: read back at every batch
        Invalid(
            "import torch\nimport pytorch_lightning as pl\nclass Model(pl.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n        self.net = torch.nn.Linear(4, 1)\n"
            "    def training_step(self, batch, batch_idx):\n        loss = self.net(batch).mean()\n"
            "        self.log('train/loss', loss, prog_bar=True)\n        return loss\n",
            line=9,
            hot=True,
        ),
        # an evaluation step's values logged per step: the logger writes them at every step
        Invalid(
            "import torch\nimport pytorch_lightning as pl\nclass Model(pl.LightningModule):\n"
            "    def __init__(self):\n        super().__init__()\n        self.net = torch.nn.Linear(4, 1)\n"
            "    def validation_step(self, batch, batch_idx):\n        loss = self.net(batch).mean()\n"
            "        self.log_dict({'val/loss': loss}, on_step=True)\n",
            line=9,
            hot=True,
        ),
        # Hugging Face accelerate's nlp_example: predictions gathered on the GPU
        Invalid(
            "import torch\nimport evaluate\nmetric = evaluate.load('glue', 'mrpc')\n"
            "model = torch.nn.Linear(4, 2).cuda()\n"
            "for x in batches:\n    predictions = model(x.cuda()).argmax(dim=-1)\n"
            "    metric.add_batch(predictions=predictions, references=x[:, 0])\n",
            line=7,
            hot=True,
        ),
        # NVIDIA tacotron2: the project's logger derives from the writer
        Invalid(
            "import torch\nfrom torch.utils.tensorboard import SummaryWriter\n"
            "class Logger(SummaryWriter):\n    def log_training(self, grad_norm, step):\n"
            "        self.add_scalar('grad.norm', grad_norm, step)\n"
            "model = torch.nn.Linear(2, 2).cuda()\nlogger = Logger('runs')\n"
            "for step in range(3):\n    logger.log_training(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0), step)\n",
            line=5,
            hot=True,
        ),
        Invalid(
            "import torch\nfrom torch.utils.tensorboard import SummaryWriter\nwriter = SummaryWriter()\n"
            "w = torch.randn(4, 4, device='cuda')\nfor step in range(10):\n    loss = (w @ w).sum()\n"
            "    writer.add_scalar('loss', loss, step)\n",
            line=7,
            hot=True,
            message="`writer.add_scalar('loss', loss, step)` copies GPU tensor `loss` to the host to log it "
                    "and waits for all queued GPU work",
        ),
        # under a logging guard: once per N steps, reported cold
        Invalid(
            "import torch\nimport tensorboardX\nsw = tensorboardX.SummaryWriter('runs')\n"
            "w = torch.randn(4, 4, device='cuda')\nfor step in range(100):\n    loss = (w @ w).sum()\n"
            "    if step % 10 == 0:\n        sw.add_scalars('train', {'loss': loss, 'lr': 0.1}, step)\n",
            line=8,
            hot=False,
        ),
        Invalid(
            "import torch\nimport wandb\nw = torch.randn(4, device='cuda')\nfor step in range(10):\n"
            "    wandb.log({'loss': w.sum(), 'step': step})\n",
            line=5,
            hot=True,
        ),
        # tensorboard_logger's `log_value` takes `float(value)` (RepDistiller logs its accuracy
        # meters' CUDA averages once an epoch)
        Invalid(
            "import torch\nimport tensorboard_logger as tb_logger\nlogger = tb_logger.Logger(logdir='runs')\n"
            "w = torch.randn(4, device='cuda')\nacc = w.sum()\nlogger.log_value('acc', acc, 1)\n",
            line=6,
            hot=False,
        ),
        Invalid(
            "import torch\nfrom tensorboard_logger import configure, log_value\nw = torch.randn(4, device='cuda')\n"
            "for step in range(10):\n    log_value('loss', w.sum(), step)\n",
            line=5,
            hot=True,
        ),
        # crosses a function: the writer and the tensor are parameters its caller passes
        Invalid(
            "import torch\nfrom torch.utils.tensorboard import SummaryWriter\n"
            "def log_loss(writer, loss, step):\n"
            "    writer.add_scalar('loss', loss, step)\n"
            "w = torch.randn(4, device='cuda')\nsw = SummaryWriter()\n"
            "for step in range(10):\n"
            "    log_loss(sw, w.abs().sum(), step)\n",
            line=4,
            hot=True,
        ),
        # through an attribute: the writer a trainer keeps
        Invalid(
            "import torch\nfrom torch.utils import tensorboard\n"
            "class Trainer:\n"
            "    def __init__(self):\n"
            "        self.model = torch.nn.Linear(8, 8).cuda()\n"
            "        self.writer = tensorboard.SummaryWriter()\n"
            "    def fit(self, loader):\n"
            "        for step, x in enumerate(loader):\n"
            "            out = self.model(x.cuda())\n"
            "            self.writer.add_histogram('out', out, step)\n",
            line=10,
            hot=True,
        ),
        # once, after training: cold
        Invalid(
            "import torch\nimport torchvision.utils as vutils\n"
            "model = torch.nn.Linear(8, 3 * 8 * 8).cuda()\n"
            "z = torch.randn(16, 8, device='cuda')\n"
            "for _ in range(100):\n"
            "    fake = model(z).view(16, 3, 8, 8)\n"
            "vutils.save_image(vutils.make_grid(fake), 'samples.png')\n",
            line=7,
            hot=False,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        values: List[cst.BaseExpression] = []
        for logged in self._logged_arguments(node):
            in_dict = dict_values(logged)  # add_scalars / wandb.log / log_dict: the dict's values
            values += in_dict if in_dict is not None else [logged]
        for v in values:
            if self.ctx.gpu(v, EVIDENT) is not None:
                self.report(node, call=short(node, 60), value=short(v))
                return  # one finding per call: the call is the sync site

    def _logged_arguments(self, node: cst.Call) -> List[cst.BaseExpression]:
        """The arguments this call reads back, when it is a tracker's or a metric's."""
        lightning = lightning_logged(self.ctx, node)
        if lightning is not None:
            return [lightning[1]] if self._read_back_every_step(node) else []
        func = node.func
        if type(func) is cst.Attribute and (func.attr.value in L.WRITER_METHODS or func.attr.value in L.METRIC_METHODS):
            obj = self.ctx.infer(receiver(node))
            if obj.kind != V.OBJECT or not obj.cls:
                return []
            if obj.cls == L.METRIC:  # `metric.add_batch(predictions=p, references=r)`
                return [a.value for a in node.args if a.keyword is not None and a.keyword.value in L.METRIC_INPUTS] \
                    if func.attr.value in L.METRIC_METHODS else []
            if func.attr.value in L.WRITER_METHODS and (obj.cls == L.WRITER or "|" not in obj.cls and (
                    self.ctx.library_base(obj.cls, L.TRACKER_WRITERS.__contains__) is not None)):
                got = arg(node, *L.WRITER_METHODS[func.attr.value])  # a writer, or its subclass (tacotron2's logger)
                return [got] if got is not None else []
            return []
        q = self.ctx.qualname(func)
        where = L.TRACKER_FUNCTIONS.get(q) if q is not None else None
        got = arg(node, *where) if where is not None else None
        return [got] if got is not None else []

    def _read_back_every_step(self, node: cst.Call) -> bool:
        """A LightningModule's `self.log` of a value kept per step that Lightning reads back
        at each step (`convert_tensors_to_scalars` in its logger connector): for the progress
        bar (`prog_bar=True`), which refreshes every batch by default, and for the logger in
        `validation_step`/`test_step`, which writes every step's values. Per step:
        `on_step=True`, or its default in `training_step` (the logger there writes every
        `log_every_n_steps`: not every step)."""
        hook = self.ctx.function_name
        on_step = kwarg(node, "on_step")
        per_step = is_true(on_step) is True if on_step is not None else hook in L.LIGHTNING_PER_STEP_LOGGING
        if not per_step:
            return False
        if is_true(kwarg(node, "prog_bar")) is True:
            return True
        logger = kwarg(node, "logger")
        return hook in L.LIGHTNING_EVAL_STEPS and (logger is None or is_true(logger) is True)
