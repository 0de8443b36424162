"""The binlog inventory: file names and the `.index` file, read by the store and rewritten only by the writer.

Like MariaDB's: one `./NAME` line per file in order. Without an index the numbered files (BASENAME.NNNNNN, six or
more digits) are the inventory, as for a directory someone copied without its index.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

NUMBERED = re.compile(r"^(?P<base>.+)\.(?P<num>\d{6,})$")


def number(name: str) -> int | None:
    """NNNNNN of BASENAME.NNNNNN, else None."""
    ext = name.rsplit(".", 1)[-1]
    return int(ext) if ext.isdigit() else None


def read_names(directory: Path, basename: str, index_path: Path) -> list[str]:
    """File names in index order: the index when present, else the numbered files of `basename`."""
    if index_path.exists():
        names = []
        for line in index_path.read_text().splitlines():
            line = line.strip()
            if line:
                names.append(os.path.basename(line))
        return names
    found = [
        (int(m["num"]), p.name)
        for p in directory.iterdir()
        if (m := NUMBERED.match(p.name)) and m["base"] == basename
    ]
    return [n for _, n in sorted(found)]


class IndexReader:
    """`read_names` read again only when the inventory changed: a binlog directory another process writes (a MariaDB
    datadir, a copy) is asked for its names at every dump's end of file and turn (`is_active`, `next_file`); 200 dumps
    reading the index each time were a tenth of the fan-out's loop (py-spy, 2026-11-29).
    The key is the stat of the index (the directory's when there is none): inode, size, mtime, ctime. A change within
    the same timestamp tick that keeps the size (a purge and a rotation at once, names of one length) would keep the
    key, so names read while the file's last change was under RACY_NS old are not trusted: read again next time
    (as git does with its index)."""

    RACY_NS = 1_000_000_000

    def __init__(self, directory: Path, basename: str, index_path: Path) -> None:
        self.directory, self.basename, self.index_path = directory, basename, index_path
        # (key, names) in one attribute: threads that ask (the store's reads in workers) see one pair or the other
        self._cached: tuple[tuple[int, int, int, int] | None, tuple[str, ...]] = (None, ())

    def names(self) -> list[str]:
        try:
            st = os.stat(self.index_path)
        except FileNotFoundError:
            try:
                st = os.stat(self.directory)
            except FileNotFoundError:
                return read_names(self.directory, self.basename, self.index_path)
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        cached_key, cached = self._cached
        if key == cached_key:
            return list(cached)
        names = read_names(self.directory, self.basename, self.index_path)
        fresh = time.time_ns() - st.st_mtime_ns < self.RACY_NS  # (a write sets mtime to its tick)
        self._cached = (None if fresh else key), tuple(names)
        return names


def write_index(directory: Path, index_path: Path, names: list[str]) -> None:
    """Replace the index atomically and durably: a temporary file fsynced, renamed over it, the directory fsynced
    (a crash leaves the old index or the new one, never a torn one)."""
    tmp = index_path.with_suffix(".index_tmp")
    with open(tmp, "w") as f:
        f.writelines(f"./{n}\n" for n in names)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, index_path)
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def purged_leftovers(directory: Path, basename: str, names: list[str]) -> list[Path]:
    """Files numbered before the index's first file and no longer in it: what a purge interrupted by a crash left
    (a purge rewrites the index first, then deletes)."""
    first = number(names[0]) if names else None
    if first is None:
        return []
    out = []
    for p in directory.glob(f"{basename}.*"):
        num = number(p.name)
        if num is not None and num < first and p.name not in names and p.is_file():
            out.append(p)
    return out
