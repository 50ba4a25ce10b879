"""Compiled regions: which code runs under `torch.compile`, with which options, and what a
sync-like operation does there.

Inside a compiled region the same line that is "a sync" in eager code is something else:
Dynamo breaks the graph at it (or, under `fullgraph=True`, fails to compile), CUDA graphs
(`mode="reduce-overhead"`) are split or skipped, and Dynamo's flags
(`capture_scalar_outputs`, `capture_dynamic_output_shape_ops`) remove the break but not the
wait. Which functions are compiled is a property of the whole program: a module's
`forward` is compiled because a training script elsewhere wraps the model in
`torch.compile`, and everything it calls is traced with it. So:

- each file's walk notes its compile roots (decorated functions, `torch.compile(f_or_model)`,
  `model.compile()`), the functions `torch.compiler.disable` excludes and the Dynamo flags it
  sets (`Compiled`, carried in the file's call graph);
- `regions` spreads each root's `Region` along the project's call edges, stopping at
  disabled functions (`Project.compiled_regions`, or one file's own graph for `lint_source`);
- rules report compiled events (`Finding.compiled`: what Dynamo does there, `KINDS`) in any
  function, and `settle` keeps those in a region, says their consequence under the region's
  options, and withdraws the eager finding at the same place, whose advice is the eager one.

No LibCST here: the linker and the runner use this module on cached call graphs
(`compile_sites` reads the syntax).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, Hashable, Iterable, List, Optional, Sequence, Set, Tuple, TypeVar

T = TypeVar("T", bound=Hashable)

SCALARS = "capture_scalar_outputs"
SHAPES = "capture_dynamic_output_shape_ops"
FLAGS = (SCALARS, SHAPES)
# environment variables Dynamo reads its flags from (torch/_dynamo/config.py)
FLAG_ENV = {"TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS": SCALARS, "TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS": SHAPES}
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
# backends that compile through inductor (the default), whose lowering decides what a
# one-element masked write becomes and which modes add CUDA graphs
INDUCTOR = (None, "inductor")


@dataclass(frozen=True)
class Options:
    """What a compile root was compiled with (the keywords of `torch.compile`, the flags a
    `torch._dynamo.config.patch` around or on it sets)."""

    fullgraph: bool = False
    mode: Optional[str] = None
    dynamic: Optional[bool] = None
    backend: Optional[str] = None  # None: inductor; "<custom>": a callable backend
    cudagraphs: bool = False  # CUDA graphs: `mode` reduce-overhead / max-autotune, or asked for
    flags: Tuple[Tuple[str, bool], ...] = ()  # Dynamo flags patched for this root, and their values

    def to_json(self) -> list:
        return [self.fullgraph, self.mode, self.dynamic, self.backend, self.cudagraphs, [list(f) for f in self.flags]]

    @staticmethod
    def from_json(d: list) -> "Options":
        return Options(bool(d[0]), d[1], d[2], d[3], bool(d[4]), tuple((f, bool(v)) for f, v in d[5]))


@dataclass
class Compiled:
    """A file's part of the project's compiled regions: (root key, options) for each compile
    root (an in-file function's qual, or "@" + another module's qualified name, as call-graph
    callees are), the keys `torch.compiler.disable` excludes (with what they call) or skips
    (`recursive=False`: that frame only), and the Dynamo flags the file sets for the whole
    program (by assignment or environment variable)."""

    roots: List[Tuple[str, Options]] = field(default_factory=list)
    disabled: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    flags: Dict[str, bool] = field(default_factory=dict)
    # root key -> a key that voids it when it names a function of the project (`model.compile()`
    # of a class whose base in another module defines its own `compile`)
    unless: Dict[str, str] = field(default_factory=dict)
    # compile factories: a function of this file that hands its parameter to `torch.compile`
    # (`def compile(fn): return torch.compile(fn)`, moshi's `torch_compile_lazy`) -> (the
    # parameter's position, the options it compiles with)
    factories: Dict[str, Tuple[int, Options]] = field(default_factory=dict)
    # what this file hands to a function that may be such a factory: (the callee's key, the
    # argument's position, the key of the function or module passed), from calls
    # (`rms_norm = compile(rms_norm)`) and decorators (`@torch_compile_lazy`)
    handed: List[Tuple[str, int, str]] = field(default_factory=list)
    # the module's training mode where compiled modules are called (`semantic.trainmode`):
    # index in the file's call edges -> the mode the edge's `if self.training:` branch needs
    modal: Dict[int, bool] = field(default_factory=dict)
    # (root key, class, attribute): `self.<attribute>` of the class holds the compiled value
    holders: List[Tuple[str, str, str]] = field(default_factory=list)
    # (function, receiver, mode; None: not a literal): `receiver.train()`, `.eval()`, `.train(m)`
    mode_sets: List[Tuple[str, str, Optional[bool]]] = field(default_factory=list)
    # (function, "held" or "self", the attribute called or the method key, the receivers'
    # modes set before the call by statements that dominate it): `self.model(x)`, `self.step()`
    mode_sites: List[Tuple[str, str, str, Dict[str, Optional[bool]]]] = field(default_factory=list)
    # (class, attribute) whose value leaves the class (passed, bound to a name), and root keys
    # whose compiled value escapes before an attribute holds it
    escapes: List[Tuple[str, str]] = field(default_factory=list)
    # (class, attribute, attribute): `self.raw_model = self.model.module` holds what the second holds
    aliases: List[Tuple[str, str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.roots or self.disabled or self.skipped or self.flags or self.factories or self.handed
                    or self.modal)

    def add_roots(self, keys: Iterable[Tuple[str, Optional[str]]], options: Options) -> None:
        for key, unless in keys:
            self.roots.append((key, options))
            if unless is not None:
                self.unless[key] = unless

    def to_json(self) -> list:
        return [[[k, o.to_json()] for k, o in self.roots], self.disabled, self.skipped, self.flags, self.unless,
                {k: [i, o.to_json()] for k, (i, o) in self.factories.items()}, [list(h) for h in self.handed],
                [[i, m] for i, m in self.modal.items()], [list(h) for h in self.holders]] + (
                    # (the mode facts matter only beside a compile result kept in an attribute)
                    [[list(s) for s in self.mode_sets], [list(s) for s in self.mode_sites],
                     [list(e) for e in self.escapes], [list(a) for a in self.aliases]]
                    if self.holders else [[], [], [], []])

    @staticmethod
    def from_json(d: Optional[list]) -> "Compiled":
        if not d:
            return Compiled()
        return Compiled([(k, Options.from_json(o)) for k, o in d[0]], list(d[1]), list(d[2]), dict(d[3]),
                        dict(d[4]), {k: (i, Options.from_json(o)) for k, (i, o) in d[5].items()},
                        [(c, i, r) for c, i, r in d[6]], {i: m for i, m in d[7]}, [tuple(h) for h in d[8]],
                        [tuple(x) for x in d[9]], [(f, k, t, dict(m)) for f, k, t, m in d[10]],
                        [tuple(e) for e in d[11]], [tuple(a) for a in d[12]])


@dataclass(frozen=True)
class Region:
    """What holds for a function traced by Dynamo, joined over the roots that reach it: a
    compile error under `fullgraph=True` and CUDA graphs if any root has them (the worse
    consequence is the one to say), a capture (a flag, or `fullgraph=True`, which captures
    what the flags capture) only if every root has it."""

    root: str  # the function whose graph this code is part of (for messages): the first root
    fullgraph: bool = False  # some root is compiled with fullgraph=True
    cudagraphs: bool = False
    inductor: bool = True  # every root compiles through inductor
    scalars: bool = False  # capture_scalar_outputs
    shapes: bool = False  # capture_dynamic_output_shape_ops
    others: Tuple[str, ...] = ()  # the other roots that reach it
    fullgraph_all: Optional[bool] = None  # every root is (None: as `fullgraph`, one root)
    # the module's training mode at every call of every root (`semantic.trainmode`); None: not
    # known, or not the same everywhere. Dynamo guards on `self.training`: it traces one branch
    training: Optional[bool] = None

    def to_json(self) -> list:
        return [self.root, self.fullgraph, self.cudagraphs, self.inductor, self.scalars, self.shapes,
                list(self.others), self.fullgraph_all, self.training]

    @staticmethod
    def from_json(d: list) -> "Region":
        return Region(d[0], bool(d[1]), bool(d[2]), bool(d[3]), bool(d[4]), bool(d[5]), tuple(d[6]), d[7],
                      d[8] if len(d) > 8 else None)

    @property
    def captures(self) -> bool:
        """Every root is compiled with fullgraph=True (which captures scalars and shapes)."""
        return self.fullgraph if self.fullgraph_all is None else self.fullgraph_all

    def join(self, other: "Region") -> "Region":
        if other == self:
            return self
        names = sorted({self.root, *self.others, other.root, *other.others})
        return Region(names[0], self.fullgraph or other.fullgraph,
                      self.cudagraphs or other.cudagraphs, self.inductor and other.inductor,
                      self.scalars and other.scalars, self.shapes and other.shapes, tuple(names[1:]),
                      self.captures and other.captures, self.training if self.training == other.training else None)


def region_of(root: str, options: Options, flags: Dict[str, bool], training: Optional[bool] = None) -> Region:
    """The region a root starts: its options with the program's flags (a flag patched on the
    root wins over the program's setting), and the module's training mode where it is called."""
    on = dict(flags)
    on.update(options.flags)
    return Region(root, options.fullgraph, options.cudagraphs, options.backend in INDUCTOR,
                  on.get(SCALARS, False), on.get(SHAPES, False), training=training)


def regions(roots: Sequence[Tuple[T, Region]], edges: Dict[T, List[T]], disabled: Set[T],
            skipped: Set[T] = frozenset(), modal: Optional[Dict[T, List[Tuple[T, bool]]]] = None) -> Dict[T, Region]:
    """Every function a root reaches along call edges, with the join of the regions that
    reach it. A disabled function runs eagerly, and so does what it calls (unless a root
    reaches it another way); a skipped one runs eagerly, what it calls is traced. A `modal`
    edge (made in an `if self.training:` branch) is followed unless the region's known
    training mode is the other one."""
    out: Dict[T, Region] = {}
    through: Dict[T, Region] = {}  # skipped functions passed, by the region passing
    todo: List[Tuple[T, Region]] = [(n, r) for n, r in roots if n not in disabled]
    while todo:
        node, region = todo.pop()
        table = through if node in skipped else out
        seen = table.get(node)
        joined = region if seen is None else seen.join(region)
        if joined == seen:
            continue
        table[node] = joined
        todo.extend((n, joined) for n in edges.get(node, ()) if n not in disabled)
        todo.extend((n, joined) for n, mode in (modal or {}).get(node, ())
                    if n not in disabled and joined.training in (None, mode))
    return out


def merged_flags(flag_sets: Iterable[Dict[str, bool]]) -> Dict[str, bool]:
    """The program's Dynamo flags: on where some file turns it on (a training script's
    `torch._dynamo.config.capture_scalar_outputs = True` holds for every module it runs)."""
    out: Dict[str, bool] = {}
    for flags in flag_sets:
        for f, v in flags.items():
            out[f] = out.get(f, False) or v
    return out


# --------------------------------------------------------------------------- consequences
@dataclass(frozen=True)
class Kind:
    """What Dynamo does with one kind of operation (measured with torch 2.13 on CPU, see
    docs/compiled.md): the graph-break registry's id, the flag that captures it instead
    (None: none does), whether `fullgraph=True` captures it (Dynamo then allows scalar and
    dynamic-shape outputs) or fails to compile, and the fix that keeps the graph whole."""

    gb: Optional[str]
    lifted_by: Optional[str]
    fullgraph_captures: bool
    fix: str
    breaks: bool = True  # False: no graph break; only CUDA graphs change (a CPU op in the graph)
    silent: bool = False  # no break, no wait in compiled code: the eager finding is withdrawn


_KEEP_TENSOR = "Keep it a tensor (`torch.where`, tensor arithmetic) or read it outside the compiled function"
_SIZE_FIX = ("Use a static size, or read it with `.item()` under `capture_scalar_outputs = True` and "
             "`torch._check_is_size(n)`; or move the read out of the compiled function")
_BRANCH_FIX = "Branch on the GPU: `torch.where(cond, a, b)` or `torch.cond(pred, true_fn, false_fn, (x,))`"
_PRINT_FIX = "Return the value and print or log it outside the compiled function"
_SHAPE_FIX = ("Keep the shape static (`torch.where(mask, x, 0)`, `nonzero_static(size=k)`, `output_size=`); "
              "`capture_dynamic_output_shape_ops = True` removes the break, not the wait")
KINDS: Dict[str, Kind] = {
    "item": Kind("GB0124", SCALARS, True, _KEEP_TENSOR),  # .item(), int/float/bool(t)
    "size": Kind("GB0033", SCALARS, True, _SIZE_FIX),  # a tensor as a size: torch.zeros(t), x[:t]
    "tolist": Kind("GB0109", None, False, "Keep it a tensor, or call `.tolist()` outside the compiled function"),
    "tolist-int": Kind("GB0033", SCALARS, True, "Keep it a tensor, or call `.tolist()` outside the compiled function"),
    "branch": Kind("GB0170", None, False, _BRANCH_FIX),
    "equal": Kind("GB0033", None, False, "Compare on the GPU (`(a == b).all()`, `torch.isclose`) and keep the result a tensor"),
    "member": Kind("GB0124", None, False, "Test membership on the GPU: `(t == v).any()`, kept a tensor"),
    "print": Kind("GB0059", None, False, _PRINT_FIX),
    "str": Kind("GB0059", None, False, _PRINT_FIX),
    "repr": Kind("GB0569", None, False, _PRINT_FIX),
    "percent": Kind("GB0208", None, False, _PRINT_FIX),
    "logging": Kind("GB0291", None, False, _PRINT_FIX),
    "shape": Kind("GB0036", SHAPES, True, _SHAPE_FIX),
    "one-hot": Kind("GB0246", None, False, "Pass `num_classes=`"),
    "host-copy": Kind(None, None, True, "Return the tensor and copy it to the host outside the compiled function",
                      breaks=False),
    "assert": Kind(None, None, True, "", breaks=False, silent=True),  # Dynamo's torch._assert_async
    "fill": Kind(None, None, True, "", breaks=False, silent=True),  # inductor's masked fill
}
WITHDRAWN = "withdrawn"  # `settle`: no compiled finding, and the eager one at its place goes too


def tag(kind: str, gpu: bool) -> str:
    """A finding's `compiled` field: the kind of event, and whether its value is on the GPU
    (or on no known device in a GPU program), so that the host waits for it."""
    assert kind in KINDS, kind
    return f"{kind}:gpu" if gpu else kind


# `tag` + AFTER + the tag of an event that breaks at every iteration of a loop before this one
# in its function (`compile_sites.in_broken_frame`): if that one breaks, Dynamo runs the frame
# eagerly and this event is eager code
AFTER = "|after="


def after_break(compiled: str, first: str) -> str:
    return compiled + AFTER + first.partition(AFTER)[0]


# `tag` (and its AFTER part) + MODE + "1" or "0": the event is in a branch that runs only in
# training mode, or only in eval mode (`mode_sites.branch_mode`); a region known to run in the
# other mode never traces it
MODE = "|mode="


def in_mode(compiled: str, training: Optional[bool]) -> str:
    return compiled if training is None else f"{compiled}{MODE}{int(training)}"


# How a consequence that predicts no break begins: `synclint trace` joins such findings with
# syncs only, never with graph breaks.
NO_BREAK = "no graph break"


def consequence(compiled: str, region: Region) -> Optional[Tuple[str, str]]:
    """(what happens, the fix) for an event tagged `compiled` in `region`; None when nothing
    happens beyond what eager code does (the eager finding says it); `WITHDRAWN` as the
    first element when nothing happens at all."""
    name, _, where = compiled.partition(":")
    kind = KINDS[name]
    gpu = where == "gpu"
    wait = " and the host waits for the GPU" if gpu else ""
    more = len(region.others)
    root = f"`{region.root}`" + (f" (and {more} more compiled function{'s' if more > 1 else ''})" if more else "")
    if kind.silent:
        if name == "fill" and not region.inductor:
            return None  # another backend runs aten's index_put_, which waits as in eager code
        return WITHDRAWN, ""
    if not kind.breaks:  # a CPU op inside the graph: only CUDA graphs care
        if not region.cudagraphs or not region.inductor:
            return None
        return (f"{NO_BREAK}, but CUDA graphs (mode=\"reduce-overhead\") are split or skipped at this "
                f"CPU op in {root}{wait}"), kind.fix
    captured = (kind.lifted_by == SCALARS and region.scalars) or (kind.lifted_by == SHAPES and region.shapes)
    why = (f"`{kind.lifted_by}`" if captured else "fullgraph=True")
    if captured or (region.captures and kind.fullgraph_captures):
        if not gpu:
            return None  # captured, and no GPU to wait for
        text = f"{NO_BREAK} ({why} captures it), but the host still waits for the GPU at every call"
        if region.cudagraphs and region.inductor:
            text += ", and CUDA graphs are split or skipped around its data-dependent value"
        return text, kind.fix
    gb = f" ({kind.gb})" if kind.gb else ""
    if region.fullgraph and not kind.fullgraph_captures:
        return f"a compile error under fullgraph=True{gb}: {root} cannot be one graph", kind.fix
    parts = "two CUDA graphs" if region.cudagraphs and region.inductor else "two graphs"
    return f"a graph break{gb} splits {root} here into {parts}; this line runs in Python{wait}", kind.fix


def settle(findings: list, regions_here: Dict[str, Region]) -> list:
    """A file's findings, with its compiled events settled: an event outside every region
    goes; one inside says its consequence (appended to its message) and its compiled fix,
    and takes the place of the eager findings on the same span (device-to-host, shape and
    transfer families), whose advice is the eager one; an event that does nothing in
    compiled code withdraws them and goes too."""
    if not any(f.compiled for f in findings):
        return findings
    kept: list = []
    taken: Set[Tuple[int, int, int, int]] = set()
    for f in findings:
        if not f.compiled:
            continue
        region = regions_here.get(f.scope) if f.scope is not None else None
        tagged, _, mode = f.compiled.partition(MODE)
        if region is not None and mode and region.training is not None and region.training != (mode == "1"):
            continue  # a branch of `if self.training:` the region's mode never takes: eager code
        event, _, first = tagged.partition(AFTER)
        if region is not None and first and _breaks(consequence(first, region)):
            continue  # its frame was sent to eager by a break in its loop: the eager finding stays
        said = consequence(event, region) if region is not None else None
        if said is None:
            continue
        taken.add((f.row, f.column, f.end_row, f.end_column))
        if said[0] == WITHDRAWN:
            continue
        kept.append(replace(f, message=f"{f.message}: {said[0]}", fix_title=said[1], compiled=None))
    out = [f for f in findings if not f.compiled and not (
        f.code[:4] in _SUPERSEDED and (f.row, f.column, f.end_row, f.end_column) in taken)]
    out.extend(kept)
    out.sort(key=lambda f: f.sort_key())
    return out


def _breaks(said: Optional[Tuple[str, str]]) -> bool:
    return said is not None and said[0].startswith("a graph break")


_SUPERSEDED = ("SYN1", "SYN2", "SYN3")  # the families whose advice is the eager one


def file_regions(compiled: Compiled, calls: Iterable[Tuple[Optional[str], str, object]]) -> Dict[str, Region]:
    """One file's regions from its own call graph alone (a file checked by itself:
    `engine.lint_source`): its roots and calls among its own functions."""
    roots = [(k, region_of(k, o, compiled.flags)) for k, o in compiled.roots if not k.startswith("@")]
    roots.extend((root, region_of(root, compiled.factories[callee][1], compiled.flags))
                 for callee, i, root in compiled.handed
                 if not root.startswith("@") and compiled.factories.get(callee, (None,))[0] == i)
    if not roots:
        return {}
    edges: Dict[str, List[str]] = {}
    for caller, callee, _ in calls:
        if caller is not None and not callee.startswith("@"):
            edges.setdefault(caller, []).append(callee)
    return regions(roots, edges, set(compiled.disabled), set(compiled.skipped))
