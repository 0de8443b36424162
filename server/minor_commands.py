"""The small commands MariaDB 10.11 answers and clients still send (issue 19: the answer MariaDB gives).

Each answer was recorded from a real 10.11 (tests/test_bad_input_mariadb.py compares them): a short body reads as
if padded with zero bytes, as MariaDB's `uint2korr`/`uint4korr` on its zero-filled network buffer do.
COM_PROCESS_INFO and COM_PROCESS_KILL answer as SHOW PROCESSLIST and KILL do (server/processlist.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from binlogd.protocol.packets import err_packet
from mysql_mimic.results import ensure_result_set

from .sql_surface import SqlError

if TYPE_CHECKING:
    from .connection import ReplicationConnection

COM_FIELD_LIST = 0x04
COM_PROCESS_INFO = 0x0A
COM_PROCESS_KILL = 0x0C
COM_REFRESH = 0x07
COM_STATISTICS = 0x09
COM_DEBUG = 0x0D
COM_SET_OPTION = 0x1B
COM_STMT_BULK_EXECUTE = 0xFA

ER_NO_DB_ERROR = 1046
ER_UNKNOWN_COM_ERROR = 1047
ER_UNSUPPORTED_PS = 1295
ER_MALFORMED_PACKET = 1835
MYSQL_OPTION_MULTI_STATEMENTS_ON, MYSQL_OPTION_MULTI_STATEMENTS_OFF = 0, 1
BULK_HEADER = 6  # statement id (4) + flags (2): shorter is malformed


def _padded(body: bytes, size: int) -> int:
    return int.from_bytes(body[:size].ljust(size, b"\0"), "little")


async def _set_option(conn: ReplicationConnection, body: bytes) -> bytes:
    """mysql_set_server_option: multi-statements on/off gets EOF (OK with CLIENT_DEPRECATE_EOF); any other
    option 1047. binlogd runs one statement per COM_QUERY either way (a second one is 1064, as MariaDB without
    the capability), so only the answer matters here."""
    option = _padded(body, 2)
    if option not in (MYSQL_OPTION_MULTI_STATEMENTS_ON, MYSQL_OPTION_MULTI_STATEMENTS_OFF):
        return err_packet(ER_UNKNOWN_COM_ERROR, "Unknown command", b"08S01")
    return conn.ok_or_eof()


async def _eof(conn: ReplicationConnection, body: bytes) -> bytes:
    """COM_DEBUG: MariaDB writes its debug dump to its own log and answers EOF."""
    return conn.eof()


async def _refresh(conn: ReplicationConnection, body: bytes) -> bytes:
    """COM_REFRESH (mysql_refresh): OK whatever the flags; binlogd has no caches or logs to flush by it."""
    return conn.ok()


async def _statistics(conn: ReplicationConnection, body: bytes) -> bytes:
    """COM_STATISTICS (mysqladmin status): one string packet in MariaDB's layout; the figures binlogd keeps
    (uptime, connected threads) are real, the table figures are 0 (binlogd opens no tables)."""
    status: dict[str, Any] = {}
    result = await conn.rsession.handle_query("SHOW GLOBAL STATUS", {})
    if result is not None:
        status = {str(r[0]): r[1] for r in result[0]}
    uptime = int(status.get("Uptime") or 0)
    threads = int(status.get("Threads_connected") or 1)
    text = (f"Uptime: {uptime}  Threads: {threads}  Questions: 0  Slow queries: 0  Opens: 0  Open tables: 0  "
            f"Queries per second avg: 0.000")
    return text.encode()


async def _field_list(conn: ReplicationConnection, body: bytes) -> bytes | None:
    """COM_FIELD_LIST (mysql_list_fields): without a current database MariaDB answers 1046; with one, mimic's
    handler lists the table's columns (None: it wrote the answer itself)."""
    if not conn.rsession.state.database:
        return err_packet(ER_NO_DB_ERROR, "No database selected", b"3D000")
    await conn.handle_field_list(body)
    return None


async def _bulk_execute(conn: ReplicationConnection, body: bytes) -> bytes:
    """COM_STMT_BULK_EXECUTE: binlogd does not offer MARIADB_CLIENT_STMT_BULK_OPERATIONS, so MariaDB's answer to a
    client without it: 1835 for a body shorter than its header, else 1295."""
    if len(body) < BULK_HEADER:
        return err_packet(ER_MALFORMED_PACKET, "Malformed communication packet", b"HY000")
    return err_packet(ER_UNSUPPORTED_PS, "This command is not supported in the prepared statement protocol yet",
                      b"HY000")


async def _process_info(conn: ReplicationConnection, body: bytes) -> None:
    """COM_PROCESS_INFO (mysql_list_processes): SHOW PROCESSLIST's result set; the caller's own row shows the
    command `Processlist` without Info, as MariaDB's does."""
    conn.proc_info = None
    result = await conn.rsession.handle_query("SHOW PROCESSLIST", {})
    await conn.write_text_resultset(await ensure_result_set(result))


async def _process_kill(conn: ReplicationConnection, body: bytes) -> bytes:
    """COM_PROCESS_KILL (mysql_kill): KILL CONNECTION of the 4-byte id; errors as KILL's."""
    processes = conn.primary.processes
    assert processes is not None
    try:
        processes.kill(conn.connection_id, _padded(body, 4), query=False)
    except SqlError as e:
        return err_packet(e.code, e.message, e.sqlstate.encode())
    return conn.ok()


MINOR_COMMANDS: dict[int, Callable[[ReplicationConnection, bytes], Awaitable[bytes | None]]] = {
    COM_SET_OPTION: _set_option,
    COM_DEBUG: _eof,
    COM_REFRESH: _refresh,
    COM_STATISTICS: _statistics,
    COM_FIELD_LIST: _field_list,
    COM_STMT_BULK_EXECUTE: _bulk_execute,
    COM_PROCESS_INFO: _process_info,
    COM_PROCESS_KILL: _process_kill,
}
