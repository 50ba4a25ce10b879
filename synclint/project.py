"""The project linker: joins the modules' summaries so each file knows what it imports.

Every checked file is summarised by its first walk (`engine.analyse`, cached by content
hash); this module then, in the main process and without parsing anything:

- maps dotted module names to files (a file answers to each dotted suffix of its path
  under the project root, so `utils.datasets` finds `utils/datasets.py` whether the code is
  run as a package or as scripts from the root; the nearest file wins a tie);
- resolves a qualified name through re-exports to a function, class, method or value,
  and the references a first walk left (`@pkg.mod.f`) to values, classes to canonical keys
  with their bases' members folded in;
- gives each file its `ProjectFacts`: the names it imports, the values other modules'
  calls pass to its functions, and CUDA as the default device where an importer set it;
- computes heat over the whole call graph (`hot_scopes`), from each file's `Graph`.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import contextmanager
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from synclint.paths import absolute_paths, is_test_module
from synclint.semantic.namespaces import namespace_packages
from synclint.semantic import library as L
from synclint.semantic import values as V
from synclint.semantic.facts import ANY_OPTION, ClassFacts, ModuleSummary, ProjectFacts, join_call, moved, ref, ref_target
from synclint.semantic.callgraph import crosses, debug_path, hot_name, spread
from synclint.semantic.declared import DeclaredHeat, qualified
from synclint.semantic.values import Val

MAX_DEPTH = 8  # re-exports and references followed at most this deep (cycles end here too)
MAX_CLASSES = 200  # classes one file is told about (the closure of what its imports reach)

Symbol = Tuple[str, str, str]  # (kind: func|class|method|value|module, path, name in that module)

# The whole-project tables a store keeps per kind (`Project.kept`): an edit's check makes some
# twice, from the edited file's first walk, then from its second.
KEPT_TABLES = 2


def module_name(path: str) -> str:
    """The dotted name a file has in its package (`pkg/sub/mod.py` -> `pkg.sub.mod` while
    `pkg/` and `pkg/sub/` hold an `__init__.py`); a package's `__init__.py` keeps the
    `.__init__` part so that its relative imports stay inside it."""
    return module_names([path])[path]


def module_names(paths: Iterable[str]) -> Dict[str, str]:
    """`module_name` of each path, each directory looked at once (files share folders)."""
    packages: Dict[str, List[str]] = {}  # directory -> the package names from it up
    files = absolute_paths(paths)
    imported = namespace_packages(files.values())

    def package(d: str) -> List[str]:
        got = packages.get(d)
        if got is None:
            got = []
            parent, pkg = os.path.split(d)
            # a package, or a folder without `__init__.py` inside one (a namespace package:
            # timesfm's `timesfm/timesfm_2p5/`, whose `from ..torch import dense` is timesfm's),
            # or one its own files import from relatively
            if os.path.exists(os.path.join(d, "__init__.py")) or pkg and os.path.exists(
                    os.path.join(parent, "__init__.py")) or d in imported:
                got = [pkg] + (package(parent) if pkg else [])
            packages[d] = got
        return got

    out = {}
    for path, absolute in files.items():
        d, base = os.path.split(absolute)
        out[path] = ".".join(reversed([os.path.splitext(base)[0]] + package(d)))
    return out


class _Summaries(dict):
    """absolute path -> summary. Reading one, while `reading` holds a set, notes its path
    there: what a file's facts were made from (`Project.may_change`)."""

    def __init__(self) -> None:
        super().__init__()
        self.reading: List[Set[str]] = []

    def get(self, path, default=None):
        if self.reading:
            self.reading[-1].add(path)
        return dict.get(self, path, default)

    def __getitem__(self, path):
        if self.reading:
            self.reading[-1].add(path)
        return dict.__getitem__(self, path)

    def __contains__(self, path) -> bool:
        if self.reading:
            self.reading[-1].add(path)
        return dict.__contains__(self, path)

    def note(self, paths) -> None:
        """What a remembered answer was made from counts as read now."""
        if self.reading:
            self.reading[-1].update(paths)


