"""Check many files: cache lookups here, the rest in parallel worker processes."""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from synclint.run.decoded import FRESH, Fresh
from synclint.findings import FileError, Finding
from synclint.paths import absolute_paths
from synclint.run.cache import Cache, SummaryCache, content_hash
from synclint.run.workers import Pool, Worker, forks, timed_out, usable_cpus
from synclint.semantic.declared import TEST_CODE, TEST_LOOP, DeclaredHeat
from synclint.parse.source import decode_source, read_bytes, size_problem

PARALLEL_THRESHOLD = 8  # below this many files to parse, a process pool costs more than it saves
# A file larger than this is analysed in a worker process even alone, under a time budget:
# LibCST's own parser (a fix needs its tree) holds the interpreter for seconds on it, where no
# timer signal gets through and only killing the process keeps the budget (up to 5 s for
# 100,000 characters of a one-line list; a fork costs some 50 ms).
LOCAL_MAX_CHARS = 100_000


@dataclass
class Result:
    findings: List[Finding] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    files_checked: int = 0
    linted: List[List[str]] = field(default_factory=list)  # the files linted, round by round (`Solver.computed`)
    at_setup: List[Finding] = field(default_factory=list)  # one-time transfers at setup, not reported (`explain` says why)


def check_files(
    files: Sequence[str],
    rules: Union[Sequence[type], Callable[[], Sequence[type]]],
    *,
    hot_only: bool = False,
    cache_dir: Optional[Path] = None,
    jobs: Optional[int] = None,
    selection_key: Optional[str] = None,
    sources: Optional[Dict[str, str]] = None,
    cache_findings: bool = True,
    file_timeout: Optional[float] = None,
    declared: DeclaredHeat = DeclaredHeat(),
    max_chars: Optional[int] = None,
    kept: Optional[Dict[str, list]] = None,
    decoded: Fresh = FRESH,
) -> Result:
    """Check `files` as one project: summarise each (phase 1), link the summaries, lint each
    with what the project tells it (phase 2), then heat over the project's call graph.

    `rules` may be a zero-argument callable that selects them: with a cache and the
    `selection_key` the selection was made from, the rule modules (and LibCST with them)
    are then imported only when some file is not in the cache.

    `sources` gives the text of files that are not (or not yet) saved, an editor's buffer;
    with `cache_findings=False` only the module summaries are cached (their bytes decide).
    `file_timeout`: the seconds each file's analysis may take per phase (see `workers`);
    `max_chars`: the size past which a file is not analysed (`source.size_problem`).
    `declared`: what the configuration says of how often functions run (`hot-functions`).
    `kept`: a long-lived process's store of whole-project tables (`Project`).
    `decoded`: how the cache's files are read (a daemon's `decoded.Kept` keeps them decoded)."""
    selected: List[Sequence[type]] = []

    def get_rules() -> Sequence[type]:
        if not selected:
            selected.append(tuple(rules() if callable(rules) else rules))
        return selected[0]

    result = Result(files_checked=len(files))
    cache = known = None
    if cache_dir is not None and (cache_findings or selection_key is not None):
        key = [selection_key] if selection_key is not None else [r.CODE for r in get_rules()]
        if selection_key is None and declared:  # (a selection key says it: `pipeline._selection_key`)
            key.append(repr(declared))
        known = Cache(cache_dir, key, False, decoded)
        # (an editor's buffer writes no findings, but reads what the last check knew)
        cache = known if cache_findings else None
    texts: Dict[str, str] = {}
    digests: Dict[str, str] = {}
    errors: Dict[str, str] = {}
    # path -> [digest, digest of the answers to the questions the lint asked the project,
    #          findings, graph, error, hot scopes, second-walk summary, those questions,
    #          what its facts were made from (`Project.made_from`)]
    entries: Dict[str, list] = {}
    absolute = absolute_paths(files)
    if cache is not None and not sources:
        entries = _unchanged_by_stamps(cache, files, absolute)
    if not entries:
        now = time.time_ns()
        for path in files:
            buffered = sources is not None and path in sources  # an editor's unsaved text
            st = _stat(path) if cache is not None and not buffered else None
            digest = cache.stamped(absolute[path], st) if st is not None else None
            # (a long-lived process keeps the texts of the last run: an unchanged file is not read)
            text = decoded.text(absolute[path], digest) if digest is not None else None
            if text is None:
                data = sources[path].encode("utf-8") if buffered else _read(path, errors)
                if data is None:
                    continue
                digest = content_hash(data)
                if st is not None:
                    cache.stamp(absolute[path], st, digest, now)
                text = decode_source(path, data)
                if st is not None and isinstance(text, str):
                    decoded.keep_text(absolute[path], digest, text)
            digests[path] = digest
            too_large = size_problem(text, max_chars) if isinstance(text, str) else None
            if isinstance(text, FileError):
                errors[path] = text.reason
            elif too_large is not None:
                errors[path] = too_large  # (never cached: the limit is this run's)
            else:
                texts[path] = text
        if cache is not None:
            entries = _unchanged_project(cache, texts, digests, absolute)
        if len(entries) != len(texts):
            entries = _analyse(texts, digests, absolute, get_rules, cache, cache_dir, jobs, file_timeout, declared,
                               known, max_chars, kept, decoded, result.linted)
    modules = {}
    if declared:
        from synclint.project import module_names

        modules = module_names(files)
    for path in files:
        if path in errors:
            result.errors.append(FileError(path, errors[path]))
            continue
        e = entries.get(path)
        if e is None:
            continue
        if e[4]:
            result.errors.append(FileError(path, e[4]))
        hot_scopes, timing_scopes = dict(e[5][0]), set(e[5][1])  # (function -> the chain that makes it hot)
        grad_off = set(e[5][3]) if len(e[5]) > 3 else set()
        setup = e[5][4] if len(e[5]) > 4 else {}
        in_tests = declared.in_tests(path)
        for f in _settled([Finding.from_json(d) for d in e[2]], e[5], decoded):
            if f.timing_exempt and f.scope in timing_scopes:
                continue  # it times code with another module's clock (`timer.toc()`)
            if f.grad_mode_exempt and f.scope in grad_off:
                continue  # every caller in the project runs it under `no_grad`
            f.filename = path  # cached entries are keyed by absolute path; report as given
            if not f.hot and f.scope in hot_scopes and not f.guarded:
                f.reheat(True, "per-step",
                         _project_reason(f.scope, modules.get(path), declared, chain=hot_scopes[f.scope]))
            if modules and declared.cold_scope(modules[path], f.scope):
                f.reheat(False, "once", _project_reason(f.scope, modules[path], declared, hot=False))
            if in_tests and f.hot:
                f.reheat(False, TEST_LOOP, *f.rate_chain, TEST_CODE)
            if f.setup_exempt and _at_setup(f, setup):
                result.at_setup.append(f)  # a one-time transfer while the program sets itself up
                continue
            if f.hot or not (hot_only or f.hot_only):
                result.findings.append(f)
    if cache is not None:
        cache.save()
    return result


