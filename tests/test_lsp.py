"""`synclint lsp` driven over stdio by a real (minimal) LSP client: Content-Length
framing, initialize/initialized, didOpen/didChange/didSave, publishDiagnostics,
codeAction, shutdown/exit."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")


import json
import queue
import subprocess
import threading
import time


class LspClient:
    def __init__(self, argv, cwd=None, env=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd, env=env)
        self.messages: "queue.Queue[dict]" = queue.Queue()
        self.next_id = 0
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    # -- framing
    def _read(self):
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            body = out.read(int(headers["content-length"]))
            self.messages.put(json.loads(body.decode("utf-8")))

    def _read_err(self):
        for chunk in iter(lambda: self.proc.stderr.read(4096), b""):
            self.stderr += chunk

    def _send(self, msg):
        body = json.dumps(msg).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    # -- JSON-RPC
    def notify(self, method, params=None):
        self._send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def request(self, method, params=None, timeout=30):
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        msg = self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg.get("result")

    def wait(self, predicate, timeout=30):
        """The first message (kept in order) that matches; others are set aside."""
        deadline = time.monotonic() + timeout
        skipped = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no matching message in {timeout}s; stderr: {self.stderr.decode(errors='replace')[-2000:]}")
                try:
                    msg = self.messages.get(timeout=left)
                except queue.Empty:
                    continue
                if predicate(msg):
                    return msg
                skipped.append(msg)
        finally:
            for m in skipped:
                self.messages.put(m)

    def diagnostics(self, uri, version=None, timeout=30):
        def match(m):
            return (m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                    and (version is None or m["params"].get("version") == version))

        return self.wait(match, timeout)["params"]

    def drain(self, method):
        """Drop queued notifications of `method` (returns them)."""
        kept, dropped = [], []
        while True:
            try:
                m = self.messages.get_nowait()
            except queue.Empty:
                break
            (dropped if m.get("method") == method else kept).append(m)
        for m in kept:
            self.messages.put(m)
        return dropped

    def close(self, timeout=10):
        try:
            self.request("shutdown", None, timeout=timeout)
            self.notify("exit")
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


HAZARD = (
    "import torch\n"
    "\n"
    "w = torch.ones(8, device='cuda')\n"
    "for step in range(10):\n"
    "    loss = w.sum()\n"
    "    print('é', loss.item())\n"
    "final = w.mean().item()\n"
)


def _uri(path: Path) -> str:
    return path.resolve().as_uri()


@pytest.fixture
def client(tmp_path):
    c = LspClient([sys.executable, "-m", "synclint", "lsp"], cwd=tmp_path)
    result = c.request("initialize", {
        "processId": None,
        "rootUri": _uri(tmp_path),
        "capabilities": {"textDocument": {"publishDiagnostics": {}, "codeAction": {}}},
    })
    assert result["serverInfo"]["name"] == "synclint"
    caps = result["capabilities"]
    assert caps["codeActionProvider"]
    c.notify("initialized", {})
    yield c
    if c.proc.poll() is None:
        c.close()


def _expected(path: Path, source: str):
    """What `synclint check` finds in the same text (the oracle)."""
    from synclint.engine import lint_source
    from synclint.registry import default_rules

    return lint_source(source, str(path), default_rules())


def _open(client, path: Path, text: str, version=1):
    path.write_text(text, encoding="utf-8")
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": _uri(path), "languageId": "python", "version": version, "text": text}})


def test_diagnostics_on_open(client, tmp_path):
    path = tmp_path / "train.py"
    _open(client, path, HAZARD)
    params = client.diagnostics(_uri(path))
    diags = params["diagnostics"]
    expected = _expected(path, HAZARD)
    assert [d["code"] for d in diags] == [f.code for f in expected]
    assert {"SYN101"} <= {d["code"] for d in diags}
    for d, f in zip(diags, expected):
        assert d["source"] == "synclint"
        # 0-based lines; columns are UTF-16 units (the default encoding); 'é' is one unit,
        # so here they equal the 0-based code points
        assert d["range"]["start"] == {"line": f.row - 1, "character": f.column - 1}
        assert d["range"]["end"] == {"line": f.end_row - 1, "character": f.end_column - 1}
        assert d["severity"] == (2 if f.hot else 3)  # Warning for hot, Information for cold
        assert d["codeDescription"]["href"] == f.url()
        assert f.message in d["message"]
    item = [d for d in diags if d["code"] == "SYN101"]
    assert item[0]["range"]["start"]["line"] == 5 and item[0]["severity"] == 2
    assert item[-1]["range"]["start"]["line"] == 6 and item[-1]["severity"] == 3


def test_diagnostics_follow_changes_and_save(client, tmp_path):
    path = tmp_path / "a.py"
    _open(client, path, HAZARD)
    client.diagnostics(_uri(path), version=1)
    # three quick edits: the debounce publishes for the last one
    texts = [HAZARD + "x = 1\n", HAZARD + "x = 2\n", "import torch\nw = torch.ones(8, device='cuda')\n"]
    for v, text in enumerate(texts, start=2):
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": _uri(path), "version": v},
            "contentChanges": [{"text": text}],
        })
    params = client.diagnostics(_uri(path), version=4)
    assert params["diagnostics"] == []
    assert not [m for m in client.drain("textDocument/publishDiagnostics") if m["params"]["version"] in (2, 3)]
    # didSave lints again at once
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": _uri(path), "version": 5},
        "contentChanges": [{"text": HAZARD}],
    })
    client.notify("textDocument/didSave", {"textDocument": {"uri": _uri(path)}})
    params = client.diagnostics(_uri(path), version=5)
    assert any(d["code"] == "SYN101" for d in params["diagnostics"])


def test_columns_are_utf16_units(client, tmp_path):
    path = tmp_path / "emoji.py"
    text = "import torch\nw = torch.ones(8, device='cuda')\ns = '\U0001F600' + str(w.sum().item())\n"
    _open(client, path, text)
    (d,) = [d for d in client.diagnostics(_uri(path))["diagnostics"] if d["code"] == "SYN101"]
    (f,) = [f for f in _expected(path, text) if f.code == "SYN101"]
    assert d["range"]["start"] == {"line": 2, "character": f.column - 1 + 1}  # the emoji is 2 UTF-16 units


def test_unparsable_buffer_clears_diagnostics(client, tmp_path):
    path = tmp_path / "bad.py"
    _open(client, path, "import torch\nx = torch.ones(1, device='cuda')\ndef f(:\n    x.item()\n")
    assert client.diagnostics(_uri(path))["diagnostics"] == []
    assert client.proc.poll() is None


def test_noqa_code_action_silences_the_line(client, tmp_path):
    path = tmp_path / "b.py"
    _open(client, path, HAZARD)
    diags = client.diagnostics(_uri(path))["diagnostics"]
    target = [d for d in diags if d["code"] == "SYN101"][-1]
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": _uri(path)}, "range": target["range"],
        "context": {"diagnostics": [target]},
    })
    noqa = [a for a in actions if "noqa" in a["title"]]
    assert noqa and noqa[0]["kind"] == "quickfix"
    (edit,) = noqa[0]["edit"]["changes"][_uri(path)]
    lines = HAZARD.splitlines(True)
    row = edit["range"]["start"]["line"]
    col = edit["range"]["start"]["character"]
    lines[row] = lines[row][:col] + edit["newText"] + lines[row][col:]
    from synclint.engine import lint_source
    from synclint.registry import default_rules

    after = lint_source("".join(lines), str(path), default_rules())
    assert (row + 1, "SYN101") not in {(f.row, f.code) for f in after}


def _fixable_source():
    """A source on which some enabled rule offers a fix (from the rules' own examples)."""
    from synclint.engine import lint_source
    from synclint.registry import default_rules

    for rule in default_rules():
        if rule.FIX == "never":
            continue
        for case in rule.INVALID:
            found = lint_source(case.code, "x.py", default_rules())
            if any(f.fix is not None for f in found):
                return case.code, found
    return None, None


def test_quickfix_code_action_applies_the_fix(client, tmp_path):
    source, found = _fixable_source()
    if source is None:
        pytest.skip("no enabled rule offers a fix yet")
    path = tmp_path / "c.py"
    _open(client, path, source)
    diags = client.diagnostics(_uri(path))["diagnostics"]
    f = next(f for f in found if f.fix is not None)
    target = next(d for d in diags if d["code"] == f.code and d["range"]["start"]["line"] == f.row - 1)
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": _uri(path)}, "range": target["range"], "context": {"diagnostics": [target]},
    })
    fixes = [a for a in actions if "noqa" not in a["title"] and a["kind"] == "quickfix"]
    assert fixes, actions
    a = fixes[0]
    assert ("unsafe" in a["title"]) == (f.fix.applicability == "unsafe")
    (edit,) = a["edit"]["changes"][_uri(path)]
    assert edit["newText"] == f.fix.edits[0].content


