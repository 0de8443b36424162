"""The primary's shared state: the store, the registered replicas, the running dumps.

`Primary` is also the `ServerView` the SQL surface reads (SHOW MASTER STATUS, @@gtid_binlog_pos...).
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from binlogd.protocol.binlog_file import scan
from binlogd.protocol.commands import RegisterSlave
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    ER_ERROR_WHEN_EXECUTING_COMMAND,
    ER_SLAVE_SAME_ID,
)
from binlogd.protocol.decision import Compat
from binlogd.protocol.describe import describe
from binlogd.protocol.events import EventDecodeError
from binlogd.protocol.gtid import format_gtid_list

from .auth import is_loopback
from .binlog.store import BinlogStore, StoreError
from .dump import DumpStream
from .expiry import PurgeRequest
from .ledger import Ledger
from .processlist import ProcessList
from .replica_filters import Assignments
from .semisync import SemiSyncMaster, SemiSyncSlave
from .sql_surface import SqlError

if TYPE_CHECKING:
    from .standalone.schema import Catalogue
    from .write_handler import WriteHandler

log = logging.getLogger("binlogd.primary")

VERSION = "10.11.19-MariaDB-binlogd-log"


@dataclass
class SlaveHost:
    server_id: int
    host: str
    port: int
    master_id: int
    owner: int  # connection id that registered it (SHOW SLAVE HOSTS forgets it when that connection ends)


class Primary:
    def __init__(self, store: BinlogStore, server_id: int, compat: Compat = Compat.BINLOGD,
                 gtid_domain_id: int = 0) -> None:
        self.store = store
        self.server_id = server_id
        self.compat = compat
        self.replica_filters: dict[int, Assignments] = {}  # --replica-filter (server/replica_filters.py)
        self.version = VERSION
        self._gtid_domain_id = gtid_domain_id
        self.slaves: dict[int, SlaveHost] = {}
        self.dumps: dict[int, DumpStream] = {}
        self.readers: set[DumpStream] = set()  # every running dump, server_id 0 too (expiry, metrics read them)
        self.hostname = socket.gethostname()
        self.started = time.monotonic()
        self.connections: Callable[[], int] = lambda: 0  # set by the network server
        self.processes: ProcessList | None = None  # SHOW PROCESSLIST, KILL (set by the network server)
        self.ledger: Ledger | None = None  # the audit ledger (server/ledger.py), when enabled
        self.standalone: WriteHandler | None = None  # standalone mode: the write path (server/standalone)
        # ServerView extras read by sysvars (None: the variable's default): @@max_binlog_size and
        # @@binlog_format (standalone), @@binlog_row_metadata (directory and relay modes)
        self.max_binlog_size: int | None = None
        self.max_connections: int | None = None  # @@max_connections (--max-connections)
        self.binlog_format: str | None = None
        self.binlog_row_metadata: str | None = None
        # relay mode (server/relay): SHOW SLAVE STATUS row, START/STOP SLAVE (True when something changed)
        self.slave_status: Callable[[], dict[str, object]] | None = None
        self.slave_control: Callable[[bool], bool] | None = None
        # semi-sync (server/semisync.py): the primary side always answers semi-sync replicas (headers);
        # `--rpl-semi-sync-master-enabled` makes standalone commits wait; the relay's upstream side reports here
        self.semi_sync = SemiSyncMaster()
        self.semi_sync_slave = SemiSyncSlave()
        # standalone and relay modes: PURGE BINARY LOGS and expiry, in the binlog writer's thread (server/expiry.py)
        self.purge: Callable[[PurgeRequest], Awaitable[list[str]]] | None = None
        self.binlog_expire_logs_seconds = 0  # @@binlog_expire_logs_seconds (@@expire_logs_days: its alias)

    @property
    def schema(self) -> Catalogue | None:
        """The standalone primary's schema catalogue (SHOW TABLES, DESCRIBE...); None in the read-only modes."""
        return None if self.standalone is None else self.standalone.schema

    def uptime(self) -> int:
        return int(time.monotonic() - self.started)

    def threads_connected(self) -> int:
        return self.connections()

    # --- replicas -----------------------------------------------------------------------------------
    def register_slave(self, cmd: RegisterSlave, peer_host: str, connection_id: int) -> None:
        # no report_host: MariaDB shows the connection's resolved host name, which is localhost on loopback
        host = cmd.host or ("localhost" if is_loopback(peer_host) else peer_host)
        self.slaves[cmd.server_id] = SlaveHost(cmd.server_id, host, cmd.port, cmd.master_id or self.server_id,
                                               connection_id)
        log.info("replica server_id=%d registered (host %s port %d)", cmd.server_id, host, cmd.port)

    def connection_closed(self, connection_id: int) -> None:
        """Forget registrations made by a connection that ended (MariaDB unregisters with the THD)."""
        for sid in [sid for sid, s in self.slaves.items() if s.owner == connection_id]:
            del self.slaves[sid]

    def start_dump(self, dump: DumpStream, replica_server_id: int) -> None:
        """Kill an older dump of the same server_id (MariaDB kill_zombie_dump_threads)."""
        self.readers.add(dump)
        if replica_server_id == 0:
            return
        old = self.dumps.get(replica_server_id)
        if old is not None and old is not dump:
            old.kill(ER_SLAVE_SAME_ID, "A slave with the same server_uuid/server_id is already connected")
        self.dumps[replica_server_id] = dump

    def end_dump(self, dump: DumpStream, replica_server_id: int) -> None:
        self.readers.discard(dump)
        if self.dumps.get(replica_server_id) is dump:
            del self.dumps[replica_server_id]

    def files_in_use(self) -> set[str]:
        """The binlog files connected dumps are reading (or asked for): PURGE and expiry never remove them."""
        return {d.file for d in self.readers if d.file}

    # --- ServerView for the SQL surface ---------------------------------------------------------------
    def binlog_checksum(self) -> str:
        try:
            alg = self.store.head(self.store.active()).checksum_alg
        except (OSError, StoreError, ValueError):
            return "CRC32"
        return "CRC32" if alg == BINLOG_CHECKSUM_ALG_CRC32 else "NONE"

    def gtid_binlog_pos(self) -> str:
        if not self.store.files():  # a relay before its first file: no binlog yet
            return ""
        return format_gtid_list(self.store.binlog_state().current_pos())

    def gtid_domain_id(self) -> int:
        return self._gtid_domain_id

    def binary_logs(self) -> list[tuple[str, int]]:
        return [(n, self.store.end_of(n)) for n in self.store.files()]

    def master_status(self) -> tuple[str, int] | None:
        names = self.store.files()
        if not names:  # a relay before its first file: empty, like MariaDB without a binlog
            return None
        return names[-1], self.store.end_of(names[-1])

    def slave_hosts(self) -> list[tuple[int, str, int, int]]:
        return [(s.server_id, s.host, s.port, s.master_id) for s in self.slaves.values()]

    def processlist(self, viewer_id: int) -> list[tuple[object, ...]]:
        """The connections `viewer_id` may see (server/processlist.py ProcessList.rows)."""
        return [] if self.processes is None else self.processes.rows(viewer_id)

    def binlog_events(self, file: str | None, pos: int | None, offset: int,
                      limit: int | None) -> list[tuple[str, int, str, int, int, str]]:
        """SHOW BINLOG EVENTS (MariaDB mysql_show_binlog_events: errors are 1220 with its texts)."""
        def fail(why: str) -> SqlError:
            return SqlError(ER_ERROR_WHEN_EXECUTING_COMMAND, f"Error when executing command SHOW BINLOG EVENTS: {why}")

        names = self.store.files()
        if not names:
            return []
        name = file if file else names[0]
        if name not in names:
            raise fail("Could not find target log")
        with open(self.store.path(name), "rb") as f:
            data = f.read(self.store.end_of(name))  # binlogd's own writer: only what is committed
        start = max(BIN_LOG_HEADER_SIZE, pos or 0)
        if pos is not None and pos > len(data):
            raise fail(f"Invalid pos specified. Requested from pos:{pos} is greater than actual file size:"
                       f"{len(data)}")
        head = self.store.head(name)
        res = scan(data)
        starts = {e.pos for e in res.events}
        if start not in starts and start != res.end:
            raise fail("Wrong offset or I/O error")
        rows: list[tuple[str, int, str, int, int, str]] = []
        for ev in res.events:
            if ev.pos < start:
                continue
            try:
                etype, info = describe(data[ev.pos : ev.end], head.checksum_alg)
            except EventDecodeError as e:
                log.warning("SHOW BINLOG EVENTS: %s at %d: %s", name, ev.pos, e)
                raise fail("Wrong offset or I/O error") from e
            rows.append((name, ev.pos, etype, ev.server_id, ev.log_pos, info))
        end = None if limit is None else offset + limit
        return rows[offset:end]

    def binlog_gtid_pos(self, file: str, pos: int) -> str | None:
        """The GTID position matching file/pos (BINLOG_GTID_POS()); NULL for an unknown file or a position
        inside an event."""
        if not file or not self.store.has(file):
            return None
        state = self.store.gtid_state_at(file, max(pos, BIN_LOG_HEADER_SIZE))
        if state is None:
            return None  # not an event boundary: MariaDB has no GTID position for it either
        return format_gtid_list(state.current_pos())
