"""`synclint lsp`: a language server (stdio) for editors.

Diagnostics on open, on save and on change (debounced), one per finding: code = the rule
code, source "synclint", severity Warning in hot code and Information in cold code, and a
link to the rule's page (`[tool.synclint] docs-url`; by default docs/rules/ of the source
tree synclint runs from, none when there is no such tree). Code actions: the finding's fix as a quick fix (unsafe ones say
so in their title), "ignore this line" (`# noqa: CODE`), and "fix all safe findings"
(`source.fixAll.synclint`).

pygls comes from the `lsp` extra (`pip install 'synclint[lsp]'`) and is imported only when
the server starts, so this module imports without it. Settings come from the nearest
pyproject.toml's [tool.synclint], as for `synclint check`.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple

import click

DEBOUNCE_S = 0.3
SOURCE = "synclint"
FIX_ALL_KIND = "source.fixAll.synclint"


# ---------------------------------------------------------------- linting (no pygls)


def _rules_for(path: Optional[str]):
    """(rules, hot_only, config) for a file, from the nearest [tool.synclint]."""
    from pathlib import Path

    from synclint.config import find_config, load_config
    from synclint.registry import select

    start = Path(path) if path else Path.cwd()
    if not start.exists():
        start = start.parent if start.parent.exists() else Path.cwd()
    cfg = load_config(find_config(start))
    return select(cfg.select, cfg.ignore, cfg.extend_select), cfg.hot_only, cfg


_DOCS_URLS: Dict[Optional[str], Optional[str]] = {}  # path -> its config's docs-url, for the diagnostics' links


def rule_link(f, path: Optional[str]) -> Optional[str]:
    """The rule page of finding `f` in `path`, by that file's `[tool.synclint] docs-url`."""
    from synclint.findings import rule_url

    return rule_url(f.name, f.code, _DOCS_URLS.get(path))


def lint_document(source: str, path: Optional[str]):
    """(findings, error message or None) for an editor buffer."""
    from synclint.config import cache_dir_for
    from synclint.engine import LintError, lint_source
    from synclint.runner import check_source

    try:
        rules, hot_only, cfg = _rules_for(path)
    except Exception as e:  # a broken pyproject.toml: say so instead of linting with defaults
        return [], f"configuration: {e}"
    _DOCS_URLS[path] = cfg.docs_url
    try:
        if path:  # with what the project's other modules say, as `synclint check` does
            findings = check_source(source, path, rules, hot_only=hot_only, cache_dir=cache_dir_for(cfg, False))
        else:
            findings = lint_source(source, "<editor>", rules, hot_only=hot_only)
    except LintError as e:
        return [], str(e)
    if path:
        from synclint.config import drop_per_file_ignored

        findings = drop_per_file_ignored(cfg, findings)  # per-file-ignores, tests-hot-only
    return findings, None


def fix_all_safe(source: str, path: Optional[str]) -> Optional[str]:
    """The buffer with every safe fix applied, or None when nothing changes."""
    from synclint.engine import LintError, lint_source
    from synclint.fixes import FixError, fix_text

    try:
        rules, hot_only, _ = _rules_for(path)
        new, n, _ = fix_text(source, lambda s: lint_source(s, path or "<editor>", rules, hot_only=hot_only), unsafe=False)
    except (LintError, FixError):
        return None
    return new if n else None


# ---------------------------------------------------------------- the server


