"""`--ledger-retention-seconds`: old audit-ledger files are removed, never one the audit of the binlog still needs.

A ledger file `ledger.NNNNNN.jsonl` (docs/ledger.md) goes when all of these hold:
- it is not the file the ledger writes, and its last write is older than the retention;
- none of its records names a binlog file that is still in the binlog index (the audit of that file needs them);
- none of its connections has records in a file that stays (a dump's `conn` record is the header the audit reads
  its later records with).
Files go oldest first, so what stays is the newest, contiguous part of the ledger. Ledger files only grow, so what
each one names is read once, incrementally (in a thread): 64 MiB take about 3 s of one CPU once, not at every pass.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .ledger import FILE_RE

log = logging.getLogger("binlogd.ledger")

_FILE = re.compile(rb'"file":"((?:[^"\\]|\\.)*)"')
_CONN = re.compile(rb'"conn":(\d+)')


@dataclass
class _Names:
    """What a ledger file's first `scanned` bytes (whole lines) name."""

    files: set[str] = field(default_factory=set)
    conns: set[int] = field(default_factory=set)
    scanned: int = 0


class LedgerRetention:
    """One pass is `run()` (blocking file I/O: call it in a thread)."""

    def __init__(self, directory: Path, seconds: int, binlog_files: Callable[[], list[str]],
                 current: Callable[[], Path]) -> None:
        self.directory = directory
        self.seconds = seconds
        self.binlog_files = binlog_files
        self.current = current
        self._cache: dict[str, _Names] = {}

    def _names(self, path: Path) -> _Names:
        """The binlog files and connections `path` names, read incrementally: ledger files only grow, so only the
        whole lines appended since the last pass are read (the file being written is read at every pass)."""
        names = self._cache.get(path.name)
        size = path.stat().st_size
        if names is None or size < names.scanned:
            names = self._cache[path.name] = _Names()
        if size > names.scanned:
            with open(path, "rb") as f:
                f.seek(names.scanned)
                data = f.read(size - names.scanned)
            data = data[: data.rfind(b"\n") + 1]  # a line being written is read at the next pass
            names.files.update(m.group(1).decode("utf-8", "replace") for m in _FILE.finditer(data))
            names.conns.update(int(m.group(1)) for m in _CONN.finditer(data))
            names.scanned += len(data)
        return names

    def run(self, now: float) -> list[str]:
        """Remove what the rules allow; returns the names removed."""
        current = self.current().name
        segs = sorted((int(m.group(1)), p) for p in self.directory.iterdir()
                      if (m := FILE_RE.match(p.name)) and p.name != current)
        present = set(self.binlog_files())
        old: list[Path] = []
        for _, p in segs:  # the oldest files that are old enough and name no binlog file still present
            if os.stat(p).st_mtime > now - self.seconds or self._names(p).files & present:
                break
            old.append(p)
        if not old:
            return []
        later: set[int] = set()
        for _, p in segs[len(old):]:
            later |= self._names(p).conns
        cur = self.directory / current
        if cur.exists():
            later |= self._names(cur).conns
        m = len(old)
        while m:  # the longest prefix whose connections have no records in what stays
            kept = set(later)
            for p in old[m:]:
                kept |= self._names(p).conns
            if not any(self._names(p).conns & kept for p in old[:m]):
                break
            m -= 1
        removed = []
        for p in old[:m]:
            p.unlink(missing_ok=True)
            self._cache.pop(p.name, None)
            removed.append(p.name)
        if removed:
            log.info("ledger retention (%d s): removed %s", self.seconds, ", ".join(removed))
        return removed