def _project_reason(scope: str, module: Optional[str], declared: DeclaredHeat, hot: bool = True,
                    chain: Optional[str] = None) -> str:
    """`rates.project_reason`, imported when a finding is reheated (few are: a warm run
    that reheats none imports no semantic module)."""
    from synclint.semantic.rates import project_reason

    return project_reason(scope, module, declared, hot, chain)


def _at_setup(f: Finding, scopes: Dict[str, str]) -> bool:
    """`semantic.setup.drops`, imported for the few findings a rule may leave at setup."""
    from synclint.semantic.setup import drops

    return drops(f, scopes)


def _settled(findings: List[Finding], scopes: list, decoded: Fresh) -> List[Finding]:
    """A file's findings with its compiled events settled by the project's compiled regions
    (`scopes[2]`: function -> region, JSON), where it has any."""
    if not any(f.compiled for f in findings):
        return findings
    regions = scopes[2] if len(scopes) > 2 else {}
    if not regions:  # no function of the file runs compiled: `settle` drops every compiled event
        return sorted((f for f in findings if not f.compiled), key=Finding.sort_key)  # (a warm run imports no model)
    from synclint.semantic.compiled import Region, settle

    return settle(findings, {q: decoded.made("region", r, Region.from_json) for q, r in regions.items()})


