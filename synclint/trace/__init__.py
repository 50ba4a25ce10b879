"""Runtime evidence: `synclint trace` (run a program, record every CPU-GPU sync with the
line of user code that caused it and the host time it blocked), the join of a trace with
the static findings, and `synclint.guard()` / the pytest plugin.

Nothing here imports torch at import time: torch is imported when a trace or a guard
starts, so `import synclint` stays cheap.
"""
