"""Rows of the admin port's status statements: SHOW [ALL] SLAVE[S] STATUS and the two P_S filter tables.

Column names and order are MariaDB 10.11's, without the columns the applier has nothing real for: it has no
relay log, so Relay_Log_File, Relay_Log_Pos, Relay_Log_Space and Max_relay_log_size are absent (51 / 58
columns instead of 54 / 62). Every other value comes from the channel (`Channel.status()`, with the counters
of applier/counters.py; Gtid_Slave_Pos merged over the channels; Master_SSL_* from its source URL) or from
`FIXED`: settings the applier does not have, shown as a 10.11 replica without them shows them. The Replicate_*
columns always come from the channel's `FilterSet`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from binlogd.protocol.events import Gtid

from .filters import FilterSet
from .position import Position

SLAVE_STATUS_COLUMNS: tuple[str, ...] = (
    "Slave_IO_State", "Master_Host", "Master_User", "Master_Port", "Connect_Retry", "Master_Log_File",
    "Read_Master_Log_Pos", "Relay_Master_Log_File", "Slave_IO_Running",
    "Slave_SQL_Running", "Replicate_Do_DB", "Replicate_Ignore_DB", "Replicate_Do_Table", "Replicate_Ignore_Table",
    "Replicate_Wild_Do_Table", "Replicate_Wild_Ignore_Table", "Last_Errno", "Last_Error", "Skip_Counter",
    "Exec_Master_Log_Pos", "Until_Condition", "Until_Log_File", "Until_Log_Pos",
    "Master_SSL_Allowed", "Master_SSL_CA_File", "Master_SSL_CA_Path", "Master_SSL_Cert", "Master_SSL_Cipher",
    "Master_SSL_Key", "Seconds_Behind_Master", "Master_SSL_Verify_Server_Cert", "Last_IO_Errno", "Last_IO_Error",
    "Last_SQL_Errno", "Last_SQL_Error", "Replicate_Ignore_Server_Ids", "Master_Server_Id", "Master_SSL_Crl",
    "Master_SSL_Crlpath", "Using_Gtid", "Gtid_IO_Pos", "Replicate_Do_Domain_Ids", "Replicate_Ignore_Domain_Ids",
    "Parallel_Mode", "SQL_Delay", "SQL_Remaining_Delay", "Slave_SQL_Running_State", "Slave_DDL_Groups",
    "Slave_Non_Transactional_Groups", "Slave_Transactional_Groups", "Replicate_Rewrite_DB",
)
ALL_SLAVES_COLUMNS: tuple[str, ...] = (
    "Connection_name", "Slave_SQL_State", *SLAVE_STATUS_COLUMNS,
    "Retried_transactions", "Executed_log_entries", "Slave_received_heartbeats",
    "Slave_heartbeat_period", "Gtid_Slave_Pos",
)
FIXED: Final[dict[str, Any]] = {
    # no START SLAVE UNTIL
    "Until_Condition": "None", "Until_Log_File": "", "Until_Log_Pos": 0,
    # the TLS options the applier does not have (the others: protocol.tls_options.ssl_status_columns)
    "Master_SSL_CA_Path": "", "Master_SSL_Cipher": "", "Master_SSL_Crl": "", "Master_SSL_Crlpath": "",
    # no IGNORE_SERVER_IDS, DO/IGNORE_DOMAIN_IDS or MASTER_DELAY (Parallel_Mode: Channel.status)
    "Replicate_Ignore_Server_Ids": "", "Replicate_Do_Domain_Ids": "", "Replicate_Ignore_Domain_Ids": "",
    "SQL_Delay": 0, "SQL_Remaining_Delay": None,
}

APPLIER_FILTERS_COLUMNS = ("CHANNEL_NAME", "FILTER_NAME", "FILTER_RULE", "CONFIGURED_BY", "ACTIVE_SINCE", "COUNTER")
GLOBAL_FILTERS_COLUMNS = ("FILTER_NAME", "FILTER_RULE", "CONFIGURED_BY", "ACTIVE_SINCE")


def gtid_slave_pos(channel_positions: Iterable[str]) -> str:
    """Gtid_Slave_Pos: like MariaDB's global @@gtid_slave_pos, the same in every row: per domain the latest GTID
    any channel applied (the highest sequence number when two channels share a domain)."""
    latest: dict[int, Gtid] = {}
    for text in channel_positions:
        for domain, g in Position.parse_gtids(text).items():
            if domain not in latest or g.seq_no > latest[domain].seq_no:
                latest[domain] = g
    return Position(gtids=latest).gtid_text()


def slave_status_row(
    name: str, status: dict[str, Any], filters: FilterSet, skip_counter: int, *, all_slaves: bool
) -> tuple[Any, ...]:
    """One row of SHOW SLAVE STATUS or SHOW ALL SLAVES STATUS; a column without a value is a bug (KeyError)."""
    values = {**FIXED, **status}
    values.update(filters.status_columns())
    values.setdefault("Skip_Counter", skip_counter)
    values["Connection_name"] = name
    values.setdefault("Slave_SQL_State", values.get("Slave_SQL_Running_State", ""))
    columns = ALL_SLAVES_COLUMNS if all_slaves else SLAVE_STATUS_COLUMNS
    return tuple(values[c] for c in columns)
