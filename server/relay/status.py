"""The upstream connection's state, shown as MariaDB 10.11's SHOW SLAVE STATUS row.

binlogd has no SQL thread: an event is "executed" when it is stored and published to dump streams, so the
SQL-side columns (Relay_Master_Log_File, Exec_Master_Log_Pos, Slave_SQL_Running) describe the store, and
Read_Master_Log_Pos the last event received (stored or still in an incomplete group).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from binlogd.protocol.tls_options import TlsOptions, ssl_status_columns

log = logging.getLogger("binlogd.relay")

# MariaDB 10.11 Slave_IO_State texts (slave.cc)
IO_CONNECTING = "Connecting to master"
IO_REQUESTING = "Requesting binlog dump"
IO_WAITING = "Waiting for master to send event"
IO_QUEUEING = "Queueing master event to the relay log"
IO_RECONNECT_WAIT = "Waiting to reconnect after a failed master event read"
SQL_STATE_IDLE = "Slave has read all relay log; waiting for more updates"

# error codes and texts as the 10.11 IO thread reports them
ER_SLAVE_RELAY_LOG_WRITE_FAILURE = 1595
ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE = 1743


@dataclass
class RelayStatus:
    """Mutable state shared by the upstream task (event loop) and SQL statements (worker threads)."""

    host: str
    port: int
    user: str
    connect_retry: int
    heartbeat_s: float
    tls: TlsOptions | None = None  # the --upstream URL's ssl-* options (Master_SSL_*)
    using_gtid: str = "No"
    io_running: str = "No"  # Yes | No | Connecting (MariaDB's three values)
    io_state: str = ""
    master_log_file: str = ""  # where the next upstream event comes from
    read_pos: int = 4
    stored_file: str = ""  # the store's active file and committed end
    stored_pos: int = 0
    stored_bytes: int = 0
    gtid_io_pos: str = ""
    master_server_id: int = 0
    last_io_errno: int = 0
    last_io_error: str = ""
    last_io_error_at: float | None = None
    last_event_ts: int = 0  # header timestamp of the last stored event (Seconds_Behind_Master)
    caught_up: bool = True  # nothing received but not yet stored
    heartbeats: int = 0
    events_stored: int = 0
    groups_stored: int = 0
    reconnects: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _last_key: str | None = field(default=None, repr=False)

    def set_error(self, code: int, message: str, repeat_key: str | None = None) -> None:
        """Record Last_IO_Errno/Error; a retry failing the same way (same `repeat_key`) is logged at DEBUG only."""
        with self._lock:
            repeated = repeat_key is not None and repeat_key == self._last_key
            self._last_key = repeat_key
            self.last_io_errno, self.last_io_error = code, message
            self.last_io_error_at = time.time()
        log.log(logging.DEBUG if repeated else logging.ERROR, "upstream %s:%d: error %d: %s", self.host, self.port,
                code, message)

    def clear_error(self) -> None:
        with self._lock:
            self.last_io_errno, self.last_io_error, self.last_io_error_at = 0, "", None
            self._last_key = None

    def seconds_behind(self, now: float | None = None) -> int | None:
        """NULL while not connected; 0 when everything received is stored; else the age of the last stored event."""
        if self.io_running != "Yes":
            return None
        if self.caught_up or not self.last_event_ts:
            return 0
        return max(0, int((now or time.time()) - self.last_event_ts))

    def row(self) -> dict[str, object]:
        """Values by SHOW SLAVE STATUS column name (the SQL surface orders them)."""
        with self._lock:
            running = self.io_running == "Yes"
            return {
                "Slave_IO_State": self.io_state,
                "Master_Host": self.host,
                "Master_User": self.user,
                "Master_Port": self.port,
                "Connect_Retry": self.connect_retry,
                "Master_Log_File": self.master_log_file,
                "Read_Master_Log_Pos": self.read_pos,
                "Relay_Log_File": self.stored_file,
                "Relay_Log_Pos": self.stored_pos,
                "Relay_Master_Log_File": self.stored_file,
                "Slave_IO_Running": self.io_running,
                "Slave_SQL_Running": "Yes" if self.io_running != "No" else "No",
                "Replicate_Do_DB": "", "Replicate_Ignore_DB": "", "Replicate_Do_Table": "",
                "Replicate_Ignore_Table": "", "Replicate_Wild_Do_Table": "", "Replicate_Wild_Ignore_Table": "",
                "Last_Errno": 0, "Last_Error": "", "Skip_Counter": 0,
                "Exec_Master_Log_Pos": self.stored_pos,
                "Relay_Log_Space": self.stored_bytes,
                "Until_Condition": "None", "Until_Log_File": "", "Until_Log_Pos": 0,
                "Master_SSL_CA_Path": "", "Master_SSL_Cipher": "", **ssl_status_columns(self.tls),
                "Seconds_Behind_Master": self.seconds_behind(),
                "Last_IO_Errno": self.last_io_errno,
                "Last_IO_Error": self.last_io_error,
                "Last_SQL_Errno": 0, "Last_SQL_Error": "",
                "Replicate_Ignore_Server_Ids": "",
                "Master_Server_Id": self.master_server_id,
                "Master_SSL_Crl": "", "Master_SSL_Crlpath": "",
                "Using_Gtid": self.using_gtid,
                "Gtid_IO_Pos": self.gtid_io_pos,
                "Replicate_Do_Domain_Ids": "", "Replicate_Ignore_Domain_Ids": "",
                "Parallel_Mode": "optimistic", "SQL_Delay": 0, "SQL_Remaining_Delay": None,
                "Slave_SQL_Running_State": SQL_STATE_IDLE if running else "",
                "Slave_DDL_Groups": 0, "Slave_Non_Transactional_Groups": 0,
                "Slave_Transactional_Groups": self.groups_stored,
                "Replicate_Rewrite_DB": "",
                # SHOW ALL SLAVES STATUS extras
                "Connection_name": "", "Slave_SQL_State": SQL_STATE_IDLE if running else "",
                "Retried_transactions": 0, "Max_relay_log_size": 1073741824,
                "Executed_log_entries": self.events_stored, "Slave_received_heartbeats": self.heartbeats,
                "Slave_heartbeat_period": f"{self.heartbeat_s:.3f}", "Gtid_Slave_Pos": self.gtid_io_pos,
            }
