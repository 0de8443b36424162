"""`binlogd demo-dir DIR`: a small demo binlog directory, built by the project's own encoders.

The files are what a MariaDB 10.11.19 primary (server_id 1, gtid_domain_id 0, binlog_format=STATEMENT,
binlog_checksum=CRC32, InnoDB tables, started with ``--no-defaults``) writes for the client session
:data:`DEMO_SESSION`: ``mysql-bin.000001`` (ends with a ROTATE), ``mysql-bin.000002`` and
``mysql-bin.index``. Nothing here needs a MariaDB; ``make run`` serves the result with
``binlogd serve --binlog-dir DIR``. tests/test_demo.py runs the same session on a real 10.11 and
compares the bytes.

What a 10.11 primary writes for such a session (observed, see tests/test_demo.py):

* Every file starts with FORMAT_DESCRIPTION (10.11 layout; ``created`` is the server start time in
  the first file after start and 0 afterwards), GTID_LIST (the binlog state at the start of the file,
  an empty list is padded with 2 zero bytes) and BINLOG_CHECKPOINT (the oldest file still needed for
  crash recovery). After a rotation the new file first names the old file; the checkpoint naming the
  new file follows once InnoDB has made the old file's commits durable (asynchronous, ~1 s with
  innodb_flush_log_at_trx_commit=2; the session waits for it before its next statement).
* There is no ``BEGIN`` Query event: the GTID event (header flag SUPPRESS_USE 0x08) opens the group.
  DDL: GTID flags2 STANDALONE|ALLOW_PARALLEL|DDL (0x29) + the Query. InnoDB DML, autocommit or
  BEGIN..COMMIT: GTID flags2 TRANSACTIONAL|ALLOW_PARALLEL (0x0c), the Query events, then XID.
* Query status variables, in this order: Q_FLAGS2 (0x01000000: explicit_defaults_for_timestamp=ON,
  autocommit), Q_SQL_MODE (the 10.11 default), Q_CATALOG_NZ 'std', Q_CHARSET (client, connection,
  server collation: 45, 45, 8 for a utf8mb4 client on a latin1 server), and Q_XID (the DDL's xid) for
  DDL on InnoDB tables (CREATE TABLE), not for CREATE DATABASE. No time zone, lc_time_names or
  database charset variables (all session defaults).
* CREATE DATABASE is logged with the new database as its ``db`` and flag SUPPRESS_USE; the other
  statements use fully qualified names and are logged with an empty ``db``.
* The xid of a transaction is the query id of its first statement that wrote to InnoDB; query ids
  count every statement the server runs (here: one per client statement).
* Under ``SET skip_replication=1`` every event gets 0x8000 (GTID 0x8008, Query/Xid 0x8000).
* A statement that reads a user variable is preceded by a USER_VAR event in the same group.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeAlias

from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_MAGIC,
    CRC_LEN,
    GTID_EVENT,
    HEADER_LEN,
    LOG_EVENT_SKIP_REPLICATION_F,
    LOG_EVENT_SUPPRESS_USE_F,
    QUERY_EVENT,
    ROTATE_EVENT,
    USER_VAR_EVENT,
    XID_EVENT,
)
from binlogd.protocol.events import (
    Gtid,
    QueryCharset,
    RotateBody,
    build_event,
    encode_rotate,
)

from .standalone.files import file_header
from .standalone.logger import QueryContext, gtid_body, query_body, user_var_body, xid_body

# --- the simulated primary ----------------------------------------------------------------------------

DEMO_BASENAME: Final = "mysql-bin"
DEMO_SERVER_ID: Final = 1
DEMO_DOMAIN_ID: Final = 0
DEMO_SERVER_VERSION: Final = "10.11.19-MariaDB-log"
DEMO_START_TIME: Final = 1767261600  # 2026-01-01 10:00:00 UTC: the server start, fixed for reproducible files
DEMO_SESSION_DELAY: Final = 60  # seconds between the server start and the session's first statement
DEMO_THREAD_ID: Final = 5  # connection id of the session (thread ids 1-4 are InnoDB/system threads)
DEMO_FIRST_QUERY_ID: Final = 5  # query id of the session's first statement on a fresh 10.11 (observed)

UTF8MB4_GENERAL_CI: Final = 45  # the client's character_set_client / collation_connection
LATIN1_SWEDISH_CI: Final = 8  # collation_server of a 10.11 started with --no-defaults
CHARSET: Final = QueryCharset(UTF8MB4_GENERAL_CI, UTF8MB4_GENERAL_CI, LATIN1_SWEDISH_CI)
# Q_FLAGS2, Q_SQL_MODE, the GTID flags and the event bodies: the standalone primary's encoders (one place)


# --- the session -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ddl:
    """A DDL statement: its own standalone GTID group.

    `database` is set for database-level statements (CREATE DATABASE): MariaDB logs them with that
    database as the Query's db, flag SUPPRESS_USE and no Q_XID. Other DDL (on InnoDB tables) carries
    Q_XID with the statement's query id.
    """

    sql: str
    database: str | None = None


@dataclass(frozen=True, slots=True)
class Dml:
    """A data change on an InnoDB table: a transaction of its own in autocommit mode, else part of
    the open transaction. `user_vars` are the (name, string value) pairs the statement reads."""

    sql: str
    user_vars: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Begin:
    sql: str = "BEGIN"


@dataclass(frozen=True, slots=True)
class Commit:
    sql: str = "COMMIT"


@dataclass(frozen=True, slots=True)
class SetSkipReplication:
    on: bool

    @property
    def sql(self) -> str:
        return f"SET skip_replication={int(self.on)}"


@dataclass(frozen=True, slots=True)
class SetUserVar:
    """``SET @name='value'``: not logged by itself (the USER_VAR event goes with the statement reading it)."""

    name: str
    value: str

    @property
    def sql(self) -> str:
        return f"SET @{self.name}='{self.value}'"


@dataclass(frozen=True, slots=True)
class FlushBinaryLogs:
    """``FLUSH BINARY LOGS``: ROTATE, then the new file. The session waits (as tests/test_demo.py does on
    the real server) until the new file's own BINLOG_CHECKPOINT has been written before going on."""

    sql: str = "FLUSH BINARY LOGS"


