"""Facts that cross a boundary: from a file's first walk to its second, from one module to
the modules that import it, and between processes and runs (so every type here has a
compact JSON form).

- `FileFacts`: what the first walk of a file learned that its second walk needs before it
  gets there (in-file returns, class attributes, the values in-file calls pass).
- `ModuleSummary`: what a module offers the project: its functions' returns, its classes
  (attributes, method returns, bases), module-level values, its imports, and the values its
  calls pass to functions of other modules. Cached by the module's content hash.
- `ProjectFacts`: what the project linker (`synclint.project`) tells one file about the
  names it imports, keyed by the qualified name the file spells (`utils.datasets.f`), plus
  the values other modules pass to its functions and whether an importer made CUDA the
  default device.

A value that a first walk could only name (a call to a function of another module) is kept
as a reference: `Val(UNKNOWN, cls="@pkg.mod.f")`; the linker and the second walk resolve it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from synclint.semantic.values import CPU, MODULE, OBJECT, PY, TENSOR, TENSORS, UNKNOWN, UNKNOWN_VAL, Val, join

# `ModuleSummary.options_set`: every command-line option may be set (`vars(args).update(...)`)
ANY_OPTION = "*"

# A key among a call's keyword values: the call also passes `*args`/`**kwargs`, so a
# parameter it does not name may still be given (its default is not what it receives).
STARRED = "*"


def join_call(seen: Dict[str, Val], order: List[str], defaulted, pos: List[Val], kws: Dict[str, Val],
              value=lambda v: v) -> None:
    """Join into `seen` (parameter -> value) what one call passes to parameters `order`.
    `value` maps each passed value first (the linker resolves references with it). A
    `**name` entry of `order` receives the keywords no other parameter takes, as a dict of
    their joined values (`update(loss=x)` to `def update(self, **kwargs)`)."""
    rest = next((p[2:] for p in order if p.startswith("**")), None)
    order = [p for p in order if not p.startswith("**")]
    given = dict(zip(order, (value(v) for v in pos)))
    given.update((k, value(v)) for k, v in kws.items() if k in order)
    starred = STARRED in kws
    for p in order:
        v = given.get(p)
        if v is None:
            if p in defaulted and not starred:
                continue  # the default: what the function itself says
            v = UNKNOWN_VAL
        seen[p] = join(seen[p], v) if p in seen else v
    if rest is not None:
        extra = [value(v) for k, v in kws.items() if k not in order and k != STARRED]
        if starred:
            seen[rest] = UNKNOWN_VAL  # `f(**options)`: keys and values not known here
        elif extra:
            item = seen[rest].elems[0] if rest in seen and seen[rest].elems else None
            for v in extra:
                item = v if item is None else join(item, v)
            if rest not in seen or seen[rest].elems:
                seen[rest] = Val(PY, py="dict", elems=(item,))


def ref(qualname: str) -> Val:
    """A value only named so far: what `qualname(...)` returns, resolved across modules."""
    return Val(UNKNOWN, cls="@" + qualname)


def ref_target(v: Val) -> Optional[str]:
    if v.kind == UNKNOWN and v.cls is not None and v.cls.startswith("@"):
        return v.cls[1:]
    return None


def moved(v: Val, device: str) -> Val:
    """What a reference resolved to, after a `.cuda()`/`.to()` that the first walk saw
    applied to it (`Val(UNKNOWN, cls="@q", device=...)`)."""
    if v.kind == UNKNOWN and device == CPU:
        return v.with_(device=device)  # whatever it is, moved to the host
    return v.with_(device=device) if v.kind in (MODULE, TENSOR, TENSORS) else v


def summary_version(summary: Optional[dict]) -> str:
    """What identifies a module summary (its JSON form): equal versions, equal summaries. An
    edit that leaves the summary as it was (a comment, a line in a body whose return is the
    same) leaves every other file's facts as they were."""
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _vals(d: Dict[str, Val]) -> Dict[str, list]:
    return {k: v.to_json() for k, v in d.items()}


def _unvals(d: Dict[str, list]) -> Dict[str, Val]:
    return {k: Val.from_json(v) for k, v in d.items()}


