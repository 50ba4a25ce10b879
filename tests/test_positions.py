"""Finding positions come from a statement-local codegen (positions.py); they must equal
LibCST's PositionProvider on real code, multi-line constructs, decorators and elif included."""

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from synclint.engine import lint_source
from synclint.rule import Invalid, Rule, Valid


class _EveryCall(Rule):
    """
    ## What it does
    Reports every call and subscript (test probe).

    ## Why is this bad?
    It is not.

    ## Use instead
    Nothing.
    """

    ABSTRACT = True  # not registered
    CODE, NAME, MESSAGE = "SYN599", "every-call", "`call`"
    VALID, INVALID = [Valid("")], [Invalid("")]

    def visit_Call(self, node):
        self.report(node)

    def visit_Subscript(self, node):
        self.report(node)


_EveryCall.FAMILY, _EveryCall.SUMMARY, _EveryCall.DOC = "probe", "Probe.", ""

TRICKY = '''
import torch

@decorator(torch.ones(1))
# comment between
@other
def f(x, y=torch.zeros(2)):
    if x:
        pass
    elif y.sum(
        dim=0,
    ):
        z = [t.item() for t in x]; w = x[0]
    else:
        return {"a": torch.cat([x,
                                y])}
    s = """multi
    line""" + str(x[1])
    while torch.any(x):  x = x[1:]
    with torch.no_grad(), open("f") as fh:
        g(fh)(x)
    try:
        h(x)
    except E as e:
        k(e)
    finally:
        m()
    class C(torch.nn.Module):
        def forward(self, q):
            return q.mul(2)
    lambda a: a.b(c)
    café = x.item()
    return c(café)
'''


def _compare(source: str):
    findings = lint_source(source, "<t>", [_EveryCall])
    module = cst.parse_module(source)
    pos = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    expected = {
        (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)
        for node, r in pos.items() if isinstance(node, (cst.Call, cst.Subscript))
    }
    got = {(f.row, f.column, f.end_row, f.end_column) for f in findings}
    assert got <= expected, sorted(got - expected)[:5]
    return got, expected


def test_tricky_constructs():
    got, expected = _compare(TRICKY)
    # annotations are not walked; everything else is
    assert len(got) >= len(expected) - 2


TORCH = Path(torch_path := __import__("torch").__file__).parent


SAMPLES = ["nn/modules/rnn.py", "nn/modules/transformer.py", "optim/adam.py", "utils/data/dataloader.py",
           "utils/data/sampler.py", "nn/functional.py"]


@pytest.mark.parametrize("rel", SAMPLES)
def test_positions_match_position_provider_on_torch_sources(rel):
    _compare((TORCH / rel).read_text(encoding="utf-8"))


def test_statement_rows_leave_no_cyclic_garbage():
    """A worker freezes the tree before the walks (`workers.serve`): anything cyclic made
    with it would never be collected."""
    import ast
    import gc

    from synclint.parse.positions import statement_rows

    tree = ast.parse("def f():\n    try:\n        pass\n    except E:\n        x = 1\nclass C:\n    y = 2\n")
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        rows = statement_rows(tree)
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
    assert [r[0] for r in rows] == [1, 2, 3, 5, 6, 7]
