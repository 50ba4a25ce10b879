import libcst as cst

from synclint.rule import Invalid, Rule, Valid
from synclint.rules._data_dependent import arg
from synclint.rules._helpers import short
from synclint.semantic import RECEIVER
from synclint.semantic import library as L
from synclint.semantic import values as V

# what each kind of pytorch-metric-learning class selects, for the message
_SELECTS = {
    "masked_losses": "with a boolean mask",
    "all_pairs_losses": "every pair with a one-argument `torch.where`",
    "pair_losses": "every pair with a one-argument `torch.where`",
    "triplet_losses": "its triplets with a one-argument `torch.where`",
    "pair_miners": "every pair with a one-argument `torch.where`",
    "triplet_miners": "every triplet with a one-argument `torch.where`",
}


class MetricLearningSelection(Rule):
    """
    ## What it does
    Flags calls of pytorch-metric-learning losses and miners on GPU embeddings whose
    implementation selects pairs, triplets or target classes with a data-dependent size:
    a one-argument `torch.where` (a `nonzero`) or a boolean-mask read.

    ## Why is this bad?
    The size of such a selection is only known once the GPU has compared the labels, and
    the host must know it to allocate the result: the call returns only when every kernel
    queued before it has finished, at every training step. The synchronizing line is inside
    the library, so a profiler shows it there and `grep` for `.item()` in your code finds
    nothing. Read in pytorch-metric-learning's sources (216a792, 2024-12-11):

    - `LargeMarginSoftmaxLoss` and its subclasses (`ArcFaceLoss`, `CosFaceLoss`,
      `SphereFaceLoss`, `SubCenterArcFaceLoss`) read `cosine[mask == 1]` at every call, and
      `VICRegLoss` reads `cov_emb[~diag.bool()]`;
    - `FastAPLoss` and `PNPLoss` build every pair (`lmu.get_all_pairs_indices`:
      `torch.where(matches)`);
    - the pair losses (`ContrastiveLoss`, `MultiSimilarityLoss`, `NTXentLoss`, `SupConLoss`,
      the lifted-structure losses, ...) do the same when no `indices_tuple` is given;
    - the triplet losses (`TripletMarginLoss`, `MarginLoss`, ...) pick random triplets per
      label (`torch.where(labels == label)` in a loop) when given nothing, or turn pairs into
      triplets with `torch.where(a1.unsqueeze(1) == a2)`;
    - the miners (`MultiSimilarityMiner`, `PairMarginMiner`, `TripletMarginMiner`, ...)
      start from every pair or triplet.

    On an H100 (torch 2.11, pytorch-metric-learning 2.8.1, 2026-11-27,
    `scripts/library_syncs.py`), behind about 20 ms of queued matmuls, each of
    `ArcFaceLoss`, `CosFaceLoss`, `SphereFaceLoss`, `ContrastiveLoss`, `SupConLoss`,
    `NTXentLoss`, `MultiSimilarityLoss`, `GeneralizedLiftedStructureLoss`,
    `TripletMarginLoss`, `FastAPLoss`, `VICRegLoss` and the two miners tried held the host
    17-22 ms, as `x.sum().item()` did (19 ms), where `emb * 2` took 0.04 ms, and
    `set_sync_debug_mode` reported each.

    ## Use instead
    A selection by label cannot be made without knowing its size, so keep it to one per
    step: mine once and pass the result to every loss that needs it (a pair loss given
    `indices_tuple` does not build the pairs again), or pass triplets to a triplet loss
    rather than pairs. For classification-style losses (`ArcFaceLoss`, `CosFaceLoss`) the
    same margin can be written without a mask read, as a fixed-shape `torch.where`:

    ```python
    cos = F.linear(F.normalize(emb), F.normalize(W))
    target = F.one_hot(labels, num_classes).bool()
    logits = scale * torch.where(target, cos - margin, cos)  # CosFace, no sync
    loss = F.cross_entropy(logits, labels)
    ```

    ## Known problems
    No benchmark pair of its own: the library is not on the benchmark machine. The wait is
    that of a one-argument `torch.where` (SYN201) or a boolean-mask read (SYN202), whose
    pairs measure it. A pair or triplet loss given an `indices_tuple` whose kind is not
    known (not the result of one of the library's pair miners) is not reported, though
    some still wait in their reducer: `ContrastiveLoss` given mined pairs held the host as
    long (its default `AvgNonZeroReducer` reads `losses[losses > 0]`).
    """

    CODE = "SYN212"
    NAME = "metric-learning-selection"
    MESSAGE = "`{call}` selects {selects} inside pytorch-metric-learning's `{cls}`, so the CPU waits for the GPU at each call"
    FIX_TITLE = "Mine once per step and pass `indices_tuple` to the losses; write margin losses with a fixed-shape `torch.where`"
    CATALOGUE = ("C1", "C2")
    VALID = [
        # CPU embeddings: the selection runs on the host
        Valid("import torch\nfrom pytorch_metric_learning import losses\ncrit = losses.ContrastiveLoss()\n"
              "for _ in range(3):\n    crit(torch.randn(8, 4), torch.randint(0, 2, (8,)))\n"),
        # a pair loss given mined indices does not build the pairs again
        Valid(
            "import torch\nfrom pytorch_metric_learning import losses, miners\n"
            "crit = losses.ContrastiveLoss()\nminer = miners.MultiSimilarityMiner()\n"
            "emb = torch.randn(8, 4).cuda()\nlabels = torch.randint(0, 2, (8,)).cuda()\n"
            "pairs = miner(emb, labels)\n"
            "for _ in range(3):\n    crit(emb, labels, pairs)\n",
            cold=True,  # the miner, once
        ),
        # a project's own class of the same name
        Valid("import torch\nclass ArcFaceLoss(torch.nn.Module):\n    def forward(self, x, y):\n        return x.sum()\n"
              "crit = ArcFaceLoss()\nfor _ in range(3):\n    crit(torch.randn(8, 4).cuda(), torch.zeros(8).cuda())\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom pytorch_metric_learning import losses\n"
            "crit = losses.ArcFaceLoss(num_classes=10, embedding_size=4).cuda()\n"
            "for x, y in loader:\n    loss = crit(model(x.cuda()), y.cuda())\n",
            line=5,
            hot=True,
            message="`crit(model(x.cuda()), y.cuda())` selects with a boolean mask inside "
                    "pytorch-metric-learning's `ArcFaceLoss`, so the CPU waits for the GPU at each call",
        ),
        # a triplet loss given a pair miner's pairs turns them into triplets with torch.where
        Invalid(
            "import torch\nfrom pytorch_metric_learning.losses import TripletMarginLoss\n"
            "from pytorch_metric_learning.miners import MultiSimilarityMiner\n"
            "crit, miner = TripletMarginLoss(margin=0.3), MultiSimilarityMiner()\n"
            "for x, y in loader:\n    emb = model(x.cuda())\n    y = y.cuda()\n"
            "    pairs = miner(emb, y)\n"
            "    loss = crit(emb, y, pairs)\n",
            line=8,  # the miner; the loss on line 9 too (fixtures/SYN212.py)
            hot=True,
        ),
        # crosses a function: the embeddings are a parameter its caller fills from the model
        Invalid(
            "import torch\nfrom pytorch_metric_learning import losses\n"
            "criterion = losses.SupConLoss()\n"
            "def step(emb, labels):\n    return criterion(emb, labels)\n"
            "for x, y in loader:\n    step(model(x.cuda()), y.cuda())\n",
            line=5,
            hot=True,
        ),
        # through an attribute: a module that holds its loss
        Invalid(
            "import torch\nfrom pytorch_metric_learning import losses\n"
            "class Head(torch.nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.loss = losses.CosFaceLoss(10, 4)\n"
            "    def forward(self, emb, labels):\n        return self.loss(emb, labels)\n",
            line=8,
            hot=True,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        cls = next((c for c in V.classes_of(ctx.infer(node.func)) if L.pml_kind(c)), "")
        if not cls:
            return
        kind = L.pml_kind(cls)
        if kind in ("pair_losses", "triplet_losses"):
            indices = arg(node, 2, "indices_tuple")
            # given indices are used as they are, except pairs given to a triplet loss
            pairs = indices is not None and L.PML_PAIRS in V.classes_of(ctx.infer(indices))
            if indices is not None and not (kind == "triplet_losses" and pairs):
                return
        emb = arg(node, 0, "embeddings")
        if emb is not None and ctx.gpu(emb, RECEIVER) is not None:
            self.report(node, call=short(node), selects=_SELECTS[kind], cls=cls[len(L.PML_PREFIX):])
