"""GPU verification harness (torch imported lazily)."""