@dataclass
class FileFacts:
    func_returns: Dict[str, Val] = field(default_factory=dict)
    method_returns: Dict[Tuple[str, str], Val] = field(default_factory=dict)
    class_attrs: Dict[str, Dict[str, Val]] = field(default_factory=dict)
    # function qual -> calling function (None: module level) -> param -> value: the second
    # walk replaces a caller's values with its own once it has walked that caller
    params: Dict[str, Dict[Optional[str], Dict[str, Val]]] = field(default_factory=dict)
    # function -> (parameter names, the expression it returns): one-line helpers, whose
    # result is inferred at each call from that call's arguments (`infer._inlined`)
    one_liners: Dict[str, Tuple[List[str], object]] = field(default_factory=dict)
    # function -> its straight-line body (`helpers.HelperBody`): short helpers replayed at each call
    helpers: Dict[str, object] = field(default_factory=dict)
    # class -> attribute -> the expressions assigned to it (syntactic, found once: `_collect_attrs`)
    class_pending: Dict[str, Dict[str, list]] = field(default_factory=dict)
    # the file makes CUDA the default device somewhere (typically under `__main__`, which
    # runs before the functions above it are called)
    cuda_default: bool = False
    # class -> an nn.Module: the classes the file defines, so one used above its definition
    # (`self.gen = Gen()` in a class defined first) is known on the second walk
    classes: Dict[str, bool] = field(default_factory=dict)
    # class -> its attributes made from method parameters (`instances.fed_attributes`), for
    # an instance used above the class's definition (`meter.update(x)` in `train()`)
    class_fed: Dict[str, dict] = field(default_factory=dict)
    # class -> its bases (qualified), for a class used above its definition (an optimizer
    # class at the bottom of the training script)
    class_bases: Dict[str, List[str]] = field(default_factory=dict)
    # module-level name -> every value assigned to it, joined: what a function reads when the
    # name is bound further down (`writer = SummaryWriter()` under `__main__`, below the
    # functions that log with it)
    module_values: Dict[str, Val] = field(default_factory=dict)
    # command-line option -> the device it holds (`arguments.device_option`), for a function
    # above the parser that reads `args.device`
    device_options: Dict[str, str] = field(default_factory=dict)
    # loop (the id of its For/While node in this tree) -> name -> what the name held at the
    # end of the loop's body: the next iteration starts from it (`SemanticModel.enter_loop`)
    loop_carried: Dict[int, Dict[str, Val]] = field(default_factory=dict)
    # functions that run only on the host side of a DataLoader (`SemanticModel.host_side`),
    # and those whose calls in this file (if any) all run there
    host_side: FrozenSet[str] = frozenset()
    host_side_here: FrozenSet[str] = frozenset()


@dataclass
class ClassFacts:
    """A class as other modules see it. `bases` are qualified names (or, inside a summary,
    local class names) resolved by the linker, which also folds bases' members in."""

    is_module: bool = False
    attrs: Dict[str, Val] = field(default_factory=dict)
    methods: Dict[str, Val] = field(default_factory=dict)
    bases: List[str] = field(default_factory=list)
    key: str = ""  # the canonical qualified name (`pkg.mod.Class`)
    # attribute -> the method parameters it is made from (`instances.fed_attributes`)
    fed: Dict[str, List[list]] = field(default_factory=dict)  # [method, param, position, literal default]
    # methods bound to a function in the class body (`decode = decode_function`): name -> the
    # function, qualified when imported (whisper's `Whisper.decode`)
    method_aliases: Dict[str, str] = field(default_factory=dict)
    # methods whose body only says what subclasses must do (`raise NotImplementedError`):
    # a call returns what the overrides return (`Project`)
    abstract: List[str] = field(default_factory=list)

    def to_json(self) -> dict:
        out = {"m": self.is_module, "a": _vals(self.attrs), "f": _vals(self.methods), "b": self.bases, "k": self.key}
        if self.fed:
            out["d"] = {a: [list(x) for x in xs] for a, xs in self.fed.items()}
        if self.method_aliases:
            out["ma"] = self.method_aliases
        if self.abstract:
            out["ab"] = self.abstract
        return out

    @staticmethod
    def from_json(d: dict) -> "ClassFacts":
        return ClassFacts(d["m"], _unvals(d["a"]), _unvals(d["f"]), list(d["b"]), d["k"],
                          {a: [list(x) for x in xs] for a, xs in d.get("d", {}).items()}, dict(d.get("ma", {})),
                          list(d.get("ab", ())))