Step: TypeAlias = Ddl | Dml | Begin | Commit | SetSkipReplication | SetUserVar | FlushBinaryLogs

DEMO_SESSION: Final[tuple[Step, ...]] = (
    Ddl("CREATE DATABASE demo", database="demo"),
    Ddl("CREATE TABLE demo.items (id INT PRIMARY KEY, name VARCHAR(40))"),
    Dml("INSERT INTO demo.items VALUES (1,'apple')"),
    Begin(),
    Dml("INSERT INTO demo.items VALUES (2,'pear')"),
    Dml("UPDATE demo.items SET name='green pear' WHERE id=2"),
    Commit(),
    SetSkipReplication(True),
    Begin(),
    Dml("INSERT INTO demo.items VALUES (100,'flagged 1')"),
    Dml("INSERT INTO demo.items VALUES (101,'flagged 2')"),
    Commit(),
    Ddl("CREATE TABLE demo.flagged (x INT)"),
    SetSkipReplication(False),
    SetUserVar("fruit", "plum"),
    Dml("INSERT INTO demo.items VALUES (3,@fruit)", user_vars=(("fruit", "plum"),)),
    FlushBinaryLogs(),
    Dml("INSERT INTO demo.items VALUES (4,'after rotate')"),
)
"""The client session the demo binlogs record, one statement per step (autocommit on, no default db)."""

# What a replica of the demo ends with (id, name), in id order.
DEMO_ROWS_UNFLAGGED: Final = ((1, "apple"), (2, "green pear"), (3, "plum"), (4, "after rotate"))
DEMO_ROWS_FLAGGED: Final = ((100, "flagged 1"), (101, "flagged 2"))


def demo_session_sql() -> list[str]:
    """The statements of :data:`DEMO_SESSION` as a client sends them."""
    return [step.sql for step in DEMO_SESSION]


