"""Fault injection for tests (`binlogd serve --faults FILE`): the fault types and an atomic file writer.

`write_faults(path, faults)` replaces the file in one rename, so a running binlogd (which re-reads the file when it
changes, at the next COM_BINLOG_DUMP) never sees half a file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from binlogd.server.faults import Fault, FaultSet, load_faults

__all__ = ["Fault", "FaultSet", "load_faults", "write_faults"]


def write_faults(path: str | os.PathLike[str], faults: Iterable[Fault]) -> Path:
    """Write `faults` to `path` atomically (temp file in the same directory, fsync, rename); returns the path."""
    target = Path(path)
    text = FaultSet(faults).to_json()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target
