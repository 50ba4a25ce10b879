"""The solver (synclint.solver): facts iterated to a fixpoint across a project, and an edit
re-solving only the files that depend on it, through `check_files` as `synclint check`,
the daemon and the LSP run it."""

from __future__ import annotations

import os
from pathlib import Path

from synclint.registry import default_rules
from synclint.run.runner import check_files
from synclint.solver import dependency_waves, walk_to_fixpoint


def _chain(tmp_path: Path, device: str = "cuda") -> list:
    """Five modules, each returning what the one before returns: a tensor made on `device`
    at the start, read back in a loop at the end. Only the first names torch: the prefilter
    skips the three in the middle, which the solver reads one after the other as each
    turns out to hand on a tensor. Beside them, a module that imports none of them."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    files = {"m0.py": f"import torch\n\ndef f0():\n    return torch.ones(3, device={device!r})\n"}
    for i in range(1, 4):
        files[f"m{i}.py"] = f"from m{i - 1} import f{i - 1}\n\ndef f{i}():\n    y = f{i - 1}()\n    return y\n"
    files["m4.py"] = "from m3 import f3\n\ndef main():\n    for _ in range(3):\n        f3().item()\n"
    files["other.py"] = "import torch\n\ndef g(x):\n    return x.sum().item()\n"
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return sorted(str(tmp_path / name) for name in files)


def _check(paths, cache_dir=None):
    r = check_files(paths, default_rules(), cache_dir=cache_dir, jobs=1)
    assert not r.errors, r.errors
    found = {(Path(f.filename).name, f.row, f.code) for f in r.findings}
    return found, sorted(Path(p).name for linted in r.linted for p in linted)


def test_a_tensor_returned_along_five_modules_the_prefilter_skips_reaches_the_last(tmp_path):
    # One round of forcing read m1 only (it imports m0, which has tensors): m2 and m3 were
    # left unread, and m4's `f3()` unknown. Near-miss: the same chain from a CPU tensor.
    found, _ = _check(_chain(tmp_path))
    assert ("m4.py", 5, "SYN101") in found
    found, _ = _check(_chain(tmp_path / "cpu", device="cpu"))
    assert not any(name == "m4.py" for name, _, _ in found)


def test_an_edit_of_the_first_module_re_solves_exactly_its_dependents(tmp_path):
    paths = _chain(tmp_path)
    cache = tmp_path / ".synclint_cache"
    found, linted = _check(paths, cache)
    assert ("m4.py", 5, "SYN101") in found
    assert linted == ["m0.py", "m1.py", "m2.py", "m3.py", "m4.py", "other.py"]
    # nothing changed: nothing is computed
    assert _check(paths, cache) == (found, [])
    # the tensor moves to the CPU: every module that hands it on is linted again, not `other.py`
    m0 = tmp_path / "m0.py"
    m0.write_text(m0.read_text().replace("'cuda'", "'cpu'"))
    os.utime(m0, ns=(1, 1))  # (a stamp unlike the last run's, however coarse the clock)
    found, linted = _check(paths, cache)
    assert not any(name == "m4.py" for name, _, _ in found)
    assert linted == ["m0.py", "m1.py", "m2.py", "m3.py", "m4.py"]
    # an edit no other module reads: only that module
    other = tmp_path / "other.py"
    other.write_text(other.read_text() + "\n\ndef h():\n    pass\n")
    os.utime(other, ns=(2, 2))
    assert _check(paths, cache)[1] == ["other.py"]


def _holder(tmp_path: Path, device: str = "cuda") -> list:
    """A class whose attribute is made from its constructor's parameter, built in one module
    with a tensor made on `device`, read back in a loop in another: only the class's second
    walk (knowing what the project passes its `__init__`) knows where the attribute lives."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\n")
    files = {
        "holder.py": "import torch\n\n\nclass Holder:\n    def __init__(self, x):\n        self.t = x + 1\n",
        "make.py": f"import torch\nfrom holder import Holder\n\n\ndef build():\n"
                   f"    return Holder(torch.ones(3, device={device!r}))\n",
        "use.py": "import torch\nfrom holder import Holder\n\n\ndef report(h: Holder):\n"
                  "    for _ in range(3):\n        print(h.t.item())\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return sorted(str(tmp_path / name) for name in files)


def test_a_module_is_linted_after_the_modules_it_imports_and_once(tmp_path):
    # `use.py` was linted first from the class's first-walk summary (attribute unknown), then
    # again once the class's second walk said where it lives; now the class goes first.
    # Near-miss: built from a CPU tensor, nothing to find, and still one lint each.
    found, linted = _check(_holder(tmp_path))
    assert found == {("use.py", 7, "SYN101")}
    assert linted == ["holder.py", "make.py", "use.py"]
    found, linted = _check(_holder(tmp_path / "cpu", device="cpu"))
    assert found == set()
    assert linted == ["holder.py", "make.py", "use.py"]


def test_the_whole_project_tables_are_made_once_for_a_round_not_once_a_wave(tmp_path, monkeypatch):
    # `holder.py` goes in the first wave, the two modules importing it in the second; the
    # values every module's calls pass (a whole-project table) are made for the round's
    # facts, then once more when the round's summaries are in (to tell what may change).
    from synclint.project import Project

    made, orig = [], Project._passed_in
    monkeypatch.setattr(Project, "_passed_in", lambda self: made.append(1) or orig(self))
    found, linted = _check(_holder(tmp_path))
    assert found == {("use.py", 7, "SYN101")} and linted == ["holder.py", "make.py", "use.py"]
    assert len(made) == 2


def test_waves_put_each_file_after_its_imports_and_a_cycle_in_one_wave():
    imports = {"a": {"b"}, "b": {"c"}, "c": set(), "d": {"e", "x"}, "e": {"d", "c"},
               "f": {"a", "pkg/__init__.py"}, "pkg/__init__.py": {"f", "d"}}
    waves = dependency_waves(list(imports), imports.__getitem__)
    # (`x` is not linted: no wait; a package's `__init__` is not waited for, and waits itself)
    assert waves == [["c"], ["b", "d", "e"], ["a"], ["f"], ["pkg/__init__.py"]]
    # keys: the paths as the project knows them
    assert dependency_waves(["./b", "./a"], lambda p: {"b"} if p == "./a" else set(),
                            key=lambda p: p[2:]) == [["./b"], ["./a"]]


def test_a_file_is_walked_again_while_a_walk_read_a_stale_answer_up_to_the_bound():
    walks = []

    def walk(last):
        walks.append(last)
        return len(walks)

    assert walk_to_fixpoint(walk, lambda n: True, walks=3) == 3  # never settles: the bound ends it
    assert walks == [None, 1, 2]
    walks.clear()
    assert walk_to_fixpoint(walk, lambda n: n < 2, walks=5) == 2  # settled after the second