def _stat(path: str) -> Optional[os.stat_result]:
    try:
        return os.stat(path)
    except OSError:
        return None


def _stamped_digest(cache, path: str, key: str):
    """(the file's stat or None, the digest its stamp in `cache` vouches for or None)."""
    st = _stat(path)
    return st, cache.stamped(key, st) if st is not None else None


def _unchanged_by_stamps(cache, files: Sequence[str], absolute: Dict[str, str]) -> Dict[str, list]:
    """`_unchanged_project` without reading a file: when every file (and every file the
    project imports) has the size and modification time it had when last read (a warm run)."""
    digests: Dict[str, str] = {}
    for path in files:
        digest = _stamped_digest(cache, path, absolute[path])[1]
        if digest is None:
            return {}
        digests[path] = digest
    return _unchanged_project(cache, digests, digests, absolute)


def _read(path: str, errors: Dict[str, str]) -> Optional[bytes]:
    data = read_bytes(path)
    if isinstance(data, FileError):
        errors[path] = data.reason
        return None
    return data


def _project_key(texts: Dict[str, str], digests: Dict[str, str], extra: Sequence[str], cache=None,
                 absolute: Optional[Dict[str, str]] = None) -> str:
    """A digest of the project: the checked files' (`absolute`: their absolute paths, where
    known) and the modules they import (`extra`), these by their stamps in `cache` where it
    vouches for them."""
    from synclint.build import blake2b

    h = blake2b(b"", 16)
    for path in sorted(texts):
        h.update(f"{absolute[path] if absolute else os.path.abspath(path)}:{digests[path]};".encode())
    for path in sorted(extra):
        key = os.path.abspath(path)
        st, digest = _stamped_digest(cache, path, key) if cache is not None else (None, None)
        if digest is None:
            now = time.time_ns()
            data = _read(path, {})
            digest = content_hash(data) if data is not None else "-"
            if st is not None and data is not None:
                cache.stamp(key, st, digest, now)
        h.update(f"+{path}:{digest};".encode())
    return h.hexdigest()


def _unchanged_project(cache, texts: Dict[str, object], digests: Dict[str, str],
                       absolute: Dict[str, str]) -> Dict[str, list]:
    """Every entry, when no file of the project (`texts`: its paths are what counts) nor a
    file it imports changed since the cache was written: then nothing needs linking or parsing."""
    meta = cache.project
    if not meta:
        return {}
    key, _, extra = meta.partition("|")
    if key != _project_key(texts, digests, [p for p in extra.split("|") if p], cache, absolute):
        return {}
    out = {}
    for path in texts:
        e = cache.result(absolute[path], digests[path])
        if e is None:
            return {}
        out[path] = e
    return out


def _analyse(texts, digests, absolute, get_rules, cache, cache_dir, jobs, budget=None,
             declared: DeclaredHeat = DeclaredHeat(), known=None, max_chars=None, kept=None,
             decoded: Fresh = FRESH, linted: Optional[list] = None) -> Dict[str, list]:
    summaries = None
    if cache_dir is not None:
        summaries = SummaryCache(cache_dir, decoded)
    # With a cache, most runs re-check an edit: few files to analyse, much to read first
    runner = _Runner(jobs or usable_cpus(), lambda: [r.CODE for r in get_rules()], budget,
                     early=summaries is not None and len(texts) >= PARALLEL_THRESHOLD)
    run = _Run(texts, digests, absolute, cache, summaries, runner, declared, max_chars, kept, decoded)
    try:
        run.summarise()
        run.lint()
    finally:
        run.runner.close()
    if linted is not None:
        linted.extend(run.solver.computed)
    run.heat(known)
    if cache is not None:  # (None: the next run looks at each file's entry)
        cache.remember_root(run.project.root)
        cache.project = None if run.limited else (
            _project_key(texts, digests, run.extra, cache, absolute) + "|" + "|".join(run.extra))
    if summaries is not None:
        summaries.save()
    return run.out


