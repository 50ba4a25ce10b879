#!/usr/bin/env python3
"""Measure `synclint lsp` from an editor's side (issue 9, point 8): the server runs as a real
subprocess, spoken to over stdio with Content-Length framed JSON-RPC.

    python scripts/lsp_bench.py [--server CMD] [--repeats N] [--work-dir DIR] [--json OUT]

What it measures, on generated modules made by repeating a realistic training module (the
classifier example of examples/classifier/, its loss and loop, plus an evaluation loop: 20
findings per 75 lines, some with safe fixes):

  stall      the longest event-loop stall while a 20,000-line file is opened, analysed,
             published and edited three times (each edit re-analysed): a cheap request
             (a code action on a small open file, served from its last analysis) is sent
             every 10 ms the whole time, and each one's response time is recorded;
  edit       time from the last of a burst of keystrokes (10 incremental edits, 30 ms apart)
             to the diagnostics of that version, on a 1,000-line file;
  action     code-action latency on the 1,000-line file: a quick-fix request at each of 50
             findings, and "fix all safe findings" once it is prepared;
  5 MB       time from opening a 5 MB buffer to its diagnostics (or its "too large" one).

Targets (issue 9): no stall over 50 ms; diagnostics within 0.5 s of the last edit; code
actions within 100 ms; the 5 MB buffer answered within 10 s. The machine's CPU, core count
and load average are printed with the figures: a loaded machine makes every number worse.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HEAD = '''"""Generated for the LSP benchmark: the classifier example, repeated."""
import torch
import torch.nn.functional as F
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
'''

BLOCK = '''

class Classifier{i}(nn.Module):
    def __init__(self, features=32, hidden=64, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


class LabelledLoss{i}(nn.Module):
    def forward(self, logits, y):
        labelled = y >= 0
        return F.cross_entropy(logits[labelled], y[labelled])


def train_epoch{i}(model, loss_fn, opt, loader):
    total = torch.zeros(1).to(device)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.detach()
        if (loss > 10).any():
            print(f"step {{step}}: loss {{loss.item():.3f}}")
    return total.item() / len(loader)


def evaluate{i}(model, loader):
    correct = 0
    for x, y in loader:
        pred = model(x.to(device)).argmax(dim=1)
        correct += int((pred == y.to(device)).sum())
    return correct / len(loader.dataset)
'''


def module(lines: int = 0, chars: int = 0) -> str:
    """A module of at least `lines` lines or `chars` characters."""
    parts, n_lines, n_chars, i = [HEAD], HEAD.count("\n"), len(HEAD), 0
    while n_lines < lines or n_chars < chars:
        block = BLOCK.format(i=i)
        parts.append(block)
        n_lines, n_chars, i = n_lines + block.count("\n"), n_chars + len(block), i + 1
    return "".join(parts)


_HEAD = re.compile(rb'"method": "([^"]+)".*?"uri": ("[^"]*").*?"version": (\d+)')


def _headline(body: bytes) -> dict:
    """A big publishDiagnostics without decoding it: method, uri, version (this server writes
    them before the list), the diagnostics' count, and the raw body for `decoded`."""
    m = _HEAD.search(body[:4096])
    if m is None:  # another server's key order: decode it after all
        msg = json.loads(body)
        msg["params"]["count"] = len(msg["params"].get("diagnostics", ()))
        return msg
    return {"method": m.group(1).decode(), "params": {"uri": json.loads(m.group(2)), "version": int(m.group(3)),
            "count": body.count(b'"source": "synclint"')}, "body": body}


def decoded(msg: dict) -> dict:
    return json.loads(msg["body"]) if "body" in msg else msg