class Project:
    def __init__(self, root: str, absolute: Optional[Dict[str, str]] = None,
                 kept: Optional[Dict[str, List[tuple]]] = None) -> None:
        self.root = os.path.abspath(root)
        # the last whole-project tables, what -> [(root, summary versions, what else it was
        # made from, the table)], newest first: the store of a long-lived process (the daemon,
        # --watch, the LSP worker), which hands the same one to each of its runs; None: this
        # project's own
        self._kept_tables: Dict[str, List[tuple]] = {} if kept is None else kept
        # path -> absolute path (one run, one working directory; `absolute`: those known)
        self._absolute: Dict[str, str] = dict(absolute or {})
        self._folders: Dict[str, str] = {}  # importer -> its folder (`resolve` asks ~100 times a file)
        self.summaries: _Summaries = _Summaries()  # absolute path -> summary
        self.by_name: Dict[str, List[str]] = {}
        self._classes: Dict[Tuple[str, str], ClassFacts] = {}
        self._key_to_class: Dict[str, Tuple[str, str]] = {}
        self._incoming: Optional[Dict[str, Dict[str, Dict[str, Val]]]] = None
        self._cuda: Optional[Set[str]] = None
        self._options: Optional[Dict[str, bool]] = None  # see `options`
        self._sub_attrs: Optional[Dict[str, Dict[str, Dict[str, Val]]]] = None
        self._host_callers: Optional[Dict[str, FrozenSet[str]]] = None
        self._unbuilt: Optional[Dict[str, FrozenSet[str]]] = None  # see `_never_built`
        # while held (`tables_held`), the six tables above stay as an update finds them
        self._held = False
        self._hierarchy: Optional[Tuple[dict, dict]] = None  # see `_class_hierarchy`
        self._registries: Optional[Dict[str, Tuple[List[Tuple[str, str]], bool]]] = None  # see `registries`
        self._registry_keys: Dict[Tuple[str, str], str] = {}  # (name, importer's directory) -> registry key
        self._named_registries: Dict[str, Dict[str, list]] = {}  # path -> `ProjectFacts.registries`
        # (name, importer's directory) -> symbol: the same spelling from the same directory
        # resolves the same way (one file's facts ask thousands of times); forgotten when a
        # summary changes
        self._resolved: Dict[Tuple[str, str], Tuple[Optional[Symbol], Set[str]]] = {}
        # (path, callee key) -> what that call runs (`_call_targets`): the heat, grad-mode,
        # setup and compiled tables each walk every call edge; forgotten with `_resolved`
        self._targets: Dict[Tuple[str, str], List[Tuple[str, str]]] = {}
        self._class_reads: Dict[Tuple[str, str], Set[str]] = {}  # what each remembered class was made from
        self.reads: Dict[str, Set[str]] = {}  # file -> the summaries its last facts were made from
        # Updates are counted: a file's facts are stale when a summary they read, or the set
        # of classes, changed after they were made (`may_change`)
        self.generation = 0
        self._updated_at: Dict[str, int] = {}  # path -> generation of its last update
        self._classes_moved_at = -1  # generation of the last update that added or removed a class
        self._made_at: Dict[str, int] = {}  # file -> generation its last facts were made at
        self._found_on_disk: Dict[Tuple[str, str], Optional[str]] = {}  # (name, directory) -> file
        self._unsummarised: Dict[Tuple[str, str], Optional[str]] = {}  # (directory, name) -> file (`on_disk`)
        self._is_file: Dict[str, bool] = {}
        self._tests: Dict[str, bool] = {}  # path -> a test file (tests call code unlike how it runs)
        self._names_in: Dict[str, Set[str]] = {}  # folder -> names `_visible` from it
        # absolute path -> what identifies the summary held for it (the file's content digest,
        # and the answers of the walk that made it): equal versions, equal summaries
        self.versions: Dict[str, str] = {}
        self._index: Optional[Tuple[str, Dict[str, int], List[str]]] = None  # see `_shape`

    # ------------------------------------------------------------------ modules
    def add(self, path: str, summary: Optional[ModuleSummary], version: str = "") -> None:
        path = self.absolute(path)
        self.summaries[path] = summary
        self.versions[path] = version
        self._index = None
        rel = os.path.relpath(path, self.root)
        parts = rel[:-3].split(os.sep) if rel.endswith(".py") else rel.split(os.sep)
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        if rel.startswith(".."):  # outside the root: its package name only
            parts = module_name(path).replace(".__init__", "").split(".")
        for i in range(len(parts)):
            named = self.by_name.setdefault(".".join(parts[i:]), [])
            if path not in named:  # (added again: a file that imports tensors, summarised once more)
                named.append(path)
                self._unsummarised.clear()
        if summary is not None:
            for cname in summary.classes:
                self._key_to_class[self.class_key(path, cname)] = (path, cname)
        self._resolved.clear()
        self._targets.clear()
        self._forget_registries()

    def update(self, path: str, summary: ModuleSummary, version: str = "") -> None:
        """Replace a module's summary with what its second walk found (knowing the rest of
        the project), and forget what was linked from the first."""
        path = self.absolute(path)
        self.generation += 1
        self._updated_at[path] = self.generation
        old = dict.get(self.summaries, path)
        if old is None or set(old.classes) != set(summary.classes):
            self._classes_moved_at = self.generation
            self._index = None
        self.summaries[path] = summary
        self.versions[path] = version
        for cname in summary.classes:
            self._key_to_class[self.class_key(path, cname)] = (path, cname)
        self._classes.clear()
        self._class_reads.clear()
        self._resolved.clear()
        self._targets.clear()
        if not self._held:
            self._forget_tables()
        if old is None or old.registered != summary.registered or _class_shape(old) != _class_shape(summary):
            self._forget_registries()  # (what names resolve to, or what is registered, may differ)
        else:
            self._named_registries.pop(path, None)
        if old is None or _class_shape(old) != _class_shape(summary):
            self._hierarchy = None  # (an edit inside a method keeps which methods override which)

    def _forget_tables(self) -> None:
        self._incoming = self._cuda = self._sub_attrs = self._host_callers = self._options = self._unbuilt = None

    @contextmanager
    def tables_held(self) -> Iterator[None]:
        """While inside, the whole-project tables every file's facts share (the values passed
        to its functions, CUDA as default, subclasses' attributes, host-side callers, options,
        unbuilt classes: each made from every summary) stay as they are when updates come;
        what a file's imports resolve to does not. The solver holds them through the waves
        of a round: no wave can come after every file that feeds them, and made again after
        each wave they cost more than the waves save (11 times on the Lightning tree)."""
        self._held = True
        try:
            yield
        finally:
            self._held = False
            self._forget_tables()

    def module_path(self, name: str, importer: str) -> Optional[str]:
        paths = self.by_name.get(name)
        if not paths:
            return None
        if len(paths) == 1:
            return paths[0]
        here = os.path.dirname(importer)
        return max(paths, key=lambda p: (len(os.path.commonpath([here, p])), -len(p)))

    def imported_files(self, path: str) -> Set[str]:
        """The project's files whose names `path`'s summary imports (absolute paths): for
        each name the module it names itself (`a.b.c` where `a/b/c.py` is a file, else
        `a.b`...), not the packages above it. Read without noting it (`Summaries.reading`):
        this orders the work, it is not what a file's facts are made from."""
        path = self.absolute(path)
        s = dict.get(self.summaries, path)
        out: Set[str] = set()
        if s is None:
            return out
        for name in set(s.aliases.values()) | set(s.imports):
            parts = name.split(".")
            for i in range(len(parts), 0, -1):
                found = self.module_path(".".join(parts[:i]), path)
                if found is not None:
                    if found != path:
                        out.add(found)
                    break
        return out

    def on_disk(self, importer: str, names: Iterable[str]) -> List[str]:
        """Files under the root that `names` (imported by `importer`) refer to and that are
        not summarised yet: from the importer's directory up to the root, as Python would
        find them with the script's directory or the root on the path."""
        from synclint.semantic.library import LIBRARY_ROOTS

        found: List[str] = []
        start = os.path.dirname(self.absolute(importer))
        for name in names:
            key = (start, name)  # (the same names are imported from the same folders again and again)
            if key in self._unsummarised:
                hit = self._unsummarised[key]
            else:
                hit = self._unsummarised[key] = self._unsummarised_file(name, start, LIBRARY_ROOTS)
            if hit is not None and hit not in self.summaries and hit not in found:
                found.append(hit)
        return found

    def _unsummarised_file(self, name: str, start: str, library_roots) -> Optional[str]:
        """The file under the root that `name`, imported from folder `start`, is, unless it
        is a library's or a module of the project already summarised."""
        parts = name.split(".")
        if parts[0] not in self._visible(start) or parts[0] in library_roots and parts[0] not in self.by_name:
            return None  # torch, numpy, the standard library, any other installed package
        if any(".".join(parts[:n]) in self.by_name for n in range(len(parts), 0, -1)):
            return None  # already summarised (or a name inside such a module)
        for n in range(len(parts), 0, -1):
            hit = self._file_for(os.path.join(*parts[:n]), start)
            if hit is not None:
                return hit
        return None

    def _visible(self, start: str) -> Set[str]:
        """The module and package names in `start` and the folders above it, up to the root:
        what `_file_for` can find (one listing per folder, not a stat per imported name)."""
        got = self._names_in.get(start)
        if got is None:
            try:
                got = {n[:-3] if n.endswith(".py") else n for n in os.listdir(start)}
            except OSError:
                got = set()
            parent = os.path.dirname(start)
            if start != self.root and start.startswith(self.root) and parent != start:
                got |= self._visible(parent)
            self._names_in[start] = got
        return got

    def _file_for(self, rel: str, start: str) -> Optional[str]:
        """`rel.py` or `rel/__init__.py` in `start` or a directory above it, up to the root."""
        key = (rel, start)
        if key not in self._found_on_disk:
            hit = None
            d = start
            while hit is None:
                for cand in (rel + ".py", os.path.join(rel, "__init__.py")):
                    p = os.path.join(d, cand)
                    found = self._is_file.get(p)
                    if found is None:  # (the same folders are asked about from many importers)
                        found = self._is_file[p] = os.path.isfile(p)
                    if found:
                        hit = p
                        break
                if d == self.root or not d.startswith(self.root):
                    break
                d = os.path.dirname(d)
            self._found_on_disk[key] = hit
        return self._found_on_disk[key]

    def absolute(self, path: str) -> str:
        """`os.path.abspath(path)`, worked out once per path (a run asks for each path
        a dozen times)."""
        got = self._absolute.get(path)
        if got is None:
            got = self._absolute[path] = os.path.abspath(path)
        return got

    # ------------------------------------------------------------------ names
    def class_key(self, path: str, name: str) -> str:
        s = self.summaries.get(path)
        mod = (s.name if s is not None else "") or module_name(path)
        return f"{mod.replace('.__init__', '')}.{name}"

    def resolve(self, q: str, importer: str, depth: int = 0, seen: Optional[set] = None) -> Optional[Symbol]:
        """What the qualified name `q`, as `importer` spells it, refers to. (`seen`: the star
        imports this resolution went through, each followed once: packages that star-import
        one another would otherwise branch at every level.)"""
        if depth:
            return self._resolve(q, importer, depth, seen if seen is not None else set())
        folder = self._folders.get(importer)
        if folder is None:
            folder = self._folders[importer] = os.path.dirname(importer)
        key = (q, folder)
        hit = self._resolved.get(key)
        if hit is None:
            self.summaries.reading.append(set())
            try:
                found = self._resolve(q, importer, 0, set())
            finally:
                reads = self.summaries.reading.pop()
            hit = self._resolved[key] = (found, reads)
        self.summaries.note(hit[1])
        return hit[0]

    def _resolve(self, q: str, importer: str, depth: int, seen: set) -> Optional[Symbol]:
        parts = q.split(".")
        for i in range(len(parts), 0, -1):
            path = self.module_path(".".join(parts[:i]), importer)
            if path is None:
                continue
            rest = parts[i:]
            if not rest:
                return ("module", path, "")
            s = self.summaries.get(path)
            if s is None:
                return None
            name = rest[0]
            if name in s.classes:
                if len(rest) == 1:
                    return ("class", path, name)
                return ("method", path, f"{name}.{rest[1]}") if len(rest) == 2 else None
            if len(rest) == 1 and (name in s.params or name in s.funcs):
                return ("func", path, name)
            if len(rest) == 1 and name in s.values:
                return ("value", path, name)
            target = s.aliases.get(name)
            if target is not None and depth < MAX_DEPTH and target != q:
                return self.resolve(".".join([target] + rest[1:]), path, depth + 1, seen)
            if depth < MAX_DEPTH:  # a name a package's `from .bbox import *` hands on (mmrotate's `core`)
                for mod in s.stars:
                    if (path, mod, name) in seen:
                        continue
                    seen.add((path, mod, name))
                    found = self.resolve(".".join([mod] + rest), path, depth + 1, seen)
                    if found is not None:
                        return found
            return None
        return None

    # ------------------------------------------------------------------ values
    def value(self, path: str, v: Val, depth: int = 0) -> Val:
        """`v`, found in `path`'s summary, with references resolved and class names made
        canonical (so it means the same thing in any file)."""
        if depth > MAX_DEPTH:
            return V.UNKNOWN_VAL
        q = ref_target(v)
        if q is not None and v.device is not None:  # `make_model().cuda()`: moved after the call
            return moved(self.value(path, v.with_(device=None), depth + 1), v.device)
        if q is not None:
            sym = self.resolve(q, path)
            if sym is None:
                return V.UNKNOWN_VAL
            kind, p2, name = sym
            s = self.summaries[p2]
            if kind == "func":
                got = s.funcs.get(name)
                return self.value(p2, got, depth + 1) if got is not None else V.UNKNOWN_VAL
            if kind == "class":
                cf = self.class_facts(p2, name, depth + 1)
                return Val(V.MODULE if cf.is_module else V.OBJECT, cls=cf.key)
            if kind == "method":
                cls, m = name.split(".")
                got = self.class_facts(p2, cls, depth + 1).methods.get(m)
                return got if got is not None else V.UNKNOWN_VAL
            return V.UNKNOWN_VAL
        changed = False
        cls = v.cls
        keys = V.function_keys(v)
        if keys and any("." not in k for k in keys):  # this module's functions, as others name them
            return v.with_(cls="|".join(k if "." in k else self.class_key(path, k) for k in keys))
        if (v.kind in (V.MODULE, V.OBJECT) or V.class_key(v)) and cls:  # each class ("A|B") by its project-wide key
            s = self.summaries.get(path)
            keys = [self.class_key(path, k) if s is not None and "." not in k and k in s.classes else k
                    for k in V.classes_of(v)]
            if keys != cls.split("|"):
                cls, changed = "|".join(sorted(set(keys))), True
        elems = v.elems
        if elems is not None:
            new = tuple(self.value(path, e, depth + 1) for e in elems)
            if new != elems:
                elems, changed = new, True
        return v.with_(cls=cls, elems=elems) if changed else v

    def class_facts(self, path: str, name: str, depth: int = 0) -> ClassFacts:
        """A class with canonical values, its bases' members folded in (its own win)."""
        key = (path, name)
        done = self._classes.get(key)
        if done is not None:
            self.summaries.note(self._class_reads.get(key, ()))
            return done
        self.summaries.reading.append(set())
        try:
            return self._class_facts(path, name, key, depth)
        finally:
            reads = self.summaries.reading.pop()
            self._class_reads[key] = reads
            self.summaries.note(reads)

    def _class_facts(self, path: str, name: str, key: Tuple[str, str], depth: int) -> ClassFacts:
        s = self.summaries[path]
        raw = s.classes[name]
        out = ClassFacts(is_module=raw.is_module, key=self.class_key(path, name))
        self._classes[key] = out  # a cycle through bases sees the partial class
        if depth <= MAX_DEPTH:
            for b in raw.bases:
                base = None
                if b in s.classes and b != name:
                    base = self.class_facts(path, b, depth + 1)
                else:
                    sym = self.resolve(b, path)
                    if sym is not None and sym[0] == "class":
                        base = self.class_facts(sym[1], sym[2], depth + 1)
                if base is not None:
                    out.is_module = out.is_module or base.is_module
                    out.attrs.update(base.attrs)
                    out.methods.update(base.methods)
                # project bases by key, a library's by its qualified name (`library_base`)
                out.bases.append(base.key if base is not None else b)
        out.attrs.update((a, self.value(path, v, depth + 1)) for a, v in raw.attrs.items())
        out.methods.update((m, self.value(path, v, depth + 1)) for m, v in raw.methods.items())
        for m in raw.abstract:
            # its annotation says what it returns, unless only "a module" (`-> nn.Module`)
            modules = m in raw.methods and _any_module(out.methods[m])
            if m in raw.methods and not modules:
                continue
            made = self._overridden_return(path, name, m, depth, modules)
            if made is not None:
                out.methods[m] = made
        out.fed = raw.fed
        return out

    def _overridden_return(self, path: str, name: str, method: str, depth: int,
                           modules: bool = False) -> Optional[Val]:
        """What an abstract method (`raise NotImplementedError`) returns: the join of what
        every override in the project returns, when each is known (DPR's
        `Tensorizer.text_to_tensor`, annotated as the base, made on the CPU by its one
        subclass). None when there is none, or one says nothing. With `modules` (annotated
        `-> nn.Module`): the modules of known classes the overrides return, any of them (fms's
        `distribute_layer`: the block itself, or a wrapper); the others add no class."""
        out: Optional[Val] = None
        # (a method added to any subclass changes the answer: what it is made from)
        self.summaries.note(self._descendant_files(path, name))
        for p2, qual in self._overrides().get((path, f"{name}.{method}"), ()):
            s = self.summaries.get(p2)
            cname = qual.rsplit(".", 1)[0]
            cf = s.classes.get(cname) if s is not None else None
            v = cf.methods.get(method) if cf is not None else None
            v = self.value(p2, v, depth + 1) if v is not None else None
            if modules and (v is None or v.kind == V.UNKNOWN or _any_module(v)):
                continue
            if v is None or v.kind == V.UNKNOWN:
                return None
            out = v if out is None else V.join(out, v)
        return out

    # ------------------------------------------------------------------ per file
    def facts_for(self, path: str) -> ProjectFacts:
        path = self.absolute(path)
        # the whole project's: not this file's reads
        incoming, cuda, subs = self._incoming_params(), self._cuda_paths(), self._subclass_attrs()
        self.summaries.reading.append(set())
        try:
            pf = self._facts_for(path, incoming.get(path, {}))
        finally:
            self.reads[path] = self.summaries.reading.pop()
            self._made_at[path] = self.generation
        pf.cuda_default = path in cuda
        pf.subclass_attrs = subs.get(path, {})
        pf.host_called = self._host_called().get(path, frozenset())
        pf.registries = self.registries_named(path)
        pf.options = self.options()
        pf.unbuilt = self._never_built().get(path, frozenset())
        return pf

    def may_change(self, path: str, before: ProjectFacts) -> bool:
        """Whether `path`'s facts can differ from `before` (made earlier in this run): a
        summary they were made from changed since, or other modules now pass its functions
        other values, or a class appeared or went."""
        path = self.absolute(path)
        reads, made = self.reads.get(path), self._made_at.get(path, -1)
        return (reads is None or self._classes_moved_at > made
                or any(self._updated_at.get(p, -1) > made for p in reads)
                or self._incoming_params().get(path, {}) != before.params
                or (path in self._cuda_paths()) != before.cuda_default
                or self._subclass_attrs().get(path, {}) != before.subclass_attrs
                or self._host_called().get(path, frozenset()) != before.host_called
                or self.registries_named(path) != before.registries
                or self.options() != before.options
                or self._never_built().get(path, frozenset()) != before.unbuilt)

    def made_from(self, path: str) -> Optional[list]:
        """What `path`'s last facts were made from, as the cache keeps it beside its lint:
        [positions of the summaries they read, a digest of those summaries' versions, the
        values other modules pass its functions, CUDA as default, and the project's shape].
        None when that cannot be told (a summary without a version)."""
        _, index, _ = self._shape()
        try:
            read = sorted(index[p] for p in self.reads.get(self.absolute(path), ()))
        except KeyError:
            return None
        digest = self._made_from_digest(path, read)
        return None if digest is None else [read, digest]

    def facts_unchanged(self, path: str, made_from: Optional[list]) -> bool:
        """Whether `path`'s facts now would be the ones `made_from` describes: then its last
        lint stands without making them again (the edit path: most files read nothing that
        changed). Afterwards `reads` and `may_change` know the file as if they were made."""
        if not made_from:
            return False
        read, digest = made_from
        paths = self._shape()[2]
        if any(not 0 <= i < len(paths) for i in read) or self._made_from_digest(path, read) != digest:
            return False
        path = self.absolute(path)
        self.reads[path] = {paths[i] for i in read}
        self._made_at[path] = self.generation
        return True

    def facts_stub(self, path: str) -> ProjectFacts:
        """For a file whose facts were not made again (`facts_unchanged`): what `may_change`
        compares a later round with."""
        path = self.absolute(path)
        return ProjectFacts(params=self._incoming_params().get(path, {}), cuda_default=path in self._cuda_paths(),
                            subclass_attrs=self._subclass_attrs().get(path, {}),
                            host_called=self._host_called().get(path, frozenset()),
                            registries=self.registries_named(path), options=self.options(),
                            unbuilt=self._never_built().get(path, frozenset()))

    def _made_from_digest(self, path: str, read: List[int]) -> Optional[str]:
        path = self.absolute(path)
        shape, _, paths = self._shape()
        versions = [self.versions.get(paths[i]) for i in read]
        if not all(versions):
            return None
        h = hashlib.blake2b(shape.encode(), digest_size=12)
        h.update("|".join(versions).encode())
        params = self._incoming_params().get(path)
        if params:
            h.update(_nested_json(params))
        h.update(b"|cuda" if path in self._cuda_paths() else b"|-")
        subs = self._subclass_attrs().get(path)
        if subs:
            h.update(_nested_json(subs))
        host = self._host_called().get(path)
        if host:
            h.update(("|host:" + ",".join(sorted(host))).encode())
        registries = self.registries_named(path)
        if registries:
            h.update(("|registries:" + json.dumps(registries, sort_keys=True)).encode())
        options = self.options()
        if options:
            h.update(("|options:" + json.dumps(options, sort_keys=True)).encode())
        unbuilt = self._never_built().get(path)
        if unbuilt:
            h.update(("|unbuilt:" + ",".join(sorted(unbuilt))).encode())
        return h.hexdigest()

    def _shape(self) -> Tuple[str, Dict[str, int], List[str]]:
        """The project's modules and classes (a digest), each module's position in sorted
        order, and that order. Facts are told through names: a module or class that appears
        or goes can change what a name resolves to in any file."""
        if self._index is None:
            paths = sorted(self.summaries)
            h = hashlib.blake2b(digest_size=12)
            h.update("\n".join(paths).encode())
            h.update("\n".join(sorted(self._key_to_class)).encode())
            self._index = (h.hexdigest(), {p: i for i, p in enumerate(paths)}, paths)
        return self._index

    def _facts_for(self, path: str, params: Dict[str, Dict[str, Val]]) -> ProjectFacts:
        pf = ProjectFacts(params=params)
        s = self.summaries.get(path)
        if s is None:
            return pf
        for q in list(s.aliases.values()) + list(s.imports):
            self._tell(pf, q, path, expand=True)
        for mod in s.stars:
            sym = self.resolve(mod, path)
            if sym is None or sym[0] != "module" or self.summaries.get(sym[1]) is None:
                continue
            star = self.summaries[sym[1]]
            if star.library_aliases:
                pf.star_imports[mod] = dict(star.library_aliases)
            for n in list(star.funcs) + list(star.classes) + list(star.values) + list(star.params):
                if not n.startswith("_") and "." not in n:
                    pf.aliases[n] = f"{mod}.{n}"
                    self._tell(pf, f"{mod}.{n}", path, expand=False)
        self._close_classes(pf)
        return pf

    def _tell(self, pf: ProjectFacts, q: str, path: str, expand: bool) -> None:
        if q in pf.funcs or q in pf.classes or q in pf.values:
            return
        sym = self.resolve(q, path)
        if sym is None:
            return
        kind, p2, name = sym
        s = self.summaries[p2]
        if kind == "func":
            if name in s.one_liners:
                pf.one_liners[q] = s.one_liners[name]
            if name in s.loopers:
                pf.loopers.add(q)
            got = s.funcs.get(name)
            if got is not None:
                v = self.value(p2, got)
                if _informative(v):
                    pf.funcs[q] = v
        elif kind == "class":
            cf = self.class_facts(p2, name)
            pf.classes[q] = cf
            pf.classes.setdefault(cf.key, cf)
            self._tell_methods(pf, p2, name, cf.key)
        elif kind == "value":
            v = self.value(p2, s.values[name])
            if _informative(v):
                pf.values[q] = v
        elif kind == "module" and expand and s is not None:
            # what it defines, and what it imports for its users (a package's `__init__`:
            # `from .a2c import A2C`, read as `algo.A2C`)
            names = list(s.funcs) + list(s.classes) + list(s.values) + [n for n in s.aliases if not n.startswith("_")]
            for n in names:
                self._tell(pf, f"{q}.{n}", path, expand=False)

    def _close_classes(self, pf: ProjectFacts) -> None:
        """Add the classes that the told values name (an attribute holding another module's
        object), so `self.head.loss(...)` resolves two modules away, and those of what other
        modules pass its functions (Mask2Former's `SetCriterion(matcher=HungarianMatcher(...))`,
        whose module never names the matcher's class: `self.matcher(...)` returns its indices)."""
        todo = [v for v in pf.funcs.values()] + [v for v in pf.values.values()]
        todo.extend(v for params in pf.params.values() for v in params.values())
        for cf in list(pf.classes.values()):
            todo.extend(cf.attrs.values())
            todo.extend(cf.methods.values())
        while todo and len(pf.classes) < MAX_CLASSES:
            v = todo.pop()
            if v.elems:
                todo.extend(v.elems)
            if v.kind not in (V.MODULE, V.OBJECT):
                continue
            for k in V.classes_of(v):
                where = self._key_to_class.get(k) if k not in pf.classes else None
                if where is None:
                    continue
                cf = self.class_facts(*where)
                pf.classes[k] = cf
                self._tell_methods(pf, where[0], where[1], k)
                todo.extend(cf.attrs.values())
                todo.extend(cf.methods.values())

    def _tell_methods(self, pf: ProjectFacts, path: str, cname: str, key: str) -> None:
        """The methods of `path`'s class `cname` inferred per call (`helpers`), by the class's
        key: `obj.m(x)` on an instance of it replays `m` with `self` bound to `obj`; and those
        that run their own loop (`ProjectFacts.loopers`)."""
        prefix = cname + "."
        s = self.summaries[path]
        for fname, helper in s.one_liners.items():
            if fname.startswith(prefix) and "." not in fname[len(prefix):]:
                pf.one_liners[f"{key}.{fname[len(prefix):]}"] = helper
        pf.loopers.update(f"{key}.{f[len(prefix):]}" for f in s.loopers
                          if f.startswith(prefix) and "." not in f[len(prefix):])

    def _callee(self, q: str, importer: str) -> Optional[Tuple[str, str, int]]:
        """(path, function qual in it, leading parameters the call does not pass) of a call."""
        owner = self._method_owner(q, importer)
        if owner is not None:
            found = self._defining(*owner)
            return (found[0], found[1], 1) if found is not None else None
        if q.startswith("*"):  # a name that one of the importer's `from m import *` brings
            s = self.summaries.get(importer)
            name = q[1:]
            if s is None or name in s.params or name in s.classes:
                return None
            for star in s.stars:
                found = self._callee(f"{star}.{name}", importer)
                if found is not None:
                    return found
            return None
        sym = self.resolve(q, importer)
        if sym is None:
            return None
        kind, p2, name = sym
        if kind == "func":
            return p2, name, 0
        if kind == "class":
            return p2, f"{name}.__init__", 1
        return None

    def _method_owner(self, q: str, importer: str) -> Optional[Tuple[str, str, str]]:
        """(path, class, method) of a method call `q`: `pkg.mod.Cls.m`, or a method of what
        another module's call returns (`Meter().update`)."""
        if "()." in q:
            made, method = q.rsplit("().", 1)
            v = self.value(importer, ref(made))
            if v.kind not in (V.MODULE, V.OBJECT) or not v.cls:
                return None
            where = self._key_to_class.get(v.cls)
            return (where[0], where[1], method) if where is not None else None
        if q.startswith("*"):
            return None
        sym = self.resolve(q, importer)
        if sym is None or sym[0] != "method":
            return None
        cls, method = sym[2].split(".", 1)
        return sym[1], cls, method

    def _runs(self, path: str, cls: str, method: str) -> List[Tuple[str, str]]:
        """What `obj.method()` runs on an instance of `path`'s `cls`: the method it defines
        or inherits; else the methods of it that a library base's `method` calls
        (`L.TEMPLATE_METHODS`: baselines' `VecEnvWrapper.step` runs `step_async`, `step_wait`)."""
        found = self._defining(path, cls, method)
        if found is not None:
            return [found]
        bound = self._method_alias(path, cls, method)
        if bound is not None:
            return [bound]
        called = [m for base in self._library_bases(path, cls) for m in L.TEMPLATE_METHODS.get(f"{base}.{method}", ())]
        return [f for f in (self._defining(path, cls, m) for m in dict.fromkeys(called)) if f is not None]

    def _method_alias(self, path: str, cls: str, method: str, depth: int = 0) -> Optional[Tuple[str, str]]:
        """(path, function) a class (or a base in the project) binds `method` to in its body
        (`decode = decode_function`)."""
        s = self.summaries.get(path)
        cf = s.classes.get(cls) if s is not None and depth <= MAX_DEPTH else None
        if cf is None:
            return None
        q = cf.method_aliases.get(method)
        if q is not None:
            if "." not in q:
                return path, q
            c = self._callee(q, path)
            return (c[0], c[1]) if c is not None else None
        for p2, base in self._bases(path, cls):
            found = self._method_alias(p2, base, method, depth + 1) if p2 is not None else None
            if found is not None:
                return found
        return None

    def _library_bases(self, path: str, cls: str, depth: int = 0) -> List[str]:
        """The qualified names of the classes outside the project that `cls` derives from."""
        if depth > MAX_DEPTH:
            return []
        out: List[str] = []
        for p2, base in self._bases(path, cls):
            out += [base] if p2 is None else self._library_bases(p2, base, depth + 1)
        return out

    def _request_hook(self, path: str, q: str) -> bool:
        """Whether the method `q` of `path` is one its class's framework calls once per
        request (`library.toml` request_hooks: an inferencer's `__call__`), not every step."""
        cls, _, method = q.rpartition(".")
        return bool(cls) and method in L.REQUEST_HOOK_NAMES and any(
            L.request_calls(b, method) for b in self._library_bases(path, cls))

    def _request_wrappers(self, graphs: Dict[str, "object"]) -> Set[Tuple[str, str]]:
        """The functions hot by their name (`__call__`, `forward`) that call a request hook
        of another class (mmagic's `Inferencers.__call__`: `return self.inferencer(**kwargs)`):
        they hand on the user's request, which that hook's framework serves once per call, so
        their name says nothing of a step and heat does not start there."""
        out: Set[Tuple[str, str]] = set()
        for path, g in graphs.items():
            path = self.absolute(path)
            for caller, callee, _ in g.calls:
                if caller and hot_name(caller.rsplit(".", 1)[-1]) and (path, caller) not in out and any(
                        t != (path, caller) and self._request_hook(*t) for t in self._call_targets(path, callee)):
                    out.add((path, caller))
        return out

    def _bases(self, path: str, cls: str) -> Iterator[Tuple[Optional[str], str]]:
        """`cls`'s bases, in order and resolved as they are reached: (path, name) of a class
        of the project, (None, qualified name) of one from outside it (a library's); a base
        that names something else of the project is passed over."""
        s = self.summaries.get(path)
        cf = s.classes.get(cls) if s is not None else None
        for base in cf.bases if cf is not None else ():
            if base in s.classes:
                yield path, base
                continue
            sym = self.resolve(base, path)
            if sym is None:
                head, _, rest = base.partition(".")  # (the summary qualifies what it can)
                target = s.aliases.get(head)
                yield None, base if target is None else f"{target}.{rest}" if rest else target
            elif sym[0] == "class":
                yield sym[1], sym[2]

    def _in_file(self, path: str, callee: str) -> List[Tuple[str, str]]:
        """What an in-file call runs: its function; for `CNNBase._forward_gru` that
        `CNNBase` inherits, its base's method (in this module or another, `_runs`)."""
        s = self.summaries.get(path)
        if s is None or callee in s.params or "." not in callee:
            return [(path, callee)]
        cls, method = callee.rsplit(".", 1)
        return self._runs(path, cls, method) or [(path, callee)]

    def _call_runs(self, q: str, importer: str) -> List[Tuple[str, str]]:
        """What a call of another module's `q` runs (see `_in_file`); a method of what a
        registry built (`registry:KEY.method`, `values.built_by`) runs that method of each
        class registered in it."""
        built = V.registry_of(q)
        if built is not None:
            key, _, method = built.rpartition(".")
            return self._registry_runs(key, method)
        owner = self._method_owner(q, importer)
        if owner is not None:
            return self._runs(*owner)
        c = self._callee(q, importer)
        return [(c[0], c[1])] if c is not None else []

    def _defining(self, path: str, cls: str, method: str, depth: int = 0) -> Optional[Tuple[str, str]]:
        """(path, "Class.method") of the class that defines `method` for `cls`: itself, or
        the first base (in order, through other modules) that does."""
        s = self.summaries.get(path)
        if s is None or depth > MAX_DEPTH:
            return None
        if f"{cls}.{method}" in s.params:
            return path, f"{cls}.{method}"
        for p2, base in self._bases(path, cls):
            found = self._defining(p2, base, method, depth + 1) if p2 is not None else None
            if found is not None:
                return found
        return None

    # ------------------------------------------------------------------ registries
    def registry_key(self, q: str, importer: str, depth: int = 0) -> str:
        """The key of the registry that `importer` names `q` (a qualified name, or a
        module-level name of its own): the module that defines it and its name there
        (`pkg.registry.MODELS`), through re-exports, so that every spelling of it is one key.
        A name the project's modules cannot resolve (a library's registry, mmengine's
        `MODELS` imported from `mmengine.registry`) is known by its last name only ("?MODELS"):
        two spellings of a library's registry (`detectron2.modeling.ROI_HEADS_REGISTRY` and
        `detectron2.modeling.roi_heads.ROI_HEADS_REGISTRY`) name the same one."""
        # (a qualified name resolves alike from one folder; a name of the importer's own, not)
        where = (self._folders.get(importer) or os.path.dirname(importer)) if "." in q else importer
        if depth == 0 and (q, where) in self._registry_keys:
            return self._registry_keys[(q, where)]
        key = self._registry_key(q, importer, depth)
        if depth == 0:
            self._registry_keys[(q, where)] = key
        return key

    def _registry_key(self, q: str, importer: str, depth: int) -> str:
        parts = q.split(".")
        if len(parts) == 1:  # a name of the importer itself
            s = self.summaries.get(importer)
            target = s.aliases.get(q) if s is not None else None
            if target is not None and target != q and depth < MAX_DEPTH:
                return self.registry_key(target, importer, depth + 1)
            return self.class_key(importer, q)
        for i in range(len(parts) - 1, 0, -1):
            path = self.module_path(".".join(parts[:i]), importer)
            if path is None:
                continue
            rest = parts[i:]
            s = self.summaries.get(path)
            target = s.aliases.get(rest[0]) if s is not None else None
            if target is not None and depth < MAX_DEPTH:  # re-exported (`from .registry import MODELS`)
                return self.registry_key(".".join([target] + rest[1:]), path, depth + 1)
            if len(rest) == 1:
                return self.class_key(path, rest[0])
            break
        return "?" + parts[-1]

    def registries(self) -> Dict[str, Tuple[List[Tuple[str, str]], bool]]:
        """registry key -> ((path, class) of each class of the project registered in it, in
        any module but tests; whether each of them is an nn.Module). A name is a registry
        where some class is registered in it: `registries.registrations`."""
        if self._registries is None:
            self._registries = self.kept("registries", self._find_registries)
        return self._registries

    def _find_registries(self) -> Dict[str, Tuple[List[Tuple[str, str]], bool]]:
        found: Dict[str, List[Tuple[str, str]]] = {}
        for path, s in sorted(dict.items(self.summaries), key=lambda item: item[0]):  # (see _incoming_params)
            if s is None or not s.registered or self._is_test(path):
                continue  # (a test registers toy classes: not what the package builds)
            for registry, cls in s.registered:
                where: Optional[Tuple[str, str]] = (path, cls) if cls in s.classes else None
                if where is None:
                    sym = self.resolve(cls, path)
                    where = (sym[1], sym[2]) if sym is not None and sym[0] == "class" else None
                if where is None:
                    continue
                classes = found.setdefault(self.registry_key(registry, path), [])
                if where not in classes:
                    classes.append(where)
        return {k: (classes, all(self.class_facts(*w).is_module for w in classes)) for k, classes in found.items()}

    def registries_named(self, path: str) -> Dict[str, list]:
        """The registries `path` names, as it may spell each (`ProjectFacts.registries`): the
        names it imports, the names of the modules it imports, its own module-level names;
        and each registry by its key."""
        path = self.absolute(path)
        got = self._named_registries.get(path)
        if got is not None:
            return got
        table = self.registries()
        got = {}
        s = self.summaries.get(path)
        if table and s is not None:
            names = {(k[1:] if k.startswith("?") else k.rsplit(".", 1)[-1]) for k in table}
            heads = list(s.aliases.values()) + list(s.imports)
            # a registry as a module's attribute (`registry.MODELS`): of a module of the project
            # it imports (`from pkg import registry`; not a library's module, `mmengine.registry`)
            modules = [h for h in dict.fromkeys(heads) if h.rsplit(".", 1)[-1] not in names
                       and self.module_path(h, path) is not None]
            spellings = set(heads) | names | {f"{h}.{n}" for h in modules for n in names}
            for q in sorted(spellings):
                if q.rsplit(".", 1)[-1] not in names:
                    continue
                key = self.registry_key(q, path)
                if key in table:
                    got[q] = [key, table[key][1]]
            got.update((k, [k, is_module]) for k, (_, is_module) in table.items())
        self._named_registries[path] = got
        return got

    def _registry_runs(self, key: str, method: str) -> List[Tuple[str, str]]:
        """What `obj.method()` runs on what registry `key` built: that method of each class
        registered in it; calling it (`__call__`, `forward`) runs a module's `forward`, another
        object's `__call__`."""
        out: List[Tuple[str, str]] = []
        unbuilt = self._never_built()
        for path, cls in self.registries().get(key, ((), False))[0]:
            if cls in unbuilt.get(path, ()):
                continue  # (no config or code builds it)
            runs = self._runs(path, cls, method)
            if not runs and method in ("__call__", "forward"):
                runs = self._runs(path, cls, "forward" if method == "__call__" else "__call__")
            out.extend(r for r in runs if r not in out)
        return out

    def _never_built(self) -> Dict[str, FrozenSet[str]]:
        """path -> its classes that nothing builds (`ProjectFacts.unbuilt`)."""
        if self._unbuilt is None:
            self._unbuilt = self.kept("unbuilt", self._find_unbuilt)
        return self._unbuilt

    def _find_unbuilt(self) -> Dict[str, FrozenSet[str]]:
        """The registered classes that are never built: their registry is built from the tree's
        configs (some class of it is named by a `type`), and neither a config nor code outside
        tests names them (a `type`, a construction, an import other than a package's
        re-export), nor a class derived from them that is named (it runs what it inherits).
        A `type` inside a class that is never built builds nothing (MonoFlexHead's default
        `dict(type="MonoFlexCoder")`): to a fixpoint. mmdetection3d's MonoFlexHead: its config
        folder holds only a README. A class registered under a name not written out
        (`name=NAME`) is taken as named."""
        typed: Set[str] = set()  # named by a `type` outside registered classes
        named: Set[str] = set()  # ... or by code
        inside: Dict[Tuple[str, str], List[str]] = {}  # (path, registered class) -> the `type`s in it
        bases: Dict[str, Set[str]] = {}  # class name -> its bases' last names
        for path, s in sorted(dict.items(self.summaries), key=lambda item: item[0]):
            if s is None or self._is_test(path):
                continue  # (a test builds classes no run of the package does)
            typed.update(s.type_names)
            named.update(s.type_names, s.made_here)
            inside.update(((path, c), ns) for c, ns in s.class_type_names.items())
            if os.path.basename(path) != "__init__.py":
                named.update(q.rsplit(".", 1)[-1] for q in s.aliases.values())
                named.update(w for q, *_ in s.calls_out for w in q.replace("(", ".").replace(")", ".").split("."))
            for cname, cf in s.classes.items():
                bases.setdefault(cname, set()).update(b.rsplit(".", 1)[-1] for b in cf.bases)

        def names(path: str, cls: str) -> List[str]:
            s = self.summaries.get(path)
            return [cls, *(s.registered_as.get(cls, ()) if s is not None else ())]

        registries = [classes for classes, _ in self.registries().values()]
        unbuilt: Set[Tuple[str, str]] = set()
        while True:  # (each round only adds: a class found never built names nothing)
            now_typed = typed.union(*(ns for k, ns in inside.items() if k not in unbuilt))
            now_named = named | now_typed
            todo = [n for n in now_named if n in bases]
            while todo:  # (a named class's bases run the methods it inherits)
                for b in bases.get(todo.pop(), ()):
                    if b not in now_named:
                        now_named.add(b)
                        todo.append(b)
            found: Set[Tuple[str, str]] = set()
            for classes in registries:
                if not any(n in now_typed for p, c in classes for n in names(p, c)):
                    continue  # no config names a class of it: built from code, by names not known here
                found.update((p, c) for p, c in classes
                             if "*" not in names(p, c) and not any(n in now_named for n in names(p, c)))
            if found <= unbuilt:
                break
            unbuilt |= found
        out: Dict[str, Set[str]] = {}
        for p, c in unbuilt:
            out.setdefault(p, set()).add(c)
        return {p: frozenset(cs) for p, cs in out.items()}

    def _forget_registries(self) -> None:
        self._registries = None
        self._registry_keys.clear()
        self._named_registries.clear()

    def kept(self, what: str, make: Callable[[], object], also: object = None):
        """`make()`, a table made from the whole project's summaries (and from `also`: the
        call graphs, for heat), or the one the last projects with the same root, the same
        summaries (by version) and the same `also` made: in a long-lived process (the
        daemon) an edit that changes no summary and no call graph (most edits) makes none
        again, a third of its re-check on the Lightning tree."""
        versions = self.versions
        if not all(versions.values()):  # a summary without a version: no telling
            return self._whole(make)
        kept = self._kept_tables.setdefault(what, [])
        for root, made_from, extra, table in kept:
            if root == self.root and made_from == versions and extra == also:
                return table
        out = self._whole(make)
        kept.insert(0, (self.root, dict(versions), also, out))
        del kept[KEPT_TABLES:]
        return out

    def _whole(self, make: Callable[[], object]):
        """`make()` of a whole-project table, asked for wherever it is first needed: what it
        reads is no one file's reads (made or kept, a file's facts read the same)."""
        self.summaries.reading.append(set())
        try:
            return make()
        finally:
            self.summaries.reading.pop()

    def _incoming_params(self) -> Dict[str, Dict[str, Dict[str, Val]]]:
        """path -> function qual -> parameter -> join of what other modules' calls pass."""
        if self._incoming is None:
            self._incoming = self.kept("incoming", self._passed_in)
        return self._incoming

    def _passed_in(self) -> Dict[str, Dict[str, Dict[str, Val]]]:
        out: Dict[str, Dict[str, Dict[str, Val]]] = {}
        # (by path: the summaries arrive in the order workers finish, and joins of three or
        # more values are not associative, so the order must not vary from run to run)
        summaries = sorted(self.summaries.items(), key=lambda item: item[0])
        for path, s in summaries:
            if s is None or self._is_test(path):
                continue  # tests call library code with small CPU tensors: not how it runs
            for q, skip, pos, kws in s.calls_out:
                callee = self._callee(q, path)
                if callee is None:
                    continue
                p2, qual, implicit = callee
                spec = self.summaries[p2].params.get(qual)
                if spec is None:
                    continue
                order, defaulted = spec
                join_call(out.setdefault(p2, {}).setdefault(qual, {}), order[max(skip, implicit):], defaulted,
                          pos, kws, lambda v, path=path: self.value(path, v))
                # an abstract method (`raise NotImplementedError`) never runs: the call runs an
                # override (a metric's `update`, called on an instance annotated as the base)
                for p3, sub in self._abstract_overrides(p2, qual):
                    spec = self.summaries[p3].params.get(sub)
                    if spec is not None:
                        join_call(out.setdefault(p3, {}).setdefault(sub, {}), spec[0][max(skip, implicit):],
                                  spec[1], pos, kws, lambda v, path=path: self.value(path, v))
        # `self.m(...)` in a base class reaches the override of `m` in a subclass elsewhere
        overrides = self._overrides()
        for path, s in summaries:
            if s is None or self._is_test(path):
                continue
            for q, pos, kws in s.self_calls:
                for p2, qual in overrides.get((path, q), ()):
                    spec = self.summaries[p2].params.get(qual)
                    if spec is not None:
                        join_call(out.setdefault(p2, {}).setdefault(qual, {}), spec[0][1:], spec[1], pos, kws,
                                  lambda v, path=path: self.value(path, v))
        # `model(batch, device)` of a callable its module does not know, passing a loader's
        # batch (`callsites._opaque_call`): it runs the `forward` of a module of the project that
        # takes parameters of those names, in that order (CosyVoice's models, built from a config)
        forwards = [(p2, f"{c}.forward", self.summaries[p2].params[f"{c}.forward"])
                    for p2, s2 in summaries if s2 is not None
                    for c, cf in s2.classes.items() if cf.is_module and f"{c}.forward" in s2.params]
        for path, s in summaries:
            if s is None or self._is_test(path):
                continue
            for names, pos, kws in s.opaque_calls:
                for p2, qual, (order, defaulted) in forwards:
                    rest = order[1 + len(names):]
                    if order[:1] == ["self"] and order[1:1 + len(names)] == names and all(
                            p in defaulted or p in kws or p.startswith("**") for p in rest):
                        join_call(out.setdefault(p2, {}).setdefault(qual, {}), order[1:], defaulted, pos, kws,
                                  lambda v, path=path: self.value(path, v))
        return out

    def _abstract_overrides(self, path: str, qual: str) -> List[Tuple[str, str]]:
        """The overrides, in any module, of `path`'s method `qual` when it is abstract."""
        cname, _, method = qual.rpartition(".")
        cf = self.summaries[path].classes.get(cname) if cname else None
        if cf is None or method not in cf.abstract:
            return []
        return self._overrides().get((path, qual), [])

    def options(self) -> Dict[str, bool]:
        """The command-line options that hold their bool default in the program as written:
        every parser of the project that declares one gives it the same bool constant, and no
        module (tests aside, as `_called_from_host`) may set it (`ModuleSummary.options_set`)."""
        if self._options is None:
            self._options = self.kept("options", self._find_options)
        return self._options

    def _find_options(self) -> Dict[str, bool]:
        declared: Dict[str, Optional[bool]] = {}
        written: Set[str] = set()
        reach = self._namespace_reach()
        for path, s in sorted(dict.items(self.summaries), key=lambda item: item[0]):
            if s is None or self._is_test(path):
                continue
            if path in reach:  # (a module no parser's importer imports never holds its namespace)
                written.update(s.options_set)
            for dest, on in s.options.items():
                declared[dest] = on if declared.get(dest, on) == on else None
        return {} if ANY_OPTION in written else {
            d: on for d, on in sorted(declared.items()) if on is not None and d not in written}

    def _namespace_reach(self) -> Set[str]:
        """The modules a parsed namespace may reach: those that import a module declaring
        options (directly or not), and every module they import."""
        importers: Dict[str, Set[str]] = {}
        imported: Dict[str, Set[str]] = {}
        for p, s in dict.items(self.summaries):
            if s is None:
                continue
            for q in list(s.imports) + list(s.aliases.values()):
                sym = self.resolve(q, p)
                if sym is not None:
                    importers.setdefault(sym[1], set()).add(p)
                    imported.setdefault(p, set()).add(sym[1])
        up = [p for p, s in dict.items(self.summaries) if s is not None and s.options]
        seen: Set[str] = set()
        while up:
            p = up.pop()
            if p not in seen:
                seen.add(p)
                up.extend(importers.get(p, ()))
        down, reach = list(seen), set()
        while down:
            p = down.pop()
            if p not in reach:
                reach.add(p)
                down.extend(imported.get(p, ()))
        return reach

    def _host_called(self) -> Dict[str, FrozenSet[str]]:
        """path -> its functions (a class: its `__init__`) that other modules call, each call
        from the host side of a DataLoader (their summaries' `host_calls`)."""
        if self._host_callers is None:
            self._host_callers = self.kept("host callers", self._called_from_host)
        return self._host_callers

    def _called_from_host(self) -> Dict[str, FrozenSet[str]]:
        host: Dict[Tuple[str, str], bool] = {}
        for path, s in sorted(dict.items(self.summaries), key=lambda item: item[0]):
            if s is None or self._is_test(path):
                continue  # (as `_passed_in`: tests are not how the code runs)
            from_host = set(s.host_calls)
            for q, _, _, _ in s.calls_out:
                callee = self._callee(q, path)
                if callee is not None:
                    key = callee[:2]
                    host[key] = host.get(key, True) and q in from_host
        out: Dict[str, Set[str]] = {}
        for (p2, qual), only in host.items():
            if only:
                out.setdefault(p2, set()).add(qual)
        return {p: frozenset(qs) for p, qs in out.items()}

    def _subclass_attrs(self) -> Dict[str, Dict[str, Dict[str, Val]]]:
        """path -> class -> attribute -> the join of what the class's direct subclasses, in
        any module, assign to `self.attr`: a base class's method reads what only its
        subclasses set (GAN_zoo's `GANTrainer.trainOnEpoch` calls `self.model.optimizeParameters`,
        and each trainer subclass makes `self.model` in its `initModel`)."""
        if self._sub_attrs is None:
            self._sub_attrs = self.kept("subclass attributes", self._set_by_subclasses)
        return self._sub_attrs

    def _set_by_subclasses(self) -> Dict[str, Dict[str, Dict[str, Val]]]:
        out: Dict[str, Dict[str, Dict[str, Val]]] = {}
        for path, s in sorted(dict.items(self.summaries), key=lambda item: item[0]):  # (see _incoming_params)
            if s is None or self._is_test(path):
                continue
            for cname, raw in s.classes.items():
                if not raw.attrs:
                    continue
                for p2, base in self._bases(path, cname):
                    if p2 is None:
                        continue
                    slot = out.setdefault(p2, {}).setdefault(base, {})
                    for a, v in raw.attrs.items():
                        v = self.value(path, v)
                        if v.kind != V.UNKNOWN:
                            slot[a] = V.join(slot[a], v) if a in slot else v
        return out

    def _is_test(self, path: str) -> bool:
        got = self._tests.get(path)
        if got is None:
            got = self._tests[path] = is_test_module(os.path.relpath(path, self.root), path)
        return got

    def _overrides(self) -> Dict[Tuple[str, str], List[Tuple[str, str]]]:
        """(path, "Base.m") -> the (path, "Sub.m") methods that override it, in any module:
        a call of the base's method may run each (an instance of any class of a family,
        `registry_base`). The nearest base that defines the method is the one overridden."""
        return self._class_hierarchy()[0]

    def _descendant_files(self, path: str, cname: str) -> Set[str]:
        """The files that define a class derived from `cname` (in `path`), at any depth:
        where an override of its methods may appear without a module or class appearing."""
        return self._class_hierarchy()[1].get((path, cname), set())

    def _class_hierarchy(self) -> Tuple[dict, dict]:
        if self._hierarchy is None:
            self._hierarchy = self.kept("class hierarchy", self._find_hierarchy)
        return self._hierarchy

    def _find_hierarchy(self) -> Tuple[dict, dict]:
        overrides: Dict[Tuple[str, str], List[Tuple[str, str]]] = {}
        descendants: Dict[Tuple[str, str], Set[str]] = {}
        for p2, s in self.summaries.items():
            if s is None:
                continue
            methods: Dict[str, List[str]] = {}  # class -> its methods' quals, in the summary's order
            for qual in s.params:
                methods.setdefault(qual.rpartition(".")[0], []).append(qual)
            for cname, cf in s.classes.items():
                for ancestor in self._ancestors(p2, cname):
                    descendants.setdefault(ancestor, set()).add(p2)
                for qual in methods.get(cname, ()):
                    base = self._defining_base(p2, cname, qual[len(cname) + 1:])
                    if base is not None:
                        overrides.setdefault(base, []).append((p2, qual))
        return overrides, descendants

    def _ancestors(self, path: str, cname: str) -> List[Tuple[str, str]]:
        """(path, name) of every project class `cname` (in `path`) derives from."""
        out: List[Tuple[str, str]] = []
        todo = [(path, cname, 0)]
        while todo:
            p, c, depth = todo.pop()
            if depth > 10:
                continue
            for p1, bname in self._bases(p, c):
                if p1 is not None and (p1, bname) not in out:
                    out.append((p1, bname))
                    todo.append((p1, bname, depth + 1))
        return out

    def _defining_base(self, path: str, cname: str, method: str, depth: int = 0) -> Optional[Tuple[str, str]]:
        """(path, "Base.method") of the nearest base of `cname` (in `path`) that defines `method`."""
        if depth > 10:
            return None
        for p1, bname in self._bases(path, cname):
            if p1 is None:
                continue  # a library's class
            if f"{bname}.{method}" in self.summaries[p1].params:
                return (p1, f"{bname}.{method}")
            found = self._defining_base(p1, bname, method, depth + 1)
            if found is not None:
                return found
        return None

    def _cuda_paths(self) -> Set[str]:
        """Files imported, directly or not, by a module that makes CUDA the default device."""
        if self._cuda is not None:
            return self._cuda
        todo = [p for p, s in self.summaries.items() if s is not None and s.cuda_default]
        seen: Set[str] = set()
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            s = self.summaries.get(p)
            if s is None:
                continue
            for q in list(s.imports) + list(s.aliases.values()):
                sym = self.resolve(q, p)
                if sym is not None:
                    todo.append(sym[1])
        self._cuda = seen
        return seen

    # ------------------------------------------------------------------ heat
    def hot_scopes(self, graphs: Dict[str, "object"],
                   declared: DeclaredHeat = DeclaredHeat()) -> Dict[str, Dict[str, str]]:
        """path -> functions that run every step, over the whole call graph: called from a
        loop or from hot code in any module, hot by name (`forward`, `*_step`), called by a
        framework (`Graph.entries`) or declared hot. A function that loops over batches
        itself is per-epoch, and a function declared cold runs rarely: heat stops there.
        Each with the chain that makes it hot, from where heat starts (`rate_chain`)."""
        edges: Dict[Tuple[str, Optional[str]], List[Tuple[str, str]]] = {}
        frontier: List[Tuple[str, str]] = []
        why: Dict[Tuple[str, str], str] = {}  # where heat starts: why there
        per_epoch: Set[Tuple[str, str]] = set()
        cold: Set[Tuple[str, str]] = set()  # declared cold: heat stops there
        steppers = {(self.absolute(p), q) for p, g in graphs.items() for q in g.steppers}
        unbuilt = self._never_built()
        wrappers = self._request_wrappers(graphs)
        for path, g in graphs.items():
            path = self.absolute(path)
            if self._is_test(path):
                continue  # a test runs its code per test: its loops are no training step's
            per_epoch.update((path, q) for q in g.per_epoch)
            s = self.summaries.get(path)
            if s is not None:
                never = unbuilt.get(path, ())  # (a class nothing builds: its hooks never run)
                named = [(path, q) for q in s.params if hot_name(q.rsplit(".", 1)[-1])
                         and q.rsplit(".", 1)[0] not in never and not self._request_hook(path, q)
                         and (path, q) not in wrappers]
                _seeds(frontier, why, named, "runs every step by its name")
                if declared:
                    _seeds(frontier, why, [(path, q) for q in s.params if declared.is_hot(qualified(s.name, q))],
                           "is declared hot (hot-functions)")
                    cold.update((path, q) for q in s.params if declared.is_cold(qualified(s.name, q)))
            _seeds(frontier, why, [(path, q) for q in g.entries if (path, q) not in wrappers],
                   "is called every step by its framework")
            for caller, callee, hot in g.calls:
                if hot is None:
                    continue  # a guarded or run-once call site: heat does not cross it
                # (under a periodic guard, `STEPS`: only into what steps an optimizer)
                targets = [t for t in self._call_targets(path, callee) if crosses(hot, t in steppers)]
                edges.setdefault((path, caller), []).extend(targets)
                if hot and (path, caller) not in cold and (path, caller) not in wrappers:
                    # (a loop in a cold function runs rarely too)
                    where = f"{caller}()" if caller else "module code"  # (a loop there, or its hook)
                    _seeds(frontier, why, targets, f"is called every step by {where} ({os.path.basename(path)})")
        for base, subs in self._overrides().items():
            # a hot `self.m()` runs the override; not one in a visualisation tool, which only
            # that tool's run builds (`callgraph.debug_path`: YOLOX's `AssignVisualizer`)
            edges.setdefault(base, []).extend(s for s in subs if debug_path(s[0], self.root) is None
                                              and s[1].rsplit(".", 1)[0] not in unbuilt.get(s[0], ()))
        per_epoch |= cold  # (a graph's per-epoch functions leave out the hooks that do not decode)
        came_from: Dict[Tuple[str, str], Optional[Tuple[str, str]]] = {}
        hot: Dict[str, Dict[str, str]] = {}
        for node in spread(frontier, edges, per_epoch, came_from):
            hot.setdefault(node[0], {})[node[1]] = _chain_text(node, came_from, why)
        return hot

    def grad_off_scopes(self, graphs: Dict[str, "object"]) -> Dict[str, Set[str]]:
        """path -> functions that run with autograd off wherever the project runs them: each
        call of one sits under `no_grad` / `inference_mode` or in a function that itself runs
        so (the greatest such set: a recursive call does not turn it on). Not a function no
        call of the project reaches, nor one a framework calls (`forward`, `Graph.entries`),
        whose callers are not all here, nor a method of a name that a call the project cannot
        resolve (`build_backbone(cfg).forward_test(x)`) makes with autograd on: it may be that."""
        incoming: Dict[Tuple[str, str], List[Tuple[Optional[Tuple[str, str]], bool]]] = {}
        framework: Set[Tuple[str, str]] = set()
        unresolved_on: Set[str] = set()  # names called, with autograd on, on what is not known
        for path, g in graphs.items():
            path = self.absolute(path)
            framework.update((path, q) for q in g.entries)
            unresolved_on.update(g.unknown_calls)
            off = set(g.no_grad)
            for i, (caller, callee, _) in enumerate(g.calls):
                targets = self._call_targets(path, callee)
                if not targets and i not in off:
                    unresolved_on.add(callee.rsplit(".", 1)[-1])
                for t in targets:
                    incoming.setdefault(t, []).append(((path, caller) if caller is not None else None, i in off))
        for base, subs in self._overrides().items():
            for s in subs:  # `self.m()` runs the override: with the grad mode `m` runs in
                incoming.setdefault(s, []).append((base, False))
        off = {t for t in incoming if t not in framework and t[1].rsplit(".", 1)[-1] not in unresolved_on
               and not hot_name(t[1].rsplit(".", 1)[-1])}
        changed = True
        while changed:
            changed = False
            for t in list(off):
                if any(not site_off and (caller is None or caller not in off) for caller, site_off in incoming[t]):
                    off.discard(t)
                    changed = True
        out: Dict[str, Set[str]] = {}
        for path, qual in off:
            out.setdefault(path, set()).add(qual)
        return out

    def setup_scopes(self, graphs: Dict[str, "object"]) -> Dict[str, Dict[str, str]]:
        """path -> function -> how it runs at setup wherever the project calls them
        (`semantic.setup`): module initialisers and memoised functions, what only they call
        (through overrides too), constructors only they or the entry call (SETUP); in a
        script (a file no other file of the project imports), its module-level code, the
        program's entry (ENTRY, under MODULE_CODE).
        Not a function a framework calls, nor one named as hot, nor one that loops over
        batches or decodes itself (a `train()` a trainer's constructor runs is the program's
        work), nor a method of a name the project calls on what it cannot resolve."""
        from synclint.semantic.setup import ENTRY, MODULE_CODE, SETUP, setup_functions

        incoming: Dict[Tuple[str, str], List[Tuple[Tuple[str, str], object]]] = {}
        seeded: Set[Tuple[str, str]] = set()
        barred: Set[Tuple[str, str]] = set()
        unresolved: Set[str] = set()
        for path, g in graphs.items():
            path = self.absolute(path)
            if self._is_test(path):
                continue
            seeded.update((path, q) for q in g.setup)
            # (a framework's hooks, and what loops over batches or decodes: the program's work)
            barred.update((path, q) for q in (*g.entries, *g.per_epoch))
            unresolved.update(g.unknown_calls)
            for caller, callee, hot in g.calls:
                for t in self._call_targets(path, callee):
                    incoming.setdefault(t, []).append(((path, caller if caller is not None else MODULE_CODE), hot))
        for base, subs in self._overrides().items():
            for s in subs:  # `self.m()` runs the override: as often as `m` runs
                incoming.setdefault(s, []).append((base, False))
        unresolved.discard("__init__")  # (`super().__init__()`: a base's constructor, which the project resolves)
        barred.update(t for t in incoming if hot_name(t[1].rsplit(".", 1)[-1]) or t[1].rsplit(".", 1)[-1] in unresolved)
        imported = self.kept("imported files", lambda: set().union(*(self.imported_files(p) for p in self.versions)))
        out: Dict[str, Dict[str, str]] = {}
        # (a library module's `__main__` block is its own test: only a script has an entry)
        for path, qual in setup_functions(incoming, seeded, barred,
                                          lambda c: c[1] == MODULE_CODE and c[0] not in imported):
            out.setdefault(path, {})[qual] = SETUP
        for path in graphs:
            path = self.absolute(path)
            if path not in imported and not self._is_test(path):
                out.setdefault(path, {})[MODULE_CODE] = ENTRY
        return out

    def compiled_regions(self, graphs: Dict[str, "object"]) -> Dict[str, Dict[str, "object"]]:
        """path -> function -> the compiled region (`semantic.compiled.Region`) it runs in:
        reached from a compile root of any module along any call (`semantic.compiled.regions`),
        not through a function `torch.compiler.disable` excludes; with the Dynamo flags the
        program sets anywhere."""
        from synclint.semantic import compiled as C
        from synclint.semantic.trainmode import root_modes

        if not any(g.compiled.roots or g.compiled.factories for g in graphs.values()):
            return {}
        flags = C.merged_flags(g.compiled.flags for g in graphs.values())
        roots, disabled, skipped = [], set(), set()
        edges: Dict[Tuple[str, Optional[str]], List[Tuple[str, str]]] = {}
        modal: Dict[Tuple[str, Optional[str]], List[Tuple[Tuple[str, str], bool]]] = {}
        incoming: Dict[Tuple[str, str], List[Tuple[str, Optional[str]]]] = {}
        if any(g.compiled.holders for g in graphs.values()):  # who calls each method, from anywhere
            for path, g in graphs.items():
                path = self.absolute(path)
                for caller, callee, _ in g.calls:
                    for t in self._call_targets(path, callee):
                        incoming.setdefault(t, []).append((path, caller))
        modes = root_modes({self.absolute(p): g.compiled for p, g in graphs.items()}, incoming)
        factories = {(self.absolute(p), k): f for p, g in graphs.items() for k, f in g.compiled.factories.items()}
        for path, g in graphs.items():
            path = self.absolute(path)
            for callee, i, root in g.compiled.handed:  # `rms_norm = compile(rms_norm)`: a factory's root
                for t in self._call_targets(path, callee):
                    if t in factories and factories[t][0] == i:
                        roots.extend((r, C.region_of(r[1], factories[t][1], flags))
                                     for r in self._call_targets(path, root))
            for i, (key, opts) in enumerate(g.compiled.roots):
                unless = g.compiled.unless.get(key)
                if unless is not None and self._call_targets(path, unless):
                    continue  # `model.compile()` runs the project's own `compile`, not nn.Module's
                roots.extend((t, C.region_of(t[1], opts, flags, modes.get((path, i))))
                             for t in self._call_targets(path, key))
            disabled.update(t for key in g.compiled.disabled for t in self._call_targets(path, key))
            skipped.update(t for key in g.compiled.skipped for t in self._call_targets(path, key))
            for i, (caller, callee, _) in enumerate(g.calls):  # (guarded calls too: Dynamo traces every call)
                if caller is None:
                    continue
                if i in g.compiled.modal:  # in an `if self.training:` branch
                    modal.setdefault((path, caller), []).extend(
                        (t, g.compiled.modal[i]) for t in self._call_targets(path, callee))
                else:
                    edges.setdefault((path, caller), []).extend(self._call_targets(path, callee))
        for base, subs in self._overrides().items():
            edges.setdefault(base, []).extend(subs)  # a compiled `self.m()` runs the override
        out: Dict[str, Dict[str, object]] = {}
        for (path, qual), region in C.regions(roots, edges, disabled, skipped, modal).items():
            out.setdefault(path, {})[qual] = region
        return out

    def _call_targets(self, path: str, callee: str) -> List[Tuple[str, str]]:
        """The (path, function) pairs a call edge's callee key may run; building a class that
        inherits its constructor runs its base's (`LlamaEngine(cfg)`: `BaseEngine.__init__`).
        Not to be changed by the caller: the list is kept (`_targets`)."""
        got = self._targets.get((path, callee))
        if got is None:
            targets = self._call_runs(callee[1:], path) if callee.startswith("@") else self._in_file(path, callee)
            got = self._targets[(path, callee)] = [self._constructor(t) if t[1].endswith(".__init__") else t
                                                    for t in targets]
        return got

    def _constructor(self, target: Tuple[str, str]) -> Tuple[str, str]:
        return self._defining(target[0], target[1][:-len(".__init__")], "__init__") or target

    def timing_scopes(self, graphs: Dict[str, "object"]) -> Dict[str, Set[Optional[str]]]:
        """path -> functions (None: module-level code) that call a function of another module
        which reads a clock (pycls' `timer.tic()` ... `timer.toc()` around
        `torch.cuda.synchronize()`): they time what they run. (A clock read in the same file is
        known to the file's own walk.)"""
        clocks = {(self.absolute(p), q) for p, g in graphs.items() for q in g.timing}
        names = {q.rsplit(".", 1)[-1] for _, q in clocks}
        out: Dict[str, Set[Optional[str]]] = {}
        for path, g in graphs.items():
            path = self.absolute(path)
            for caller, callee, _ in g.calls:  # guarded calls too: `if i % 10 == 0: t.toc()` times
                if callee.rsplit(".", 1)[-1] in names and any(
                        t in clocks for t in self._call_targets(path, callee)):
                    out.setdefault(path, set()).add(caller)
        return out


