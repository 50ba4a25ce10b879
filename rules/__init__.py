"""synclint's rules, one per module. Installed as `synclint.rules` (see pyproject.toml)."""

if __name__ != "synclint.rules":  # pragma: no cover - guards against a second copy
    raise ImportError("import the rules as synclint.rules, not as a top-level 'rules' package")
