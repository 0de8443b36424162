"""The binlog inventory: file names and the `.index` file, read by the store and rewritten only by the writer.

Like MariaDB's: one `./NAME` line per file in order. Without an index the numbered files (BASENAME.NNNNNN, six or
more digits) are the inventory, as for a directory someone copied without its index.
"""

from __future__ import annotations

import os
import re
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
