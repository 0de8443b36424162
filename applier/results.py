"""The target's answers to a multi-statement query, read without pymysql's per-result objects.

A 1-row transaction is four or five statements on the target (SET, BEGIN, BINLOG, the position row, COMMIT), each
answered by an OK packet. pymysql builds a MySQLResult, a MysqlPacket and an OKPacketWrapper for each: about 20 µs
of Python per statement, the applier's largest cost for small transactions (issue 20). OK packets are decoded
here directly from pymysql's socket file; anything else (an error, a result set) goes through pymysql's own code,
so errors and lost connections raise exactly what `Connection.next_result` raises.

Names: `send_query`, `read_result`.
"""

from __future__ import annotations

from typing import Any, Final

from pymysql import err
from pymysql.connections import MAX_PACKET_LEN, MySQLResult
from pymysql.constants import COMMAND, CR
from pymysql.protocol import MysqlPacket

_OK: Final = 0x00


def send_query(conn: Any, sql: bytes) -> None:
    """Send a COM_QUERY; its results are read with `read_result`, one per statement."""
    conn._execute_command(COMMAND.COM_QUERY, sql)


def _lenenc(data: bytes, i: int) -> tuple[int, int]:
    """A length-encoded integer at `i`: (value, index after it)."""
    b = data[i]
    if b < 0xFB:
        return b, i + 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}[b]
    return int.from_bytes(data[i + 1:i + 1 + width], "little"), i + 1 + width


def _packet(conn: Any) -> bytes:
    """One whole packet's payload (pymysql's `_read_packet` without the packet object)."""
    if conn._current_timeout != conn._read_timeout:
        conn._sock.settimeout(conn._read_timeout)
        conn._current_timeout = conn._read_timeout
    parts = []
    while True:
        header = conn._read_bytes(4)
        if header[3] != conn._next_seq_id:  # out of step, or MariaDB's shutdown error: pymysql's own handling
            raise _unexpected(conn, header)
        conn._next_seq_id = (header[3] + 1) % 256
        length = int.from_bytes(header[:3], "little")
        parts.append(conn._read_bytes(length))
        if length < MAX_PACKET_LEN:
            return parts[0] if len(parts) == 1 else b"".join(parts)


def _unexpected(conn: Any, header: bytes) -> Exception:
    conn._force_close()
    if header[3] == 0:
        return err.OperationalError(CR.CR_SERVER_LOST, "Lost connection to MySQL server during query")
    return err.InternalError(f"Packet sequence number wrong - got {header[3]} expected {conn._next_seq_id}")


def read_result(conn: Any) -> int:
    """The next statement's result: its affected (found) rows. Raises pymysql's exception for an error packet."""
    data = _packet(conn)
    if data[0] == _OK and len(data) >= 7:
        affected, i = _lenenc(data, 1)
        _, i = _lenenc(data, i)  # last insert id
        conn.server_status = data[i] | data[i + 1] << 8
        conn._result = None
        conn._affected_rows = affected
        return affected
    packet = MysqlPacket(data, conn.encoding)
    if packet.is_error_packet():
        packet.raise_for_error()
    result = MySQLResult(conn)
    try:
        if packet.is_load_local_packet():
            result._read_load_local_packet(packet)
        else:
            result._read_result_packet(packet)
    finally:
        result.connection = None
    conn._result = result
    if result.server_status is not None:
        conn.server_status = result.server_status
    conn._affected_rows = result.affected_rows
    return int(result.affected_rows or 0)