def create_server():
    """Build the pygls server (imports pygls; raises ImportError without it)."""
    import asyncio

    from lsprotocol import types

    try:
        from pygls.lsp.server import LanguageServer  # pygls >= 2 (1.x had pygls.server)
    except ImportError:
        raise ImportError("pygls >= 2.0 is required") from None
    from pygls.uris import to_fs_path

    from synclint import __version__

    server = LanguageServer("synclint", __version__)
    pending: Dict[str, "asyncio.Task"] = {}
    latest: Dict[str, Tuple[Optional[int], List[Any]]] = {}  # uri -> (version, findings)

    def publish(params) -> None:
        server.text_document_publish_diagnostics(params)

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

    def to_range(doc, row: int, col: int, end_row: int, end_col: int):
        from pygls.workspace import ServerTextPosition, ServerTextRange

        server_range = ServerTextRange(
            start=ServerTextPosition(line=row - 1, character=col - 1),
            end=ServerTextPosition(line=end_row - 1, character=end_col - 1),
        )
        return doc.range_to_client_units(server_range)

    def diagnostic(doc, f):
        href = rule_link(f, path_of(doc.uri))
        return types.Diagnostic(
            range=to_range(doc, f.row, f.column, f.end_row, f.end_column),
            severity=types.DiagnosticSeverity.Warning if f.hot else types.DiagnosticSeverity.Information,
            code=f.code,
            code_description=types.CodeDescription(href=href) if href else None,
            source=SOURCE,
            message=f"{f.message} [{'hot' if f.hot else 'cold'}]",
            data={"name": f.name, "hot": f.hot, "fixable": f.fix is not None},
        )

    async def lint_and_publish(uri: str, delay: float = 0.0) -> None:
        if delay:
            await asyncio.sleep(delay)
        doc = server.workspace.get_text_document(uri)
        if not wanted(doc):
            return
        version, source = doc.version, doc.source
        loop = asyncio.get_running_loop()
        findings, error = await loop.run_in_executor(None, lint_document, source, path_of(uri))
        doc = server.workspace.get_text_document(uri)
        if doc.version != version:
            return  # edited meanwhile: a newer run publishes
        latest[uri] = (version, findings)
        if error:
            log(f"synclint: {path_of(uri) or uri}: {error}", types.MessageType.Warning)
        publish(types.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[diagnostic(doc, f) for f in findings]))

    def schedule(uri: str, delay: float) -> None:
        old = pending.pop(uri, None)
        if old is not None and not old.done():
            old.cancel()
        task = asyncio.ensure_future(lint_and_publish(uri, delay))
        pending[uri] = task

        def done(t, uri=uri):
            if pending.get(uri) is t:
                pending.pop(uri, None)
            if not t.cancelled() and t.exception() is not None:
                log(f"synclint: internal error: {t.exception()!r}", types.MessageType.Error)

        task.add_done_callback(done)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls, params: types.DidOpenTextDocumentParams):
        schedule(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls, params: types.DidChangeTextDocumentParams):
        schedule(params.text_document.uri, DEBOUNCE_S)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls, params: types.DidSaveTextDocumentParams):
        schedule(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls, params: types.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        old = pending.pop(uri, None)
        if old is not None:
            old.cancel()
        latest.pop(uri, None)
        publish(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def current_findings(doc) -> List[Any]:
        version, findings = latest.get(doc.uri, (None, None))
        if findings is None or version != doc.version:
            findings, _ = lint_document(doc.source, path_of(doc.uri))
            latest[doc.uri] = (doc.version, findings)
        return findings

    def overlaps(a, b) -> bool:
        return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and \
               (b.start.line, b.start.character) <= (a.end.line, a.end.character)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND],
            resolve_provider=False,
        ),
    )
    def code_action(ls, params: types.CodeActionParams):
        uri = params.text_document.uri
        doc = server.workspace.get_text_document(uri)
        if not wanted(doc):
            return None
        only = [str(getattr(k, "value", k)) for k in (params.context.only or [])]
        actions: List[types.CodeAction] = []
        want_quickfix = not only or any(k in ("quickfix", "") or "quickfix".startswith(k) for k in only)
        want_fix_all = not only or any(FIX_ALL_KIND == k or FIX_ALL_KIND.startswith(k + ".") for k in only)
        findings = current_findings(doc) if (want_quickfix or want_fix_all) else []
        if want_quickfix:
            lines = doc.lines
            for f in findings:
                diag = diagnostic(doc, f)
                if not overlaps(diag.range, params.range):
                    continue
                if f.fix is not None and f.fix.edits:
                    title = f.fix.message or f.fix_title or f"Fix {f.code}"
                    safe = f.fix.applicability == "safe"
                    if not safe:
                        title = f"{title} (unsafe fix: may change behaviour; review)"
                    edits = [
                        types.TextEdit(range=to_range(doc, e.start[0], e.start[1], e.end[0], e.end[1]), new_text=e.content)
                        for e in f.fix.edits
                    ]
                    actions.append(types.CodeAction(
                        title=f"synclint: {title}", kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                        is_preferred=safe, edit=types.WorkspaceEdit(changes={uri: edits}),
                    ))
                row = f.end_row  # a noqa on the statement's last line covers it
                if 0 < row <= len(lines) and "noqa" not in lines[row - 1]:
                    text = lines[row - 1].rstrip("\r\n")
                    end = to_range(doc, row, len(text) + 1, row, len(text) + 1)
                    actions.append(types.CodeAction(
                        title=f"synclint: ignore {f.code} on this line (# noqa)", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=end, new_text=f"  # noqa: {f.code}")]}),
                    ))
        if want_fix_all and any(f.fix is not None and f.fix.applicability == "safe" for f in findings):
            new = fix_all_safe(doc.source, path_of(uri))
            if new is not None:
                n_lines = len(doc.lines)
                whole = types.Range(start=types.Position(line=0, character=0),
                                    end=types.Position(line=n_lines, character=0))
                actions.append(types.CodeAction(
                    title="synclint: fix all safe findings", kind=FIX_ALL_KIND,
                    edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=whole, new_text=new)]}),
                ))
        return actions

    return server


@click.command("lsp")
@click.option("--stdio", is_flag=True, help="Talk over stdin/stdout (the default; accepted for editors that pass it).")
@click.option("--log-file", type=click.Path(dir_okay=False), help="Write the server's log to this file.")
@click.option("-v", "--verbose", is_flag=True, help="Log debug messages (with --log-file).")
def lsp(stdio: bool, log_file: Optional[str], verbose: bool) -> None:
    """Run the language server over stdio, for editors (VS Code, Neovim, Helix...).

    \b
    Needs the `lsp` extra (pygls >= 2):  pip install 'synclint[lsp]'
    See docs/editors.md for each editor's setup.
    """
    try:
        server = create_server()
    except ImportError as e:
        click.echo(f"synclint: error: the language server needs pygls ({e}); install it with "
                   "`pip install 'synclint[lsp]'`", err=True)
        raise click.exceptions.Exit(2)
    if log_file:
        logging.basicConfig(filename=log_file, level=logging.DEBUG if verbose else logging.INFO,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    server.start_io()
