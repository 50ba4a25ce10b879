"""pytest plugin (entry point `synclint`): check each test's CUDA syncs with the guard.

Off unless asked: `pytest --sync-guard=log` records the syncs of every test and lists
them at the end; `--sync-guard=disallow` fails a test at its first sync;
`@pytest.mark.sync_guard("disallow")` (or "log", "allow") sets the level for one test and
wins over the option. Inside a test, `synclint.allow_sync("reason")` lets a sync through.
This module imports neither torch nor synclint's guard until a test is guarded.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pytest

_LEVELS = ("off", "allow", "log", "disallow")
_KEY = pytest.StashKey[Dict[str, Any]]()


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("synclint")
    group.addoption("--sync-guard", choices=_LEVELS, default="off",
                    help="check each test's CUDA syncs: log them, or fail the test at the first (default: off)")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "sync_guard(level): check this test's CUDA syncs "
                                       "(\"allow\", \"log\" or \"disallow\"); wins over --sync-guard")
    config.stash[_KEY] = {"synced": [], "no_device": None}


def _level(item: Any) -> Optional[str]:
    marker = item.get_closest_marker("sync_guard")
    if marker is not None:
        level = marker.args[0] if marker.args else marker.kwargs.get("level", "disallow")
        if level not in _LEVELS[1:]:
            raise pytest.UsageError(f"{item.nodeid}: sync_guard level must be allow, log or disallow, not {level!r}")
        return level
    option = item.config.getoption("--sync-guard")
    return None if option == "off" else option


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any):
    level = _level(item)
    if level is None:
        yield
        return
    from synclint.trace.intercept import cuda_state

    state = item.config.stash[_KEY]
    reason = cuda_state()
    if reason:
        state["no_device"] = reason
        yield
        return
    from synclint.trace.guard import guard

    with guard(level) as g:
        yield
    syncs = g.syncs
    if syncs:
        state["synced"].append((item.nodeid, level, [str(e) for e in syncs]))
        item.add_report_section("call", "sync-guard", "\n".join(str(e) for e in syncs))
    item.user_properties.append(("sync_guard_syncs", len(syncs)))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    state = config.stash.get(_KEY, None)
    if not state:
        return
    if state["no_device"]:
        terminalreporter.write_line(f"sync-guard: {state['no_device']}; tests ran unguarded")
    synced: List[Tuple[str, str, List[str]]] = state["synced"]
    if not synced:
        return
    terminalreporter.section("sync-guard")
    for nodeid, level, events in synced:
        terminalreporter.write_line(f"{nodeid} ({level}): {len(events)} sync{'s' if len(events) != 1 else ''}")
        shown: Dict[str, int] = {}
        for e in events:
            shown[e] = shown.get(e, 0) + 1
        for e, n in shown.items():
            terminalreporter.write_line(f"    {e}" + (f" ×{n}" if n > 1 else ""))
