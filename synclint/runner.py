"""Check many files: cache lookups here, the rest in parallel worker processes."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Union

from synclint.cache import content_hash
from synclint.findings import FileError, Finding
from synclint.source import decode_source, read_bytes
from synclint.workers import usable_cpus

PARALLEL_THRESHOLD = 8  # below this many files to parse, a process pool costs more than it saves


@dataclass
class Result:
    findings: List[Finding] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    files_checked: int = 0


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
) -> Result:
    """Check `files` as one project: summarise each (phase 1), link the summaries, lint each
    with what the project tells it (phase 2), then heat over the project's call graph.

    `rules` may be a zero-argument callable that selects them: with a cache and the
    `selection_key` the selection was made from, the rule modules (and LibCST with them)
    are then imported only when some file is not in the cache.

    `sources` gives the text of files that are not (or not yet) saved, an editor's buffer;
    with `cache_findings=False` only the module summaries are cached (their bytes decide).
    `file_timeout`: the seconds each file's analysis may take per phase (see `workers`)."""
    selected: List[Sequence[type]] = []

    def get_rules() -> Sequence[type]:
        if not selected:
            selected.append(tuple(rules() if callable(rules) else rules))
        return selected[0]

    result = Result(files_checked=len(files))
    texts: Dict[str, str] = {}
    digests: Dict[str, str] = {}
    errors: Dict[str, str] = {}
    for path in files:
        data = sources[path].encode("utf-8") if sources and path in sources else _read(path, errors)
        if data is None:
            continue
        digests[path] = content_hash(data)
        text = decode_source(path, data)
        if isinstance(text, FileError):
            errors[path] = text.reason
        else:
            texts[path] = text

    cache = None
    if cache_dir is not None and cache_findings:
        from synclint.cache import Cache

        key = [selection_key] if selection_key is not None else [r.CODE for r in get_rules()]
        cache = Cache(cache_dir, key, False)
    # path -> [digest, digest of the answers to the questions the lint asked the project,
    #          findings, graph, error, hot scopes, second-walk summary, those questions]
    entries: Dict[str, list] = {}
    if cache is not None:
        entries = _unchanged_project(cache, texts, digests)
    if len(entries) != len(texts):
        entries = _analyse(texts, digests, get_rules, cache, cache_dir, jobs, file_timeout)
    for path in files:
        if path in errors:
            result.errors.append(FileError(path, errors[path]))
            continue
        e = entries.get(path)
        if e is None:
            continue
        if e[4]:
            result.errors.append(FileError(path, e[4]))
        hot_scopes = set(e[5])
        for d in e[2]:
            f = Finding.from_json(d)
            f.filename = path  # cached entries are keyed by absolute path; report as given
            f.hot = f.hot or (f.scope in hot_scopes and not f.guarded)
            if f.hot or not hot_only:
                result.findings.append(f)
    if cache is not None:
        cache.save()
    return result


def _read(path: str, errors: Dict[str, str]) -> Optional[bytes]:
    data = read_bytes(path)
    if isinstance(data, FileError):
        errors[path] = data.reason
        return None
    return data


def _project_key(texts: Dict[str, str], digests: Dict[str, str], extra: Sequence[str]) -> str:
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for path in sorted(texts):
        h.update(f"{os.path.abspath(path)}:{digests[path]};".encode())
    for path in sorted(extra):
        data = _read(path, {})
        h.update(f"+{path}:{content_hash(data) if data is not None else '-'};".encode())
    return h.hexdigest()


def _unchanged_project(cache, texts: Dict[str, str], digests: Dict[str, str]) -> Dict[str, list]:
    """Every entry, when no file of the project (nor a file it imports) changed since the
    cache was written: then nothing needs linking or parsing."""
    meta = cache.project
    if not meta:
        return {}
    key, _, extra = meta.partition("|")
    if key != _project_key(texts, digests, [p for p in extra.split("|") if p]):
        return {}
    out = {}
    for path in texts:
        e = cache.result(path, digests[path])
        if e is None:
            return {}
        out[path] = e
    return out


