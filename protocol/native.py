"""The relay's optional C walks (`_dumpscan.c`, built from pyproject.toml as an optional extension), or None.

One place decides whether they are used: dump_runs.scan_packets and GroupTracker.feed_ends fall back to their
Python/numpy walks, which give the same answers, when the extension is not built or BINLOGD_NO_NATIVE is set (for
comparing the two in tests and benchmarks).
"""

from __future__ import annotations

import os
from types import ModuleType

dumpscan: ModuleType | None
try:
    if os.environ.get("BINLOGD_NO_NATIVE"):
        raise ImportError("BINLOGD_NO_NATIVE is set")
    from . import _dumpscan as dumpscan
except ImportError:
    dumpscan = None