class _Run:
    """One check of a project with a cache: the state the phases share. What is linted, and
    how often, the solver decides (`synclint.solver`); this runs its jobs."""

    def __init__(self, texts, digests, absolute, cache, summaries, runner, declared: DeclaredHeat,
                 max_chars=None, kept=None, decoded: Fresh = FRESH) -> None:
        from synclint.paths import project_root
        from synclint.project import Project, module_names
        from synclint.solver import Solver

        self.texts, self.digests, self.cache, self.summaries, self.runner = texts, digests, cache, summaries, runner
        self.declared = declared
        self.max_chars = max_chars
        self.decoded = decoded
        # an imported module this run's limits left unsummarised (too large, out of time): what
        # its importers were told is this run's, so the next run may not reuse it whole
        self.limited = False
        self.project = Project(project_root(list(texts), cache.roots if cache is not None else ()), absolute, kept)
        self.solver = Solver(self.project, digests, self._lint_jobs, decoded.made)
        self.out = self.solver.out  # path -> entry (see `check_files`)
        self.names = module_names(texts)
        self.errors: Dict[str, str] = {}
        self.affinity: Dict[str, int] = {}  # path -> the worker that holds its tree
        self.extra: List[str] = []  # modules the checked files import, not named on the command line
        self.forced: Set[str] = set()
        self.last: Dict[str, list] = {}  # path -> the cache's entry of its last lint (unchanged files)

    def _cached_summary(self, path: str, digest: str) -> bool:
        hit = self.summaries.get(self.project.absolute(path), digest) if self.summaries is not None else None
        if hit is None:
            return False
        self.solver.add(path, hit[0], hit[1], hit[3])
        if hit[2] and path in self.texts:
            self.errors[path] = hit[2]
        return True

    def _keep_summary(self, path: str, summary: Optional[dict], error: Optional[str]) -> None:
        if self.summaries is not None and not timed_out(error):
            self.summaries.put(self.project.absolute(path), self.digests[path], summary, error,
                               self.project.versions.get(self.project.absolute(path)))

    # ------------------------------------------------------------------ phase 1
    def summarise(self) -> None:
        """What each module offers: the checked files, the project modules they import, and
        files that never name torch but import modules that hold tensors."""
        todo = [("summarise", p, t, self.names[p]) for p, t in self.texts.items()
                if not self._cached_summary(p, self.digests[p])]
        todo.sort(key=lambda j: -len(j[2]))  # biggest first: no worker is left with a long one at the end
        self._read_last_lints()  # (while a worker started early imports the rules)
        for worker, job, (summary, error) in self.runner.run(todo):
            path = job[1]
            self.affinity[path] = worker
            self.solver.add(path, summary)
            if error:
                self.errors[path] = error
            self._keep_summary(path, summary, error)
        from synclint.project import module_name

        project = self.project
        for path in self.texts:
            s = project.summaries.get(project.absolute(path))
            if s is not None:
                self.extra.extend(p for p in project.on_disk(path, list(s.aliases.values()) + s.imports)
                                  if p not in self.extra)
        todo = []
        for path in self.extra:
            # (by its stamp where the cache vouches for it, as `_project_key` did: read only
            # when its summary is not cached)
            st = _stat(path) if self.cache is not None else None
            digest = self.cache.stamped(os.path.abspath(path), st) if st is not None else None
            data = None
            if digest is None:
                data = _read(path, {})
                if data is None:
                    continue
                digest = content_hash(data)
            self.digests[path] = digest
            if not self._cached_summary(path, digest):
                if data is None:
                    data = _read(path, {})
                    if data is None:
                        continue
                    self.digests[path] = content_hash(data)  # (the bytes summarised are the ones read)
                text = data.decode("utf-8", errors="replace")
                if size_problem(text, self.max_chars) is None:
                    # (forced as a checked file would be: a module with tensors imports it, and a
                    # base class there says what the importer's classes are, tensors or not)
                    todo.append(("summarise", path, text, module_name(path), False, True))
                else:  # a module too large says nothing to its importers
                    self.limited = True
        for _, job, (summary, error) in self.runner.run(todo):
            self.solver.add(job[1], summary)
            self._keep_summary(job[1], summary, error)  # (a timeout is not kept)
            self.limited |= timed_out(error)
        self._summaries_of_the_rest()
        # Files that never name torch but import project modules that hold tensors (a
        # script using only what `logs.py` gives it): analysed too (GAPS G4).
        self.forced = self.solver.forced(lambda: _forced(self.texts, self.errors, project), self._force)

    def _summaries_of_the_rest(self) -> None:
        """The cached summaries of the project's other files, as the last check of the package
        left them (unchanged since, by their stat): a file checked alone (the command line,
        an editor's buffer, a pre-commit hook) is told what its callers pass it and reached
        through the package's re-exports (`from pkg.utils import topk`, through
        `pkg/utils/__init__.py`) as in the package's check. A file's summary is its second
        walk's where that differed from its first (what its own callers passed, learnt with the
        project's facts). No source is read or parsed: a file with no cached summary is left out."""
        if self.cache is None or self.summaries is None:
            return
        from synclint.semantic.facts import ModuleSummary, summary_version

        inside = os.path.join(self.project.root, "")
        for key in self.cache.entries:
            if not key.startswith(inside) or self.project.summaries.get(key) is not None:
                continue
            st = _stat(key)
            digest = self.cache.stamped(key, st) if st is not None else None
            hit = self.summaries.get(key, digest) if digest is not None else None
            if hit is None or not hit[0]:
                continue
            last = self.cache.get(key, digest)  # what the package's second walk of it found, if it differed
            if last is not None and last[6]:
                self.project.add(key, ModuleSummary.from_json(last[6]), summary_version(last[6]))
            else:
                self.project.add(key, hit[1] or ModuleSummary.from_json(hit[0]), hit[3])

    def _force(self, paths: List[str]) -> None:
        """Summarise files the prefilter skipped (`Solver.forced`)."""
        todo = [("summarise", p, self.texts[p], self.names[p], True, True) for p in paths]
        for worker, job, (summary, error) in self.runner.run(todo):
            path = job[1]
            self.affinity[path] = worker
            if summary:
                self.solver.add(path, summary)
            if error:
                self.errors[path] = error
            self._keep_summary(path, summary, error)

    # ------------------------------------------------------------------ phase 2
    def lint(self) -> None:
        """The rules, with what the project tells each file, to the solver's fixpoint. Files
        unchanged since the last run bring back the summaries their last lint left (the
        state that run ended in)."""
        hits = {p: hit for p, hit in self.last.items() if p not in self.errors}
        for path in self.errors:
            if path in self.texts:
                self.out[path] = [self.digests[path], "", [], None, self.errors[path], [[], []], None, [], None]
        self.solver.solve([p for p in self.texts if p not in self.errors and p not in hits], hits)

    def _read_last_lints(self) -> None:
        """The last run's lint of each unchanged file, from the cache, and the summaries
        those lints left (no edit can change what a summary of an unchanged file says)."""
        if self.cache is None:
            return
        for path in self.texts:
            hit = self.cache.get(self.project.absolute(path), self.digests[path]) if path not in self.errors else None
            if hit is not None:
                self.last[path] = hit
                self.solver.update(path, hit[6])

    def _lint_jobs(self, paths: List[str], prepare):
        """The solver's lints: `paths` in the workers that hold their trees, biggest first
        (as in the first phase), each with the facts `prepare(path)` makes as it goes out."""
        paths = sorted(paths, key=lambda p: -len(self.texts[p]))

        def with_facts(job):
            facts = prepare(job[1])
            return None if facts is None else job[:4] + (facts,) + job[5:]

        jobs = [("lint", p, self.texts[p], self.names[p], None, p in self.forced) for p in paths]
        for _, job, result in self.runner.run(jobs, self.affinity, with_facts):
            yield job[1], result

    # ------------------------------------------------------------------ heat
    def heat(self, known=None) -> None:
        """Heat over the whole project's call graph: this run's files, and the rest of the
        project as the last check that read it left it in `known` (a cache): a file checked
        alone (an editor's buffer, `check pkg/util.py`) takes its callers' heat from the
        files around it as the package's check does. Every entry goes to the cache, its
        second-walk summary left out where it is the first walk's (most files)."""
        from synclint.engine import Graph

        project = self.project
        graphs = {project.absolute(p): e[3] for p, e in self.out.items() if e[3]}
        if known is not None:
            graphs = {**_unchanged_graphs(known, project.root, set(graphs)), **graphs}

        def heat():
            made = {p: self.decoded.made("graph", g, Graph.from_json) for p, g in graphs.items()}
            return (project.hot_scopes(made, self.declared), project.timing_scopes(made),
                    project.grad_off_scopes(made), project.setup_scopes(made))

        # a function of the summaries, the call graphs and the declared heat (`Project.kept`)
        hot, timing, grad_off, setup = project.kept("heat", heat, (graphs, self.declared))
        compiled = project.kept("compiled regions", lambda: project.compiled_regions(
            {p: self.decoded.made("graph", g, Graph.from_json) for p, g in graphs.items()}), graphs)
        for path, e in self.out.items():
            key = self.project.absolute(path)
            e[5] = [sorted([q, chain] for q, chain in hot.get(key, {}).items()),
                    sorted(timing.get(key, ()), key=lambda q: q or "")]
            if key in compiled or key in grad_off or key in setup:  # (those that run compiled, and how)
                e[5].append({q: r.to_json() for q, r in sorted(compiled.get(key, {}).items())})
            if key in grad_off or key in setup:  # (those every caller runs with autograd off)
                e[5].append(sorted(grad_off.get(key, ())))
            if key in setup:  # (those that run at setup, and how)
                e[5].append(dict(sorted(setup[key].items())))
            if self.cache is not None and not timed_out(e[4]):
                if e[6] is not None and e[6] == self.solver.first.get(key):
                    e = e[:6] + [None] + e[7:]
                self.cache.put(key, e)


