"""RuleContext: the only object a rule touches (`self.ctx`), made by the engine per file
around the `SemanticModel` of its second walk.

Behind it are the model the walker binds into, the evaluator (`infer.Evaluator`) and the
finding sink (`sink.FindingSink`); a rule sees none of them. It asks questions, grouped in
`API` by what they answer, and reports. `tests/test_rule_context.py` fails when rule code reads or writes anything else of
its context, so what a rule may depend on is this file's list and nothing more.

The second walk asks these questions about a hundred thousand times on a large tree:
where the facade adds nothing, the model's or the evaluator's own bound method is the
attribute (one lookup, no wrapper); properties only for state that changes as the walk goes.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Dict, FrozenSet, Optional, Tuple

from synclint.semantic import loopflow, moves, ownership
from synclint.semantic.heat import scaler_called
from synclint.semantic.sink import Site

__all__ = ["API", "API_NAMES", "RuleContext", "Site"]

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from synclint.semantic.model import SemanticModel

# What a rule may ask, by what it answers. Each name is one line of docs/writing-rules.md.
API: Dict[str, Tuple[str, ...]] = {
    "values and devices": (
        "infer", "is_tensor", "gpu", "gpu_mask", "device_of_arg", "is_int", "is_int_for_any_caller",
        "is_int_index", "is_host_number", "is_numpy_array", "origin", "attribute_of", "dataset_device", "dataset_item",
        "escaped", "fresh_tensor", "grad_free", "dtype_kept", "gpu_move", "moves_own_attribute",
        "host_type_move", "factory_under", "host_data", "is_native_scaler_call", "graph_tensor",
    ),
    "qualified names": ("qualname", "torch_name", "library_base", "distribution_base"),
    "the current site": (
        "function_name", "in_test_code", "in_cuda_less", "in_compiled",
        "in_lightning_module", "site_hot", "after_nonblocking_d2h", "statement", "enclosing_loops",
        "loop_rebinds_ok", "may_compile", "compiled_region", "training_branch",
    ),
    "loops": ("updates_from_own_grad",),
    "grad mode": ("in_no_grad", "in_grad_mode_block", "function_wants_grad", "calls_of", "grad_mode_set_in_file"),
    "file facts": (
        "filename", "gpu_evident", "default_device", "puts_on_cuda", "validate_args_off", "reads_grads",
        "amp_static_scale", "logging_below_level",
    ),
    "name binding": ("is_imported", "is_builtin", "import_alias"),
    "reporting": ("report", "site", "report_at"),
}
API_NAMES: FrozenSet[str] = frozenset(name for names in API.values() for name in names)


class RuleContext:
    """What a rule may ask about the file and the place the walk is at (see `API`)."""

    def __init__(self, model: "SemanticModel") -> None:
        self._model = m = model
        ev = m.evaluator
        # values and devices
        self.infer = ev.infer
        self.is_tensor = m.is_tensor
        self.gpu = m.gpu
        self.gpu_mask = m.gpu_mask
        self.device_of_arg = ev.device_of_arg
        self.is_int = m.is_int
        self.is_int_for_any_caller = m.is_int_for_any_caller
        self.is_int_index = m.is_int_index
        self.is_host_number = m.is_host_number
        self.is_numpy_array = m.is_numpy_array
        self.origin = m.origin
        self.attribute_of = m.attribute_of
        self.dataset_device = ev.dataset_device
        self.dataset_item = ev.dataset_item
        self.escaped = m.escaped
        self.fresh_tensor = m.fresh_tensor
        self.grad_free = partial(ownership.nograd, m)
        self.dtype_kept = partial(ownership.dtype_kept, m)
        self.gpu_move = partial(moves.gpu_move, m)
        self.moves_own_attribute = partial(moves.moves_own_attribute, m)
        self.host_type_move = partial(moves.host_type_move, m)
        self.factory_under = partial(moves.factory_under, m)
        self.host_data = partial(moves.host_data, m)
        self.is_native_scaler_call = lambda call: scaler_called(call, m)
        self.graph_tensor = m.graph_tensor
        # qualified names
        self.qualname = m.qualname
        self.torch_name = m.torch_name
        self.library_base = m.library_base
        self.distribution_base = m.distribution_base
        # the current site
        self.in_test_code = m.in_test_code
        self.in_lightning_module = m.in_lightning_module
        self.site_hot = m.site_hot
        self.after_nonblocking_d2h = m.after_nonblocking_d2h
        self.loop_rebinds_ok = partial(ownership.loop_rebinds_ok, m)
        self.may_compile = m.may_compile
        self.compiled_region = m.compiled_region
        self.training_branch = m.training_branch
        # loops
        self.updates_from_own_grad = loopflow.updates_params_with_grad
        # grad mode (in_no_grad and in_grad_mode_block: properties below)
        self.function_wants_grad = m.function_wants_grad
        self.calls_of = m.calls_of
        self.grad_mode_set_in_file = m.grad_mode_set_in_file
        # file facts
        self.filename = m.filename
        self.validate_args_off = m.validate_args_off
        self.reads_grads = m.reads_grads
        self.amp_static_scale = m.amp_static_scale
        self.logging_below_level = m.logging_below_level
        # name binding
        self.is_imported = m.is_imported
        self.is_builtin = m.is_builtin
        self.import_alias = m.import_alias
        # reporting
        self.report = m.add_finding
        self.site = m.site
        self.report_at = m.add_finding_at

    # ------------------------------------------------------------- the current site
    @property
    def function_name(self) -> Optional[str]:
        """The name of the function the walk is in (None at module level or in a class body)."""
        f = self._model.func
        return f.name if f is not None else None

    @property
    def in_cuda_less(self) -> bool:
        """In a branch that runs without CUDA (`if not torch.cuda.is_available():`)."""
        return self._model.cuda_less_depth > 0

    @property
    def in_no_grad(self) -> bool:
        """Under `no_grad` / `inference_mode` (a `with` block or a decorated function)."""
        return self._model.no_grad_depth > 0

    @property
    def in_grad_mode_block(self) -> bool:
        """In a `with torch.enable_grad():` / `torch.set_grad_enabled(...)` (its items too):
        the code sets its grad mode itself."""
        return self._model.grad_mode_depth > 0

    @property
    def in_compiled(self) -> bool:
        """In a function under torch.compile / torch.jit (itself or an enclosing one)."""
        return self._model.compiled

    @property
    def statement(self) -> "Optional[cst.CSTNode]":
        """The innermost statement the walk is in (small or compound), None outside any."""
        stack = self._model.stmt_stack
        return stack[-1] if stack else None

    @property
    def enclosing_loops(self) -> "Tuple[cst.CSTNode, ...]":
        """The for/while loops around this site in its function, outermost first."""
        return tuple(self._model.loop_nodes)

    # ------------------------------------------------------------- file facts
    @property
    def gpu_evident(self) -> bool:
        """False for a script that never mentions a device, CUDA or an accelerator (it runs
        on the CPU)."""
        return self._model.gpu_evident

    @property
    def default_device(self) -> str:
        """Where a factory without `device=` puts its tensor at this point of the file
        (`torch.set_default_device("cuda")` above, or the project's)."""
        return self._model.default_device

    @property
    def puts_on_cuda(self) -> bool:
        """The file puts something on a CUDA device: complete once the walk is over
        (`leave_Module`)."""
        return self._model.puts_on_cuda
