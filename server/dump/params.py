"""What a dump is asked (DumpParams), how it ends (DumpError), what it did (DumpStats), where it writes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from binlogd.protocol.constants import BINLOG_DUMP_NON_BLOCK, ER_MASTER_FATAL_ERROR_READING_BINLOG
from binlogd.protocol.decision import Compat
from binlogd.protocol.repl_filters import FilterSet


class Writer(Protocol):
    def write(self, data: bytes | bytearray | memoryview) -> None: ...
    async def drain(self) -> None: ...


@dataclass
class DumpParams:
    """Everything the dump needs from the command and the session's user variables."""

    file: str
    pos: int
    flags: int
    replica_server_id: int
    capability: int
    skip_replication: bool
    checksum_aware: bool  # @master_binlog_checksum exists in the session
    first_rotate_crc: bool  # @master_binlog_checksum said CRC32
    heartbeat_ns: int = 0
    connect_state: str | None = None  # @slave_connect_state (GTID mode when not None)
    until_state: str | None = None  # @slave_until_gtid: START SLAVE UNTIL master_gtid_pos (GTID mode only)
    gtid_strict: bool = False
    gtid_ignore_duplicates: bool = False
    compat: Compat = Compat.BINLOGD
    send_tables_info: bool = False  # @binlogd_send_tables_info: this client wants binlogd's Tables_info events
    semi_sync: bool = False  # @rpl_semi_sync_slave: every event packet gets the semi-sync header
    add_checksums: object = None  # @binlogd_add_checksums as set (server/transcode.py checks it)
    table_filters: FilterSet | None = None  # replicate-* rules of this replica (server/replica_filters.py)
    filters_from: str | None = None  # where they come from: "server_id", "user" or "session"

    @property
    def non_blocking(self) -> bool:
        return bool(self.flags & BINLOG_DUMP_NON_BLOCK) or self.replica_server_id == 0


class DumpError(Exception):
    """Ends the dump with an ERR packet. `suffix` adds MariaDB's "; the first event ..." coordinates."""

    def __init__(self, message: str, code: int = ER_MASTER_FATAL_ERROR_READING_BINLOG, suffix: bool = True):
        super().__init__(message)
        self.code = code
        self.message = message
        self.suffix = suffix


@dataclass
class DumpStats:
    events_read: int = 0
    events_sent: int = 0
    bytes_sent: int = 0
    holes: int = 0
    dummies: int = 0
    begins: int = 0
    fakes: int = 0
    heartbeats: int = 0
    fan_ins: int = 0  # turns a parked group's leader took for this dump (server/dump/tail.py)
    thread_writes: int = 0  # big writes handed to the sender thread (sender.py; those that found the socket full too)
    end_reason: str = ""
    close_reason: str = ""  # the ledger's close reason: eof, client_gone, killed, error, shutdown
    started_at: float = field(default_factory=time.monotonic)
    last_event_at: float | None = None  # monotonic time of the last write other than a heartbeat (metrics)