def test_shutdown_and_exit(tmp_path):
    c = LspClient([sys.executable, "-m", "synclint", "lsp"], cwd=tmp_path)
    c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    c.notify("initialized", {})
    assert c.close() == 0


def test_module_imports_without_pygls():
    import subprocess

    code = ("import sys; sys.modules['pygls'] = None; sys.modules['lsprotocol'] = None\n"
            "import synclint.frontends.lsp as m, click; assert isinstance(m.lsp, click.Command)\n"
            "from synclint.frontends.cli import main; assert 'lsp' in main.commands\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    code = ("import sys; sys.modules['pygls'] = None; sys.modules['lsprotocol'] = None\n"
            "from synclint.frontends.cli import main; main(['lsp'])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "synclint[lsp]" in proc.stderr


def test_fix_all_safe_source_action(client, tmp_path):
    from synclint.engine import lint_source
    from synclint.fixes import fix_text
    from synclint.registry import default_rules

    source = None
    for rule in default_rules():
        for case in rule.INVALID if rule.FIX != "never" else []:
            found = lint_source(case.code, "x.py", default_rules())
            if any(f.fix is not None and f.fix.applicability == "safe" for f in found):
                source = case.code
                break
        if source:
            break
    if source is None:
        pytest.skip("no enabled rule offers a safe fix yet")
    expected, _, _ = fix_text(source, lambda s: lint_source(s, "x.py", default_rules()))
    path = tmp_path / "d.py"
    _open(client, path, source)
    client.diagnostics(_uri(path))
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    for only in (["source.fixAll"], ["source.fixAll.synclint"], ["source"]):
        actions = client.request("textDocument/codeAction", {
            "textDocument": {"uri": _uri(path)}, "range": whole, "context": {"diagnostics": [], "only": only},
        })
        (action,) = actions
        assert action["kind"] == "source.fixAll.synclint"
        (edit,) = action["edit"]["changes"][_uri(path)]
        assert edit["newText"] == expected and edit["range"]["start"] == {"line": 0, "character": 0}
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": _uri(path)}, "range": whole, "context": {"diagnostics": [], "only": ["refactor"]},
    }) in ([], None)


