"""Keep glibc from returning large freed buffers to the kernel after every RPC.

A pserver answers each request on a gRPC pool thread, and every thread but
the main one allocates from its own glibc arena. Such an arena trims its top
(and any allocation above the mmap threshold goes straight to mmap) as soon
as a multi-megabyte reply or gradient buffer is freed, so the next request
faults every page in again: measured on these machines, ~2.5 ms of page
faults per 4 MiB frame — more than the table lookup it carries. Raising the
mmap threshold and the trim threshold keeps those pages mapped for reuse;
the cost is that up to `TRIM_THRESHOLD` of freed memory per arena stays
resident. Set PSJOB_MALLOC_TUNING=0 to leave the allocator alone.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

from psjob.foundation.settings import process_settings

# mallopt parameter numbers from glibc's <malloc.h>
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# 32 MiB is the largest mmap threshold glibc accepts (HEAP_MAX_SIZE / 2 on 64-bit);
# frames above it still come from mmap, but those are rare and large enough to amortize.
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20

_done = False


def tune_for_large_messages(enabled: bool | None = None) -> bool:
    """Apply the thresholds once per process (glibc only); True when they are in effect.
    `enabled`: the process's settings.rpc.malloc_tuning (None: this process's environment's)."""
    global _done
    if _done:
        return True
    if enabled is None:
        enabled = process_settings().rpc.malloc_tuning
    if not sys.platform.startswith("linux") or not enabled:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other libcs have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _done = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _done
