"""What the walk binds: a name's binding, a function's scope and facts, a class's attributes.

The model (`model.SemanticModel`) keeps a stack of these as the binder (`binder.Binder`) descends; the
evaluator (`infer`) reads and makes them (a helper's body evaluated in a scope of its own),
so they live apart from both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

import libcst as cst

from synclint.semantic.compiled import Options
from synclint.semantic.ownership import Fresh
from synclint.semantic.values import Val


@dataclass
class Binding:
    """What a name holds at this point: its value, and the expression it was assigned
    (None for parameters, loop targets, unpacking and joins of different expressions)."""

    val: Val
    expr: Optional[cst.BaseExpression] = None
    prev: Optional["Binding"] = None
    fresh: Optional[Fresh] = None  # a tensor this name alone owns (`ownership.fresh`)


@dataclass
class FuncInfo:
    name: str
    qual: str
    cls: Optional["ClassInfo"]
    scope: Dict[str, Binding] = field(default_factory=dict)
    params: Set[str] = field(default_factory=set)
    no_grad: bool = False
    timing: bool = False
    iterates_loader: bool = False  # has a loop over batches: a per-epoch function
    # runs a decoding loop (a token, a denoising step) and is no module's hook: its own code
    # runs once per request, even where its name makes it an entry (a pipeline's `__call__`;
    # a module's `forward` that decodes runs every training step: `SemanticModel.note_decodes`)
    per_request: bool = False
    # has a loop that steps wherever it is (over a loader's batches, a decoding loop): a
    # loop that calls it passes once per epoch or request (`loops.calls_a_looper`)
    runs_steps: bool = False
    steps_optimizer: bool = False  # calls `.step()` of an optimizer or a scaler (`heat.STEPS`)
    returns: Optional[Val] = None
    yields: Optional[Val] = None  # what a generator yields (its call is an iterator of it)
    # a generator that yields the items of one parameter and nothing else (`def cycle(dl):
    # while True: for data in dl: yield data`): that parameter's position
    reyields: Optional[int] = None
    globals: Set[str] = field(default_factory=set)  # `global` / `nonlocal` names
    param_order: List[str] = field(default_factory=list)
    defaults: Set[str] = field(default_factory=set)  # parameters with a default
    started_d2h: bool = False  # started a non-blocking device-to-host copy (a sync is then required)
    node: Optional[cst.CSTNode] = None  # the FunctionDef (for `escaped`)
    compiled: bool = False  # under torch.compile / torch.jit (itself or an enclosing function)
    region: Optional[Options] = None  # a compile root by its decorator (`@torch.compile(...)`)
    disabled: bool = False  # `@torch.compiler.disable`: runs eagerly, even when compiled code calls it
    entry: bool = False  # called every step by a framework (`SemanticModel.is_entry`)
    escaped: Optional[Set[str]] = None  # names whose tensor may be reachable from elsewhere
    counters: Optional[Set[str]] = None  # names this function counts with (`is_counter`)
    # local name -> (method, positional values, keyword values) of calls made on the instance
    # it holds (`instances`)
    instance_calls: Dict[str, List[tuple]] = field(default_factory=dict)

    @property
    def is_static(self) -> bool:
        """A `@staticmethod`: a call through an instance or its class passes no `self`."""
        return self.cls is not None and type(self.node) is cst.FunctionDef and any(
            type(d.decorator) is cst.Name and d.decorator.value == "staticmethod" for d in self.node.decorators)


@dataclass
class ClassInfo:
    name: str
    is_module: bool
    attrs: Dict[str, Val] = field(default_factory=dict)
    bases: List[str] = field(default_factory=list)  # qualified (imported) or in-file names
    # `self.x = <expr>` anywhere in the class (and class-level fields), for attributes read
    # before the walk reaches their assignment.
    pending: Dict[str, List[cst.BaseExpression]] = field(default_factory=dict)
    # what the first walk found (for attributes read before this walk reaches their
    # assignment); this walk's own assignments replace it, so a second walk that knows
    # more (a parameter's value from the project) is not held back by the first one
    prior: Dict[str, Val] = field(default_factory=dict)
    methods: Set[str] = field(default_factory=set)  # names of the methods defined in the class
    node: Optional[cst.ClassDef] = None
    counters: Optional[Set[str]] = None  # `self.x += 1` somewhere in the class (`is_counter`)
    fed: Optional[dict] = None  # attributes made from method parameters (`instances.fed_attributes`)