def test_diagnostic_links_follow_the_files_docs_url(client, tmp_path):
    base = "https://github.com/ORG/synclint/blob/v0.1.0/docs/rules"
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text(f'[tool.synclint]\ndocs-url = "{base}"\n', encoding="utf-8")
    path = proj / "train.py"
    _open(client, path, HAZARD)
    diags = client.diagnostics(_uri(path))["diagnostics"]
    item = [d for d in diags if d["code"] == "SYN101"]
    assert item and item[0]["codeDescription"]["href"] == f"{base}/tensor-item.md"
    other = tmp_path / "other.py"  # no such config above it: the checkout's page
    _open(client, other, HAZARD)
    from synclint.findings import RULE_PAGES

    diags = client.diagnostics(_uri(other))["diagnostics"]
    assert [d for d in diags if d["code"] == "SYN101"][0]["codeDescription"]["href"] == (RULE_PAGES / "tensor-item.md").as_uri()


# ---------------------------------------------------------------- off the event loop (issue 9, point 8)


def _block(i: int) -> str:
    return (f"\n\ndef step{i}(model, x, y, opt):\n"
            "    loss = model(x).sub(y).pow(2).mean()\n"
            "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
            "    if (loss > 10).any():\n        print(loss.item())\n"
            "    return torch.zeros(1).cuda()\n")


def _big(blocks: int) -> str:
    return "import torch\n" + "".join(_block(i) for i in range(blocks))


def _publications(client, uri, until_version, settle=0.5, timeout=60):
    """Every publishDiagnostics for `uri` up to the one for `until_version`, and any that
    follow within `settle` seconds."""
    seen = [client.diagnostics(uri, timeout=timeout)]
    while seen[-1].get("version") != until_version:
        seen.append(client.diagnostics(uri, timeout=timeout))
    try:
        while True:
            seen.append(client.diagnostics(uri, timeout=settle))
    except TimeoutError:
        pass
    return seen


