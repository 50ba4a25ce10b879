"""torch, imported for `bench` and `trace` (the only commands that need it, lazily)."""

from __future__ import annotations

import warnings


def import_torch():
    """`import torch`, without the warning a torch built with NumPy support prints when
    NumPy is not installed ("Failed to initialize NumPy: No module named 'numpy'"): synclint
    does not use NumPy through torch, and the warning came before any line of ours. Other
    warnings pass; ImportError is raised as by `import torch`."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
        import torch
    return torch
