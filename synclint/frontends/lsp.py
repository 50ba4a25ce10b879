"""`synclint lsp`: a language server (stdio) for editors.

Diagnostics on open, on save and on change (after a short pause), one per finding: code =
the rule code, source "synclint", severity Warning in hot code and Information in cold code, and a
link to the rule's page (`[tool.synclint] docs-url`; by default docs/rules/ of the source
tree synclint runs from, none when there is no such tree). Code actions: the finding's fix as a quick fix (unsafe ones say
so in their title), "ignore this line" (`# noqa: CODE`), and "fix all safe findings"
(`source.fixAll.synclint`).

The event loop only moves messages: documents are synced incrementally (each edit applied
by offset, lines counted as LSP counts them), analysis runs in a worker process (`lsp_worker`; a newer edit interrupts a stale
analysis), which also prepares the diagnostics' JSON and every code action
(`lsp_analysis`), so code actions are served from the last analysis. A buffer over
`--max-size` gets one "too large to analyse" diagnostic instead, and every malformed
request with an id gets an error response.

pygls comes from the `lsp` extra (`pip install 'synclint[lsp]'`) and is imported only when
the server starts, so this module imports without it. Settings come from the nearest
pyproject.toml's [tool.synclint], as for `synclint check`.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional

import click

from synclint.build import VERSION

DEBOUNCE_S = 0.05  # the worker interrupts a stale analysis, so waiting for a pause costs more than it saves
MAX_DOCUMENT_CHARS = 1_000_000  # larger buffers get one "too large" diagnostic (analysis is ~15 s per MB)
TIME_BUDGET_S = 60.0  # an analysis running longer is stopped (its worker replaced)
SOURCE = "synclint"
FIX_ALL_KIND = "source.fixAll.synclint"


# ---------------------------------------------------------------- linting (no pygls)


# ---------------------------------------------------------------- the server


class _Buffer:
    """What the server knows of one open document: its last analysis (findings prepared by
    `lsp_analysis`, for code actions) and the work in flight for a newer version."""

    def __init__(self) -> None:
        self.version: Optional[int] = None  # the version the findings below belong to
        self.findings = None  # lsp_analysis.PreparedActions
        self.end = (0, 0)  # the analysed version's end position (for "fix all")
        self.fix_all = None  # asyncio.Future of the "fix all safe" text (None: nothing to fix)
        self.task = None  # the analysis in flight (debounce, worker, publish, fix all)
        self.ready = None  # asyncio.Future: done when the newest version's diagnostics are out


def _is_request(data: Any) -> bool:
    return (isinstance(data, dict) and "method" in data and "id" in data
            and isinstance(data["id"], (int, str)) and not isinstance(data["id"], bool))


def _synclint_protocol():
    """pygls' protocol with two fixes: every malformed request that has an id gets an error
    response (pygls only logs one whose params do not fit, or whose jsonrpc is not 2.0, and
    the client waits forever), and documents count lines as LSP does."""
    from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
    from pygls.protocol import LanguageServerProtocol
    from pygls.workspace import TextDocument

    from synclint.parse.lines import line_starts, source_lines
    from synclint.frontends.lsp_analysis import code_points

    answered = object()

    class PythonLinesDocument(TextDocument):
        """Lines broken at \\r\\n, \\r and \\n only, as LSP positions count them: pygls uses
        str.splitlines, which also breaks at form feeds, \\u2028 and the like, so an
        incremental edit below one landed on the wrong line. An edit is applied by offsets
        (pygls re-split and re-joined every line: 20-40 ms a keystroke on 20k lines)."""

        _starts = None  # (source, its line starts): computed once per version

        @property
        def lines(self):
            return source_lines(self.source, keepends=True)

        def _offset(self, position) -> int:
            source = self.source
            if self._starts is None or self._starts[0] is not source:
                self._starts = (source, line_starts(source))
            starts = self._starts[1]
            if position.line >= len(starts):
                return len(source)
            start = starts[position.line]
            end = starts[position.line + 1] if position.line + 1 < len(starts) else len(source)
            encoding = self.position_codec.encoding
            line = source[start:end].rstrip("\r\n")
            return start + code_points(line, position.character, str(getattr(encoding, "value", encoding) or "utf-16"))

        def _apply_incremental_change(self, change) -> None:
            start, end = self._offset(change.range.start), self._offset(change.range.end)
            self._source = self.source[:start] + change.text + self.source[end:]

    def python_lines(doc):
        doc.__class__ = PythonLinesDocument
        return doc

    class Protocol(LanguageServerProtocol):
        # pygls builds its workspace at `initialize`: each document it makes counts lines as
        # LSP and Python do
        @property
        def _workspace(self):
            return self.__dict__.get("_synclint_workspace")

        @_workspace.setter
        def _workspace(self, workspace) -> None:
            if workspace is not None:
                make = workspace._create_text_document
                workspace._create_text_document = lambda *a, **k: python_lines(make(*a, **k))
            self.__dict__["_synclint_workspace"] = workspace

        def structure_message(self, data):
            try:
                return super().structure_message(data)
            except JsonRpcException:
                if isinstance(data, dict) and "jsonrpc" in data and _is_request(data):
                    error = (JsonRpcInvalidParams(f"invalid params for {data['method']!r}")
                             if data["jsonrpc"] == "2.0" else JsonRpcInvalidRequest("not a JSON-RPC 2.0 request"))
                    self._send_response(data["id"], error=error.to_response_error())
                    return answered
                raise

        def handle_message(self, message):
            if message is answered:
                return
            msg_id, method = getattr(message, "id", None), getattr(message, "method", None)
            if isinstance(msg_id, (int, str)) and method:  # a request: pygls drops these two unanswered
                if getattr(message, "jsonrpc", None) != "2.0":
                    self._send_response(msg_id, error=JsonRpcInvalidRequest("not a JSON-RPC 2.0 request").to_response_error())
                    return
                if self._shutdown:
                    self._send_response(msg_id, error=JsonRpcInvalidRequest("the server is shutting down").to_response_error())
                    return
            super().handle_message(message)

    return Protocol


def create_server(max_chars: int = MAX_DOCUMENT_CHARS, budget_s: float = TIME_BUDGET_S):
    """Build the pygls server (imports pygls; raises ImportError without it)."""
    import asyncio
    import inspect
    import json

    from lsprotocol import types

    try:
        from pygls.lsp.server import LanguageServer  # pygls >= 2 (1.x had pygls.server)
    except ImportError:
        raise ImportError("pygls >= 2.0 is required") from None
    from pygls.protocol import default_converter
    from pygls.uris import to_fs_path

    from synclint.frontends.lsp_analysis import PreparedActions, lsp_range
    from synclint.frontends.lsp_worker import AnalysisWorker

    server = LanguageServer("synclint", VERSION, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                            protocol_cls=_synclint_protocol())
    worker = AnalysisWorker(budget_s)
    buffers: Dict[str, _Buffer] = {}
    converter = default_converter()

    def publish(uri: str, version: Optional[int], diagnostics_json: str) -> None:
        """publishDiagnostics with the list already serialised (by the worker): thousands of
        diagnostics would cost the event loop a tenth of a second through cattrs."""
        params = '{"uri": %s%s, "diagnostics": %s}' % (
            json.dumps(uri), "" if version is None else f', "version": {int(version)}', diagnostics_json)
        body = ('{"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": %s}' % params).encode()
        written = server.protocol.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        if inspect.isawaitable(written):
            asyncio.ensure_future(written)

    def one_line_diagnostic(message: str) -> str:
        """A message about the whole file, as the only diagnostic, at line 1."""
        return json.dumps([{"range": lsp_range((0, 0, 0, 0)), "severity": 3, "source": SOURCE,
                            "message": f"synclint: {message}"}])

    def log(message: str, kind=types.MessageType.Info) -> None:
        server.window_log_message(types.LogMessageParams(type=kind, message=message))

    def path_of(uri: str) -> Optional[str]:
        try:
            return to_fs_path(uri)
        except Exception:
            return None

    def wanted(doc) -> bool:
        lang = getattr(doc, "language_id", None)
        return lang == "python" or doc.uri.endswith((".py", ".pyi"))

    def open_document(uri: str):
        return server.workspace.text_documents.get(uri)

    def encoding() -> str:
        enc = server.workspace.position_encoding
        return str(getattr(enc, "value", enc) or "utf-16")

    async def analyse(uri: str, buf: _Buffer, ready, delay: float) -> None:
        """Debounce, analyse in the worker, publish, then prepare "fix all" (each step is
        cancelled by a newer edit; a cancelled job is interrupted in the worker)."""
        if delay:
            await asyncio.sleep(delay)
        doc = open_document(uri)
        if doc is None or not wanted(doc):
            return
        version, source = doc.version, doc.source
        if len(source) > max_chars:
            buf.version, buf.findings, buf.fix_all = version, PreparedActions(), None
            publish(uri, version, one_line_diagnostic(
                f"this file is too large to analyse ({len(source):,} characters; the limit is {max_chars:,}, "
                "`synclint lsp --max-size`)"))
            return
        path = path_of(uri)
        status, result = await worker.run(("analyse", source, path, encoding()))
        if status == "cancelled" or getattr(open_document(uri), "version", None) != version:
            return  # edited meanwhile: a newer run publishes
        if status == "error":
            log(f"synclint: {path or uri}: {result}", types.MessageType.Error)
            buf.version, buf.findings, buf.fix_all = version, PreparedActions(), None
            publish(uri, version, one_line_diagnostic(result))
            return
        if result["error"]:
            log(f"synclint: {path or uri}: {result['error']}", types.MessageType.Warning)
        buf.version, buf.findings, buf.end = version, result["findings"], result["end"]
        buf.fix_all = asyncio.get_running_loop().create_future() if result["safe_fixes"] else None
        publish(uri, version, result["diagnostics"])
        if not ready.done():
            ready.set_result(None)
        if buf.fix_all is not None:
            fix_all = buf.fix_all
            try:
                status, new = await worker.run(("fix_all", source, path))
                if status == "ok":
                    fix_all.set_result(new)
            finally:
                if not fix_all.done():
                    fix_all.cancel()  # a newer edit (or an error): no fix-all for this version

    def schedule(uri: str, delay: float) -> None:
        buf = buffers.setdefault(uri, _Buffer())
        if buf.task is not None and not buf.task.done():
            buf.task.cancel()
        loop = asyncio.get_running_loop()
        ready = buf.ready if buf.ready is not None and not buf.ready.done() else loop.create_future()
        buf.ready = ready
        task = asyncio.ensure_future(analyse(uri, buf, ready, delay))
        buf.task = task

        def done(t) -> None:
            if not t.cancelled() and t.exception() is not None:
                log(f"synclint: internal error: {t.exception()!r}", types.MessageType.Error)
            if buf.task is t and not ready.done():
                ready.set_result(None)  # nothing newer coming: code actions stop waiting

        task.add_done_callback(done)

    @server.feature(types.INITIALIZED)
    def initialized(ls, params) -> None:
        import gc

        asyncio.get_running_loop().run_in_executor(None, worker.start)  # warm while the editor opens files
        # A full collection walks every object, the imported modules' too: frozen now, one
        # is a few ms instead of 50 (it came when a big analysis' results arrived)
        gc.freeze()
        # cattrs writes each type's (un)structuring code on first use: 10-50 ms that would
        # otherwise fall on the first code action
        diagnostic = converter.structure(json.loads(one_line_diagnostic("warm-up"))[0], types.Diagnostic)
        action = types.CodeAction(title="", kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                                  edit=lsp_edit("file:///", [((0, 0, 0, 0), "")]))
        getattr(server.protocol, "_converter", converter).unstructure(types.CodeActionResponse(id=0, result=[action]))

    @server.feature(types.SHUTDOWN)
    def shutdown(ls, params) -> None:
        worker.stop()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: types.DidOpenTextDocumentParams) -> None:
        schedule(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: types.DidChangeTextDocumentParams) -> None:
        schedule(params.text_document.uri, DEBOUNCE_S)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: types.DidSaveTextDocumentParams) -> None:
        schedule(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        buf = buffers.pop(uri, None)
        if buf is not None and buf.task is not None:
            buf.task.cancel()
        publish(uri, None, "[]")

    def lsp_edit(uri: str, edits) -> "types.WorkspaceEdit":
        return types.WorkspaceEdit(changes={uri: [
            types.TextEdit(range=converter.structure(lsp_range(r), types.Range), new_text=text) for r, text in edits]})

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND],
            resolve_provider=False,
        ),
    )
    async def code_action(ls, params: types.CodeActionParams):
        """Served from the last analysis (waiting for it when the buffer is newer)."""
        uri = params.text_document.uri
        doc, buf = open_document(uri), buffers.get(uri)
        if doc is None or buf is None or not wanted(doc):
            return None
        if buf.version != doc.version and buf.ready is not None:
            await asyncio.wait([buf.ready], timeout=budget_s)
        if buf.version != doc.version:
            return []
        only = [str(getattr(k, "value", k)) for k in (params.context.only or [])]
        want_quickfix = not only or any(k in ("quickfix", "") or "quickfix".startswith(k) for k in only)
        want_fix_all = not only or any(FIX_ALL_KIND == k or FIX_ALL_KIND.startswith(k + ".") for k in only)
        actions: List[types.CodeAction] = []
        if want_quickfix:
            r = params.range
            wanted_range = (r.start.line, r.start.character, r.end.line, r.end.character)
            for quick in buf.findings.overlapping(wanted_range):
                diag = quick["diagnostic"]
                diagnostic = converter.structure(diag, types.Diagnostic)
                fix = quick["fix"]
                if fix is not None:
                    title = fix["title"] if fix["safe"] else f"{fix['title']} (unsafe fix: may change behaviour; review)"
                    actions.append(types.CodeAction(
                        title=f"synclint: {title}", kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                        is_preferred=fix["safe"], edit=lsp_edit(uri, fix["edits"])))
                if quick["noqa"] is not None:
                    actions.append(types.CodeAction(
                        title=f"synclint: ignore {diag['code']} on this line (# noqa)",
                        kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic], edit=lsp_edit(uri, [quick["noqa"]])))
        asked_for_fix_all = any(k.startswith("source") for k in only)  # else a request for everything
        if want_fix_all and buf.fix_all is not None and (buf.fix_all.done() or asked_for_fix_all):
            version, fix_all = buf.version, buf.fix_all
            try:  # waits only when asked for by kind: quick fixes are never held up by it
                new = await asyncio.shield(fix_all)
            except asyncio.CancelledError:
                new = None  # the buffer changed meanwhile
            if new is not None and buf.version == version:
                actions.append(types.CodeAction(
                    title="synclint: fix all safe findings", kind=FIX_ALL_KIND,
                    edit=lsp_edit(uri, [((0, 0) + tuple(buf.end), new)])))
        return actions

    return server


@click.command("lsp")
@click.option("--stdio", is_flag=True, help="Talk over stdin/stdout (the default; accepted for editors that pass it).")
@click.option("--log-file", type=click.Path(dir_okay=False), help="Write the server's log to this file.")
@click.option("-v", "--verbose", is_flag=True, help="Log debug messages (with --log-file).")
@click.option("--max-size", type=click.IntRange(min=1), default=MAX_DOCUMENT_CHARS, show_default=True,
              help="Buffers with more characters are not analysed (one diagnostic says so).")
@click.option("--time-budget", type=click.FloatRange(min=0, min_open=True), default=TIME_BUDGET_S, show_default=True,
              help="Seconds one analysis may take before it is stopped (one diagnostic says so).")
def lsp(stdio: bool, log_file: Optional[str], verbose: bool, max_size: int, time_budget: float) -> None:
    """Run the language server over stdio, for editors (VS Code, Neovim, Helix...).

    \b
    Needs the `lsp` extra (pygls >= 2):  pip install 'synclint[lsp]'
    See docs/editors.md for each editor's setup.
    """
    try:
        server = create_server(max_size, time_budget)
    except ImportError as e:
        click.echo(f"synclint: error: the language server needs pygls ({e}); install it with "
                   "`pip install 'synclint[lsp]'`", err=True)
        raise click.exceptions.Exit(2)
    if log_file:
        logging.basicConfig(filename=log_file, level=logging.DEBUG if verbose else logging.INFO,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    server.start_io()