def _unchanged_graphs(cache, root: str, have: Set[str]) -> Dict[str, list]:
    """absolute path -> the call graph (JSON) the cache holds for each file under `root`
    that this run did not analyse and that has the size and modification time it had when
    that graph was made."""
    out: Dict[str, list] = {}
    inside = os.path.join(root, "")
    for key in cache.entries:
        if key in have or not key.startswith(inside):
            continue
        st = _stat(key)
        digest = cache.stamped(key, st) if st is not None else None
        entry = cache.get(key, digest) if digest is not None else None
        if entry is not None and entry[3]:
            out[key] = entry[3]
    return out


# `import a.b`, `from a.b import c`, `from . import c` at the start of a line
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import\b|import[ \t]+([\w.]+))", re.M)


def _forced(texts: Dict[str, str], errors: Dict[str, str], project) -> Set[str]:
    """Files the prefilter would skip (no torch, tensor, cuda... in them) that a module of the
    project the first phase found tensors in imports, or that import one: what they are
    given, or use, may be a GPU tensor."""
    from synclint.engine import might_fire

    out: Set[str] = set()
    # (a file the prefilter skips may have a summary: the one a run that forced it cached)
    skipped = {project.absolute(p): p for p, t in texts.items()
               if p not in errors and (project.summaries.get(project.absolute(p)) is None or not might_fire(t))}
    # a helper module of a file with tensors (an AverageMeter's `update(loss)`): it may be
    # given GPU tensors. Only a name that some skipped file may be is resolved (most import
    # nothing skipped, and resolving every import of every module was a twentieth of an edit's re-check).
    may_be_skipped = {n for n, ps in project.by_name.items() if any(p in skipped for p in ps)}
    names: Dict[str, bool] = {}  # imported name -> whether it or a package above it may be skipped
    # (name, importer's folder) -> the files it may be: the folder decides (`Project.module_path`),
    # and the files of one folder import the same names (2,400 resolutions an edit, 300 distinct)
    found: Dict[Tuple[str, str], List[str]] = {}

    def module_paths(name: str, importer: str) -> List[str]:
        key = (name, os.path.dirname(importer))
        got = found.get(key)
        if got is None:
            got = found[key] = _module_paths(project, name, importer)
        return got

    for path, s in list(project.summaries.items()) if may_be_skipped else ():
        if s is None:
            continue
        for name in set(s.aliases.values()) | set(s.imports):
            maybe = names.get(name)
            if maybe is None:
                parts = name.split(".")
                maybe = names[name] = any(".".join(parts[:i]) in may_be_skipped for i in range(1, len(parts) + 1))
            if not maybe:
                continue
            for p in module_paths(name, path):
                if p in skipped:
                    out.add(skipped[p])
    for path in skipped.values():
        text = texts[path]
        if path in out:
            continue  # (one that names NumPy is summarised but not linted: its loops give heat only if forced)
        for dots, src, plain in _IMPORT.findall(text):
            name = src or plain
            if dots or any(project.summaries.get(p) is not None
                           for p in module_paths(name, project.absolute(path))):
                out.add(path)
                break
    return out