def test_sync_is_incremental_and_gives_what_a_full_open_gives(client, tmp_path):
    base = "import torch\nw = torch.ones(8, device='cuda')\ns = '\U0001F600' + str(w.sum().item())\n"
    final = ("import torch\nw = torch.ones(8, device='cuda')\ns = '\U0001F600' + str(w.mean().item())\n"
             "for _ in range(3):\n    print(w.sum().item())\n")
    path = tmp_path / "inc.py"
    _open(client, path, base)
    client.diagnostics(_uri(path), version=1)

    def change(version, *edits):
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": _uri(path), "version": version},
            "contentChanges": [{"range": {"start": {"line": a, "character": b}, "end": {"line": c, "character": d}},
                                "text": text} for (a, b, c, d), text in edits]})

    change(2, ((0, 0, 0, 0), "# training\n"))
    change(3, ((3, 17, 3, 20), "mean"),  # after the emoji: 2 UTF-16 units
           ((4, 0, 4, 0), "for _ in range(3):\n    print(w.sum().item())\n"))
    change(4, ((0, 0, 1, 0), ""))
    incremental = client.diagnostics(_uri(path), version=4)["diagnostics"]
    other = tmp_path / "full.py"
    _open(client, other, final)
    full = client.diagnostics(_uri(other))["diagnostics"]
    assert incremental == full
    assert {d["range"]["start"]["line"] for d in full if d["code"] == "SYN101"} == {2, 4}


def test_incremental_edits_count_lines_as_python_does(client, tmp_path):
    """A form feed (or \\u2028, \\x1c...) is no line break for Python nor for LSP, whatever
    str.splitlines says: an edit below one lands where the editor put it."""
    base = "import torch\n\x0c\nw = torch.ones(8, device='cuda')\ns = '\u2028'\n"
    path = tmp_path / "ff.py"
    _open(client, path, base)
    client.diagnostics(_uri(path), version=1)
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": _uri(path), "version": 2},
        "contentChanges": [{"range": {"start": {"line": 4, "character": 0}, "end": {"line": 4, "character": 0}},
                            "text": "v = w.sum().item()\n"}]})
    diags = client.diagnostics(_uri(path), version=2)["diagnostics"]
    assert [(d["code"], d["range"]["start"]["line"]) for d in diags] == [("SYN101", 4)]


def test_incremental_edits_apply_where_the_client_means(tmp_path):
    """300 random edits (line endings of each kind, form feeds, astral characters, ranges
    past a line's end) leave the server's buffer equal to the client's, computed here
    the slow way: LSP lines, UTF-16 columns, past the end meaning the end."""
    import random

    from lsprotocol import types
    from pygls.workspace import Workspace

    from synclint.parse.lines import source_lines
    from synclint.frontends.lsp import _synclint_protocol

    protocol = _synclint_protocol().__new__(_synclint_protocol())
    protocol._workspace = ws = Workspace(None)  # as pygls does at `initialize`
    uri, text = "file:///t.py", "import torch\n\x0c\nw = '\u00e9\U0001F600'\r\nx = 1\ry = 2\n"
    ws.put_text_document(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))

    def offset(line, character):
        lines = source_lines(text, keepends=True)
        if line >= len(lines):
            return len(text)
        units, i, content = 0, 0, lines[line].rstrip("\r\n")
        while i < len(content) and units < character:
            units += 2 if ord(content[i]) > 0xFFFF else 1
            i += 1
        return sum(map(len, lines[:line])) + i

    rnd = random.Random(9)
    for version in range(2, 302):
        n = len(source_lines(text)) + 1
        sl, el = sorted((rnd.randrange(n), rnd.randrange(n)))
        sc, ec = rnd.randrange(8), rnd.randrange(8)
        if sl == el:
            sc, ec = sorted((sc, ec))
        new = rnd.choice(["", "a", "\n", "\u00e9", "\U0001F600", "\r\n", "\r", "\x0c", "xy\nz = 1\n", "torch"])
        ws.update_text_document(types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                                types.TextDocumentContentChangePartial(range=types.Range(
                                    start=types.Position(line=sl, character=sc), end=types.Position(line=el, character=ec)),
                                    text=new))
        text = text[:offset(sl, sc)] + new + text[offset(el, ec):]
        assert ws.get_text_document(uri).source == text, version


def test_initialize_announces_incremental_sync(tmp_path):
    c = LspClient([sys.executable, "-m", "synclint", "lsp"], cwd=tmp_path)
    try:
        caps = c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})["capabilities"]
        sync = caps["textDocumentSync"]
        assert (sync["change"] if isinstance(sync, dict) else sync) == 2  # Incremental
    finally:
        c.close()


def test_a_stale_result_is_never_published(client, tmp_path):
    path = tmp_path / "stale.py"
    _open(client, path, _big(300))  # about 3,000 lines: the worker is still on it when the edit comes
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": _uri(path), "version": 2}, "contentChanges": [{"text": HAZARD}]})
    seen = _publications(client, _uri(path), until_version=2)
    assert [p["version"] for p in seen] == [2]
    assert [d["code"] for d in seen[0]["diagnostics"]] == [f.code for f in _expected(path, HAZARD)]


