"""Fakes for the trace tests: an interceptor wired to tests/data/trace/fake_torch.py."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKE_DIR = HERE / "data" / "trace"
if str(FAKE_DIR) not in sys.path:
    sys.path.insert(0, str(FAKE_DIR))

import fake_torch  # noqa: E402,F401  (the tests import it from here)

from synclint.trace.frames import UserCode  # noqa: E402
from synclint.trace.intercept import Interceptor  # noqa: E402


class FakeWaiter:
    """What timing.GpuWaiter measures, as fixed numbers."""

    def __init__(self, stream_s: float = 0.002, device_s: float = 0.010) -> None:
        self.stream_s, self.device_s = stream_s, device_s

    def stream(self, ptr: int) -> float:
        return self.stream_s

    def device(self) -> float:
        return self.device_s


def fake_interceptor(waiter=None) -> Interceptor:
    i = Interceptor(UserCode([str(HERE)], library=[str(FAKE_DIR)]))
    i._waiter = waiter or FakeWaiter()
    return i