class Client:
    """A minimal LSP client that timestamps every message it reads."""

    def __init__(self, argv, cwd):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=cwd)
        self.inbox: "queue.Queue" = queue.Queue()
        self.replies = {}  # id -> time the response arrived
        self.sent = {}  # id -> time the request was sent
        self.next_id = 0
        self.write_lock = threading.RLock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = out.read(length)
            now = time.perf_counter()
            if length > 65536:  # big diagnostics: not decoded here (a 1.6 MB one holds this
                self.inbox.put((now, _headline(body)))  # process's GIL for tens of ms, and the
                continue  # answers queued behind it would be timed late)
            msg = json.loads(body)
            if "id" in msg and "method" not in msg:
                self.replies[msg["id"]] = now
            self.inbox.put((now, msg))

    def send(self, msg):
        """Send `msg`; returns the time just before it was written."""
        body = json.dumps(msg).encode()
        with self.write_lock:
            t = time.perf_counter()
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()
            return t

    def notify(self, method, params):
        return self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request_async(self, method, params) -> int:
        with self.write_lock:
            self.next_id += 1
            rid = self.next_id
        self.sent[rid] = time.perf_counter()  # before the answer can come
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def wait(self, predicate, timeout=300):
        """(arrival time, message) of the first message matching; the others are dropped."""
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError("no answer from the server")
            try:
                t, msg = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if predicate(msg):
                return t, msg

    def request(self, method, params, timeout=300):
        rid = self.request_async(method, params)
        t, msg = self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return t - self.sent[rid], msg.get("result")

    def diagnostics(self, uri, version, timeout=300):
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri and m["params"].get("version") == version, timeout)

    def open(self, path: Path, text: str, version=1):
        path.write_text(text, encoding="utf-8")
        return self.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": version, "text": text}})

    def change(self, path: Path, version, line, text, character=0):
        """Insert `text` at (`line`, `character`) (an incremental change)."""
        pos = {"line": line, "character": character}
        return self.notify("textDocument/didChange", {
            "textDocument": {"uri": path.as_uri(), "version": version},
            "contentChanges": [{"range": {"start": pos, "end": pos}, "text": text}]})

    def close(self):
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def code_action_params(path: Path, rng, only=None):
    context = {"diagnostics": []}
    if only:
        context["only"] = only
    return {"textDocument": {"uri": path.as_uri()}, "range": rng, "context": context}


def start(server, work):
    c = Client(server, work)
    c.request("initialize", {"processId": os.getpid(), "rootUri": work.as_uri(), "capabilities": {
        "textDocument": {"publishDiagnostics": {}, "codeAction": {}}}})
    c.notify("initialized", {})
    return c


def stall(server, work: Path) -> dict:
    """Response times of a probe sent every 10 ms while the 20k-line file is handled."""
    c = start(server, work)
    small, big = work / "small.py", work / "big20k.py"
    c.open(small, module(lines=100))
    _, msg = c.diagnostics(small.as_uri(), 1)
    probe = code_action_params(small, decoded(msg)["params"]["diagnostics"][0]["range"])
    c.request("textDocument/codeAction", probe)  # warm
    text = module(lines=20_000)
    ids, stop = [], threading.Event()

    def probing():
        nxt = time.perf_counter()
        while not stop.is_set():
            ids.append(c.request_async("textDocument/codeAction", probe))
            nxt += 0.010
            time.sleep(max(0.0, nxt - time.perf_counter()))

    t0 = time.perf_counter()
    prober = threading.Thread(target=probing)
    prober.start()
    time.sleep(0.2)
    events = {"open": c.open(big, text) - t0}
    t_diag, msg = c.diagnostics(big.as_uri(), 1)
    events["diagnostics 1"] = t_diag - t0
    first = t_diag - events["open"] - t0
    n_diags = msg["params"]["count"]
    lines = text.splitlines()
    for v in (2, 3, 4):  # edits (new module-level lines): each re-analysed, the stale analysis interrupted
        line = lines.index(f"class Classifier{100 * v}(nn.Module):") + v - 2
        events[f"edit {v}"] = c.change(big, v, line, f"x{v} = torch.ones(3, device=device).sum().item()\n") - t0
        time.sleep(0.2)
    t_diag, msg = c.diagnostics(big.as_uri(), 4)
    events["diagnostics 4"] = t_diag - t0
    assert msg["params"]["count"] == n_diags + 3, "the edits should each add one finding"
    time.sleep(0.3)
    stop.set()
    prober.join()
    time.sleep(0.5)  # the last probes' answers
    lat = [(c.replies[i] - c.sent[i]) * 1000 for i in ids if i in c.replies]
    worst = sorted(((c.replies[i] - c.sent[i]) * 1000, c.sent[i] - t0) for i in ids if i in c.replies)[-5:]
    c.close()
    return {"events_s": {k: round(v, 3) for k, v in events.items()},
            "worst_ms_at_s": [(round(ms, 1), round(at, 3)) for ms, at in reversed(worst)],
            "lines": text.count("\n"), "chars": len(text), "diagnostics": n_diags, "first_diagnostics_s": first,
            "probes": len(ids), "answered": len(lat), "max_ms": max(lat), "p99_ms": _pct(lat, 99),
            "median_ms": statistics.median(lat)}


