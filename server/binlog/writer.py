"""The one writer of binlogd's own binlog directory (standalone and relay modes), and its crash rules.

Owns the active file, the index and durability. Every method does blocking file I/O: call them from one worker
thread (or, for the standalone's sync_binlog 0 appends, the event loop while no thread job runs), one call at a time.

The crash rules (kill -9 or power loss at any instant; stated here once, relied on by `server.relay.storage`,
`server.standalone` and the read side `server.binlog.store`):

1. Visible only when committed. `write()` appends bytes dumps cannot see; `commit()` publishes them
   (`BinlogStore.published_end` caps the active file at the last publication). Callers commit at event-group ends
   only, so no reader ever gets half an event or half a transaction. A group too large to hold in memory may be
   written before its end (the relay's spill) and stays unpublished until it ends.
2. Durable before visible. `commit()` fdatasyncs every `sync_binlog`-th commit before publishing (0: the OS
   decides; kill -9 keeps the page cache, a power loss may not), so what a replica got, or a semi-sync upstream
   was acknowledged, survives a crash of binlogd as far as sync_binlog promises.
3. A closing ROTATE is published with the file it names. The caller writes it and does not commit it;
   `start_file()` creates the next file with its header (fsynced), closes the old one (in-use flag cleared,
   fsynced), adds the new file to the index (rule 5), and then publishes. A replica that received the ROTATE and
   reconnects always finds the file; a crash in between leaves the ROTATE written but unpublished (rule 4), and the
   relay discards it on resume so the upstream sends it again.
4. Recovery cuts what was never published, before anything is served or appended (`recover()`): a missing index
   is rebuilt from the numbered files, a listed file that is missing is an error, what an interrupted purge left is
   deleted (rule 5), an active file without a whole, valid FDE (a crash while creating it) is removed from disk and
   index, and the active file is truncated (fsynced) after its last whole group, every event's length and CRC
   checked: a torn event or an unfinished group is gone. A trailing ROTATE stays written, unpublished (rule 3).
5. The index is replaced atomically (temporary file, fsync, rename, directory fsync: `server.binlog.index`).
   A purge rewrites the index first and deletes after: a crash leaves files the index no longer names, which
   recovery deletes, never an index naming a deleted file.
6. The active file's FDE carries LOG_EVENT_BINLOG_IN_USE_F until a clean `close()`: a crash leaves it set, as
   MariaDB's does (outside the FDE's CRC, so the bytes stay valid).
7. `discard()` truncates what was written since the last commit: a source whose input ended mid-group (the relay's
   upstream connection) resumes from `committed`, the end of the last whole group, and gets the rest again.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from binlogd.protocol.binlog_file import BinlogFormatError, basename_problem, fde_checksum_alg
from binlogd.protocol.checksum import crc_ok
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_MAGIC,
    CRC_LEN,
    FLAGS_OFFSET,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEADER_LEN,
    LOG_EVENT_BINLOG_IN_USE_F,
    MAX_EVENT_SIZE,
    ROTATE_EVENT,
)
from binlogd.protocol.groups import GroupTracker
from binlogd.protocol.gtid import BinlogState, Gtid, peek_gtid, peek_gtid_list

from .index import purged_leftovers, write_index
from .store import BinlogStore

log = logging.getLogger("binlogd.writer")

_FDE_FLAGS_AT = BIN_LOG_HEADER_SIZE + FLAGS_OFFSET  # the FDE's header flags byte in a file


class BinlogWriteError(Exception):
    """The directory cannot be written as a binlog (bad existing files, I/O errors)."""


@dataclass
class RecoveryReport:
    file: str | None = None  # the active file after recovery (None: empty directory)
    truncated_from: int | None = None  # where bytes were cut, when some were
    truncated_bytes: int = 0
    dropped_file: str | None = None  # an active file without a whole header, removed
    last_end: int = 0  # end of the active file
    checksum_alg: int = BINLOG_CHECKSUM_ALG_CRC32
    state: BinlogState = field(default_factory=BinlogState)  # GTID state at the end of the binlog


class BinlogWriter:
    def __init__(self, directory: Path, basename: str, sync_binlog: int = 0) -> None:
        problem = basename_problem(basename)
        if problem:
            raise BinlogWriteError(f"bad binlog basename: {problem}")
        if sync_binlog < 0:
            raise BinlogWriteError("sync_binlog must be >= 0")
        self.directory = Path(directory)
        self.basename = basename
        self.sync_binlog = sync_binlog
        self.index_path = self.directory / f"{basename}.index"
        self._names: list[str] = []
        self._fd: int | None = None
        self._end = 0  # write position (includes uncommitted bytes)
        self._committed = 0
        self._commits_since_sync = 0
        self.group_commits = 0  # commits made durable and visible (MariaDB Binlog_group_commits; metrics)
        self.fsyncs = 0  # fdatasyncs made for sync_binlog at commits (metrics)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise BinlogWriteError(f"cannot create binlog directory {self.directory}: {e.strerror}") from e
        self.store = BinlogStore(self.directory, basename, allow_empty=True)

    # --- inventory -----------------------------------------------------------------------------------
    def files(self) -> list[str]:
        return list(self._names)

    @property
    def active(self) -> str | None:
        return self._names[-1] if self._names else None

    @property
    def end(self) -> int:
        return self._end

    @property
    def committed(self) -> int:
        return self._committed

    def _write_index(self, names: list[str]) -> None:
        write_index(self.directory, self.index_path, names)  # crash rule 5
        self._set_names(names)

    def _set_names(self, names: list[str]) -> None:
        self._names = list(names)
        self.store.own_names(names)  # after the index on disk says so (the order crash rule 3 relies on)

    # --- recovery ------------------------------------------------------------------------------------
    def recover(self) -> RecoveryReport:
        """Open the existing binlog for appending, cutting what a crash left half-written."""
        rep = RecoveryReport()
        names = self.store.files()  # the index, or the numbered files when there is none
        if names and not self.index_path.exists():
            self._write_index(names)
        for n in names:
            if not (self.directory / n).is_file():
                raise BinlogWriteError(f"{n} is listed in {self.index_path.name} but missing")
        self._finish_purge(names)
        while names:
            name = names[-1]
            path = self.directory / name
            data = path.read_bytes()
            header_end = self._whole_header_end(data)
            if header_end is None:
                # crashed while creating the file: nothing in it was ever published
                log.warning("recovery: %s has no whole format description event; removing it", name)
                path.unlink()
                names.pop()
                rep.dropped_file = name
                self._write_index(names)
                continue
            alg = fde_checksum_alg(data[BIN_LOG_HEADER_SIZE:header_end])
            good, state, has_list, last_rotate = self._scan_groups(data, header_end, alg)
            if not has_list and len(names) > 1:
                # cut before its GTID_LIST: the state continues the previous file's
                prev = names[-2]
                base = self.store.gtid_state_at(prev, self.store.end_of(prev)) or BinlogState()
                base.load(state.as_list())
                state = base
            if good < len(data):
                log.warning("recovery: truncating %s at %d (%d bytes of a torn event or an unfinished group)",
                            name, good, len(data) - good)
                with open(path, "r+b") as f:
                    f.truncate(good)
                    f.flush()
                    os.fsync(f.fileno())
                rep.truncated_from, rep.truncated_bytes = good, len(data) - good
            rep.file, rep.last_end, rep.checksum_alg, rep.state = name, good, alg, state
            # a closing ROTATE whose file was never created stays unpublished until start_file creates it
            publish = last_rotate if last_rotate is not None and last_rotate < good else good
            break
        self._set_names(names)
        if names:
            self._open_active(rep.last_end, publish)
        return rep

    def _finish_purge(self, names: list[str]) -> None:
        """Delete the files a purge interrupted by a crash left (crash rule 5)."""
        for p in purged_leftovers(self.directory, self.basename, names):
            log.warning("recovery: %s is no longer in %s (a purge was interrupted); deleting it", p.name,
                        self.index_path.name)
            p.unlink(missing_ok=True)

    @staticmethod
    def _whole_header_end(data: bytes) -> int | None:
        """End of the FDE when the file starts with magic and a whole, valid FDE."""
        if len(data) < BIN_LOG_HEADER_SIZE + HEADER_LEN or data[:4] != BINLOG_MAGIC:
            return None
        length = int.from_bytes(data[BIN_LOG_HEADER_SIZE + 9 : BIN_LOG_HEADER_SIZE + 13], "little")
        end = BIN_LOG_HEADER_SIZE + length
        if data[BIN_LOG_HEADER_SIZE + 4] != FORMAT_DESCRIPTION_EVENT or length < HEADER_LEN or end > len(data):
            return None
        try:
            alg = fde_checksum_alg(data[BIN_LOG_HEADER_SIZE:end])
        except BinlogFormatError:
            return None
        if alg == BINLOG_CHECKSUM_ALG_CRC32 and not crc_ok(data[BIN_LOG_HEADER_SIZE:end]):
            return None
        return end

    @staticmethod
    def _scan_groups(data: bytes, start: int, alg: int) -> tuple[int, BinlogState, bool, int | None]:
        """End of the last whole group (every event's length and CRC checked), the GTID state there, whether
        the file had a GTID_LIST (without one, the state is only this file's GTIDs), and where the last whole
        group starts when it is a ROTATE (None otherwise)."""
        crc = CRC_LEN if alg == BINLOG_CHECKSUM_ALG_CRC32 else 0
        tracker = GroupTracker()
        state = BinlogState()
        pending: Gtid | None = None  # the GTID of the group being read
        has_list = False
        last_rotate: int | None = None
        p, n, good = start, len(data), start
        mv = memoryview(data)
        while n - p >= HEADER_LEN:
            length = int.from_bytes(data[p + 9 : p + 13], "little")
            if length < HEADER_LEN + crc or length > MAX_EVENT_SIZE or p + length > n:
                break
            if crc and not crc_ok(mv[p : p + length]):
                break
            typ = data[p + 4]
            if typ == GTID_LIST_EVENT:
                try:
                    gl, _ = peek_gtid_list(data, p, p + length - crc)
                except ValueError:
                    break
                state.load(gl)
                has_list = True
            elif typ == GTID_EVENT:
                try:
                    d, s, q, _ = peek_gtid(data, p)
                except ValueError:
                    break
                pending = Gtid(d, s, q)
            if tracker.feed(data, p, p + length, crc):
                last_rotate = p if typ == ROTATE_EVENT else None
                good = p + length
                if pending is not None:
                    state.update(pending)
                    pending = None
            p += length
        return good, state, has_list, last_rotate

    # --- writing -------------------------------------------------------------------------------------
    def _open_active(self, end: int, published: int) -> None:
        name = self._names[-1]
        self._fd = os.open(self.directory / name, os.O_WRONLY)
        os.lseek(self._fd, end, os.SEEK_SET)
        self._end, self._committed = end, published
        # the active file carries the in-use flag until it is closed (a crash leaves it set, as MariaDB's does)
        os.pwrite(self._fd, bytes((self._fde_flags(name) | LOG_EVENT_BINLOG_IN_USE_F,)), _FDE_FLAGS_AT)
        self.store.publish(name, published)

    def _fde_flags(self, name: str) -> int:
        with open(self.directory / name, "rb") as f:
            f.seek(_FDE_FLAGS_AT)
            return f.read(1)[0]

    def _close_active(self) -> None:
        if self._fd is None:
            return
        self.discard()
        name = self._names[-1]
        os.pwrite(self._fd, bytes((self._fde_flags(name) & ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF,)), _FDE_FLAGS_AT)
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = None

    def start_file(self, name: str, header: bytes) -> None:
        """Close the active file and start `name` with magic + `header` (its FDE first); committed at once."""
        if name in self._names or "/" in name or not name.startswith(f"{self.basename}."):
            raise BinlogWriteError(f"cannot start binlog file {name!r}")
        if len(header) < HEADER_LEN or header[4] != FORMAT_DESCRIPTION_EVENT:
            raise BinlogWriteError("a binlog file must start with a format description event")
        first = bytearray(BINLOG_MAGIC + header)
        first[_FDE_FLAGS_AT] |= LOG_EVENT_BINLOG_IN_USE_F  # outside the FDE's CRC by the checksum rule
        path = self.directory / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        try:
            _write_all(fd, first)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        if self._fd is not None:
            # the active file's closing ROTATE (written, never published): made durable by the close below, and
            # readable only once the index names the file it announces (`BinlogStore.published_end` caps the
            # active file at its last publication): a replica that receives it and reconnects asks for that file
            # (MariaDB writes both under one lock)
            self._committed = self._end
        self._close_active()
        self._fd = fd
        self._end = self._committed = len(first)
        self._write_index([*self._names, name])
        self.store.publish(name, self._end)

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Append whole events (not yet visible to dumps); return the new end."""
        if self._fd is None:
            raise BinlogWriteError("no active binlog file")
        _write_all(self._fd, data)
        self._end += len(data)
        return self._end

    def commit(self) -> None:
        """Make everything written so far durable (per sync_binlog) and visible; wake waiting dumps.

        A file's closing ROTATE is not committed by the caller: `start_file` publishes it with the next file."""
        if self._fd is None or self._end == self._committed:
            return
        self._committed_for_good()

    def _committed_for_good(self) -> None:
        assert self._fd is not None
        if self.sync_binlog:
            self._commits_since_sync += 1
            if self._commits_since_sync >= self.sync_binlog:
                os.fdatasync(self._fd)
                self._commits_since_sync = 0
                self.fsyncs += 1
        self.group_commits += 1
        self._committed = self._end
        self.store.publish(self._names[-1], self._end)

    def discard(self) -> None:
        """Drop bytes written since the last commit."""
        if self._fd is not None and self._end != self._committed:
            os.ftruncate(self._fd, self._committed)
            os.lseek(self._fd, self._committed, os.SEEK_SET)
            self._end = self._committed

    def purge(self, names: list[str]) -> None:
        """Delete `names`, which must be the oldest files and not the active one."""
        if not names:
            return
        if names != self._names[: len(names)] or len(names) >= len(self._names):
            raise BinlogWriteError("only the oldest, inactive binlog files can be purged")
        self._write_index(self._names[len(names) :])
        self.store.forget(names)
        for n in names:
            (self.directory / n).unlink(missing_ok=True)

    def close(self) -> None:
        """Clear the in-use flag of the active file (a clean shutdown); uncommitted bytes are dropped."""
        self._close_active()



def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    mv = memoryview(data)
    while mv:
        n = os.write(fd, mv)
        mv = mv[n:]
