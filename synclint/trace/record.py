"""The trace's listener: adds each sync to its site (file, line, kind) while the window is
open."""

from __future__ import annotations

import linecache
import os
import threading
from typing import Dict, List, Optional, Tuple

from synclint.trace.intercept import Listener, SyncEvent
from synclint.trace.schema import Site

_MAX_CALLERS = 6


class Recorder(Listener):
    wants_time = True

    def __init__(self, roots: Tuple[str, ...] = ()) -> None:
        self.recording = True
        self._roots = roots
        self._sites: Dict[Tuple[str, int, str], Site] = {}
        self._lock = threading.Lock()  # syncs arrive on several threads

    def on_sync(self, event: SyncEvent) -> Optional[BaseException]:
        if not self.recording:
            return None
        w = event.where
        place = w.site
        file, line, function = (place.file, place.line, place.function) if place else ("<no Python frame>", 0, "")
        key = (file, line, event.kind)
        with self._lock:
            site = self._sites.get(key)
            if site is None:
                site = self._sites[key] = Site(
                    file=file, line=line, function=function, kind=event.kind, via=w.via,
                    callers=[str(c) for c in w.callers(_MAX_CALLERS)], user=w.user)
            site.count += 1
            if event.blocked_s is not None:
                site.timed += 1
                site.blocked_ms += event.blocked_s * 1e3
            if event.thread not in site.threads:
                site.threads.append(event.thread)
        return None

    def sites(self) -> List[Site]:
        """The sites, source lines read; most blocked first."""
        with self._lock:
            out = list(self._sites.values())
        for s in out:
            s.blocked_ms = round(s.blocked_ms, 4)
            s.source = self._source(s.file, s.line)
        out.sort(key=lambda s: (-s.blocked_ms, -s.count, s.file, s.line, s.kind))
        return out

    def _source(self, file: str, line: int) -> str:
        candidates = [file] if os.path.isabs(file) else [os.path.join(r, file) for r in self._roots]
        for path in candidates:
            text = linecache.getline(path, line)
            if text:
                return text.strip()
        return ""