# --- the writer ------------------------------------------------------------------------------------------


class _Primary:
    """Replays :data:`DEMO_SESSION` the way a 10.11 primary logs it (see the module docstring)."""

    def __init__(self) -> None:
        self.files: list[tuple[str, bytearray]] = []
        self.seq_no = 0
        self.query_id = DEMO_FIRST_QUERY_ID - 1
        self.now = DEMO_START_TIME
        self.skip = False
        self.user_vars: dict[str, str] = {}
        # the open BEGIN..COMMIT: the events logged so far and the xid (query id of its first write)
        self.trx: list[tuple[int, bytes, int, int]] | None = None
        self.trx_xid: int | None = None
        self._open_file(created=DEMO_START_TIME, checkpoints=1)
        self.now += DEMO_SESSION_DELAY

    # -- low level --
    @property
    def _buf(self) -> bytearray:
        return self.files[-1][1]

    def _flags(self, extra: int = 0) -> int:
        return extra | (LOG_EVENT_SKIP_REPLICATION_F if self.skip else 0)

    def _write(self, type_code: int, body: bytes, flags: int, timestamp: int) -> None:
        end = len(self._buf) + HEADER_LEN + len(body) + CRC_LEN
        self._buf.extend(build_event(type_code=type_code, server_id=DEMO_SERVER_ID, log_pos=end, flags=flags,
                                     body=body, checksum=True, timestamp=timestamp))

    def _file_name(self, n: int) -> str:
        return f"{DEMO_BASENAME}.{n:06d}"

    def _open_file(self, created: int, checkpoints: int) -> None:
        """New file: FDE, GTID_LIST (state so far), BINLOG_CHECKPOINTs from the oldest needed file on."""
        n = len(self.files) + 1
        name = self._file_name(n)
        state = [Gtid(DEMO_DOMAIN_ID, DEMO_SERVER_ID, self.seq_no)] if self.seq_no else []
        header = file_header(name, server_version=DEMO_SERVER_VERSION, server_id=DEMO_SERVER_ID, state=state,
                             created=created, timestamp=self.now,
                             checkpoints=[self._file_name(k) for k in range(n - checkpoints + 1, n + 1)])
        self.files.append((name, bytearray(BINLOG_MAGIC + header)))

    def _gtid(self, ddl: bool) -> bytes:
        self.seq_no += 1
        return gtid_body(self.seq_no, DEMO_DOMAIN_ID, ddl)

    def _query(self, sql: str, *, db: str = "", xid: int | None = None) -> bytes:
        return query_body(sql, QueryContext(thread_id=DEMO_THREAD_ID, charset=CHARSET, db=db), xid=xid)

    def _dml_events(self, step: Dml) -> list[tuple[int, bytes, int, int]]:
        events: list[tuple[int, bytes, int, int]] = []
        for name, value in step.user_vars:
            if self.user_vars.get(name) != value:
                raise ValueError(f"@{name} is not set to {value!r} before {step.sql!r}")
            events.append((USER_VAR_EVENT, user_var_body(name, value, UTF8MB4_GENERAL_CI), self._flags(), self.now))
        events.append((QUERY_EVENT, self._query(step.sql), self._flags(), self.now))
        return events

    def _commit(self, events: list[tuple[int, bytes, int, int]], xid: int) -> None:
        """Binlog group commit: GTID, the transaction's events, XID; all stamped as of the commit."""
        self._write(GTID_EVENT, self._gtid(False), self._flags(LOG_EVENT_SUPPRESS_USE_F), self.now)
        for type_code, body, flags, ts in events:
            self._write(type_code, body, flags, ts)
        self._write(XID_EVENT, xid_body(xid), self._flags(), self.now)

    # -- statements --
    def run(self, step: Step) -> None:
        self.query_id += 1
        if isinstance(step, Ddl):
            if self.trx is not None:
                raise ValueError("DDL inside a transaction (implicit commit) is not modelled")
            gtid = self._gtid(True)
            self._write(GTID_EVENT, gtid, self._flags(LOG_EVENT_SUPPRESS_USE_F), self.now)
            if step.database is not None:
                body = self._query(step.sql, db=step.database)
                self._write(QUERY_EVENT, body, self._flags(LOG_EVENT_SUPPRESS_USE_F), self.now)
            else:
                self._write(QUERY_EVENT, self._query(step.sql, xid=self.query_id), self._flags(), self.now)
        elif isinstance(step, Dml):
            events = self._dml_events(step)
            if self.trx is None:
                self._commit(events, self.query_id)
            else:
                self.trx.extend(events)
                if self.trx_xid is None:
                    self.trx_xid = self.query_id
        elif isinstance(step, Begin):
            self.trx, self.trx_xid = [], None
        elif isinstance(step, Commit):
            if self.trx is None:
                raise ValueError("COMMIT without BEGIN")
            if self.trx_xid is not None:  # an empty transaction logs nothing
                self._commit(self.trx, self.trx_xid)
            self.trx, self.trx_xid = None, None
        elif isinstance(step, SetSkipReplication):
            if self.trx is not None:
                raise ValueError("ERROR 1929: Cannot modify @@session.skip_replication inside a transaction")
            self.skip = step.on
        elif isinstance(step, SetUserVar):
            self.user_vars[step.name] = step.value
        else:  # FlushBinaryLogs
            nxt = self._file_name(len(self.files) + 1).encode()
            self._write(ROTATE_EVENT, encode_rotate(RotateBody(BIN_LOG_HEADER_SIZE, nxt)), 0, self.now)
            self._open_file(created=0, checkpoints=2)
        self.now += 1  # one statement per second


