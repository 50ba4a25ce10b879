"""How long each phase of one file's analysis takes, as a worker does it: what the time
budget (`file-timeout`) is measured against. Not a test: run
`python tests/measure_phases.py FILE...`. The lint phase runs after the first phase's tree
is dropped, so it parses again: the worst case, a file whose worker was replaced."""

from __future__ import annotations

import sys
import time


def main(paths) -> None:
    from synclint.parse.source import read_source
    from synclint.project import module_name
    from synclint.registry import all_rules
    from synclint.run.workers import Worker

    worker = Worker([r.CODE for r in all_rules()])
    for path in paths:
        text = read_source(path)
        if not isinstance(text, str):
            print(f"{path}: {text}")
            continue
        start = time.perf_counter()
        _summary, error = worker.do(("summarise", path, text, module_name(path)))
        first = time.perf_counter() - start
        worker.held.clear()
        start = time.perf_counter()
        found, _graph, lint_error, _s = worker.do(("lint", path, text, module_name(path), None))
        second = time.perf_counter() - start
        print(f"{path}: {len(text.encode()) / 1e6:.2f} MB, summarise {first:.1f} s, lint {second:.1f} s, "
              f"{len(found)} findings{', error: ' + (error or lint_error) if error or lint_error else ''}")


if __name__ == "__main__":
    main(sys.argv[1:])
