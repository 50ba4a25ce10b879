"""The fast paths of issue 2 point 7, checked by what they import, not by timing them
(timings live in scripts/bench_speed.py and docs/speed.md)."""

import json
import os
import subprocess
import sys
import time

PROBE = """
import json, sys
from synclint.frontends.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print("@@" + json.dumps([code, "libcst" in sys.modules, "rich" in sys.modules, "synclint.engine" in sys.modules]))
print("@@modules " + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""

SRC = "import torch\n\ndef train(model, loader):\n    for x in loader:\n        loss = model(x)\n        print(loss.item())\n"


def _run(cwd, *args):
    p = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    out, _, tail = p.stdout.rpartition("@@")
    assert tail, p.stderr
    code, libcst, rich, engine = json.loads(tail)
    return code, libcst or engine, rich, out, p.stderr  # a warm run imports neither LibCST nor the engine


def _project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    (tmp_path / "train.py").write_text(SRC)
    return tmp_path


def test_second_run_reads_only_the_cache(tmp_path):
    proj = _project(tmp_path)
    code1, libcst1, _, out1, _ = _run(proj, "check", "train.py")
    assert code1 == 1 and libcst1 and "SYN101" in out1
    code2, libcst2, rich2, out2, err2 = _run(proj, "check", "train.py")
    assert (code2, libcst2, rich2) == (1, False, False)
    assert out2 == out1
    # Of the model, only what the configuration declares (`hot-functions`): no linker,
    # solver or rate, no compiled regions where the file has none (its compiled events all
    # go), no rule; nor pathspec where no pattern or .gitignore is given, nor hashlib
    loaded = set(json.loads(err2.rpartition("@@modules ")[2]))
    model = {m for m in loaded if m.startswith(("synclint.semantic.", "synclint.rules.")) or m in (
        "synclint.project", "synclint.solver", "synclint.walker", "synclint.registry")}
    assert model == {"synclint.semantic.declared"}
    assert "pathspec" not in loaded and "hashlib" not in loaded
    # JSON output and --statistics use the same cache entries.
    code3, libcst3, _, out3, _ = _run(proj, "check", "train.py", "--output-format", "json")
    assert code3 == 1 and not libcst3 and json.loads(out3)[0]["code"] == "SYN101"


def test_a_warm_run_with_transfer_findings_reads_no_library_table(tmp_path):
    # a SYN30x finding asks `semantic.setup.drops` whether it is a setup transfer: that
    # module alone, not library.toml's tables (a twentieth of a warm run)
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    (tmp_path / "train.py").write_text("import torch\n\ndef train(loader):\n    for x in loader:\n"
                                       "        m = torch.zeros(4).cuda()\n")
    _run(tmp_path, "check", "train.py")
    code, libcst, _, out, err = _run(tmp_path, "check", "train.py")
    assert (code, libcst) == (1, False) and "SYN301" in out
    loaded = set(json.loads(err.rpartition("@@modules ")[2]))
    assert {m for m in loaded if m.startswith("synclint.semantic.")} == {"synclint.semantic.declared",
                                                                         "synclint.semantic.setup"}


def test_changed_file_is_checked_again(tmp_path):
    proj = _project(tmp_path)
    _run(proj, "check", "train.py")
    (proj / "train.py").write_text(SRC.replace("print(loss.item())", "print(loss)"))
    code, libcst, _, out, _ = _run(proj, "check", "train.py", "--select", "SYN101")
    assert code == 0 and libcst and "SYN101" not in out
    code, libcst, _, _, _ = _run(proj, "check", "train.py", "--select", "SYN101")
    assert code == 0 and not libcst


def test_selection_is_still_validated_with_a_warm_cache(tmp_path):
    proj = _project(tmp_path)
    _run(proj, "check", "train.py")
    _run(proj, "check", "train.py")
    code, _, _, _, err = _run(proj, "check", "train.py", "--select", "NO-SUCH-RULE")
    assert code == 2 and "unknown rule selector" in err


def test_other_selection_or_hot_only_is_not_served_from_the_cache(tmp_path):
    proj = _project(tmp_path)
    _run(proj, "check", "train.py")
    code, libcst, _, out, _ = _run(proj, "check", "train.py", "--ignore", "SYN101")
    assert libcst and "SYN101" not in out
    code, libcst, _, out, _ = _run(proj, "check", "train.py", "--hot-only")
    assert libcst and code == 1


def test_no_cache_always_checks(tmp_path):
    proj = _project(tmp_path)
    _run(proj, "check", "train.py")
    code, libcst, _, _, _ = _run(proj, "check", "--no-cache", "train.py")
    assert code == 1 and libcst


def test_cache_directory_keeps_only_recent_files(tmp_path):
    import os

    from synclint.run.cache import KEEP_FILES, Cache

    for i in range(KEEP_FILES + 4):
        p = tmp_path / f"v0.0.0-old{i}.json"
        p.write_text("{}")
        os.utime(p, (1000 + i, 1000 + i))
    c = Cache(tmp_path, ["SYN101"], False)
    c.put("a.py", ["digest", "", [], None, None, [], None, [], None])
    c.save()
    left = sorted(p.name for p in tmp_path.glob("v*.json"))
    assert c.path.name in left and len(left) == KEEP_FILES
    assert f"v0.0.0-old{KEEP_FILES + 3}.json" in left and "v0.0.0-old0.json" not in left


def test_large_tables_keep_only_recent_builds_and_drop_single_file_ones(tmp_path):
    import os

    from synclint.run.cache import KEEP_FILES, SummaryCache

    for i in range(KEEP_FILES + 2):
        d = tmp_path / f"summaries-0.0.0-old{i}"
        d.mkdir()
        (d / "0.json").write_text("{}")
        os.utime(d, (1000 + i, 1000 + i))
    (tmp_path / "summaries-0.0.0-single.json").write_text("{}")  # the layout before shards
    c = SummaryCache(tmp_path)
    c.put("a.py", "digest", None, None, "v")
    c.save()
    left = sorted(p.name for p in tmp_path.glob("summaries-*"))
    assert c.folder.name in left and len(left) == KEEP_FILES
    assert f"summaries-0.0.0-old{KEEP_FILES + 1}" in left and "summaries-0.0.0-old0" not in left
    assert "summaries-0.0.0-single.json" not in left


def test_an_edit_rewrites_a_few_shards_not_the_whole_cache(tmp_path):
    """The edit path: one changed file changes a few entries of the large tables; the
    other shard files are not written again (their bytes and times stay)."""
    from click.testing import CliRunner

    from synclint.frontends.cli import main

    for i in range(80):
        (tmp_path / f"m{i}.py").write_text(f"import torch\n\ndef f{i}(x):\n    return x.item()\n")
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert runner.invoke(main, ["check", "--exit-zero", "-j", "1", "."]).exit_code == 0
        shards = sorted((tmp_path / ".synclint_cache").glob("*/*.json"))
        assert len(shards) >= 24  # two tables of 16 shards: with 80 files nearly all hold one
        before = {p: p.stat().st_mtime_ns for p in shards}
        (tmp_path / "m7.py").write_text("import torch\n\ndef f7(x):\n    return x.tolist()\n")
        got = runner.invoke(main, ["check", "-j", "1", "--output-format", "concise", "."])
        assert "m7.py:4:12: SYN102" in got.output
    finally:
        os.chdir(cwd)
    rewritten = [p for p in shards if p.stat().st_mtime_ns != before[p]]
    assert 1 <= len(rewritten) <= 2, rewritten  # m7's summary and its link entry


def test_parse_without_revalidation_gives_the_same_tree_and_keeps_validation():
    import libcst as cst
    import pytest

    from synclint.engine import _parse_module, lint_source

    src = SRC + "x = [a for a in (1, 2) if a]  # comment\nasync def f():\n    await g(*b, **c)\n"
    fast = _parse_module(src)
    assert fast.code == src and fast.deep_equals(cst.parse_module(src))
    lint_source(src, "t.py")
    with pytest.raises(cst.CSTValidationError):  # nodes built outside the parse are still checked
        cst.Name("")


def _stamped_project(tmp_path, age_s=60):
    f = _project(tmp_path) / "train.py"
    then = time.time() - age_s
    os.utime(f, (then, then))
    return f


def _check(f, cache):
    from synclint.registry import default_rules
    from synclint.run.runner import check_files

    return sorted((x.code, x.row) for x in check_files([str(f)], default_rules(), cache_dir=cache).findings)


def test_a_warm_run_stats_files_instead_of_reading_them(tmp_path, monkeypatch):
    """A file left alone since it was last read is vouched for by its size and time (Ruff
    does the same); an edit that keeps the size but not the time is read and checked again."""
    from synclint.run import cache as cache_module
    from synclint.run import runner

    monkeypatch.setattr(cache_module, "SETTLED_NS", 0)  # (the status change time of a file just made is now)
    f = _stamped_project(tmp_path)
    cache = tmp_path / ".synclint_cache"
    first = _check(f, cache)
    assert ("SYN101", 6) in first
    read = []
    real_read = runner._read
    monkeypatch.setattr(runner, "_read", lambda p, errors: read.append(p) or real_read(p, errors))
    assert _check(f, cache) == first and read == []
    f.write_text(SRC.replace("loss.item()", "loss.tanh()"))  # the same size
    later = time.time() - 30
    os.utime(f, (later, later))
    assert ("SYN101", 6) not in _check(f, cache) and read == [str(f)]


def test_a_long_lived_process_reads_only_the_files_an_edit_changed(tmp_path, monkeypatch):
    """The daemon keeps each file's text with the digest its stamp vouches for: after an edit
    it reads the edited file, not the project (the others' stamps are unchanged), and finds
    what a fresh process finds."""
    from synclint.registry import default_rules
    from synclint.run import cache as cache_module
    from synclint.run import runner
    from synclint.run.decoded import Kept

    monkeypatch.setattr(cache_module, "SETTLED_NS", 0)
    helper = tmp_path / "helper.py"
    helper.write_text("import torch\n\ndef norm(x):\n    return x.abs().sum()\n")
    f = _stamped_project(tmp_path)
    files, cache, kept = [str(f), str(helper)], tmp_path / ".synclint_cache", Kept()

    def check(decoded, cache_dir=cache):
        found = runner.check_files(files, default_rules(), cache_dir=cache_dir, decoded=decoded).findings
        return sorted((x.filename, x.code, x.row) for x in found)

    check(kept)
    read = []
    real_read = runner._read
    monkeypatch.setattr(runner, "_read", lambda p, errors: read.append(p) or real_read(p, errors))
    helper.write_text("import torch\n\ndef norm(x):\n    return x.abs().sum().item()\n")
    later = time.time() - 30
    os.utime(helper, (later, later))
    got = check(kept)
    assert read == [str(helper)]
    assert got == check(runner.FRESH, None) and (str(helper), "SYN101", 4) in got


def test_a_file_changed_just_before_it_was_read_is_read_again(tmp_path, monkeypatch):
    """Within `SETTLED_NS` of its last change a file could change again in the same tick of a
    coarse clock, keeping its size and time: its stamp is not trusted, and the next run reads it."""
    from synclint.run import runner

    f = _stamped_project(tmp_path, age_s=0)
    cache = tmp_path / ".synclint_cache"
    first = _check(f, cache)
    read = []
    real_read = runner._read
    monkeypatch.setattr(runner, "_read", lambda p, errors: read.append(p) or real_read(p, errors))
    assert _check(f, cache) == first and read == [str(f)]


def test_a_report_quotes_the_line_the_check_read_not_the_file_now(tmp_path):
    """Findings carry the text of their row (a warm run's report and a baseline read no file):
    an editor's unsaved buffer is quoted as checked, and so is a cached finding."""
    from synclint.registry import default_rules
    from synclint.report.render import text_report
    from synclint.run.runner import check_files

    f = tmp_path / "train.py"
    f.write_text(HAZARD_ON_DISK)
    buffer = HAZARD_ON_DISK.replace("x.sum().item()", "x.mean().item()")
    found = check_files([str(f)], default_rules(), sources={str(f): buffer}).findings
    assert [x.line for x in found if x.code == "SYN101"] == ["    v = x.mean().item()"]
    assert "x.mean().item()" in text_report(found) and "x.sum()" not in text_report(found)
    cache = tmp_path / ".cache"
    check_files([str(f)], default_rules(), cache_dir=cache)
    warm = check_files([str(f)], default_rules(), cache_dir=cache).findings
    assert [x.line for x in warm if x.code == "SYN101"] == ["    v = x.sum().item()"]


HAZARD_ON_DISK = 'import torch\n\nx = torch.ones(3, device="cuda")\nfor _ in range(3):\n    v = x.sum().item()\n'


def test_a_file_without_compiled_regions_settles_as_compiled_settle_does():
    """The runner settles a file with no compiled region without importing the model
    (a warm run): every compiled event goes, the rest stay, sorted, as `settle` leaves them."""
    from synclint.findings import Finding
    from synclint.run.decoded import FRESH
    from synclint.run.runner import _settled
    from synclint.semantic.compiled import settle

    def finding(row, code, compiled=None):
        return Finding(code, "x", "m", "a.py", row, 1, row, 5, True, scope="f", compiled=compiled)

    found = [finding(9, "SYN101"), finding(3, "SYN601", "item:gpu"), finding(3, "SYN101"), finding(1, "SYN103")]
    assert _settled(list(found), [[], []], FRESH) == settle(list(found), {})
    assert [f.row for f in _settled(list(found), [[], [], {}], FRESH)] == [1, 3, 9]


def test_statements_finds_what_a_walk_of_every_node_finds_in_a_tenth_of_the_visits():
    """`syntax.statements`: the searches for assignments and returns (memoised methods, a
    move stored back, a returned parameter) visit statements only, and find the same ones."""
    import libcst as cst

    from synclint.semantic.syntax import SMALL_STATEMENTS, STATEMENTS, descendants, statements

    src = ("def f(a, b):\n    x = [y for y in a]\n    if a:\n        b = 1; return a\n"
           "    elif b:\n        with g() as h:\n            for i in h: z = i\n            else:\n                pass\n"
           "    try:\n        return b\n    except E:\n        w = 2\n    finally:\n        del x\n"
           "    match a:\n        case 1:\n            v = 3\n    def inner():\n        hidden = 4\n        return hidden\n"
           "    return (lambda q: q)(a)\n")
    fn = cst.parse_module(src).body[0]
    want = [n for n in descendants(fn) if type(n) in STATEMENTS | SMALL_STATEMENTS]
    got = list(statements(fn))
    assert {id(n) for n in got} == {id(n) for n in want} and len(got) == len(want)
    assert not any(type(n) is cst.Assign and n.targets[0].target.value == "hidden" for n in got)  # (not inside `inner`)
    assert sum(1 for _ in descendants(fn)) > 3 * len(got)


def test_a_path_without_a_debug_word_is_no_debug_tool_without_finding_the_project_root():
    """`callgraph.debug_path`: the project's root (a walk up the directories, once per lint
    of every file) is looked for only where a part of the path names a debug tool."""
    from synclint.semantic.callgraph import debug_path

    def no_root():
        raise AssertionError("the root was looked for")

    assert debug_path("/work/proj/models/resnet.py", no_root) is None
    assert debug_path("/work/proj/tools/visualize_boxes.py", lambda: "/work/proj") == "visualize_boxes.py"
    assert debug_path("/work/debug/proj/train.py", lambda: "/work/debug/proj") is None  # (above the root)


def test_a_host_side_method_is_known_by_its_name_before_its_bases_are_asked():
    """`library.HOST_SIDE_METHOD_NAMES`: every `[iteration] host_side_methods` entry, a
    pattern too, names its method; a method of another name is asked nothing."""
    from synclint.semantic import library as L

    assert {"__call__", "transform"} <= L.HOST_SIDE_METHOD_NAMES
    assert L.is_host_side_method("mmdet.datasets.transforms.RandomFlip.transform")
    assert not L.is_host_side_method("mmdet.datasets.transforms.RandomFlip.transform_boxes")
    assert L.is_host_side_method("detectron2.data.DatasetMapper.__call__")


METHOD_SRC = ("import torch\n\nclass Trainer:\n    def step(self, batch):\n"
              "        out = self.model(batch, self.head, f(self.norm(batch)))\n        return out.sum().item()\n")


def test_a_walk_dispatches_no_node_at_which_nothing_happens():
    """The walker goes through a node that no rule visits and the binder does not handle
    without dispatching it, and never opens a name, a number or a string (fields typed
    `str`): two thirds of a walk's nodes. The binder still sees every call."""
    import libcst as cst

    from synclint.engine import analyse
    from synclint.walker import Walker

    from synclint.semantic.syntax import descendants

    seen, orig = [], Walker.walk

    def walk(self, node):
        seen.append(type(node))
        return orig(self, node)

    Walker.walk = walk
    try:
        a = analyse(METHOD_SRC, "m.py", "m", force=True)
    finally:
        Walker.walk = orig
    names = sum(1 for n in descendants(cst.parse_module(METHOD_SRC), frozenset()) if type(n) is cst.Name)
    assert seen.count(cst.Call) == 5 and cst.Arg not in seen
    assert seen.count(cst.Name) < names / 2  # (only those a handler walks itself: assignment targets)
    assert "Trainer.step" in a.summary.params


def test_a_walks_models_are_freed_without_the_collector(monkeypatch):
    """Once a walk's results are taken, its walker and its model drop what they hold: they
    and their binder and evaluator refer to one another, which left every walk's bindings
    and values to the collector (a tenth of a cold check's lint jobs, scanning them)."""
    import gc
    import weakref

    from synclint.engine import analyse, lint_analysis
    from synclint.registry import default_rules
    from synclint.semantic.model import SemanticModel

    made, init = [], SemanticModel.__init__

    def record(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(weakref.ref(self.evaluator))

    monkeypatch.setattr(SemanticModel, "__init__", record)
    gc.collect()
    gc.disable()
    try:
        found = lint_analysis(analyse(METHOD_SRC, "m.py", "m", force=True), default_rules())
        assert any(f.code for f in found[0])
        del found
        alive = [r for r in made if r() is not None]
    finally:
        gc.enable()
    assert len(made) >= 2 and not alive


def test_facts_of_the_tree_alone_are_worked_out_once_per_tree(monkeypatch):
    """The bare `self.<x>` in a call's arguments (where a compiled module may be handed away)
    is a fact of the syntax: worked out at the first walk of the tree, not at each of its
    walks (with and without the rules), nor again for a call nested in another's arguments."""
    from synclint.engine import analyse, lint_analysis
    from synclint.registry import default_rules
    import libcst as cst

    from synclint.semantic import mode_sites
    from synclint.semantic.syntax import descendants

    asked, orig = [], mode_sites._bare_self_attrs

    def count(e):
        asked.append(e)
        return orig(e)

    monkeypatch.setattr(mode_sites, "_bare_self_attrs", count)
    a = analyse(METHOD_SRC, "m.py", "m", force=True)
    lint_analysis(a, default_rules())
    args = {id(x.value) for n in descendants(a.module, frozenset()) if type(n) is cst.Call for x in n.args}
    asked_args = [id(e) for e in asked if id(e) in args]
    assert len(args) == 5 and sorted(asked_args) == sorted(args)  # (each once, over both walks)


def test_a_first_walk_notes_no_training_modes_of_compile_results(monkeypatch):
    """Where compile results go and the training modes they are called in (`mode_sites`)
    reach only the call graph of a walk with the rules: the first walk, whose summary has no
    place for them, does not note them; the walk with the rules still does."""
    from synclint.engine import analyse, lint_analysis
    from synclint.registry import default_rules
    from synclint.semantic import mode_sites

    noted, orig = [], mode_sites.note_call

    def note(ctx, node):
        noted.append(node)
        return orig(ctx, node)

    monkeypatch.setattr(mode_sites, "note_call", note)
    a = analyse(METHOD_SRC, "m.py", "m", force=True)
    assert noted == []
    found, graph, _ = lint_analysis(a, default_rules())
    assert len(noted) == 5 and any(e[1] == "held" for e in graph.compiled.mode_sites)


GC_PROBE = """
import gc, sys
import synclint.run.runner as runner
def after_job():
    print("after_job", gc.isenabled(), flush=True)
runner.after_job = after_job
from synclint.frontends.cli import main
sys.argv = ["synclint", *sys.argv[1:]]
main()
"""


def test_a_check_run_as_the_program_collects_once_per_file_it_analyses(tmp_path):
    """The process ends with the check: the collector runs once after each job, as in a
    worker, not by allocation count (it rescanned what the main process keeps to the end)."""
    _project(tmp_path)
    p = subprocess.run([sys.executable, "-c", GC_PROBE, "check", "--no-cache", "-j", "1", "train.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.stdout.count("after_job False") == 2 and "after_job True" not in p.stdout, p.stdout + p.stderr


def test_a_check_inside_a_longer_lived_process_leaves_the_collector_on(tmp_path, monkeypatch):
    """A daemon's request or a test's CliRunner: the process goes on after the check."""
    import gc

    from click.testing import CliRunner

    from synclint.frontends.cli import main

    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert gc.isenabled()
    threshold = gc.get_threshold()
    try:
        CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", "train.py"])
        assert gc.isenabled()
    finally:
        gc.set_threshold(*threshold)
