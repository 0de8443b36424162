"""The native functions binlogd evaluates (name -> arity, implementation) and the ones it knows but refuses."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from binlogd.protocol import constants as C

from .errors import SqlError, not_supported
from .lexer import _words
from .nodes import _Func, _Node, _Op
from .values import _to_text

if TYPE_CHECKING:
    from .evaluator import _Eval


# MariaDB native functions binlogd does not evaluate: calling one is 1235, not "FUNCTION x does not exist".
_KNOWN_FUNCTIONS = frozenset(_words("""
ACOS ADDDATE ADDTIME AES_DECRYPT AES_ENCRYPT ASCII ASIN ATAN ATAN2 AVG BENCHMARK BIN BINLOG_GTID_POS BIT_AND
BIT_COUNT BIT_LENGTH BIT_OR BIT_XOR CAST CEIL CEILING CHAR CHARSET CHR COERCIBILITY COLLATION COMPRESS CONV
CONVERT CONVERT_TZ COS COT COUNT CRC32 CRC32C DATE DATEDIFF DATE_ADD DATE_FORMAT DATE_SUB DAY DAYNAME
DAYOFMONTH DAYOFWEEK DAYOFYEAR DECODE DEGREES DES_DECRYPT DES_ENCRYPT ELT ENCODE ENCRYPT EXP EXPORT_SET
EXTRACT EXTRACTVALUE FIELD FIND_IN_SET FLOOR FORMAT FORMAT_BYTES FORMAT_PICO_TIME FOUND_ROWS FROM_BASE64
FROM_DAYS FROM_UNIXTIME GET_FORMAT GET_LOCK GREATEST GROUP_CONCAT HEX HOUR INET6_ATON INET6_NTOA INET_ATON
INET_NTOA INSERT INSTR IS_FREE_LOCK IS_IPV4 IS_IPV6 IS_USED_LOCK ISNULL JSON_ARRAY JSON_EXTRACT JSON_OBJECT
JSON_VALUE KDF LAST_DAY LAST_VALUE LEAST LEFT LOAD_FILE LOCATE LOG LOG10 LOG2 LPAD LTRIM MAKEDATE MAKETIME
MAKE_SET MASTER_GTID_WAIT MASTER_POS_WAIT MAX MD5 MICROSECOND MID MIN MINUTE MONTH MONTHNAME NAME_CONST
NATURAL_SORT_KEY NEXTVAL NVL NVL2 OCT OLD_PASSWORD ORD PASSWORD PERIOD_ADD PERIOD_DIFF PI POSITION POW POWER
QUARTER QUOTE RADIANS RAND RANDOM_BYTES RELEASE_ALL_LOCKS RELEASE_LOCK REPEAT REPLACE REVERSE RIGHT ROUND
ROW_COUNT RPAD RTRIM SEC_TO_TIME SECOND SFORMAT SHA SHA1 SHA2 SIGN SIN SLEEP SOUNDEX SPACE SQRT STD STDDEV
STR_TO_DATE STRCMP SUBDATE SUBSTR SUBSTRING SUBSTRING_INDEX SUBTIME SUM SYS_GUID TAN TIME TIMEDIFF TIMESTAMP
TIMESTAMPADD TIMESTAMPDIFF TIME_FORMAT TIME_TO_SEC TO_BASE64 TO_CHAR TO_DAYS TO_SECONDS TRIM TRUNCATE
UNCOMPRESS UNCOMPRESSED_LENGTH UNHEX UPDATEXML UUID UUID_SHORT VALUES VARIANCE VAR_POP VAR_SAMP WEEK WEEKDAY
WEEKOFYEAR WSREP_LAST_SEEN_GTID WSREP_LAST_WRITTEN_GTID WSREP_SYNC_WAIT_UPTO_GTID YEAR YEARWEEK
"""))


def _arity(name: str, args: Sequence[_Node], lo: int, hi: int | None) -> None:
    if len(args) < lo or (hi is not None and len(args) > hi):
        raise SqlError(C.ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT,
                       f"Incorrect parameter count in the call to native function '{name}'")




# --- function implementations (name -> (min args, max args, fn(ev, node, args)))


def _fn_version(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.server.version


def _fn_database(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.session.database


def _fn_user(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return f"{ev.session.user}@{ev.session.host}"


def _fn_connection_id(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.session.connection_id


def _fn_unix_timestamp(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    if not args:
        return int(ev.now())
    v = ev.ev(args[0])
    if v is None:
        return None
    text = _to_text(v).strip()
    m = re.fullmatch(r"(\d{4})-?(\d{1,2})-?(\d{1,2})(?:[ T]?(\d{1,2}):?(\d{1,2}):?(\d{1,2})(\.\d{1,6})?)?", text)
    if not m:
        return None
    try:
        when = dt.datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4) or 0),
                           int(m.group(5) or 0), int(m.group(6) or 0))
    except ValueError:
        return None
    naive_epoch = (when - dt.datetime(1970, 1, 1)).total_seconds()
    epoch = naive_epoch - ev.tz_offset(naive_epoch)
    if epoch < 0:
        return 0
    frac = m.group(7)
    return Decimal(int(epoch)) + Decimal(frac) if frac else int(epoch)


def _precision(ev: _Eval, node: _Func, args: list[_Node], sql_name: str) -> int:
    if not args:
        return 0
    p = ev.integer(ev.ev(args[0]))
    if p is None or p < 0:
        return 0
    if p > 6:
        raise SqlError(C.ER_TOO_BIG_PRECISION, f"Too big precision specified for '{sql_name}'. Maximum is 6")
    return p


def _datetime_text(epoch: float, offset: int, precision: int, part: str) -> str | None:
    try:
        t = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=epoch + offset)
    except OverflowError:
        return None
    if part == "date":
        return t.strftime("%Y-%m-%d")
    text = t.strftime("%H:%M:%S" if part == "time" else "%Y-%m-%d %H:%M:%S")
    if precision:
        text += "." + f"{t.microsecond:06d}"[:precision]
    return text


def _time_func(part: str, utc: bool, sql_name: str) -> Callable[[_Eval, _Func, list[_Node]], Any]:
    def fn(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
        p = _precision(ev, node, args, sql_name) if part != "date" else 0
        now = ev.now()
        return _datetime_text(now, 0 if utc else ev.tz_offset(now), p, part)

    return fn


_TIME_FUNCS: dict[str, tuple[int, int, Callable[[_Eval, _Func, list[_Node]], Any]]] = {
    "NOW": (0, 1, _time_func("datetime", False, "current_timestamp")),
    "CURRENT_TIMESTAMP": (0, 1, _time_func("datetime", False, "current_timestamp")),
    "LOCALTIME": (0, 1, _time_func("datetime", False, "current_timestamp")),
    "LOCALTIMESTAMP": (0, 1, _time_func("datetime", False, "current_timestamp")),
    "SYSDATE": (0, 1, _time_func("datetime", False, "sysdate")),
    "UTC_TIMESTAMP": (0, 1, _time_func("datetime", True, "utc_timestamp")),
    "CURDATE": (0, 0, _time_func("date", False, "curdate")),
    "CURRENT_DATE": (0, 0, _time_func("date", False, "curdate")),
    "UTC_DATE": (0, 0, _time_func("date", True, "utc_date")),
    "CURTIME": (0, 1, _time_func("time", False, "curtime")),
    "CURRENT_TIME": (0, 1, _time_func("time", False, "curtime")),
    "UTC_TIME": (0, 1, _time_func("time", True, "utc_time")),
}


def _fn_concat(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    vals = [ev.ev(a) for a in args]
    if any(v is None for v in vals):
        return None
    if any(isinstance(v, bytes) for v in vals):
        return b"".join(v if isinstance(v, bytes) else _to_text(v).encode() for v in vals)
    return "".join(_to_text(v) for v in vals)


def _fn_concat_ws(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    sep = ev.ev(args[0])
    if sep is None:
        return None
    vals = [ev.ev(a) for a in args[1:]]
    return _to_text(sep).join(_to_text(v) for v in vals if v is not None)


def _fn_ifnull(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    v = ev.ev(args[0])
    return ev.ev(args[1]) if v is None else v


def _fn_coalesce(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    for a in args:
        v = ev.ev(a)
        if v is not None:
            return v
    return None


def _fn_nullif(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    a, b = ev.ev(args[0]), ev.ev(args[1])
    return None if ev.compare(a, b) == 0 else a


def _fn_if(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.ev(args[1]) if ev.truth(ev.ev(args[0])) else ev.ev(args[2])


def _fn_case(upper: bool) -> Callable[[_Eval, _Func, list[_Node]], Any]:
    def fn(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
        v = ev.ev(args[0])
        if v is None or isinstance(v, bytes):
            return v
        s = _to_text(v)
        return s.upper() if upper else s.lower()

    return fn


def _fn_length(chars: bool) -> Callable[[_Eval, _Func, list[_Node]], Any]:
    def fn(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
        v = ev.ev(args[0])
        if v is None:
            return None
        if isinstance(v, bytes):
            return len(v)
        s = _to_text(v)
        return len(s) if chars else len(s.encode("utf-8", "surrogateescape"))

    return fn


def _fn_abs(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    n = ev.number(ev.ev(args[0]))
    return None if n is None else abs(n)


def _fn_binlog_gtid_pos(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    f, p = ev.ev(args[0]), ev.ev(args[1])
    if f is None or p is None:
        return None
    pos = ev.integer(p)
    if pos is None or pos < 0:
        return None
    return ev.server.binlog_gtid_pos(_to_text(f), pos)


def _fn_mod(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    return ev.arith("%", ev.ev(args[0]), ev.ev(args[1]), _Op(node.start, node.end, "%", args[0], args[1]))


def _fn_last_insert_id(ev: _Eval, node: _Func, args: list[_Node]) -> Any:
    if args:
        raise not_supported("LAST_INSERT_ID(expr)")
    return 0  # binlogd never inserts into a table with AUTO_INCREMENT


_FUNCTIONS: dict[str, tuple[int, int | None, Callable[[_Eval, _Func, list[_Node]], Any]]] = {
    "VERSION": (0, 0, _fn_version),
    "DATABASE": (0, 0, _fn_database),
    "SCHEMA": (0, 0, _fn_database),
    "USER": (0, 0, _fn_user),
    "SESSION_USER": (0, 0, _fn_user),
    "SYSTEM_USER": (0, 0, _fn_user),
    "CURRENT_USER": (0, 0, _fn_user),
    "CONNECTION_ID": (0, 0, _fn_connection_id),
    "UNIX_TIMESTAMP": (0, 1, _fn_unix_timestamp),
    **_TIME_FUNCS,
    "CONCAT": (1, None, _fn_concat),
    "CONCAT_WS": (2, None, _fn_concat_ws),
    "IFNULL": (2, 2, _fn_ifnull),
    "COALESCE": (1, None, _fn_coalesce),
    "NULLIF": (2, 2, _fn_nullif),
    "IF": (3, 3, _fn_if),
    "LOWER": (1, 1, _fn_case(False)),
    "LCASE": (1, 1, _fn_case(False)),
    "UPPER": (1, 1, _fn_case(True)),
    "UCASE": (1, 1, _fn_case(True)),
    "LENGTH": (1, 1, _fn_length(False)),
    "OCTET_LENGTH": (1, 1, _fn_length(False)),
    "CHAR_LENGTH": (1, 1, _fn_length(True)),
    "CHARACTER_LENGTH": (1, 1, _fn_length(True)),
    "ABS": (1, 1, _fn_abs),
    "MOD": (2, 2, _fn_mod),
    "BINLOG_GTID_POS": (2, 2, _fn_binlog_gtid_pos),
    "LAST_INSERT_ID": (0, 1, _fn_last_insert_id),
}
