"""The semantic model: names, scopes and bindings, values, heat, and library knowledge.

The engine builds one `SemanticModel` per file in its single walk (synclint.walker); rules
only query it. `values` is the abstract domain, `library` the torch/ecosystem tables
(library.toml), `infer` the value of an expression, `heat` which code runs every step.
"""

from synclint.semantic.model import EVIDENT, KNOWN, NOT_MODULE, RECEIVER, Binding, ClassInfo, FuncInfo, SemanticModel

__all__ = ["SemanticModel", "Binding", "ClassInfo", "FuncInfo", "KNOWN", "EVIDENT", "RECEIVER", "NOT_MODULE"]