def demo_files() -> dict[str, bytes]:
    """{file name: content} of the demo directory: the binlog files and the index, in index order."""
    primary = _Primary()
    for step in DEMO_SESSION:
        primary.run(step)
    if primary.trx is not None:
        raise ValueError("the demo session ends inside a transaction")
    out = {name: bytes(buf) for name, buf in primary.files}
    out[f"{DEMO_BASENAME}.index"] = "".join(f"./{name}\n" for name, _ in primary.files).encode()
    return out


# --- the command -----------------------------------------------------------------------------------------


class DemoDirError(Exception):
    """The demo directory cannot be written (not empty without --force, not a directory, ...)."""


def _is_demo_file(name: str) -> bool:
    stem, _, suffix = name.rpartition(".")
    return stem == DEMO_BASENAME and (suffix == "index" or (len(suffix) >= 6 and suffix.isdigit()))


def write_demo_dir(directory: Path, force: bool = False) -> tuple[dict[str, int], bool]:
    """Write the demo files into `directory` (created if missing).

    Returns ({file name: size}, written). A directory that already holds exactly the demo files is
    left as it is (written=False), so ``make run`` can run again. Any other non-empty directory is
    refused unless `force`; with `force` the demo files replace what is there, and other
    ``mysql-bin.NNNNNN`` files are removed (they would not match the new index). Files of other
    names are left alone.
    """
    files = demo_files()
    sizes = {name: len(data) for name, data in files.items()}
    if directory.exists() and not directory.is_dir():
        raise DemoDirError(f"{directory} exists and is not a directory")
    present = sorted(p.name for p in directory.iterdir()) if directory.exists() else []
    if present:
        if sorted(files) == present and all((directory / n).read_bytes() == d for n, d in files.items()):
            return sizes, False
        if not force:
            shown = ", ".join(present[:5]) + (", ..." if len(present) > 5 else "")
            raise DemoDirError(
                f"refusing to write the demo binlogs into {directory}: the directory is not empty ({shown}); "
                "use --force to replace the mysql-bin.* files there, or choose an empty or new directory"
            )
    directory.mkdir(parents=True, exist_ok=True)
    for name in present:
        if _is_demo_file(name) and name not in files and (directory / name).is_file():
            (directory / name).unlink()
    for name, data in files.items():  # the index last: a reader never sees it list a missing file
        tmp = directory / f".{name}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, directory / name)
    return sizes, True

