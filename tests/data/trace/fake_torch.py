"""Stand-ins for what torch does at a sync, for CPU tests: its C++ calls the
`_gpu_trace` callback (here: the interceptor's handler) from inside the op, then blocks.
This file is treated as library code (not the user's) by the tests' UserCode."""

import sys


def item(interceptor):
    interceptor.on_stream_sync(0)  # memcpy_and_sync -> trace_gpu_stream_synchronization
    return 1.0


def synchronize(interceptor):
    interceptor.on_device_sync()


def event_synchronize(interceptor):
    interceptor.on_event_sync(1234)


def debug_mode_warning(interceptor):
    # The debug mode's warning reaches our hook with the op's Python caller as frame 1.
    interceptor.on_debug_warning(sys._getframe(1))


def boolean_mask_index(interceptor):
    # x[mask] on CUDA: nonzero reads back its count, and a second sync follows, both inside
    # one C call (what crashed a guard that changed the tracing state in the callback).
    interceptor.on_stream_sync(0)
    interceptor.on_stream_sync(0)
    return None


def pageable_copy(interceptor):
    # What synclint's Tensor.to wrapper does after timing a non_blocking pageable copy.
    interceptor._after_wrapped_call("pageable-copy", 0.001, sys._getframe(1))
