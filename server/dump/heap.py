"""glibc malloc settings for a dump server (issue 12).

A dump that runs alone frames SPANs (server/dump/stream.py): every loop turn allocates its framed packets, ~1 MiB
(and, when the Python path frames it, a joined chunk), while the frame cache keeps the last few MiB of framings
alive. With glibc's defaults those sizes sit at or above its mmap threshold: each one was a fresh mmap whose every
page faulted in (92 000 minor faults, a third of the server's CPU, per 180 MB dumped). Served from the heap, with
its free top kept, the same memory is reused.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger("binlogd.dump")

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 4 << 20  # allocations below this come from the heap (a SPAN's framing: ~1 MiB)
TRIM_THRESHOLD = 2 << 20  # free heap top kept for reuse (it counts in RSS: 8 MiB cost 200 fan-out dumps ~40 KiB each)


def tune_malloc() -> bool:
    """Apply the settings above when the C library is glibc; False (and nothing changed) elsewhere."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    if not ok:
        log.debug("mallopt refused the dump's heap settings")
    return ok
