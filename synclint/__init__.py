"""synclint: find CPU-GPU synchronization hazards in PyTorch code."""

from synclint.build import VERSION as __version__

__all__ = ["__version__", "guard", "allow_sync", "SyncError"]


def __getattr__(name: str):
    # The runtime side is imported on first use, so `import synclint` stays cheap (no torch).
    if name in ("guard", "allow_sync", "SyncError"):
        from synclint.trace import guard as _guard

        return getattr(_guard, name)
    raise AttributeError(f"module 'synclint' has no attribute {name!r}")
