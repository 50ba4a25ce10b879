"""Reading a JSON document a user names (a bench result, a trace): one line when it fails."""

from __future__ import annotations

import json
from typing import Any, Type


def read_json(path, error: Type[Exception]) -> Any:
    """The document at `path`; `error("<path>: <reason>")` when it cannot be read or parsed."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise error(f"{path}: not valid JSON: {e}") from None
