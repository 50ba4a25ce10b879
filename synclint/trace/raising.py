"""How a guard's exception gets out of torch's sync callback: it waits for the block's end.

torch runs its sync callbacks inside C++. Its CallbackRegistry logs and swallows what they
raise; an exception set from a warning hook there breaks the interpreter state (seen on
the device: "SystemError: error return without exception set"); and arming a trace
function from the callback to raise in the user's frame crashed Python 3.12 with torch
2.11 on a boolean-mask index (two syncs inside one C call: "cuda trace hook execution
failed ... returned a result with an exception set", then a segmentation fault), while
raising at the next line event would skip the `__exit__` of a `with` that ends there.

So a sync seen in a callback is *armed* here, per thread, and the guard raises it when its
block ends, with the line that synced, the op, the rule and the user's stack at the sync
in the message. Syncs seen in synclint's own Python wrappers (pageable copies,
`Event.synchronize()`) raise at once. The first sync of the block is the one reported.
"""

from __future__ import annotations

import threading
from typing import Optional

_state = threading.local()  # .pending: the first armed exception of this thread


def arm(exc: BaseException) -> None:
    if getattr(_state, "pending", None) is None:
        _state.pending = exc


def pending() -> Optional[BaseException]:
    return getattr(_state, "pending", None)


def take_pending() -> Optional[BaseException]:
    exc = pending()
    _state.pending = None
    return exc
