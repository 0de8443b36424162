"""Rows of the admin port's status statements: SHOW [ALL] SLAVE[S] STATUS and the two P_S filter tables.

Names used from part A: `Channel.status() -> dict` with MariaDB's SHOW SLAVE STATUS column names (any
column it leaves out is rendered with MariaDB's idle default); the Replicate_* columns always come from the
channel's `FilterSet`, and Skip_Counter from the applier's `skip_counter` when the channel does not say.
Column lists and order are MariaDB 10.11's, as a real 10.11 server returns them.
"""

from __future__ import annotations

from typing import Any

from .filters import FilterSet

SLAVE_STATUS_COLUMNS: tuple[str, ...] = (
    "Slave_IO_State", "Master_Host", "Master_User", "Master_Port", "Connect_Retry", "Master_Log_File",
    "Read_Master_Log_Pos", "Relay_Log_File", "Relay_Log_Pos", "Relay_Master_Log_File", "Slave_IO_Running",
    "Slave_SQL_Running", "Replicate_Do_DB", "Replicate_Ignore_DB", "Replicate_Do_Table", "Replicate_Ignore_Table",
    "Replicate_Wild_Do_Table", "Replicate_Wild_Ignore_Table", "Last_Errno", "Last_Error", "Skip_Counter",
    "Exec_Master_Log_Pos", "Relay_Log_Space", "Until_Condition", "Until_Log_File", "Until_Log_Pos",
    "Master_SSL_Allowed", "Master_SSL_CA_File", "Master_SSL_CA_Path", "Master_SSL_Cert", "Master_SSL_Cipher",
    "Master_SSL_Key", "Seconds_Behind_Master", "Master_SSL_Verify_Server_Cert", "Last_IO_Errno", "Last_IO_Error",
    "Last_SQL_Errno", "Last_SQL_Error", "Replicate_Ignore_Server_Ids", "Master_Server_Id", "Master_SSL_Crl",
    "Master_SSL_Crlpath", "Using_Gtid", "Gtid_IO_Pos", "Replicate_Do_Domain_Ids", "Replicate_Ignore_Domain_Ids",
    "Parallel_Mode", "SQL_Delay", "SQL_Remaining_Delay", "Slave_SQL_Running_State", "Slave_DDL_Groups",
    "Slave_Non_Transactional_Groups", "Slave_Transactional_Groups", "Replicate_Rewrite_DB",
)
ALL_SLAVES_COLUMNS: tuple[str, ...] = (
    "Connection_name", "Slave_SQL_State", *SLAVE_STATUS_COLUMNS,
    "Retried_transactions", "Max_relay_log_size", "Executed_log_entries", "Slave_received_heartbeats",
    "Slave_heartbeat_period", "Gtid_Slave_Pos",
)
_INT_COLUMNS = frozenset({
    "Master_Port", "Connect_Retry", "Read_Master_Log_Pos", "Relay_Log_Pos", "Last_Errno", "Skip_Counter",
    "Exec_Master_Log_Pos", "Relay_Log_Space", "Until_Log_Pos", "Last_IO_Errno", "Last_SQL_Errno", "Master_Server_Id",
    "SQL_Delay", "Slave_DDL_Groups", "Slave_Non_Transactional_Groups", "Slave_Transactional_Groups",
    "Retried_transactions", "Max_relay_log_size", "Executed_log_entries", "Slave_received_heartbeats",
})
_DEFAULTS: dict[str, Any] = {
    "Slave_IO_Running": "No", "Slave_SQL_Running": "No", "Until_Condition": "None", "Master_SSL_Allowed": "No",
    "Master_SSL_Verify_Server_Cert": "No", "Using_Gtid": "No", "Parallel_Mode": "optimistic",
    "Seconds_Behind_Master": None, "SQL_Remaining_Delay": None, "Slave_heartbeat_period": 0.0,
    "Read_Master_Log_Pos": 4, "Relay_Log_Pos": 4,
}

APPLIER_FILTERS_COLUMNS = ("CHANNEL_NAME", "FILTER_NAME", "FILTER_RULE", "CONFIGURED_BY", "ACTIVE_SINCE", "COUNTER")
GLOBAL_FILTERS_COLUMNS = ("FILTER_NAME", "FILTER_RULE", "CONFIGURED_BY", "ACTIVE_SINCE")


def _default(column: str) -> Any:
    if column in _DEFAULTS:
        return _DEFAULTS[column]
    return 0 if column in _INT_COLUMNS else ""


def slave_status_row(
    name: str, status: dict[str, Any], filters: FilterSet, skip_counter: int, *, all_slaves: bool
) -> tuple[Any, ...]:
    """One row of SHOW SLAVE STATUS (54 columns) or SHOW ALL SLAVES STATUS (62 columns)."""
    values = dict(status)
    values.update(filters.status_columns())
    values.setdefault("Skip_Counter", skip_counter)
    values["Connection_name"] = name
    values.setdefault("Slave_SQL_State", values.get("Slave_SQL_Running_State", ""))
    columns = ALL_SLAVES_COLUMNS if all_slaves else SLAVE_STATUS_COLUMNS
    return tuple(values[c] if c in values else _default(c) for c in columns)