def _module_paths(project, name: str, importer: str) -> List[str]:
    """The project files `name` (or a package above it) may be."""
    parts = name.split(".")
    found = (project.module_path(".".join(parts[:i]), importer) for i in range(len(parts), 0, -1))
    return [p for p in found if p is not None]


class _Runner:
    """Jobs in this process (few files, one CPU) or in a pool of workers started on first use.

    `early`: start one worker now, which imports LibCST and the rules while this process
    reads its caches (an edit's re-check: of its 0.6 s, the import is a third; on two cores
    the two overlap). Few jobs then go to that worker, not to this process."""

    def __init__(self, n: int, select: Callable[[], Sequence[str]], budget: Optional[float] = None,
                 early: bool = False) -> None:
        import math

        self.n, self.select = n, select
        self._codes: Optional[Sequence[str]] = None
        self.budget = budget if budget and math.isfinite(budget) else None  # `inf`: no budget
        self.pool = None
        self.local = None
        if early and n > 1 and "libcst" not in sys.modules:  # (a daemon has it: no import to overlap)

            if forks():
                self.pool = Pool(1, select, self.budget)

    def codes(self) -> Sequence[str]:
        if self._codes is None:
            self._codes = self.select()
        return self._codes

    def run(self, jobs, affinity=None, prepare=None):
        """Yield (worker, job, result) as jobs finish; `prepare(job)` completes a job just
        before it is run (see `Pool.run`)."""
        if not jobs:
            return
        large = self.budget is not None and self.local is None and any(len(j[2]) > LOCAL_MAX_CHARS for j in jobs)
        if self.pool is None and not large and (self.local is not None or self.n <= 1
                                                or len(jobs) < PARALLEL_THRESHOLD):
            # Few files: a process pool costs more than it saves. Once trees are held here,
            # the later phases stay here too.

            if self.local is None:
                self.local = Worker(self.codes())
            for job in jobs:
                job = prepare(job) if prepare is not None else job
                if job is not None:
                    yield 0, job, self.local.do(job, self.budget)
            return
        if self.pool is None:
            self.pool = Pool(min(self.n, len(jobs)), self.codes(), self.budget)
        elif len(jobs) >= PARALLEL_THRESHOLD:
            self.pool.grow(min(self.n, len(jobs)))
        yield from self.pool.run(jobs, affinity, prepare)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
