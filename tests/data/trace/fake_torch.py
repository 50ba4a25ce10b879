"""A stand-in for the parts of torch the interception touches, for CPU tests.

`Interceptor.install(fake_torch)` runs for real on it: the sync debug mode is a flag here,
and a "sync" does what c10 does under it: raise in "error" mode, else block, then warn
"called a synchronizing CUDA operation" in "warn" mode (torch's warning reaches Python as
the C++ call returns; here the op's own Python frame issues it). The blind spots of the
debug mode (device and event synchronize, pageable non_blocking copies) block without a
warning. This file is treated as library code (not the user's) by the tests' UserCode.
"""

import time
import warnings

MESSAGE = "called a synchronizing CUDA operation"
BLOCK_S = 0.002  # how long each sync blocks the host
_mode = [0]  # 0 default, 1 warn, 2 error


def _sync(seconds=None):
    """memcpy_and_sync / stream_synchronize: check the debug mode, block, warn."""
    if _mode[0] == 2:
        raise RuntimeError(MESSAGE)
    time.sleep(BLOCK_S if seconds is None else seconds)
    if _mode[0] == 1:
        warnings.warn(MESSAGE, UserWarning, stacklevel=1)


class device:
    def __init__(self, spec):
        self.type = str(spec).split(":")[0]


class Tensor:
    def __init__(self, where="cuda", pinned=False):
        self.device = device(where)
        self.pinned = pinned

    def is_pinned(self):
        return self.pinned

    def item(self):
        _sync()
        return 1.0

    def __bool__(self):
        _sync()
        return True

    def __getitem__(self, index):
        if isinstance(index, Tensor):  # a boolean mask: nonzero reads back its count
            _sync()
        return self

    def __format__(self, spec):
        return format(self.item(), spec)  # as torch/_tensor.py:__format__ does

    def to(self, *args, **kwargs):
        if not kwargs.get("non_blocking") and self.device.type != device(args[0] if args else "cuda").type:
            _sync()  # a blocking copy: memcpy_and_sync
        elif self.device.type == "cpu" and not self.pinned:
            time.sleep(BLOCK_S)  # pageable non_blocking: blocks inside cudaMemcpyAsync, no hook
        return Tensor(args[0] if args else "cuda")

    def cuda(self, *args, **kwargs):
        return self.to("cuda", **kwargs)

    def copy_(self, src, non_blocking=False):
        return self


for _name in ("tolist", "cpu", "numpy", "__setitem__", "__repr__", "__int__", "__float__", "__index__",
              "nonzero", "masked_select", "unique", "equal", "allclose"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, lambda self, *a, **k: _sync())


class _C:
    @staticmethod
    def _cuda_synchronize():
        time.sleep(BLOCK_S)  # no debug-mode hook in c10's device_synchronize


class cuda:
    @staticmethod
    def get_sync_debug_mode():
        return _mode[0]

    @staticmethod
    def set_sync_debug_mode(mode):
        _mode[0] = {"default": 0, "warn": 1, "error": 2}[mode] if isinstance(mode, str) else int(mode)

    @staticmethod
    def synchronize():
        _C._cuda_synchronize()  # looked up at call time, as torch.cuda.synchronize does

    class Event:
        def synchronize(self):
            time.sleep(BLOCK_S)

    class Stream:
        def synchronize(self):
            _sync()


def item():
    """`loss.item()` on a CUDA tensor."""
    return Tensor().item()


def nonzero():
    """`torch.nonzero(x)`: a torch function, which no wrapper covers."""
    _sync()


def boolean_mask_index():
    """`x[mask]`: two syncs inside one call."""
    _sync()
    _sync()


def synchronize():
    cuda.synchronize()


def event_synchronize():
    cuda.Event().synchronize()


def pageable_copy():
    return Tensor("cpu").to("cuda", non_blocking=True)