@dataclass
class OneLiner:
    """A helper as another module sees it, so an importer infers `doubled(cuda_tensor)` from
    that call's own arguments (G2), in the defining module's names: `def doubled(x): return
    x * 2` as its returned expression, or a short straight-line helper (`helpers.HelperBody`)
    as its steps and returns (`whole`), as node data (`HelperBody.to_data`); and the imports
    the code names."""

    params: List[str]
    body: dict  # `HelperBody.to_data`
    aliases: Dict[str, str]  # the defining module's imports the code names
    whole: bool = False

    def to_json(self) -> list:
        return [self.params, self.body, self.aliases] + ([1] if self.whole else [])

    @staticmethod
    def from_json(d: list) -> "OneLiner":
        return OneLiner(list(d[0]), d[1], dict(d[2]), len(d) > 3)


@dataclass
class ModuleSummary:
    name: str = ""  # the dotted module name the file has in its package ("" for a loose script)
    funcs: Dict[str, Val] = field(default_factory=dict)
    classes: Dict[str, ClassFacts] = field(default_factory=dict)
    values: Dict[str, Val] = field(default_factory=dict)  # module-level names
    aliases: Dict[str, str] = field(default_factory=dict)  # local name -> qualified name (re-exports)
    imports: List[str] = field(default_factory=list)  # modules imported (qualified)
    params: Dict[str, Tuple[List[str], List[str]]] = field(default_factory=dict)  # qual -> (order, defaulted)
    # (qualified callee, leading parameters not passed, positional values, keyword values)
    calls_out: List[Tuple[str, int, List[Val], Dict[str, Val]]] = field(default_factory=list)
    cuda_default: bool = False  # sets CUDA as the default device / tensor type
    stars: List[str] = field(default_factory=list)  # modules imported with `from m import *`
    # `self.m(...)` calls in a class's methods, as (method qual, positional, keyword values):
    # a subclass in another module that overrides `m` receives them too
    self_calls: List[Tuple[str, List[Val], Dict[str, Val]]] = field(default_factory=list)
    # one-line helpers other modules infer at each call (`OneLiner`)
    one_liners: Dict[str, "OneLiner"] = field(default_factory=dict)
    # the libraries it imports (`torch`, `F`): what a `from m import *` of it brings too
    library_aliases: Dict[str, str] = field(default_factory=dict)
    # the callees of `calls_out` that it calls only from the host side of a DataLoader
    host_calls: List[str] = field(default_factory=list)
    # (registry, class) of each class it puts in a registry (`@MODELS.register_module()`,
    # `R.register(C)`), both as the module spells them (`registries.registrations`)
    registered: List[Tuple[str, str]] = field(default_factory=list)
    # its functions that run a loop over batches or a decoding loop themselves: a loop that
    # calls one runs an epoch or a request a pass (`loops.calls_a_looper`)
    loopers: List[str] = field(default_factory=list)
    # its command-line options with a bool default (dest -> it; None: not a bool constant),
    # and the options it may set (`arguments.option_writes`; "*": any)
    options: Dict[str, Optional[bool]] = field(default_factory=dict)
    options_set: List[str] = field(default_factory=list)
    # the class names its text builds components by (`dict(type="X")`: `registries.type_names`),
    # the names its classes are registered under instead of their own (`registered_as`), and
    # its classes that its own code makes (`C(...)`)
    type_names: List[str] = field(default_factory=list)
    registered_as: Dict[str, List[str]] = field(default_factory=dict)
    made_here: List[str] = field(default_factory=list)
    class_type_names: Dict[str, List[str]] = field(default_factory=dict)  # those in its registered classes
    # calls of a callable it does not know that pass a loader's batch: (the positional
    # arguments' names, their values, keyword values) (`callsites._opaque_call`)
    opaque_calls: List[Tuple[List[str], List[Val], Dict[str, Val]]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "oc": [[names, [v.to_json() for v in pos], _vals(kws)] for names, pos, kws in self.opaque_calls],
            "op": self.options, "os": self.options_set,
            "tn": self.type_names, "ra": self.registered_as, "mh": self.made_here, "ct": self.class_type_names,
            "lp": self.loopers,
            "rg": [list(r) for r in self.registered],
            "hc": self.host_calls,
            "la": self.library_aliases,
            "ol": {k: o.to_json() for k, o in self.one_liners.items()},
            "sc": [[q, [v.to_json() for v in pos], _vals(kws)] for q, pos, kws in self.self_calls],
            "s": self.stars, "n": self.name, "f": _vals(self.funcs), "c": {k: c.to_json() for k, c in self.classes.items()},
            "v": _vals(self.values), "a": self.aliases, "i": self.imports,
            "p": {k: [o, d] for k, (o, d) in self.params.items()},
            "o": [[q, skip, [v.to_json() for v in pos], _vals(kws)] for q, skip, pos, kws in self.calls_out],
            "d": self.cuda_default,
        }

    @staticmethod
    def from_json(d: dict) -> "ModuleSummary":
        return ModuleSummary(
            d["n"], _unvals(d["f"]), {k: ClassFacts.from_json(c) for k, c in d["c"].items()},
            _unvals(d["v"]), dict(d["a"]), list(d["i"]), {k: (o, df) for k, (o, df) in d["p"].items()},
            [(q, skip, [Val.from_json(v) for v in pos], _unvals(kws)) for q, skip, pos, kws in d["o"]],
            bool(d["d"]), list(d["s"]),
            [(q, [Val.from_json(v) for v in pos], _unvals(kws)) for q, pos, kws in d["sc"]],
            {k: OneLiner.from_json(o) for k, o in d["ol"].items()}, dict(d["la"]), list(d["hc"]),
            [(r, c) for r, c in d.get("rg", ())], list(d.get("lp", ())), dict(d.get("op", {})),
            list(d.get("os", ())), list(d.get("tn", ())),
            {k: list(v) for k, v in d.get("ra", {}).items()}, list(d.get("mh", ())),
            {k: list(v) for k, v in d.get("ct", {}).items()},
            [(list(names), [Val.from_json(v) for v in pos], _unvals(kws)) for names, pos, kws in d.get("oc", ())],
        )


