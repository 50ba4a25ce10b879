"""What the configuration declares of how often functions run (`hot-functions`,
`cold-functions` in `[tool.synclint]`), for heat where no loop or framework says it.

No LibCST and no library tables here: a warm run reads it with the configuration.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class DeclaredHeat:
    """What the configuration says of how often functions run (`hot-functions`,
    `cold-functions`): globs over a function's qualified name, `module.Class.method`, with
    the module named as imports name it. A hot one runs every step, as `forward` does, and
    spreads heat to what it calls; code in a cold one (nested functions included) runs
    rarely, whatever loops it holds, and heat does not pass through it."""

    hot: Tuple[str, ...] = ()
    cold: Tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.hot or self.cold)

    def is_hot(self, qualname: str) -> bool:
        return any(fnmatch.fnmatchcase(qualname, g) for g in self.hot)

    def is_cold(self, qualname: str) -> bool:
        """`qualname` or a function it is nested in matches a cold glob."""
        parts = qualname.split(".")
        return any(fnmatch.fnmatchcase(".".join(parts[:n]), g)
                   for n in range(len(parts), 0, -1) for g in self.cold)

    def cold_scope(self, module: str, scope: Optional[str]) -> bool:
        """Whether code in `scope` (a function's name in `module`; None: module-level code)
        is declared cold."""
        return bool(self.cold) and scope is not None and self.is_cold(qualified(module, scope))


def qualified(module: str, scope: str) -> str:
    """A function's qualified name from its module's dotted name and its name there."""
    module = module[:-9] if module.endswith(".__init__") else module  # a package's own functions
    return f"{module}.{scope}" if module else scope
