"""The one place where facts are iterated to a fixpoint.

A file's facts are what its walks learn (returns, class attributes, the values its calls
pass) and what the project tells it (`ProjectFacts`, made from the other files'
summaries). Each depends on the other, so they are computed in rounds until they stop
changing, in two nested worklists:

- **in a file** (`walk_to_fixpoint`): a unit is one walk of one file from the facts the
  walk before it left. A call above the function it calls, or an attribute read above the
  class that sets it, reads the last walk's answer; the file is walked again while a walk
  says such a read is stale. At most `FILE_WALKS` walks (the walks run in the worker that
  holds the tree; `engine.analyse` and `engine.lint_analysis` are single walks around it);
- **across files** (`Solver`): a unit is one file, linted from the facts the project makes
  for it; what its walk found (its summary) goes back to the project. A file is queued
  again when a summary its facts were made from changed after they were made (the
  project's record of what each file's facts read: `Project.reads`, `may_change`), unless
  its facts answer the questions its last walk asked alike. Rounds: every queued file is
  computed from the same project, then their summaries are given to it; the first round
  goes in waves, a module after the modules it imports (`dependency_waves`), so that most
  files' first facts already hold what their imports' second walks learnt (on the
  Lightning sources 6 files are linted again, not 56). At most `LINK_ROUNDS` rounds after
  the first. The files the prefilter skips (no torch word) but
  that import, or are imported by, a module with tensors are summarised too, likewise
  to a fixpoint (`forced`).

With a cache, a file whose bytes are unchanged starts from the entry its last lint left,
and is not computed again while the summaries its facts were made from are unchanged
(`Project.facts_unchanged`): an edit re-solves only the files that depend on it.

The solver decides what to compute; the caller computes it (the runner's worker
processes, or this process), through the functions it is given.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

# Walks of one file (with or without the rules), at most: the first, then each from what
# the one before learned, while a read above a definition took a stale answer (calls above
# the functions they call: loss -> assign -> geometry, known before linting). Most files
# settle after one walk, some after two; nnUNet's `resample_torch` after three.
FILE_WALKS = 4
# Linking rounds after the first lint, at most: a file is linted again when what other
# files' walks learned changes its answers (its callers' values reach it, its return
# reaches them). 3D-ResNets-PyTorch settles after seven (the model `make_data_parallel`
# returns reaches `calculate_accuracy` through main, training and validation), SlowFast
# after five, nnUNet after four; the Lightning sources need none. The bound ends a project
# whose facts never settle (a second walk's summary replaces the first's: it may swing).
LINK_ROUNDS = 10


def walk_to_fixpoint(walk: Callable[[Optional[object]], object], stale: Callable[[object], bool],
                     walks: int = FILE_WALKS):
    """The last of up to `walks` walks of one file: `walk(last)` walks it from what the walk
    `last` learned (None: from nothing), while `stale(model)` says a walk read an answer the
    file itself later changed."""
    model = walk(None)
    for _ in range(walks - 1):
        if not stale(model):
            break
        model = walk(model)
    return model


def dependency_waves(paths: Sequence[str], imports: Callable[[str], Set[str]],
                     key: Callable[[str], str] = lambda p: p) -> List[List[str]]:
    """`paths` in waves, each file after the files it imports (`imports(path)`: their
    `key`s): a round's files are linted wave by wave, so that what the walks of a module's
    imports learn with the project's facts (an attribute their second walk knows, a
    function's return) is in its facts when they are made, not a round later. Files that
    import each other (a cycle) share a wave. A package's `__init__` is not waited for: it
    re-exports its modules (its importers' names resolve through it to theirs, which are
    ordered by their own imports), and every module importing its package would put the
    whole package in one cycle. The order is the summaries' alone, whatever the workers do."""
    index = {key(p): i for i, p in enumerate(paths)}
    deps = [sorted(index[k] for k in imports(p) if k in index and not k.endswith("__init__.py")) for p in paths]
    # Tarjan's components, iteratively (a long chain of imports is deep); a component is
    # complete only after every component it reaches
    order, low, comp = [-1] * len(paths), [0] * len(paths), [-1] * len(paths)
    stack: List[int] = []
    level: List[int] = []  # component -> its wave
    n = 0
    for root in range(len(paths)):
        if order[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                order[v] = low[v] = n
                n += 1
                stack.append(v)
            if i < len(deps[v]):
                work.append((v, i + 1))
                w = deps[v][i]
                if order[w] < 0:
                    work.append((w, 0))
                elif comp[w] < 0:
                    low[v] = min(low[v], order[w])
                continue
            for w in deps[v]:
                if comp[w] < 0 and order[w] > order[v]:  # (a child whose component is open)
                    low[v] = min(low[v], low[w])
            if low[v] == order[v]:
                members = []
                while True:
                    w = stack.pop()
                    comp[w] = len(level)
                    members.append(w)
                    if w == v:
                        break
                level.append(max((level[comp[w]] + 1 for m in members for w in deps[m] if comp[w] != len(level)),
                                 default=0))
    waves: Dict[int, List[str]] = {}
    for i, p in enumerate(paths):
        waves.setdefault(level[comp[i]], []).append(p)
    return [waves[k] for k in sorted(waves)]


# Lint results, by path: [digest, digest of the answers to the questions the lint asked the
# project, findings, graph, error, hot scopes, second-walk summary, those questions, what its
# facts were made from (`Project.made_from`)]  (the runner's cache entry)
Entry = list
# `lint(paths, prepare)`: lint each path, yielding (path, (findings, graph, error, summary,
# reads)) as each is done; `prepare(path)` gives its facts as JSON just before its job goes
# out, or None: not to be linted after all.
Lint = Callable[[List[str], Callable[[str], Optional[dict]]], Iterator[Tuple[str, tuple]]]


class Solver:
    """The fixpoint of the project's facts: which files are (re)linted, in which round, and
    what the project is told of their walks. `project`: a `project.Project`; `digests`:
    path -> content digest; `made(kind, json, make)`: an object made from JSON (a
    long-lived process keeps them: `run.decoded`)."""

    def __init__(self, project, digests: Dict[str, str], lint: Lint,
                 made: Callable = lambda kind, data, make: make(data), rounds: int = LINK_ROUNDS) -> None:
        self.project = project
        self.digests = digests
        self._lint_jobs = lint
        self.made = made
        self.rounds = rounds
        self.out: Dict[str, Entry] = {}  # path -> entry
        self.facts: Dict[str, object] = {}  # path -> the ProjectFacts its (last) lint was given
        # absolute path -> the summary JSON of the first walk, and the one the project holds
        # now (compared as JSON: cheaper than making it again from the objects)
        self.first: Dict[str, Optional[dict]] = {}
        self.held: Dict[str, Optional[dict]] = {}
        self.computed: List[List[str]] = []  # the files linted, round by round (what an edit re-solved)

    # ------------------------------------------------------------------ summaries
    def add(self, path: str, summary: Optional[dict], made=None, version: Optional[str] = None) -> None:
        """Give the project a first walk's summary (`made`: the object, `version`: its
        `summary_version`, when at hand)."""
        from synclint.semantic.facts import ModuleSummary, summary_version

        if made is None and summary:
            made = ModuleSummary.from_json(summary)
        self.project.add(path, made, version or summary_version(summary))
        self.first[self.project.absolute(path)] = self.held[self.project.absolute(path)] = summary

    def update(self, path: str, summary: Optional[dict]) -> None:
        """Give the project what a file's second walk found, when it differs from what it holds."""
        from synclint.semantic.facts import ModuleSummary, summary_version

        key = self.project.absolute(path)
        if not summary or self.held.get(key) is None or summary == self.held[key]:
            return
        self.project.update(path, self.made("second summary", summary, ModuleSummary.from_json),
                            self.made("second version", summary, summary_version))
        self.held[key] = summary

    def forced(self, find: Callable[[], Set[str]], summarise: Callable[[List[str]], None]) -> Set[str]:
        """The files the prefilter skipped that may see tensors (`find()`: those the
        project's summaries say so of now), summarised with `summarise(paths)` (which gives
        the project their summaries) until no more are found: a module forced in may make
        another one worth reading (a chain of helper modules, each returning what the one
        before made)."""
        out: Set[str] = set()
        while True:
            found = find() - out
            out |= found
            todo = [p for p in found if self.project.summaries.get(self.project.absolute(p)) is None]
            if not todo:
                return out
            summarise(todo)

    # ------------------------------------------------------------------ lints
    def solve(self, fresh: Sequence[str], last: Dict[str, Entry]) -> None:
        """Lint to the fixpoint: the files in `fresh` (new or edited, or without a last
        lint), then those in `last` (path -> the entry its last lint left, a cache's) whose
        facts may have changed, then each file whose facts changed since its lint, round by
        round (at most `rounds`). `out` holds every file's entry after.

        New and edited files are linted first, so that what their walks learn reaches the
        others' facts before those are made: an edit's dependents are linted once, not twice.
        For the same reason they go in waves, each file after the files it imports.
        A file with a last lint is linted again only when an answer to a question it asked
        the project has changed; one whose facts would be made from the same summaries as
        last time (no edit reached them) is not even asked (`Project.facts_unchanged`)."""
        project = self.project
        with project.tables_held():  # (made once for the round, as for one wave)
            linted = [p for wave in dependency_waves(list(fresh), project.imported_files, project.absolute)
                      for p in self._round(wave, make_facts=True, count=False)]
        if linted:
            self.computed.append(linted)
        todo = []
        for path, hit in last.items():
            if project.facts_unchanged(path, hit[8]):
                self.facts[path] = project.facts_stub(path)
                self.out[path] = hit
            elif self._same_answers(path, hit):
                self.out[path] = hit
            else:
                todo.append(path)
        self._round(todo)
        for _ in range(self.rounds):
            # (whether a file's answers changed is asked as its job is about to go out: the
            # workers lint the first files that need it while the rest are asked)
            again = [p for p, e in self.out.items() if not e[4] and project.may_change(p, self.facts[p])]
            if not again or not self._round(again, unless_same_answers=True):
                break

    def _same_answers(self, path: str, entry: Entry) -> bool:
        """Make `path`'s facts now; whether they answer its last lint's questions alike."""
        pf = self.facts[path] = self.project.facts_for(path)
        try:
            if pf.answers_digest(entry[7]) != entry[1]:
                return False
        except (TypeError, ValueError, KeyError, IndexError, AttributeError):  # cached questions of another shape
            return False
        entry[8] = self.project.made_from(path)
        return True

    def _round(self, paths: List[str], make_facts: bool = False, unless_same_answers: bool = False,
               count: bool = True) -> List[str]:
        """Lint `paths` with the facts just made for them (`make_facts`: made as each job is
        sent, while the workers lint the jobs before it; `unless_same_answers`: not those
        files whose facts answer their last lint's questions alike), then give the project
        what their walks found (only then: every file's facts are made from the same
        project). The files linted (`count`: noted in `computed` as a round)."""

        def prepare(path: str) -> Optional[dict]:
            if make_facts:
                self.facts[path] = self.project.facts_for(path)
            elif unless_same_answers and self._same_answers(path, self.out[path]):
                return None
            return self.facts[path].to_json()

        linted: List[str] = []
        for path, (found, graph, error, summary, reads) in self._lint_jobs(paths, prepare):
            linted.append(path)
            answers = self.facts[path].answers_digest(reads)
            self.out[path] = [self.digests[path], answers, found, graph, error, [[], []], summary, reads,
                              self.project.made_from(path)]
        if linted and count:
            self.computed.append(linted)
        for path in paths:
            self.update(path, self.out[path][6])
        return linted
