"""--output-binlog: the events `binlogd show` keeps, written as a binlog that real replicas, mariadb-binlog and
`binlogd serve --binlog-dir` read, every left-out event replaced by a same-length dummy (protocol.rewrite, MariaDB's
own Query_log_event::dummy_event) so that every position of the input stays valid.

A group's frame is never replaced: its GTID, its end (XID, XA PREPARE, a COMMIT/ROLLBACK query) and BEGIN stay as
stored, so a left-out group becomes an empty group with its GTID, as a filtering replica records it. (A dummy GTID
or XID would not do: an XID has room only for a User_var dummy, which a replica takes for the start of a statement
and then reports "Incomplete event group" at the next GTID; checked with a real 10.11 replica.)

One input file: PATH is the output file. Several (or PATH an existing directory): PATH is a directory that gets
each file under its own name plus NAME.index. Reading stops where the ranges stop: the output ends there too.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKPOINT_EVENT,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_MAGIC,
    CRC_LEN,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    ROTATE_EVENT,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
)
from binlogd.protocol.events import QueryBody
from binlogd.protocol.rewrite import RewriteError, dummy_event

from .reader import Item, ReadError
from .text import is_trans_keyword

# Events kept as stored even when left out: the file's frame and each group's.
_FRAME = frozenset({FORMAT_DESCRIPTION_EVENT, ROTATE_EVENT, GTID_EVENT, XID_EVENT, XA_PREPARE_LOG_EVENT,
                    GTID_LIST_EVENT, BINLOG_CHECKPOINT_EVENT})


class BinlogOutput:
    """Writes items in reading order; `add(item, keep)` for every event read."""

    def __init__(self, path: Path, *, several: bool) -> None:
        self.path = path
        self.directory = several or path.is_dir()
        self._fh: BinaryIO | None = None
        self._file: str | None = None
        self._offset = 0
        self._checksum = False
        self._names: list[str] = []
        self.dummies = 0
        if self.directory:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise ReadError(f"--output-binlog {path}: {e.strerror or e}") from None

    def _open(self, name: str) -> None:
        self._close_file()
        target = self.path / name if self.directory else self.path
        try:
            self._fh = open(target, "wb")  # noqa: SIM115 - closed in _close_file
        except OSError as e:
            raise ReadError(f"--output-binlog {target}: {e.strerror or e}") from None
        self._fh.write(BINLOG_MAGIC)
        self._file, self._offset = name, BIN_LOG_HEADER_SIZE
        self._names.append(name)

    def add(self, item: Item, keep: bool) -> None:
        if item.file != self._file:
            if self._file is not None and not self.directory:
                raise ReadError("--output-binlog names one file: give a directory to write several input files")
            self._open(item.file)
        assert self._fh is not None
        if item.pos != self._offset:
            raise ReadError(f"--output-binlog: {item.file} position {item.pos} does not follow {self._offset} "
                            "(events were skipped while reading: --force-read cannot keep positions)")
        t = item.event.header.type_code
        if t == FORMAT_DESCRIPTION_EVENT:
            self._checksum = item.raw[-CRC_LEN - 1] == BINLOG_CHECKSUM_ALG_CRC32
        raw = item.raw
        body = item.event.body
        frame = t in _FRAME or (isinstance(body, QueryBody) and is_trans_keyword(body.query, True))
        if not keep and not frame:
            try:
                raw = dummy_event(item.raw, self._checksum)
                self.dummies += 1
            except RewriteError:
                pass  # under 25 bytes of data: no dummy fits; the event stays (MariaDB's dump does the same)
        self._fh.write(raw)
        self._offset += len(raw)

    def _close_file(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def close(self) -> None:
        self._close_file()
        if self.directory and self._names:
            base = self._names[0].rsplit(".", 1)[0]
            (self.path / f"{base}.index").write_text("".join(f"./{n}\n" for n in self._names))