def _analyse(texts, digests, get_rules, cache, cache_dir, jobs, budget=None) -> Dict[str, list]:
    from synclint.project import Project, module_name, project_root
    from synclint.semantic.facts import ModuleSummary, ProjectFacts
    from synclint.workers import timed_out

    summaries = None
    if cache_dir is not None:
        from synclint.cache import SummaryCache

        summaries = SummaryCache(cache_dir)
    project = Project(project_root(list(texts)))
    names = {p: module_name(p) for p in texts}
    out: Dict[str, list] = {}
    errors: Dict[str, str] = {}
    affinity: Dict[str, int] = {}
    codes = [r.CODE for r in get_rules()]
    n_jobs = jobs or usable_cpus()
    runner = _Runner(n_jobs, codes, budget)
    try:
        # Phase 1: what each module offers.
        todo = []
        for path, text in texts.items():
            hit = summaries.get(path, digests[path]) if summaries is not None else None
            if hit is not None:
                project.add(path, ModuleSummary.from_json(hit[1]) if hit[1] else None)
                if hit[2]:
                    errors[path] = hit[2]
            else:
                todo.append(("summarise", path, text, names[path]))
        todo.sort(key=lambda j: -len(j[2]))  # biggest first: no worker is left with a long one at the end
        for worker, job, (summary, error) in runner.run(todo):
            path = job[1]
            affinity[path] = worker
            project.add(path, ModuleSummary.from_json(summary) if summary else None)
            if error:
                errors[path] = error
            if summaries is not None and not timed_out(error):
                summaries.put(path, digests[path], summary, error)
        # Modules the checked files import that were not named on the command line.
        extra: List[str] = []
        for path in texts:
            s = project.summaries.get(os.path.abspath(path))
            if s is not None:
                extra.extend(p for p in project.on_disk(path, list(s.aliases.values()) + s.imports) if p not in extra)
        extra_jobs = []
        for path in extra:
            data = _read(path, {})
            if data is None:
                continue
            digest = content_hash(data)
            hit = summaries.get(path, digest) if summaries is not None else None
            if hit is not None:
                project.add(path, ModuleSummary.from_json(hit[1]) if hit[1] else None)
                continue
            text = data.decode("utf-8", errors="replace")
            digests[path] = digest
            extra_jobs.append(("summarise", path, text, module_name(path), False))
        for _, job, (summary, error) in runner.run(extra_jobs):
            project.add(job[1], ModuleSummary.from_json(summary) if summary else None)
            if summaries is not None and not timed_out(error):
                summaries.put(job[1], digests[job[1]], summary, None)
        # Files that never name torch but import project modules that hold tensors (a
        # script using only what `logs.py` gives it): analysed too (GAPS G4).
        forced = _forced(texts, errors, project)
        force_jobs = [("summarise", p, texts[p], names[p], True, True) for p in forced
                      if project.summaries.get(os.path.abspath(p)) is None]
        for worker, job, (summary, error) in runner.run(force_jobs):
            path = job[1]
            affinity[path] = worker
            if summary:
                project.update(path, ModuleSummary.from_json(summary))
            if error:
                errors[path] = error
            if summaries is not None and not timed_out(error):
                summaries.put(path, digests[path], summary, error)
        # Phase 2: the rules, with what the project tells each file. Files unchanged since
        # the last run bring back the summaries their last lint left (the state that run
        # ended in); a file is linted again only when an answer to a question its last lint
        # asked the project has changed.
        todo = []
        facts: Dict[str, ProjectFacts] = {}
        hits: Dict[str, list] = {}
        for path in texts:
            hit = cache.get(path, digests[path]) if cache is not None and path not in errors else None
            if hit is not None:
                hits[path] = hit
                _update(project, path, hit[6])
        for path, text in texts.items():
            if path in errors:
                out[path] = [digests[path], "", [], None, errors[path], [], None, []]
                continue
            pf = facts[path] = project.facts_for(path)
            hit = hits.get(path)
            if hit is not None and pf.answers_digest(hit[7]) == hit[1]:
                out[path] = hit
                continue
            todo.append(("lint", path, text, names[path], pf.to_json(), path in forced))
        _lint(runner, todo, affinity, facts, digests, out)
        # Round 2: what the second walks learned (a parameter's value from another module,
        # passed on to a third) is linked once more; files whose answers change are linted
        # again. One extra round: a chain of three modules is seen, a longer one may not be.
        updated = {os.path.abspath(job[1]) for job in todo if _update(project, job[1], out[job[1]][6])}
        if updated:
            todo = []
            for path, e in out.items():
                if e[4] or path not in texts or not project.may_change(path, updated, facts[path]):
                    continue  # (made from none of the changed summaries: the same answers)
                pf = facts[path] = project.facts_for(path)
                if pf.answers_digest(e[7]) != e[1]:
                    todo.append(("lint", path, texts[path], names[path], pf.to_json(), path in forced))
            _lint(runner, todo, affinity, facts, digests, out)
    finally:
        runner.close()
    # Heat over the whole project's call graph.
    from synclint.engine import Graph

    graphs = {p: Graph.from_json(e[3]) for p, e in out.items() if e[3]}
    hot = project.hot_scopes(graphs)
    for path, e in out.items():
        e[5] = sorted(hot.get(os.path.abspath(path), ()))
        if cache is not None and not timed_out(e[4]):
            cache.put(path, e)
    if cache is not None:
        cache.project = _project_key(texts, digests, extra) + "|" + "|".join(extra)
    if summaries is not None:
        summaries.save()
    return out


