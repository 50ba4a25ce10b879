"""What `check --fix`, `--diff`, `--unsafe-fixes` and `--add-noqa` do with a pipeline
`Outcome`: fix each file that has fixable findings (written atomically, or shown as a
diff), fix stdin's text, or add `# noqa` comments. The edits themselves are
`synclint.fixes`; the findings left after fixing replace the outcome's. Each of these is
one line for its file, the run going on: a fix withheld because the fixed file would not
compile (on this Python, or parse as the project's `requires-python` minimum); a file
that changed after it was read (another run, an editor), which is not overwritten; a file
this user may not write (read-only, another user's), which is left alone."""

from __future__ import annotations

from typing import List, Tuple

import click

from synclint.findings import FileError, Finding, split_internal


def fix_files(setup, outcome, *, write: bool, unsafe: bool, show_diff: bool, quiet: bool = False) -> bool:
    """Fix the files of `outcome`'s findings (or print their diff); the findings left and
    the files that could not be fixed go back into `outcome`. Returns whether a diff was
    shown. A SIGTERM meanwhile ends the run like Ctrl-C: the file being written is left as
    it was, with no temp file beside it. `quiet`: without the "Fixed N findings." line."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _fix_files(setup, outcome, write=write, unsafe=unsafe, show_diff=show_diff, quiet=quiet)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return _fix_files(setup, outcome, write=write, unsafe=unsafe, show_diff=show_diff, quiet=quiet)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _fix_files(setup, outcome, *, write, unsafe, show_diff, quiet) -> bool:
    from synclint.atomic import FileChanged, write_text_atomic
    from synclint.engine import LintError
    from synclint.fixcheck import declared_minimum
    from synclint.parse.source import decode_source, read_bytes, source_encoding
    from synclint.fixes import FixError, fix_source
    from synclint.run.pipeline import lint_fixed

    by_file = {}
    for f in outcome.findings:
        by_file.setdefault(f.filename, []).append(f)
    remaining: List[Finding] = []
    errors = outcome.errors
    diff_changed = False
    fixed_count = 0
    minimums: dict = {}  # folder -> the project's oldest Python, for this run
    for path, fs in by_file.items():
        if not any(f.fix and (f.fix.applicability == "safe" or unsafe) for f in fs):
            remaining.extend(fs)
            continue
        data = read_bytes(path)
        if isinstance(data, FileError):
            errors.append(data)
            remaining.extend(fs)
            continue
        text = decode_source(path, data)
        if isinstance(text, FileError):
            errors.append(text)
            remaining.extend(fs)
            continue
        try:
            fixed = fix_source(text, lint_fixed(setup, path), unsafe, declared_minimum(path, minimums))
        except (FixError, LintError) as e:
            errors.append(FileError(path, str(e)))
            remaining.extend(fs)
            continue
        new, n, left = fixed.text, fixed.count, fixed.left
        errors.extend(withheld_errors(path, fixed))
        if n and show_diff:
            diff_changed = True
            click.echo(unified_diff(path, text, new), nl=False)
        elif n and write:
            try:  # in the file's own encoding, with its BOM if it had one; only over what was read
                write_text_atomic(path, new, source_encoding(data), data.startswith(b"\xef\xbb\xbf"), replacing=data)
            except FileChanged:
                errors.append(FileError(path, "changed while synclint was fixing it (another run or an editor); "
                                              "not overwritten: run --fix again"))
                remaining.extend(fs)
                continue
            except (OSError, UnicodeEncodeError) as e:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else e
                errors.append(FileError(path, f"cannot write the fixes: {reason}; the file is unchanged"))
                remaining.extend(fs)
                continue
            fixed_count += n
        if write:
            left, internal = split_internal(left)
            errors.extend(internal)
        remaining.extend(left if write else fs)
    if write and fixed_count and not quiet:
        click.echo(f"Fixed {fixed_count} finding{'s' if fixed_count != 1 else ''}.", err=True)
    outcome.findings = remaining
    return diff_changed


def fix_stdin(setup, outcome, name: str, text: str, *, unsafe: bool) -> Tuple[str, int]:
    """stdin's `text` fixed: (the new text, fixes applied); `outcome` gets the findings left.
    Raises FixError or LintError when it cannot be fixed."""
    from synclint.fixcheck import declared_minimum
    from synclint.fixes import fix_source
    from synclint.run.pipeline import lint_fixed

    fixed = fix_source(text, lint_fixed(setup, name), unsafe, declared_minimum(name if name != "-" else "stdin", {}))
    outcome.findings, internal = split_internal(fixed.left)
    outcome.errors = internal + withheld_errors(name, fixed)
    return fixed.text, fixed.count


def withheld_errors(path: str, fixed) -> List[FileError]:
    """One line per fix that was not applied, saying why (the finding stays, without it)."""
    return [FileError(path, f"{f.code}'s fix not applied: {why}", f.row, f.code) for f, why in fixed.withheld]


def unfixable_note(outcome, unsafe: bool) -> str:
    """For `--diff`: how many fixes it left out because they need `--unsafe-fixes` ("" if none)."""
    risky = sum(1 for f in outcome.findings if f.fix and f.fix.applicability == "unsafe")
    if not risky or unsafe:
        return ""
    return f"{risky} more fix{'es' if risky != 1 else ''} with `--diff --unsafe-fixes` (review the change)."


def unified_diff(name: str, old: str, new: str) -> str:
    import difflib

    from synclint.parse.lines import source_lines
    from synclint.paths import shown_path

    # a name with a newline or a terminal control in it is quoted, as git quotes it
    return "".join(difflib.unified_diff(source_lines(old, True), source_lines(new, True),
                                        fromfile=shown_path(f"a/{name}"), tofile=shown_path(f"b/{name}")))


def add_noqa(outcome) -> int:
    """`# noqa: CODE` on each line of `outcome`'s findings; returns how many were added
    (the files that could not be written go into `outcome`)."""
    from synclint.noqa import add_noqa as add_directives

    added, errors = add_directives(outcome.findings)
    outcome.errors.extend(errors)
    return added
