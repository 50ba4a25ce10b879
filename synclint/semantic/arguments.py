"""Command-line options (argparse): which options name a device, and what they hold.

`parser.add_argument("--device", default="cuda")` ... `args = parser.parse_args()` ...
`torch.device(args.device)`: the device a script runs on is often an option. An option whose
default names a device holds a device chosen at run time (`library.toml`, [arguments]).
"""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from synclint.semantic import values as V
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

