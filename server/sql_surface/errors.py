"""MariaDB errors the SQL surface raises: SqlError (number, text, SQLSTATE) and the helpers that build the
common ones, so each message has one home."""

from __future__ import annotations

from binlogd.protocol import constants as C

from .values import _to_text

_SQLSTATE: dict[int, str] = {
    C.ER_NO_DB_ERROR: "3D000", C.ER_BAD_DB_ERROR: "42000", C.ER_PARSE_ERROR: "42000",
    C.ER_NOT_SUPPORTED_YET: "42000", C.ER_SP_DOES_NOT_EXIST: "42000", C.ER_WRONG_VALUE_FOR_VAR: "42000",
    C.ER_WRONG_TYPE_FOR_VAR: "42000", C.ER_DBACCESS_DENIED_ERROR: "42000", C.ER_BAD_FIELD_ERROR: "42S22",
    C.ER_EMPTY_QUERY: "42000", C.ER_UNKNOWN_TABLE: "42S02", C.ER_UNKNOWN_CHARACTER_SET: "42000",
    C.ER_NO_SUCH_TABLE: "42S02", C.ER_OPERAND_COLUMNS: "21000", C.ER_SUBQUERY_NO_1_ROW: "21000",
    C.ER_COLLATION_CHARSET_MISMATCH: "42000", C.ER_ILLEGAL_VALUE_FOR_TYPE: "22007",
    C.ER_TOO_BIG_PRECISION: "42000", C.ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT: "42000",
    C.ER_DATA_OUT_OF_RANGE: "22003", C.ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT: "21000",
}


class SqlError(Exception):
    """A MariaDB error to send as an ERR packet: number, MariaDB's text, SQLSTATE (derived from the number)."""

    def __init__(self, code: int, message: str, sqlstate: str | None = None) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.sqlstate = sqlstate or _SQLSTATE.get(code, "HY000")
        # set when MariaDB sends the error after a result set's column metadata (SHOW BINLOG EVENTS)
        self.after_columns: list[str] | None = None

    def __str__(self) -> str:
        return f"ERROR {self.code} ({self.sqlstate}): {self.message}"


def not_supported(what: str) -> SqlError:
    """1235 with binlogd's name: valid SQL that this server does not do."""
    return SqlError(C.ER_NOT_SUPPORTED_YET, f"This version of binlogd doesn't yet support '{what}'")


_SYNTAX = ("You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server "
           "version for the right syntax to use")


def _parse_error(sql: str, pos: int, what: str = _SYNTAX) -> SqlError:
    """ER_PARSE_ERROR '%s near '%-.80T' at line %d': the rest of the query from the failing token.

    %-.80T cuts at 80 characters and marks the cut with '...' (77 + 3), as MariaDB 10.11 prints it.
    """
    near = sql[pos:]
    if len(near) > 80:
        near = near[:77] + "..."
    line = sql.count("\n", 0, pos) + 1
    return SqlError(C.ER_PARSE_ERROR, f"{what} near '{near}' at line {line}")


def _unknown_sysvar(name: str) -> SqlError:
    return SqlError(C.ER_UNKNOWN_SYSTEM_VARIABLE, f"Unknown system variable '{name}'")


def _wrong_value(name: str, value: object) -> SqlError:
    text = "NULL" if value is None else _to_text(value)
    if len(text) > 200:
        text = text[:197] + "..."
    return SqlError(C.ER_WRONG_VALUE_FOR_VAR, f"Variable '{name}' can't be set to the value of '{text}'")


def _wrong_type(name: str) -> SqlError:
    return SqlError(C.ER_WRONG_TYPE_FOR_VAR, f"Incorrect argument type to variable '{name}'")
