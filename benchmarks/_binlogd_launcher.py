"""``python -m benchmarks._binlogd_launcher serve ...``: binlogd's CLI, optionally from another source tree and/or
with an on-demand cProfile. Started by ``dump_throughput`` through ``binlogd.testing.Binlogd.start(module=...)``.

* ``$BINLOGD_BENCH_TREE``: a checkout holding ``binlogd/``, ``server/`` and ``protocol/`` (e.g. a patched copy of
  this repository); its folders are mapped under the ``binlogd.`` namespace ahead of the installed package, so that
  the dump code measured is that tree's (``--binlogd-tree``).
* ``$BINLOGD_BENCH_PROFILE``: SIGUSR1 starts cProfile, SIGUSR2 stops it and writes the stats there (atomically:
  temporary name, then rename), so the profile covers the dump only, not imports and startup. Only the
  event-loop (main) thread is profiled: file reads run in ``asyncio.to_thread`` workers and show up as time
  spent awaiting them.
"""

from __future__ import annotations

import cProfile
import importlib
import importlib.util
import os
import signal
import sys
import time
from types import FrameType


def _map_tree(tree: str) -> None:
    """Import ``binlogd`` from TREE/binlogd and its subpackages from TREE's folders (as the install maps them)."""
    pkg = importlib.util.module_from_spec(importlib.util.spec_from_file_location(  # type: ignore[arg-type]
        "binlogd", os.path.join(tree, "binlogd", "__init__.py"),
        submodule_search_locations=[os.path.join(tree, "binlogd"), tree]))
    sys.modules["binlogd"] = pkg
    pkg.__spec__.loader.exec_module(pkg)  # type: ignore[union-attr]


def run() -> int:
    tree = os.environ.get("BINLOGD_BENCH_TREE")
    if tree:
        _map_tree(os.path.abspath(tree))
    cli = importlib.import_module("binlogd.server.cli")
    if tree and not os.path.abspath(cli.__file__ or "").startswith(os.path.abspath(tree) + os.sep):
        raise SystemExit(f"binlogd.server.cli was imported from {cli.__file__}, not from {tree}")
    out = os.environ.get("BINLOGD_BENCH_PROFILE")
    if out:
        # $BINLOGD_BENCH_PROFILE_CPU: the thread's CPU time instead of wall time (waits for the GIL or a syscall
        # that sleeps do not count)
        prof = cProfile.Profile(time.thread_time) if os.environ.get("BINLOGD_BENCH_PROFILE_CPU") else cProfile.Profile()

        def start(signum: int, frame: FrameType | None) -> None:
            prof.enable()

        def stop(signum: int, frame: FrameType | None) -> None:
            prof.disable()
            prof.dump_stats(out + ".tmp")
            os.replace(out + ".tmp", out)

        signal.signal(signal.SIGUSR1, start)
        signal.signal(signal.SIGUSR2, stop)
    return int(cli.main(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(run())