def _pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def edit_and_actions(server, work: Path, repeats: int) -> dict:
    c = start(server, work)
    path = work / "m1000.py"
    text = module(lines=1000)
    c.open(path, text)
    c.diagnostics(path.as_uri(), 1)
    version, latencies = 1, []
    for r in range(repeats):
        line = text.splitlines().index(f"class Classifier{r + 1}(nn.Module):")
        typed = f"y{r} = 1.5\n"
        for col, ch in enumerate(typed):  # a burst of keystrokes, 30 ms apart, each its own version
            version += 1
            last = c.change(path, version, line, ch, col)
            time.sleep(0.03)
        lines = text.splitlines(True)
        text = "".join(lines[:line] + [typed] + lines[line:])
        t, msg = c.diagnostics(path.as_uri(), version)
        latencies.append(t - last)
        time.sleep(0.5)
    diags = decoded(msg)["params"]["diagnostics"]
    quick = []
    for d in diags[:: max(1, len(diags) // 50)][:50]:
        dt, _ = c.request("textDocument/codeAction", code_action_params(path, d["range"]))
        quick.append(dt * 1000)
    time.sleep(2.0)  # "fix all" is prepared after the diagnostics
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    fix_all = []
    for _ in range(5):
        dt, result = c.request("textDocument/codeAction", code_action_params(path, whole, ["source.fixAll"]))
        assert result, "no fix-all action"
        fix_all.append(dt * 1000)
    c.close()
    return {"lines": text.count("\n"), "diagnostics": len(diags),
            "edit_to_diagnostics_s": {"median": statistics.median(latencies), "max": max(latencies), "n": len(latencies)},
            "quickfix_ms": {"median": statistics.median(quick), "max": max(quick), "n": len(quick),
                            "slowest_at": quick.index(max(quick))},
            "fix_all_ms": {"median": statistics.median(fix_all), "max": max(fix_all), "n": len(fix_all)}}


def five_mb(server, work: Path) -> dict:
    c = start(server, work)
    path = work / "m5mb.py"
    text = module(chars=5_000_000)
    t0 = c.open(path, text)
    t, msg = c.diagnostics(path.as_uri(), 1, timeout=600)
    diags = decoded(msg)["params"]["diagnostics"]
    c.close()
    return {"chars": len(text), "lines": text.count("\n"), "seconds": t - t0, "diagnostics": len(diags),
            "message": diags[0]["message"] if len(diags) == 1 else None}


def machine() -> dict:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "load": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=f"{shlex.quote(sys.executable)} -m synclint lsp",
                    help="the server's command line (default: this Python's `synclint lsp`)")
    ap.add_argument("--repeats", type=int, default=5, help="edit bursts on the 1,000-line file")
    ap.add_argument("--work-dir", type=Path, help="where the generated files go (default: a temporary folder)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--only", choices=["stall", "edit", "5mb"], action="append")
    args = ap.parse_args()
    server = shlex.split(args.server)
    with tempfile.TemporaryDirectory(prefix="lsp-bench-") as tmp:
        work = (args.work_dir or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        out = {"machine": machine()}
        only = set(args.only or ["stall", "edit", "5mb"])
        if "edit" in only:
            out["edit"] = edit_and_actions(server, work, args.repeats)
            print("edit:", json.dumps(out["edit"]), flush=True)
        if "stall" in only:
            out["stall"] = stall(server, work)
            print("stall:", json.dumps(out["stall"]), flush=True)
        if "5mb" in only:
            out["5mb"] = five_mb(server, work)
            print("5 MB:", json.dumps(out["5mb"]), flush=True)
        out["machine"]["load_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    print("machine:", json.dumps(out["machine"]))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
