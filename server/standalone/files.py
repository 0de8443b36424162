"""The standalone primary's binlog files on top of the shared writer: headers, GTID sequence, rotation, PURGE.

Everything here runs in the one writer thread (`source.py`); the file, index, fsync and crash-recovery code is
`server.binlog.writer.BinlogWriter`'s. Like MariaDB, every start opens a new file; each file begins with the
FORMAT_DESCRIPTION (`created` = the start time in the first file of a run, 0 after a rotation), a GTID_LIST of
the binlog state and a BINLOG_CHECKPOINT. MariaDB's checkpoint names the oldest file whose transactions a storage
engine may still need for crash recovery; binlogd has no engine (the binlog is its only state), so every file's
checkpoint names the file itself. A file is closed with a ROTATE naming the next one when it reaches
`--max-binlog-size` after a commit (a group never spans two files) and on FLUSH BINARY LOGS.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from binlogd.protocol.binlog_file import fde_checksum_alg, scan
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKPOINT_EVENT,
    BINLOG_CHECKSUM_ALG_OFF,
    FORMAT_DESCRIPTION_EVENT,
    GTID_LIST_EVENT,
    HEADER_LEN,
    QUERY_EVENT,
    ROTATE_EVENT,
)
from binlogd.protocol.events import (
    BinlogCheckpointBody,
    EventDecodeError,
    FormatDescriptionBody,
    Gtid,
    GtidListBody,
    RotateBody,
    build_event,
    encode_binlog_checkpoint,
    encode_format_description,
    encode_gtid_list,
    encode_rotate,
    parse_query,
)
from binlogd.protocol.gtid import BinlogState
from binlogd.protocol.gtid import Gtid as StateGtid

from ..binlog.writer import BinlogWriter, RecoveryReport
from ..expiry import PurgeRequest, choose_victims, file_mtime
from .logger import Group, encode_group
from .schema import Catalogue, SchemaStore, replay

log = logging.getLogger("binlogd.standalone")


@dataclass(slots=True)
class Encoded:
    """A batch of groups encoded ahead of its write (`BinlogFiles.encode`): valid at file end `start` after
    sequence number `seq0`; `ends` are the groups' end offsets."""

    start: int
    seq0: int
    data: bytes
    ends: list[int]


def _events(specs: list[tuple[int, bytes, int]], start: int, timestamp: int, server_id: int) -> bytes:
    out = bytearray()
    pos = start
    for type_code, body, flags in specs:
        pos += HEADER_LEN + len(body) + 4
        out += build_event(type_code=type_code, body=body, checksum=True, timestamp=timestamp, server_id=server_id,
                           log_pos=pos, flags=flags)
    return bytes(out)


def file_header(name: str, *, server_version: str, server_id: int, state: list[Gtid], created: int,
                timestamp: int, post_header_lengths: bytes | None = None,
                checkpoints: list[str] | None = None) -> bytes:
    """FDE + GTID_LIST + BINLOG_CHECKPOINT(s) of a new file (without the magic), log_pos from offset 4.

    `checkpoints`: the files the BINLOG_CHECKPOINT events name (default: the new file itself; server/demo.py
    models MariaDB's InnoDB-driven checkpoints).

    `post_header_lengths`: the FDE's post-header table when it is not MariaDB 10.11's (--binlog-with-tables-info
    declares its event type there, protocol/tables_info.py)."""
    fde = FormatDescriptionBody.mariadb_10_11(server_version, create_timestamp=created)
    if post_header_lengths is not None:
        fde = FormatDescriptionBody(fde.binlog_version, fde.server_version, fde.create_timestamp, fde.header_len,
                                    post_header_lengths, fde.checksum_alg)
    specs = [
        (FORMAT_DESCRIPTION_EVENT, encode_format_description(fde), 0),
        (GTID_LIST_EVENT, encode_gtid_list(GtidListBody(tuple(state))), 0),
    ]
    specs += [(BINLOG_CHECKPOINT_EVENT, encode_binlog_checkpoint(BinlogCheckpointBody(n.encode())), 0)
              for n in (checkpoints if checkpoints is not None else [name])]
    return _events(specs, BIN_LOG_HEADER_SIZE, timestamp, server_id)


