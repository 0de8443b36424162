"""``python -m benchmarks._profiled_binlogd serve ...``: binlogd's CLI under cProfile.

Used by ``dump_throughput --profile cprofile`` through the test harness (``Binlogd.start(module=...)``).
The stats are written to ``$BINLOGD_BENCH_PROFILE`` when the server exits (SIGTERM makes binlogd shut down
cleanly, so ``Binlogd.stop()`` is enough). Only the event-loop thread is profiled: file reads happen in
``asyncio.to_thread`` workers and show up as time spent awaiting them.
"""

from __future__ import annotations

import cProfile
import os
import sys

from server.cli import main


def run() -> int:
    out = os.environ["BINLOGD_BENCH_PROFILE"]
    prof = cProfile.Profile()
    prof.enable()
    try:
        return main(sys.argv[1:])
    finally:
        prof.disable()
        prof.dump_stats(out)


if __name__ == "__main__":
    sys.exit(run())
