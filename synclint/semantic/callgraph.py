"""The call graph's heat, without LibCST: hot by name, and heat spread along call edges.

The project linker (`synclint.project`) uses this on cached call graphs, so a run where only
linking is needed does not import LibCST.
"""

from __future__ import annotations

import os
import re
from collections import deque
from typing import Callable, Dict, List, Optional, Set, TypeVar, Union

from synclint.semantic import library as L

T = TypeVar("T")


# A call edge's site (`model.calls`) under a periodic guard that would be hot without it:
# the callee runs every step when it steps an optimizer (`if T % replay_every == 0:
# agent.learn(mem)`, whose `learn` ends in `optimizer.step()`: every optimizer step, as a
# gradient-accumulation guard's body), else the guard holds.
STEPS = "steps"


def crosses(site, callee_steps: bool) -> bool:
    """Whether heat crosses a call edge with this site (True, False, None or STEPS)."""
    return site is not None and (site != STEPS or callee_steps)


def hot_name(name: str) -> bool:
    return name in L.HOT_FUNCTION_NAMES or name.endswith("_step")


def spread(frontier: List[T], edges: Dict, per_epoch: Set[T],
           came_from: Optional[Dict[T, Optional[T]]] = None) -> Set[T]:
    """Everything hot code reaches along call edges from `frontier` (the callees of loops
    and the hooks hot by name). A per-epoch function (one that loops over batches itself)
    stops the spread: its batch loop is hot, the rest of it is not. Breadth first, so that
    `came_from` (filled when given) holds each hot node's caller on a shortest chain from
    the frontier (None for the frontier's own)."""
    hot: Set[T] = set()
    parent: Dict[T, Optional[T]] = {n: None for n in frontier}
    queue = deque(parent)
    while queue:
        node = queue.popleft()
        if node in per_epoch:
            continue
        hot.add(node)
        for callee in edges.get(node, ()):
            if callee not in parent:
                parent[callee] = node
                queue.append(callee)
    if came_from is not None:
        came_from.update((n, parent[n]) for n in hot)
    return hot


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(name: str) -> Set[str]:
    """`debug_second_stage` -> {debug, second, stage}; `ActionVisualizer` -> {action, visualizer}."""
    return {w.lower() for w in _WORD.findall(name)}


def debug_path(path: str, root: Union[str, Callable[[], str]]) -> Optional[str]:
    """The folder or file name, below the project's root, that says a file is debug or
    visualisation code (library.toml `[rarity]` debug_words: `tools/visualize_assign.py`,
    `projects/assigner_visualization/heads/x.py`, `detic/modeling/debug.py`), if one does: a
    visualisation tool, which runs when a user asks for a drawing, not in a training or
    inference run. Not a demo (`demo/`: its per-frame inference is its product). `root` may
    be a function that finds it, asked only where a folder of the path has such a name."""
    path = os.path.abspath(path)
    if not any(words(os.path.splitext(part)[0]) & L.DEBUG_WORDS for part in path.split(os.sep)):
        return None  # (the parts below the root are parts of the path)
    rel = os.path.relpath(path, root if isinstance(root, str) else root())
    for part in rel.split(os.sep):
        if part not in (os.curdir, os.pardir) and words(os.path.splitext(part)[0]) & L.DEBUG_WORDS:
            return part
    return None
