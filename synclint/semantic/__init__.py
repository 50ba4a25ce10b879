"""The semantic model: names, scopes and bindings, values, heat, and library knowledge.

The engine builds one `SemanticModel` per file in its single walk (synclint.walker); rules
only query it. `values` is the abstract domain, `library` the torch/ecosystem tables
(library.toml), `infer` the value of an expression, `heat` which code runs every step,
`facts` what crosses files, `callgraph` heat over call edges.

The model's names are loaded on first use: the project linker imports `values`, `facts`
and `callgraph` only, and a run that only links cached summaries never loads LibCST.
"""

__all__ = ["SemanticModel", "Binding", "ClassInfo", "FuncInfo", "KNOWN", "EVIDENT", "RECEIVER", "NOT_MODULE"]


def __getattr__(name: str):
    if name in __all__:
        from synclint.semantic import model

        return getattr(model, name)
    raise AttributeError(f"module 'synclint.semantic' has no attribute {name!r}")
