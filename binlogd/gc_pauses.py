"""Python's cyclic garbage collector in binlogd's server process: the start-up heap frozen out of its collections.

A full (generation 2) collection walks every object the process holds, and the event loop stops meanwhile. A relay
serving 20 replicas stopped 45-86 ms every few seconds (measured, benchmarks/relay_latency.py with C readers), each
time for the modules, classes and functions imported at start, which are never garbage: every transaction that
arrived during it reached all 20 replicas that much later, the largest share of the added p99. `gc.freeze()` once
start-up is done moves them to the permanent generation; the same collection then took 0.9-2.1 ms. What is created
later (connections, caches) is collected as before.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger("binlogd.gc")


def freeze_startup_heap() -> int:
    """Collect once, then freeze what survives (call once, when the server has started); returns the frozen count."""
    gc.collect()
    gc.freeze()
    n = gc.get_freeze_count()
    log.debug("gc: %d objects of the start-up heap frozen", n)
    return n
