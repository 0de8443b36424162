"""The GIL's switch interval for binlogd's processes: one event-loop thread beside worker threads.

Python hands the GIL from a thread running Python to one that waits for it only every switch interval (5 ms by
default). binlogd's loop shares the GIL with its worker threads (binlog writer, ledger writer, block reads, the
applier's channel workers): with 5 ms, a loop woken by a commit waited up to 5 ms for a busy worker to let go,
which set the applier's round trips (8.5 ms per batch, measured) and a relay's latency tail. 0.5 ms bounds that
wait; what the extra switches cost is not measurable beside it.
"""

from __future__ import annotations

import sys

SWITCH_INTERVAL_S = 0.0005


def shorten_switch_interval() -> None:
    """Set the process's switch interval to SWITCH_INTERVAL_S (call once, at start)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
