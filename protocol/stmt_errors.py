"""MariaDB's answers for prepared-statement commands that name no usable statement, and the per-connection bounds
that keep a client's statements and long data from growing without limit (texts from MariaDB 10.11's errmsg)."""

from __future__ import annotations

from mysql_mimic.errors import MysqlError

ER_WRONG_ARGUMENTS = 1210
ER_UNKNOWN_STMT_HANDLER = 1243
ER_STMT_HAS_NO_OPEN_CURSOR = 1421
ER_MAX_PREPARED_STMT_COUNT_REACHED = 1461

MAX_PREPARED_STMTS = 16382  # MariaDB's max_prepared_stmt_count default (server-wide there; per connection here)
MAX_LONG_DATA = 16 << 20  # max_allowed_packet: COM_STMT_SEND_LONG_DATA beyond it is dropped


def _error(code: int, message: str, sqlstate: bytes = b"HY000") -> MysqlError:
    err = MysqlError(message, code)  # type: ignore[arg-type]
    err.sqlstate = sqlstate  # type: ignore[attr-defined]
    return err


def unknown_statement(stmt_id: int, command: str) -> MysqlError:
    return _error(ER_UNKNOWN_STMT_HANDLER, f"Unknown prepared statement handler ({stmt_id}) given to {command}")


def no_open_cursor(stmt_id: int) -> MysqlError:
    return _error(ER_STMT_HAS_NO_OPEN_CURSOR, f"The statement ({stmt_id}) has no open cursor")


def bad_arguments(command: str) -> MysqlError:
    return _error(ER_WRONG_ARGUMENTS, f"Incorrect arguments to {command}")


def too_many_statements() -> MysqlError:
    return _error(ER_MAX_PREPARED_STMT_COUNT_REACHED,
                  f"Can't create more than max_prepared_stmt_count statements (current value: {MAX_PREPARED_STMTS})",
                  b"42000")
