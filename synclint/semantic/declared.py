"""What the configuration declares of how often functions run (`hot-functions`,
`cold-functions` in `[tool.synclint]`), for heat where no loop or framework says it.

No LibCST and no library tables here: a warm run reads it with the configuration.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Optional, Tuple


# A test file's code runs once per test: its loops (or a toy module's `forward` it defines)
# repeat as often as the test says, not every training step. The rate's label and the step
# its chain ends with (`rates.Rate.TEST_LOOP`); here, so that a warm run needs no rates.
TEST_LOOP = "test-loop"
TEST_CODE = "in test code, which runs per test, not per training step"


@dataclass(frozen=True)
class DeclaredHeat:
    """What the configuration says of how often functions run (`hot-functions`,
    `cold-functions`): globs over a function's qualified name, `module.Class.method`, with
    the module named as imports name it. A hot one runs every step, as `forward` does, and
    spreads heat to what it calls; code in a cold one (nested functions included) runs
    rarely, whatever loops it holds, and heat does not pass through it. `root`: the
    project's root, where test files are told apart (their code runs per test)."""

    hot: Tuple[str, ...] = ()
    cold: Tuple[str, ...] = ()
    root: Optional[str] = None

    def in_tests(self, filename: str) -> bool:
        """Whether `filename` is a test module of the project (pytest's names, less the
        scripts named like tests): its loops run per test, never per training step."""
        from synclint.paths import is_test_file

        return self.root is not None and is_test_file(self.root, filename)

    def __bool__(self) -> bool:  # (whether any function is declared: `root` declares none)
        return bool(self.hot or self.cold)

    def is_hot(self, qualname: str) -> bool:
        return self.hot_glob(qualname) is not None

    def hot_glob(self, qualname: str) -> Optional[str]:
        """The first hot glob `qualname` matches (what a rate's chain names), if any."""
        return next((g for g in self.hot if fnmatch.fnmatchcase(qualname, g)), None)

    def is_cold(self, qualname: str) -> bool:
        """`qualname` or a function it is nested in matches a cold glob."""
        return self.cold_glob(qualname) is not None

    def cold_glob(self, qualname: str) -> Optional[str]:
        """The first cold glob that `qualname` or a function it is nested in matches."""
        parts = qualname.split(".")
        return next((g for n in range(len(parts), 0, -1) for g in self.cold
                     if fnmatch.fnmatchcase(".".join(parts[:n]), g)), None)

    def cold_scope(self, module: str, scope: Optional[str]) -> bool:
        """Whether code in `scope` (a function's name in `module`; None: module-level code)
        is declared cold."""
        return bool(self.cold) and scope is not None and self.is_cold(qualified(module, scope))


def qualified(module: str, scope: str) -> str:
    """A function's qualified name from its module's dotted name and its name there."""
    module = module[:-9] if module.endswith(".__init__") else module  # a package's own functions
    return f"{module}.{scope}" if module else scope
