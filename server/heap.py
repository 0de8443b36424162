"""glibc malloc settings for a process that streams large short-lived buffers (the relay).

The relay allocates and frees a few buffers of hundreds of KiB per socket read (the read itself, the stripped run,
numpy's work arrays). glibc serves such sizes with mmap/munmap, or trims its heap after each free, so every read pays
fresh page faults: measured, a third of the relay's CPU was the kernel's (benchmarks/relay_latency.py: 0.65 s of
system time for 1 M events). Keeping freed memory for reuse (mmap only above 32 MiB, trim only past 64 MiB free at
the heap's top) cut that to 0.45 s and the relay's CPU per event by a fifth. The cost: up to that much freed memory
stays in the process (RSS) instead of going back to the OS. No effect where malloc is not glibc's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger("binlogd.heap")

_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
SETTINGS = ((_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 64 << 20), (_M_TOP_PAD, 16 << 20))


def keep_freed_buffers() -> bool:
    """Apply SETTINGS with glibc's mallopt (process-wide, once at start-up); False where that is not possible."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        log.debug("no glibc mallopt: malloc left as it is")
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = all(mallopt(param, value) == 1 for param, value in SETTINGS)
    log.debug("malloc: mmap threshold 32 MiB, trim threshold 64 MiB, top pad 16 MiB (%s)", "set" if ok else "refused")
    return ok