def _lint(runner, todo, affinity, facts, digests, out) -> None:
    for _, job, (found, graph, error, summary, reads) in runner.run(todo, affinity):
        path = job[1]
        out[path] = [digests[path], facts[path].answers_digest(reads), found, graph, error, [], summary, reads]


# `import a.b`, `from a.b import c`, `from . import c` at the start of a line
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import\b|import[ \t]+([\w.]+))", re.M)


def _forced(texts: Dict[str, str], errors: Dict[str, str], project) -> Set[str]:
    """Files the prefilter would skip (no torch, tensor, cuda... in them) that import a module
    of the project the first phase found tensors in: what they use may be a GPU tensor."""
    from synclint.engine import might_inform

    out: Set[str] = set()
    for path, text in texts.items():
        if path in errors or might_inform(text):
            continue
        for dots, src, plain in _IMPORT.findall(text):
            name = src or plain
            if dots or any(project.summaries.get(p) is not None
                           for p in _module_paths(project, name, os.path.abspath(path))):
                out.add(path)
                break
    return out


def _module_paths(project, name: str, importer: str) -> List[str]:
    """The project files `name` (or a package above it) may be."""
    parts = name.split(".")
    found = (project.module_path(".".join(parts[:i]), importer) for i in range(len(parts), 0, -1))
    return [p for p in found if p is not None]


def _update(project, path: str, summary: Optional[dict]) -> bool:
    """Give the project what a file's second walk found, when it differs from what it has."""
    from synclint.semantic.facts import ModuleSummary

    now = project.summaries.get(os.path.abspath(path))
    if not summary or now is None or summary == now.to_json():
        return False
    project.update(path, ModuleSummary.from_json(summary))
    return True


class _Runner:
    """Jobs in this process (few files, one CPU) or in a pool of workers started on first use."""

    def __init__(self, n: int, codes: Sequence[str], budget: Optional[float] = None) -> None:
        import math

        self.n, self.codes = n, codes
        self.budget = budget if budget and math.isfinite(budget) else None  # `inf`: no budget
        self.pool = None
        self.local = None

    def run(self, jobs, affinity=None):
        if not jobs:
            return
        if self.pool is None and (self.local is not None or self.n <= 1 or len(jobs) < PARALLEL_THRESHOLD):
            # Few files: a process pool costs more than it saves. Once trees are held here,
            # the later phases stay here too.
            from synclint.workers import Worker

            if self.local is None:
                self.local = Worker(self.codes)
            for job in jobs:
                yield 0, job, self.local.do(job, self.budget)
            return
        if self.pool is None:
            from synclint.workers import Pool

            self.pool = Pool(min(self.n, len(jobs)), self.codes, self.budget)
        yield from self.pool.run(jobs, affinity)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
