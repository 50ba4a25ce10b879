"""Unused `# noqa` (SYN901, off by default, with a fix), `--add-noqa`, and the summary's
count of findings that `# noqa` and the baseline hide; through the CLI (runner and cache)."""

import json
import shutil
import textwrap
from pathlib import Path

from synclint.testing import expectations, run_cli as run

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

HAZARD = textwrap.dedent(
    """\
    import torch

    x = torch.ones(3, device="cuda")
    for _ in range(3):
        v = x.sum().item()
        w = x.sum().item()  # noqa: SYN101
        u = x.sum()  # noqa: SYN101, E501
    """
)


def _json(r):
    return json.loads(r.stdout)


def test_unused_noqa_is_off_by_default_and_reported_when_selected(tmp_path):
    shutil.copy(FIXTURES / "SYN901.py", tmp_path / "train.py")
    assert [f["code"] for f in _json(run(["check", "--output-format", "json", "train.py"], tmp_path))] == []
    for _ in range(2):  # the second run comes from the cache
        r = run(["check", "--extend-select", "SYN901", "--output-format", "json", "train.py"], tmp_path)
        got = {(f["location"]["row"], f["code"]) for f in _json(r)}
        want = set(expectations((FIXTURES / "SYN901.py").read_text(encoding="utf-8")))
        assert got == want and r.exit_code == 1


def test_unused_noqa_fix_removes_only_the_unused_codes(tmp_path):
    shutil.copy(FIXTURES / "SYN901.py", tmp_path / "train.py")
    r = run(["check", "--extend-select", "SYN901", "--fix", "train.py"], tmp_path)
    assert r.exit_code == 0, r.stdout
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == (FIXTURES / "SYN901.fixed.py").read_text(encoding="utf-8")


def test_add_noqa_silences_every_fixture_and_leaves_no_unused_directive(tmp_path):
    for p in FIXTURES.glob("*.py"):
        if not p.name.endswith(".fixed.py") and p.name != "SYN901.py":
            shutil.copy(p, tmp_path / p.name)
    before = _json(run(["check", "--no-cache", "--select", "ALL", "--output-format", "json", "."], tmp_path))
    assert len(before) > 100
    r = run(["check", "--no-cache", "--select", "ALL", "--add-noqa", "."], tmp_path)
    assert r.exit_code == 0 and "Added" in r.stderr
    # SYN901 is in ALL: every directive added is used, and nothing is left
    r = run(["check", "--no-cache", "--select", "ALL", "."], tmp_path)
    assert r.exit_code == 0, r.stdout
    assert f"Not shown: {len(before)} by `# noqa`." in r.stdout
    r = run(["check", "--no-cache", "--select", "ALL", "--add-noqa", "."], tmp_path)
    assert "Added 0 noqa directives." in r.stderr


def test_add_noqa_merges_into_an_existing_directive_and_skips_string_rows(tmp_path):
    src = textwrap.dedent(
        '''\
        import torch

        x = torch.ones(3, device="cuda")
        for _ in range(3):
            v = x.sum().item()  # noqa: E501
            print(f"""loss {x.sum()}
            done""")
        '''
    )
    (tmp_path / "t.py").write_text(src, encoding="utf-8")
    r = run(["check", "--no-cache", "--add-noqa", "t.py"], tmp_path)
    assert r.exit_code == 0
    lines = (tmp_path / "t.py").read_text(encoding="utf-8").splitlines()
    assert lines[4] == "    v = x.sum().item()  # noqa: E501, SYN101"
    assert lines[5] == '    print(f"""loss {x.sum()}'  # the line ends inside the f-string: no room
    assert lines[6] == '    done""")  # noqa: SYN106'  # the statement's last line
    r = run(["check", "--no-cache", "--extend-select", "SYN901", "t.py"], tmp_path)
    assert r.exit_code == 0, r.stdout


def test_add_noqa_keeps_the_files_encoding_and_byte_order_mark(tmp_path):
    # A latin-1 file (PEP 263 cookie) must stay latin-1, and a BOM must stay: `--fix` kept
    # both; `--add-noqa` wrote UTF-8 without a BOM, changing the string's bytes.
    latin = "# -*- coding: latin-1 -*-\nimport torch\nx = torch.ones(3, device='cuda')\n" \
            "for _ in range(3):\n    print('caf\u00e9', x.sum().item())\n"
    (tmp_path / "l.py").write_bytes(latin.encode("latin-1"))
    (tmp_path / "b.py").write_bytes(b"\xef\xbb\xbf" + HAZARD.encode("utf-8"))
    r = run(["check", "--no-cache", "--add-noqa", "l.py", "b.py"], tmp_path)
    assert r.exit_code == 0, r.stderr
    data = (tmp_path / "l.py").read_bytes()
    assert b"caf\xe9" in data and "# noqa: SYN101" in data.decode("latin-1")
    data = (tmp_path / "b.py").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"# noqa: SYN101" in data


def test_add_noqa_refuses_fix(tmp_path):
    (tmp_path / "t.py").write_text(HAZARD, encoding="utf-8")
    r = run(["check", "--add-noqa", "--fix", "t.py"], tmp_path)
    assert r.exit_code == 2 and "--add-noqa cannot be combined" in r.stderr
    assert (tmp_path / "t.py").read_text(encoding="utf-8") == HAZARD


def test_summary_counts_what_noqa_and_the_baseline_hide(tmp_path):
    (tmp_path / "t.py").write_text(HAZARD, encoding="utf-8")
    r = run(["check", "--no-cache", "t.py"], tmp_path)
    assert "Found 1 finding " in r.stdout and "Not shown: 1 by `# noqa`." in r.stdout
    r = run(["baseline", "--no-cache", "t.py", "-o", "base.json"], tmp_path)
    assert "Recorded 1 finding" in r.stderr  # the silenced one is not recorded
    r = run(["check", "--no-cache", "--baseline", "base.json", "t.py"], tmp_path)
    assert r.exit_code == 0
    assert "Not shown: 1 by `# noqa`, 1 by the baseline." in r.stdout
    # the silenced findings never reach the machine-readable outputs
    r = run(["check", "--no-cache", "--output-format", "json", "t.py"], tmp_path)
    assert [f["location"]["row"] for f in _json(r)] == [5]