@dataclass
class ProjectFacts:
    """What the project tells one file. The second walk asks through the methods below, which
    note each question (`record`): a file is linted again only when the answer to one of the
    questions it asked changes (`answers_digest`), not when anything about the names it
    imports changes (most of that it never looks at)."""

    funcs: Dict[str, Val] = field(default_factory=dict)  # qualified name -> returned value
    classes: Dict[str, ClassFacts] = field(default_factory=dict)  # any spelling -> class
    values: Dict[str, Val] = field(default_factory=dict)  # qualified module-level name -> value
    params: Dict[str, Dict[str, Val]] = field(default_factory=dict)  # this file's function qual -> param -> value
    cuda_default: bool = False
    aliases: Dict[str, str] = field(default_factory=dict)  # names a `from m import *` brings in
    one_liners: Dict[str, OneLiner] = field(default_factory=dict)  # qualified name -> helper
    # star-imported module -> the libraries it imports, which the star brings (`torch`)
    star_imports: Dict[str, Dict[str, str]] = field(default_factory=dict)
    # this file's class -> attribute -> what its subclasses (in any module) assign to it
    subclass_attrs: Dict[str, Dict[str, Val]] = field(default_factory=dict)
    # this file's functions (a class: its `__init__`) that other modules call, and only from
    # the host side of a DataLoader
    host_called: FrozenSet[str] = frozenset()
    # the registries this file names (`semantic.registries`): as it spells one (and by its
    # key) -> [its key, whether every class registered in it is an nn.Module]
    registries: Dict[str, list] = field(default_factory=dict)
    # other modules' functions and methods (as this file names them, a method by its class's
    # key) that run their own batch or decoding loop (`ModuleSummary.loopers`)
    loopers: Set[str] = field(default_factory=set)
    # the project's command-line options that hold their bool default (`Project.options`);
    # None: not told (a file checked alone)
    options: Optional[Dict[str, bool]] = None
    # this file's registered classes that nothing builds: the tree's configs name other
    # classes of their registry, and neither they nor code outside tests name these
    unbuilt: FrozenSet[str] = frozenset()
    reads: Optional[set] = field(default=None, compare=False, repr=False)  # the questions asked

    def to_json(self) -> dict:
        return {
            "a": self.aliases, "si": self.star_imports, "f": _vals(self.funcs), "c": {k: c.to_json() for k, c in self.classes.items()},
            "v": _vals(self.values), "p": {k: _vals(v) for k, v in self.params.items()}, "d": self.cuda_default,
            "o": {k: o.to_json() for k, o in self.one_liners.items()},
            "sa": {k: _vals(a) for k, a in self.subclass_attrs.items()}, "hc": sorted(self.host_called),
            "rg": self.registries, "lp": sorted(self.loopers), "op": self.options, "ub": sorted(self.unbuilt),
        }

    @staticmethod
    def from_json(d: dict) -> "ProjectFacts":
        return ProjectFacts(
            _unvals(d["f"]), {k: ClassFacts.from_json(c) for k, c in d["c"].items()}, _unvals(d["v"]),
            {k: _unvals(v) for k, v in d["p"].items()}, bool(d["d"]), dict(d["a"]),
            {k: OneLiner.from_json(o) for k, o in d["o"].items()}, {m: dict(a) for m, a in d["si"].items()},
            {k: _unvals(a) for k, a in d["sa"].items()}, frozenset(d["hc"]),
            {k: list(r) for k, r in d.get("rg", {}).items()}, set(d.get("lp", ())), d.get("op"),
            frozenset(d.get("ub", ())),
        )

    # ------------------------------------------------------------------ the questions
    def record(self) -> None:
        """From now on, note every question asked (`reads`)."""
        self.reads = set()

    def _ask(self, *key: str) -> None:
        if self.reads is not None:
            self.reads.add(key)

    def value(self, q: str, default: Val) -> Val:
        """A module-level value of another module (`config.device`)."""
        self._ask("v", q)
        return self.values.get(q, default)

    def class_facts(self, name: str) -> Optional[ClassFacts]:
        """Whether `name` is a class of another module, whether an nn.Module, its key. Its
        members are asked for one by one (`class_member`)."""
        self._ask("c", name)
        return self.classes.get(name)

    def class_member(self, name: str, member: str, method: bool) -> Optional[Val]:
        """An attribute's value (or a method's return) of another module's class."""
        self._ask("m" if method else "a", name, member)
        return _member(self.classes.get(name), member, method)

    def subclass_attr(self, cls: str, attr: str) -> Optional[Val]:
        """What the subclasses of this file's `cls`, in any module, assign to `self.attr`:
        the value a base class's method reads when only its subclasses set it."""
        self._ask("sa", cls, attr)
        return self.subclass_attrs.get(cls, {}).get(attr)

    def param(self, qual: str, name: str) -> Optional[Val]:
        """What other modules pass for a parameter of this file's function."""
        self._ask("p", qual, name)
        return self.params.get(qual, {}).get(name)

    def called_elsewhere(self, qual: str) -> bool:
        """Another module passes arguments to this file's function `qual`."""
        self._ask("pc", qual)
        return bool(self.params.get(qual))

    def called_from_host_only(self, qual: str) -> bool:
        """Other modules call this file's function `qual`, and only from the host side of a
        DataLoader (their data pipelines)."""
        self._ask("hc", qual)
        return qual in self.host_called

    def never_built(self, cls: str) -> bool:
        """This file's registered class `cls` is built by no config and no code (`unbuilt`)."""
        self._ask("ub", cls)
        return cls in self.unbuilt

    def registry(self, name: str) -> Optional[Tuple[str, bool]]:
        """The registry a name (as this file spells it) is: (its key, whether every class
        registered in it is an nn.Module); None when no class of the project is registered
        in it (then it is no registry the project builds through)."""
        self._ask("r", name)
        got = self.registries.get(name)
        return (got[0], bool(got[1])) if got is not None else None

    def loops_itself(self, q: str) -> bool:
        """Another module's function or method `q` runs a loop over batches or a decoding
        loop itself: a call of it is an epoch, or one request."""
        self._ask("l", q)
        return q in self.loopers

    def star_names(self) -> Dict[str, str]:
        """The names this file's `from m import *` bring (name -> qualified name)."""
        self._ask("s")
        return self.aliases

    def star_imports_of(self, module: str) -> Dict[str, str]:
        """The libraries `from module import *` brings because `module` imports them
        (`from utils import *` where utils has `import torch`: name -> qualified name)."""
        self._ask("s")
        return self.star_imports.get(module, {})

    def option(self, name: str) -> Optional[bool]:
        """A command-line option's bool default, where nothing in the project sets it."""
        self._ask("op", name)
        return None if self.options is None else self.options.get(name)

    def options_known(self) -> bool:
        """The project told this file its options (else the file's own are all there is)."""
        return self.options is not None

    def makes_cuda_default(self) -> bool:
        """An importing script made CUDA the default device."""
        self._ask("d")
        return self.cuda_default

    def one_liner(self, q: str) -> Optional[OneLiner]:
        """Another module's one-line helper, inferred at each call from its arguments."""
        self._ask("o", q)
        return self.one_liners.get(q)

    def call_val(self, q: str) -> Optional[Val]:
        """What calling `q` gives: a function's return, or an instance of a class."""
        self._ask("f", q)
        v = self.funcs.get(q)
        if v is not None:
            return v
        c = self.class_facts(q)
        if c is not None:
            return Val(MODULE if c.is_module else OBJECT, cls=c.key)
        owner, _, method = q.rpartition(".")
        c = self.class_facts(owner) if owner else None
        if c is not None and c.is_module:  # a classmethod constructor (`LanguageModel.from_pretrained(cfg)`)
            # (modules only: what another class's dunders do with tensors, `boxes[mask]` in
            # detectron2's `Boxes.__getitem__`, is not followed, so knowing it hides the read)
            made = self.class_member(owner, method, True)
            if made is not None and made.kind == MODULE and made.cls == c.key:
                return made
        return None

    def answer(self, key: Sequence[str]):
        """The JSON form of what a question (as `reads` holds it) gets now."""
        kind = key[0]
        if kind == "v":
            v = self.values.get(key[1])
            return v.to_json() if v is not None else None
        if kind == "c":
            c = self.classes.get(key[1])
            return [c.is_module, c.key, c.fed] if c is not None else None
        if kind in ("a", "m"):
            v = _member(self.classes.get(key[1]), key[2], kind == "m")
            return v.to_json() if v is not None else None
        if kind == "p":
            v = self.params.get(key[1], {}).get(key[2])
            return v.to_json() if v is not None else None
        if kind == "pc":
            return bool(self.params.get(key[1]))
        if kind == "hc":
            return key[1] in self.host_called
        if kind == "r":
            return self.registries.get(key[1])
        if kind == "ub":
            return key[1] in self.unbuilt
        if kind == "s":
            return [self.aliases, self.star_imports]
        if kind == "sa":
            v = self.subclass_attrs.get(key[1], {}).get(key[2])
            return v.to_json() if v is not None else None
        if kind == "d":
            return self.cuda_default
        if kind == "op":
            return None if self.options is None else self.options.get(key[1])
        if kind == "f":
            v = self.funcs.get(key[1])
            return v.to_json() if v is not None else None
        if kind == "l":
            return key[1] in self.loopers
        if kind == "o":
            o = self.one_liners.get(key[1])
            return o.to_json() if o is not None else None
        raise ValueError(f"unknown question {key!r}")

    def answers_digest(self, keys: Sequence[Sequence[str]]) -> str:
        """A digest of the answers to `keys` now: equal, and a file asking them learns the same."""
        data = json.dumps([[list(k), self.answer(k)] for k in keys], separators=(",", ":"))
        return hashlib.blake2b(data.encode(), digest_size=12).hexdigest()


def _member(c: Optional[ClassFacts], member: str, method: bool) -> Optional[Val]:
    return None if c is None else (c.methods if method else c.attrs).get(member)
