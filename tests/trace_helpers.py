"""Fakes for the trace tests: an interceptor installed on tests/data/trace/fake_torch.py."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
FAKE_DIR = HERE / "data" / "trace"
if str(FAKE_DIR) not in sys.path:
    sys.path.insert(0, str(FAKE_DIR))

import fake_torch  # noqa: E402,F401  (the tests import it from here)

from synclint.trace.frames import UserCode  # noqa: E402
from synclint.trace.intercept import Interceptor  # noqa: E402

# The clock needs sys.monitoring (Python 3.12+); before it syncs are counted, not timed.
CLOCK = hasattr(sys, "monitoring")


@contextlib.contextmanager
def fake_interceptor() -> Iterator[Interceptor]:
    """An interceptor installed on the fake torch (debug mode, filters, wrappers), removed after."""
    i = Interceptor(UserCode([str(HERE)], library=[str(FAKE_DIR)]))
    i.install(fake_torch)
    try:
        yield i
    finally:
        i.uninstall()
