"""Command-line options (argparse): which options name a device, and what they hold.

`parser.add_argument("--device", default="cuda")` ... `args = parser.parse_args()` ...
`torch.device(args.device)`: the device a script runs on is often an option. An option whose
default names a device holds a device chosen at run time (`library.toml`, [arguments]).
"""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from synclint.semantic import values as V
from synclint.semantic.facts import ANY_OPTION
from synclint.semantic.syntax import string_value

# An integer default is a CUDA ordinal only in an option named for one (`--gpu`, `--local_rank`).
_ORDINAL_WORDS = ("gpu", "device", "cuda", "rank")


def option_dest(call: cst.Call) -> Optional[str]:
    """The attribute an `add_argument(...)` call's option is stored in: `dest=`, else the
    first long flag (`--data-dir` -> `data_dir`), else the first flag or positional name."""
    names = []
    for a in call.args:
        if a.keyword is not None:
            if a.keyword.value == "dest":
                return string_value(a.value)
            continue
        s = string_value(a.value)
        if s is None:
            return None
        names.append(s)
    if not names:
        return None
    long = [n for n in names if n.startswith("--")]
    return (long or names)[0].lstrip("-").replace("-", "_") or None


def device_option(call: cst.Call, model) -> Optional[Tuple[str, str]]:
    """(dest, device) for an option whose default names a device: the GPU for a GPU
    default, either for a CPU one (a GPU run passes the GPU: makemore defaults `--device` to
    "cpu" and is labelled for its GPU run)."""
    default = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "default"), None)
    if default is None:
        return None
    is_dev, dev = model.device_of_arg(default)
    if not is_dev or dev is None or type(default) in (cst.Name, cst.Attribute):
        return None  # (a name only spelled like a device: nothing to go by)
    dest = option_dest(call)
    if dest is None:
        return None
    if type(default) is cst.Integer and not any(w in dest.lower() for w in _ORDINAL_WORDS):
        return None  # a number (FlowNet's `--div-flow`, default 20), not a CUDA ordinal
    return dest, V.CUDA if dev == V.CUDA else V.EITHER



# --------------------------------------------------------------------------- on/off options
# An option whose default is a bool constant (`default=True, type=str2bool`, `store_true`) is
# that bool in the program as written, when nothing in the project sets it otherwise
# (`args.x = ...`, `setattr(args, "x", ...)`, `parser.set_defaults(x=...)`): Dynamo
# specialises on a Python bool, so `None if args.ignore_d else d` is None in the compiled model.


def bool_option(call: cst.Call) -> Optional[Tuple[str, Optional[bool]]]:
    """(dest, the bool default: None when it is not a bool constant) of an `add_argument`."""
    dest = option_dest(call)
    if dest is None:
        return None
    kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    action = string_value(kw["action"]) if "action" in kw else None
    if action in ("store_true", "store_false") and "default" not in kw:
        return dest, action == "store_false"
    default = kw.get("default")
    if action is None and type(default) is cst.Name and default.value in ("True", "False"):
        return dest, default.value == "True"
    return dest, None


def option_writes(call: cst.Call, qualname) -> Optional[list]:
    """The options a call may set: `setattr(ns, "x", v)` -> ["x"] (a name not a literal: every
    one), `parser.set_defaults(x=...)` -> ["x"], `vars(ns).update(...)` / `ns.__dict__.update(...)`
    -> every one; None for any other call."""
    func = call.func
    if type(func) is cst.Name and func.value == "setattr" and qualname(func) is None and len(call.args) >= 2 \
            and not _is_self(call.args[0].value):
        name = string_value(call.args[1].value)
        return [name if name is not None else ANY_OPTION]
    if type(func) is not cst.Attribute:
        return None
    if func.attr.value == "set_defaults":
        return [a.keyword.value for a in call.args if a.keyword is not None] or [ANY_OPTION]
    if func.attr.value in ("update", "__setitem__", "setdefault") and _namespace_dict(func.value, qualname):
        return [ANY_OPTION]
    return None


def _namespace_dict(e: cst.BaseExpression, qualname) -> bool:
    """`vars(ns)` or `ns.__dict__` (not `self`'s: an object's own state)."""
    if type(e) is cst.Call and type(e.func) is cst.Name and e.func.value == "vars" and qualname(e.func) is None:
        return bool(e.args) and not _is_self(e.args[0].value)
    return type(e) is cst.Attribute and e.attr.value == "__dict__" and not _is_self(e.value)


def _is_self(e: cst.BaseExpression) -> bool:
    return type(e) is cst.Name and e.value == "self"


def written_option(target: cst.BaseExpression) -> Optional[str]:
    """The option an assignment target may set: `args.x = ...` (any receiver but `self`: the
    namespace may be held anywhere, `self.config.x`), `vars(args)[k] = ...` (every one)."""
    if type(target) is cst.Attribute and not _is_self(target.value):
        return target.attr.value
    if type(target) is cst.Subscript and _namespace_dict(target.value, lambda e: None):
        return ANY_OPTION
    return None