def _nested_json(table: Dict[str, Dict[str, Val]]) -> bytes:
    """A digestable form of `name -> name -> value` (a file's incoming parameters, its
    classes' subclass attributes)."""
    return json.dumps({k: {n: v.to_json() for n, v in vals.items()} for k, vals in table.items()},
                      sort_keys=True).encode()


def _class_shape(s: ModuleSummary) -> tuple:
    """What `Project._overrides` reads of a summary: its classes' names and bases, its
    functions and methods, and the names its bases may resolve through."""
    return ([(c, cf.bases) for c, cf in s.classes.items()], list(s.params), list(s.funcs), list(s.values),
            s.aliases, s.imports, s.stars, s.name)


def _any_module(v: Val) -> bool:
    """A module of no known class (`-> nn.Module`)."""
    return v.kind == V.MODULE and not v.cls


def _informative(v: Val) -> bool:
    """Worth telling a file: known, or a tuple with some known element."""
    return v.kind != V.UNKNOWN or bool(v.elems and any(_informative(e) for e in v.elems))


def _seeds(frontier: list, why: Dict[Tuple[str, str], str], nodes: List[Tuple[str, str]], reason: str) -> None:
    """Heat starts at `nodes`, for `reason` (the first reason given stays)."""
    frontier.extend(nodes)
    for n in nodes:
        why.setdefault(n, reason)


def _chain_text(node: Tuple[str, str], came_from: Dict, why: Dict[Tuple[str, str], str], most: int = 6) -> str:
    """`"Trainer.fit() runs every step by its name -> Model.loss (heads.py) -> ..."`: from where
    heat starts to `node`, each function named with its file where the file changes; a long
    chain keeps its ends."""
    path: List[Tuple[str, str]] = [node]
    while came_from.get(path[-1]) is not None and len(path) < 64:
        path.append(came_from[path[-1]])
    path.reverse()
    shown = [f"{path[0][1]}() ({os.path.basename(path[0][0])}) {why.get(path[0], 'runs every step')}"]
    for prev, (p, q) in zip(path, path[1:]):
        shown.append(q if p == prev[0] else f"{q} ({os.path.basename(p)})")
    if len(shown) > most:
        shown = shown[:2] + ["..."] + shown[-(most - 3):]
    return " -> ".join(shown)
