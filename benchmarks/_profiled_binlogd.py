"""``python -m benchmarks._profiled_binlogd serve ...``: binlogd's CLI with an on-demand cProfile.

Used by ``dump_throughput --profile cprofile`` through the test harness (``Binlogd.start(module=...)``).
SIGUSR1 starts profiling, SIGUSR2 stops it and writes the stats to ``$BINLOGD_BENCH_PROFILE`` (atomically:
written to a temporary name, then renamed), so the profile covers the dump only, not imports and startup.
Only the event-loop (main) thread is profiled: file reads run in ``asyncio.to_thread`` workers and show up as
time spent awaiting them.
"""

from __future__ import annotations

import cProfile
import os
import signal
import sys
from types import FrameType

from server.cli import main


def run() -> int:
    out = os.environ["BINLOGD_BENCH_PROFILE"]
    prof = cProfile.Profile()

    def start(signum: int, frame: FrameType | None) -> None:
        prof.enable()

    def stop(signum: int, frame: FrameType | None) -> None:
        prof.disable()
        prof.dump_stats(out + ".tmp")
        os.replace(out + ".tmp", out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(run())
