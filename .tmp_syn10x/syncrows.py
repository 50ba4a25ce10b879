"""Run fixtures under sync debug mode; compare syncing rows with the marks."""
import os, re, runpy, sys, traceback, warnings, json, io, contextlib
import torch

EXPECT = re.compile(r"#\s*error:\s*(.*)")
UNFL = re.compile(r"#\s*unflagged-sync:")

def rows_of(path):
    path = os.path.abspath(path)
    rows = {}
    def show(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" not in str(message):
            return
        for fr in reversed(traceback.extract_stack()):
            if os.path.abspath(fr.filename) == path:
                rows[fr.lineno] = rows.get(fr.lineno, 0) + 1
                return
        rows[-1] = rows.get(-1, 0) + 1
    old = warnings.showwarning
    warnings.showwarning = show
    warnings.simplefilter("always")
    torch.cuda.set_sync_debug_mode("warn")
    err = None
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(path, run_name="__main__")
    except Exception as e:
        err = repr(e)
    finally:
        torch.cuda.set_sync_debug_mode(0)
        warnings.showwarning = old
    return rows, err

for p in sys.argv[1:]:
    src = open(p).read().splitlines()
    marked = {i for i, l in enumerate(src, 1) if (m := EXPECT.search(l)) and re.search(r"SYN[1-4]\d\d", m.group(1))}
    unfl = {i for i, l in enumerate(src, 1) if UNFL.search(l)}
    rows, err = rows_of(p)
    synced = set(rows)
    print(f"== {p}: err={err}")
    print("   marked but no sync:", sorted(marked - synced))
    print("   unflagged-sync but no sync:", sorted(unfl - synced))
    print("   sync but unmarked:", sorted(synced - marked - unfl), {r: src[r-1].strip()[:70] for r in sorted(synced - marked - unfl) if r > 0})
