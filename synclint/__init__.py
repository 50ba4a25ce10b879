"""synclint: find CPU-GPU synchronization hazards in PyTorch code."""

__version__ = "0.1.0"

__all__ = ["__version__"]