def test_the_worker_interrupts_a_stale_job_and_stays_warm(tmp_path):
    import threading

    from synclint.frontends.lsp_worker import AnalysisWorker

    w = AnalysisWorker(budget_s=60)
    try:
        assert w._roundtrip(("analyse", "import torch\n", None))[0] == "ok"  # started and warm
        replies = []
        t = threading.Thread(target=lambda: replies.append(w._roundtrip(("analyse", _big(600), None))))
        t.start()
        time.sleep(0.3)
        w.interrupt()
        t.join(60)
        assert replies == [("cancelled", None)]
        pid = w._proc.pid
        status, result = w._roundtrip(("analyse", HAZARD, None))
        assert status == "ok" and "SYN101" in result["diagnostics"] and w._proc.pid == pid
    finally:
        w.stop()


def test_code_actions_come_from_the_last_analysis(client, tmp_path):
    """Served from what the analysis prepared: a config change on disk after it (which a
    new lint would follow) does not change them until the buffer is analysed again."""
    source, found = _fixable_source()
    if source is None:
        pytest.skip("no enabled rule offers a fix yet")
    proj = tmp_path / "p"
    proj.mkdir()
    path = proj / "c.py"
    _open(client, path, source)
    diags = client.diagnostics(_uri(path))["diagnostics"]
    f = next(f for f in found if f.fix is not None)
    target = next(d for d in diags if d["code"] == f.code)
    (proj / "pyproject.toml").write_text('[tool.synclint]\nselect = ["SYN4"]\n', encoding="utf-8")
    request = {"textDocument": {"uri": _uri(path)}, "range": target["range"], "context": {"diagnostics": [target]}}
    start = time.monotonic()
    actions = client.request("textDocument/codeAction", request)
    assert time.monotonic() - start < 5
    assert any(a["kind"] == "quickfix" and "noqa" not in a["title"] for a in actions)
    client.notify("textDocument/didSave", {"textDocument": {"uri": _uri(path)}})  # analysed again: the new config
    assert not [d for d in client.diagnostics(_uri(path))["diagnostics"] if d["code"] == f.code]
    assert client.request("textDocument/codeAction", request) == []


def test_a_5_mb_buffer_says_too_large_within_10_s(client, tmp_path):
    path = tmp_path / "huge.py"
    text = _big(24_000)
    assert len(text) > 5_000_000
    start = time.monotonic()
    _open(client, path, text)
    (d,) = client.diagnostics(_uri(path), timeout=10)["diagnostics"]
    assert time.monotonic() - start < 10
    assert "too large to analyse" in d["message"] and d["range"]["start"] == {"line": 0, "character": 0}
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": _uri(path)}, "range": d["range"], "context": {"diagnostics": [d]}}) == []


def test_the_time_budget_stops_a_long_analysis(tmp_path):
    c = LspClient([sys.executable, "-m", "synclint", "lsp", "--time-budget", "0.001"], cwd=tmp_path)
    try:
        c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        c.notify("initialized", {})
        path = tmp_path / "slow.py"
        _open(c, path, _big(50))
        (d,) = c.diagnostics(_uri(path))["diagnostics"]
        assert "analysis stopped after 0.001 s" in d["message"]
    finally:
        c.close()


@pytest.mark.parametrize("message, code", [
    ({"method": "textDocument/codeAction", "params": {}}, -32602),  # params missing their fields
    ({"method": "textDocument/codeAction", "params": 5}, -32602),
    ({"method": "textDocument/hover", "params": {"textDocument": {"uri": 3}, "position": "x"}}, -32602),
    ({"method": "synclint/no-such-method", "params": {}}, -32601),
    ({"method": "textDocument/codeAction", "params": {}, "jsonrpc": "1.0"}, -32600),
])
def test_malformed_requests_get_an_error_response(client, message, code):
    msg = {"jsonrpc": "2.0", "id": 4242, **message}
    client._send(msg)
    reply = client.wait(lambda m: m.get("id") == 4242 and "method" not in m, timeout=10)
    assert reply["error"]["code"] == code
    assert client.request("textDocument/codeAction", {  # still serving
        "textDocument": {"uri": "file:///nowhere.py"}, "range": {"start": {"line": 0, "character": 0},
                                                                 "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": []}}) is None


def test_requests_after_shutdown_get_an_error_response(client):
    assert client.request("shutdown") is None
    with pytest.raises(RuntimeError, match="-32600"):
        client.request("textDocument/codeAction", {
            "textDocument": {"uri": "file:///nowhere.py"}, "context": {"diagnostics": []},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}}, timeout=10)
    client.notify("exit")
    assert client.proc.wait(timeout=10) == 0