class BinlogFiles:
    """The GTID sequence and the file layout of one standalone binlog. Writer-thread only."""

    def __init__(self, writer: BinlogWriter, *, server_id: int, domain_id: int, server_version: str,
                 max_binlog_size: int, post_header_lengths: bytes | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.w = writer
        self.server_id = server_id
        self.domain_id = domain_id
        self.server_version = server_version
        self.max_binlog_size = max_binlog_size
        self.post_header_lengths = post_header_lengths
        self.clock = clock
        self.state = BinlogState()
        self.seq_no = 0  # last seq_no written in our domain
        self.groups_committed = 0  # event groups committed since start (metrics: binlogd_binlog_commits_total)
        self._first_of_run = True
        # the schema as of the last committed group (schema.py): snapshotted beside the binlog at each new file
        self.schema = Catalogue()
        self.schema_store = SchemaStore(writer.directory, writer.basename)
        # semi-sync: told the (file, end) of each group of a batch before the batch is published (dumps must know
        # that a commit waits for it before they can send it); `last_ends` is the last batch's, for the waits
        self.on_written: Callable[[str, list[int]], None] | None = None
        self.last_ends: list[tuple[str, int]] = []

    # --- start ---------------------------------------------------------------------------------------
    def open(self) -> RecoveryReport:
        """Recover what a crash left, then start a new file (MariaDB starts one per run)."""
        report = self.w.recover()
        self.state = report.state
        self.seq_no = max((g.seq for g in self.state.as_list() if g.domain == self.domain_id), default=0)
        self._load_schema()
        self._start_next()
        return report

    def _load_schema(self) -> None:
        """The snapshot, then the DDL of its file and the files after it (crash recovery has already cut them)."""
        first, self.schema = self.schema_store.load()
        names = self.w.files()
        if first is not None and first not in names:
            log.warning("schema snapshot names %s, which is not in the binlog index: replaying every file", first)
        start = names.index(first) if first in names else 0
        n = replay(self.schema, (q for name in names[start:] for q in self._ddl_queries(name)))
        log.info("schema: %d database(s), %d DDL statement(s) replayed from %s", len(self.schema.dbs), n,
                 names[start] if names[start:] else "no binlog")

    def _ddl_queries(self, name: str) -> list[tuple[str, str | None]]:
        """(statement, db) of the file's Query events that may change the schema."""
        data = (self.w.directory / name).read_bytes()[: self.w.end if name == self.w.active else None]
        res = scan(data)
        out: list[tuple[str, str | None]] = []
        alg = BINLOG_CHECKSUM_ALG_OFF
        for ev in res.events:
            if ev.type_code == FORMAT_DESCRIPTION_EVENT:
                alg = fde_checksum_alg(data[ev.pos : ev.end])
                continue
            if ev.type_code != QUERY_EVENT:
                continue
            body = data[ev.pos + HEADER_LEN : ev.end - (4 if alg != BINLOG_CHECKSUM_ALG_OFF else 0)]
            try:
                q = parse_query(bytes(body))
            except EventDecodeError as e:
                log.warning("schema replay: %s at %d: %s", name, ev.pos, e)
                continue
            head = q.query[:12].lstrip().upper()
            if head.startswith((b"CREATE", b"ALTER", b"DROP", b"RENAME", b"TRUNCATE")):
                out.append((q.query.decode("utf-8", "surrogateescape"), q.db.decode("utf-8", "surrogateescape")))
        return out

    def _next_name(self) -> str:
        names = self.w.files()
        if not names:
            return f"{self.w.basename}.000001"
        last = names[-1].rsplit(".", 1)[1]
        return f"{self.w.basename}.{int(last) + 1:0{max(6, len(last))}d}"

    def _start_next(self) -> str:
        name = self._next_name()
        now = int(self.clock())
        header = file_header(name, server_version=self.server_version, server_id=self.server_id,
                             state=[Gtid(g.domain, g.server, g.seq) for g in self.state.as_list()],
                             created=now if self._first_of_run else 0, timestamp=now,
                             post_header_lengths=self.post_header_lengths)
        self.w.start_file(name, header)
        self.schema_store.save(name, self.schema)  # before PURGE can remove the file the last snapshot names
        self._first_of_run = False
        log.info("binlog file %s started (GTID state %s)", name,
                 ",".join(str(g) for g in self.state.as_list()) or "empty")
        return name

    # --- writing -------------------------------------------------------------------------------------
    def encode(self, groups: list[Group]) -> Encoded:
        """The groups' bytes as `write_groups` would append them now. Callable on the event loop while the writer
        thread is idle or busy: `write_groups` uses them only if the end and the sequence are still where they were
        (so the thread, which holds the GIL that the loop needs, only writes and syncs)."""
        start = end = self.w.end
        seq0 = seq_no = self.seq_no
        parts: list[bytes] = []
        ends: list[int] = []
        for g in groups:
            seq_no += 1
            data = encode_group(g, server_id=self.server_id, domain_id=self.domain_id, seq_no=seq_no, start=end)
            parts.append(data)
            end += len(data)
            ends.append(end)
        return Encoded(start, seq0, parts[0] if len(parts) == 1 else b"".join(parts), ends)

    def write_groups(self, groups: list[Group], encoded: Encoded | None = None) -> None:
        """Write the groups (in one write(2)) and commit them together (one fsync per sync_binlog); rotate past the
        size limit. `encoded`: their bytes from `encode`, used when still valid.

        On an I/O error nothing of the batch stays in the file or the sequence. Runs once per commit on the event
        loop with sync_binlog 0: nothing is built here that the commit does not need (the GTIDs are the sequence
        numbers after `seq_no` before the call)."""
        if not groups:
            return
        w = self.w
        if encoded is None or encoded.start != w.end or encoded.seq0 != self.seq_no:
            encoded = self.encode(groups)
        seq0 = self.seq_no
        ends = encoded.ends
        try:
            w.write(encoded.data)
            self.seq_no = seq_no = seq0 + len(groups)
            name = w.active or ""
            if self.on_written is not None:
                self.on_written(name, ends)
            w.commit()
        except BaseException:
            self.seq_no = seq0
            try:
                w.discard()
            except OSError:
                log.exception("cannot drop the uncommitted bytes after a failed write")
            raise
        self.last_ends = [(name, e) for e in ends]
        self.state.update(StateGtid(self.domain_id, self.server_id, seq_no))
        self.groups_committed += len(groups)  # MariaDB Binlog_commits (metrics)
        for g in groups:
            if g.schema_change is not None:
                replay(self.schema, [c for c in (g.schema_change for g in groups) if c is not None])
                break
        if ends[-1] >= self.max_binlog_size:
            self.rotate()

    def rotate(self) -> str:
        """ROTATE to the next file (FLUSH BINARY LOGS, or the size limit); returns the new file's name."""
        nxt = self._next_name()
        body = encode_rotate(RotateBody(BIN_LOG_HEADER_SIZE, nxt.encode()))
        self.w.write(_events([(ROTATE_EVENT, body, 0)], self.w.end, int(self.clock()), self.server_id))
        return self._start_next()  # publishes the ROTATE together with the file it names

    # --- purge ---------------------------------------------------------------------------------------
    def purge(self, req: PurgeRequest, in_use: set[str]) -> list[str]:
        """PURGE BINARY LOGS TO / BEFORE, or expiry: the rule is `server.expiry.choose_victims`."""
        victims = choose_victims(self.w.files(), req, in_use, file_mtime(self.w.directory))
        self.w.purge(victims)
        if victims:
            log.info("purged %s", ", ".join(victims))
        return victims

    def close(self) -> None:
        self.w.close()
