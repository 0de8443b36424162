"""The system variables binlogd's SQL surface knows: name, scope, type, default (or where the value comes from).

Clients probe a primary with `SELECT @@x`, `SHOW VARIABLES LIKE 'x'` and `SET x=...` before and around a dump
(a 10.11 replica reads `server_id` and `@@global.binlog_checksum`, mariadb CLI reads `@@version_comment`,
pymysql and Connector/J set `autocommit`, `sql_mode`, `NAMES`...). Everything here mirrors MariaDB 10.11's
`information_schema.SYSTEM_VARIABLES` (scope, type, limits, defaults were read from a 10.11.19 server), except
where binlogd's own state is the truth: those defaults are callables on the `ServerView`.

Variables binlogd does not implement are deliberately absent, so they answer 1193 "Unknown system variable"
instead of a made-up value. The `rpl_semi_sync_*` variables and `Rpl_semi_sync_*` status variables are present
because binlogd speaks semi-sync (server/semisync.py): a 10.11 replica with rpl_semi_sync_slave_enabled
finds `rpl_semi_sync_master_enabled` (SHOW VARIABLES) and asks for the semi-sync header, as from a MariaDB
primary; they are read-only here (set with the command-line options of the same names).

The module is data plus small pure helpers (charset/collation/sql_mode/time_zone validation); the SQL
evaluator in `sql_surface` owns sessions and error reporting.
"""

from __future__ import annotations

import enum
import platform
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sql_surface.server_view import ServerView

Value = int | float | str | None


class Scope(enum.Enum):
    """Where a variable lives (information_schema.SYSTEM_VARIABLES.VARIABLE_SCOPE)."""

    GLOBAL = "GLOBAL"  # one server-wide value; SET SESSION -> 1229, @@session.x -> 1238
    BOTH = "SESSION"  # global default with a per-session copy
    SESSION_ONLY = "SESSION ONLY"  # no global value; SET GLOBAL -> 1228, @@global.x -> 1238


class Kind(enum.Enum):
    """Value type; decides SET validation and how SHOW VARIABLES prints the value."""

    BOOL = "BOOLEAN"  # SELECT gives 0/1, SHOW gives OFF/ON
    INT = "BIGINT UNSIGNED"
    DOUBLE = "DOUBLE"
    STR = "VARCHAR"
    ENUM = "ENUM"
    SET = "SET"
    CHARSET = "CHARSET"
    COLLATION = "COLLATION"
    TIME_ZONE = "TIME_ZONE"


def _opt(name: str, fallback: Value) -> Callable[[ServerView], Value]:
    """Read an optional ServerView attribute (value or zero-argument callable), else `fallback`.

    The ServerView protocol is kept minimal; a server that knows more (its port, uptime...) just grows the
    attribute and SHOW VARIABLES picks it up.
    """

    def get(server: ServerView) -> Value:
        v = getattr(server, name, None)
        if callable(v):
            v = v()
        return fallback if v is None else v

    return get


def _log_bin(server: ServerView) -> Value:
    """ON when there is a binlog to serve; keeps @@log_bin, SHOW MASTER STATUS and SHOW BINARY LOGS consistent."""
    return 1 if server.master_status() is not None or server.binary_logs() else 0


def _gtid_current_pos(server: ServerView) -> Value:
    """binlogd is not a replica of anyone by default, so its current position is its binlog position."""
    v = getattr(server, "gtid_current_pos", None)
    if callable(v):
        v = v()
    return server.gtid_binlog_pos() if v is None else v


def _semi(obj: str, attr: str, fallback: Value) -> Callable[[ServerView], Value]:
    """An attribute of the server's semi-sync state (`semi_sync` primary side, `semi_sync_slave` relay side)."""

    def get(server: ServerView) -> Value:
        o = getattr(server, obj, None)
        v = fallback if o is None else getattr(o, attr)
        return int(v) if isinstance(v, bool) else v

    return get


def _semi_status(key: str) -> Callable[[ServerView], Value]:
    """One Rpl_semi_sync_master_* status variable (SemiSyncMaster.status())."""

    def get(server: ServerView) -> Value:
        m = getattr(server, "semi_sync", None)
        return None if m is None else m.status()[key]

    return get


def _system_time_zone(server: ServerView) -> Value:
    return time.strftime("%Z") or "UTC"


@dataclass(frozen=True)
class SysVar:
    """One system variable.

    `default` is the global value: a constant, or a callable on the ServerView for values that are binlogd's
    own state (server_id, binlog_checksum, gtid_binlog_pos...). The per-session value starts as the global one.
    """

    name: str
    scope: Scope
    kind: Kind
    default: Value | Callable[[ServerView], Value]
    read_only: bool = False  # any SET -> 1238 "... is a read only variable"
    session_read_only: bool = False  # SET SESSION -> 1621 (e.g. max_allowed_packet)
    choices: tuple[str, ...] = ()  # ENUM / SET members, in MariaDB's order
    min: int | None = None
    max: int | None = None
    nullable: bool = False  # may be set to NULL (character_set_results)

    def global_value(self, server: ServerView) -> Value:
        d = self.default
        return d(server) if callable(d) else d


_U32 = 4294967295
_U64 = 18446744073709551615
_TIMEOUT = (1, 31536000)

SQL_MODES: tuple[str, ...] = (
    "REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "IGNORE_BAD_TABLE_OPTIONS",
    "ONLY_FULL_GROUP_BY", "NO_UNSIGNED_SUBTRACTION", "NO_DIR_IN_CREATE", "POSTGRESQL", "ORACLE", "MSSQL",
    "DB2", "MAXDB", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS", "NO_FIELD_OPTIONS", "MYSQL323", "MYSQL40", "ANSI",
    "NO_AUTO_VALUE_ON_ZERO", "NO_BACKSLASH_ESCAPES", "STRICT_TRANS_TABLES", "STRICT_ALL_TABLES",
    "NO_ZERO_IN_DATE", "NO_ZERO_DATE", "ALLOW_INVALID_DATES", "ERROR_FOR_DIVISION_BY_ZERO", "TRADITIONAL",
    "NO_AUTO_CREATE_USER", "HIGH_NOT_PRECEDENCE", "NO_ENGINE_SUBSTITUTION", "PAD_CHAR_TO_FULL_LENGTH",
    "EMPTY_STRING_IS_NULL", "SIMULTANEOUS_ASSIGNMENT", "TIME_ROUND_FRACTIONAL",
)
_MODE_BIT = {m: 1 << i for i, m in enumerate(SQL_MODES)}
# What MariaDB 10.11 adds when a combination mode is set (observed: SET sql_mode='ANSI'; SELECT @@sql_mode).
_MODE_EXPANSION: dict[str, tuple[str, ...]] = {
    "ANSI": ("REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE"),
    "TRADITIONAL": ("STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "NO_ZERO_IN_DATE", "NO_ZERO_DATE",
                    "ERROR_FOR_DIVISION_BY_ZERO", "NO_AUTO_CREATE_USER", "NO_ENGINE_SUBSTITUTION"),
    "ORACLE": ("PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS",
               "NO_FIELD_OPTIONS", "NO_AUTO_CREATE_USER", "SIMULTANEOUS_ASSIGNMENT"),
    "MSSQL": ("PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS",
              "NO_FIELD_OPTIONS"),
    "DB2": ("PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS",
            "NO_FIELD_OPTIONS"),
    "POSTGRESQL": ("PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS",
                   "NO_FIELD_OPTIONS"),
    "MAXDB": ("PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS",
              "NO_FIELD_OPTIONS", "NO_AUTO_CREATE_USER"),
    "MYSQL323": ("HIGH_NOT_PRECEDENCE",),
    "MYSQL40": ("HIGH_NOT_PRECEDENCE",),
}
DEFAULT_SQL_MODE = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"

_V: list[SysVar] = [
    SysVar("auto_increment_increment", Scope.BOTH, Kind.INT, 1, min=1, max=65535),
    SysVar("auto_increment_offset", Scope.BOTH, Kind.INT, 1, min=1, max=65535),
    SysVar("autocommit", Scope.BOTH, Kind.BOOL, 1),
    SysVar("binlog_annotate_row_events", Scope.BOTH, Kind.BOOL, 1),
    SysVar("binlog_checksum", Scope.GLOBAL, Kind.ENUM, lambda s: s.binlog_checksum(), choices=("NONE", "CRC32")),
    # --binlog-expire-logs-seconds / --expire-logs-days (aliases, as in MariaDB 10.11; startup options here)
    SysVar("binlog_expire_logs_seconds", Scope.GLOBAL, Kind.INT, _opt("binlog_expire_logs_seconds", 0),
           read_only=True, min=0, max=8553600),
    SysVar("binlog_format", Scope.BOTH, Kind.ENUM, _opt("binlog_format", "ROW"),
           choices=("MIXED", "STATEMENT", "ROW")),
    SysVar("binlog_row_image", Scope.BOTH, Kind.ENUM, "FULL", choices=("MINIMAL", "NOBLOB", "FULL")),
    SysVar("binlog_row_metadata", Scope.GLOBAL, Kind.ENUM, _opt("binlog_row_metadata", "NO_LOG"),
           choices=("NO_LOG", "MINIMAL", "FULL")),
    SysVar("character_set_client", Scope.BOTH, Kind.CHARSET, "utf8mb4"),
    SysVar("character_set_connection", Scope.BOTH, Kind.CHARSET, "utf8mb4"),
    SysVar("character_set_database", Scope.BOTH, Kind.CHARSET, "utf8mb4"),
    SysVar("character_set_filesystem", Scope.BOTH, Kind.CHARSET, "binary"),
    SysVar("character_set_results", Scope.BOTH, Kind.CHARSET, "utf8mb4", nullable=True),
    SysVar("character_set_server", Scope.BOTH, Kind.CHARSET, "utf8mb4"),
    SysVar("character_set_system", Scope.GLOBAL, Kind.STR, "utf8mb3", read_only=True),
    SysVar("collation_connection", Scope.BOTH, Kind.COLLATION, "utf8mb4_general_ci"),
    SysVar("collation_database", Scope.BOTH, Kind.COLLATION, "utf8mb4_general_ci"),
    SysVar("collation_server", Scope.BOTH, Kind.COLLATION, "utf8mb4_general_ci"),
    SysVar("div_precision_increment", Scope.BOTH, Kind.INT, 4, min=0, max=38),
    SysVar("error_count", Scope.SESSION_ONLY, Kind.INT, 0, read_only=True),
    SysVar("expire_logs_days", Scope.GLOBAL, Kind.DOUBLE,
           lambda s: round(int(_opt("binlog_expire_logs_seconds", 0)(s) or 0) / 86400, 6), read_only=True, min=0,
           max=99),
    SysVar("foreign_key_checks", Scope.BOTH, Kind.BOOL, 1),
    SysVar("gtid_binlog_pos", Scope.GLOBAL, Kind.STR, lambda s: s.gtid_binlog_pos(), read_only=True),
    SysVar("gtid_current_pos", Scope.GLOBAL, Kind.STR, _gtid_current_pos, read_only=True),
    SysVar("gtid_domain_id", Scope.BOTH, Kind.INT, lambda s: s.gtid_domain_id(), min=0, max=_U32),
    SysVar("gtid_ignore_duplicates", Scope.GLOBAL, Kind.BOOL, 0),
    SysVar("gtid_seq_no", Scope.SESSION_ONLY, Kind.INT, 0, min=0, max=_U64),
    SysVar("gtid_slave_pos", Scope.GLOBAL, Kind.STR, _opt("gtid_slave_pos", "")),
    SysVar("gtid_strict_mode", Scope.GLOBAL, Kind.BOOL, _opt("gtid_strict_mode", 0)),
    SysVar("hostname", Scope.GLOBAL, Kind.STR, _opt("hostname", platform.node() or "localhost"), read_only=True),
    SysVar("in_transaction", Scope.SESSION_ONLY, Kind.INT, 0, read_only=True),
    # standalone mode: values the next logged statement's INTVAR / RAND events carry (server/standalone)
    SysVar("insert_id", Scope.SESSION_ONLY, Kind.INT, 0, min=0, max=_U64),
    SysVar("init_connect", Scope.GLOBAL, Kind.STR, ""),
    SysVar("interactive_timeout", Scope.BOTH, Kind.INT, 28800, min=_TIMEOUT[0], max=_TIMEOUT[1]),
    SysVar("last_insert_id", Scope.SESSION_ONLY, Kind.INT, 0, min=0, max=_U64),
    SysVar("lock_wait_timeout", Scope.BOTH, Kind.INT, 86400, min=0, max=31536000),
    SysVar("log_bin", Scope.GLOBAL, Kind.BOOL, _log_bin, read_only=True),
    SysVar("log_slave_updates", Scope.GLOBAL, Kind.BOOL, 0, read_only=True),
    SysVar("lower_case_table_names", Scope.GLOBAL, Kind.INT, 0, read_only=True),
    SysVar("max_allowed_packet", Scope.BOTH, Kind.INT, _opt("max_allowed_packet", 16777216),
           session_read_only=True, min=1024, max=1073741824),
    SysVar("max_binlog_size", Scope.GLOBAL, Kind.INT, _opt("max_binlog_size", 1073741824), min=4096,
           max=1073741824),
    SysVar("max_connections", Scope.GLOBAL, Kind.INT, _opt("max_connections", 151), read_only=True, min=10,
           max=100000),
    SysVar("net_buffer_length", Scope.BOTH, Kind.INT, 16384, min=1024, max=1048576),
    SysVar("net_read_timeout", Scope.BOTH, Kind.INT, 30, min=_TIMEOUT[0], max=_TIMEOUT[1]),
    SysVar("net_write_timeout", Scope.BOTH, Kind.INT, 60, min=_TIMEOUT[0], max=_TIMEOUT[1]),
    SysVar("performance_schema", Scope.GLOBAL, Kind.BOOL, 0, read_only=True),
    SysVar("port", Scope.GLOBAL, Kind.INT, _opt("port", 3306), read_only=True),
    SysVar("protocol_version", Scope.GLOBAL, Kind.INT, 10, read_only=True),
    SysVar("query_cache_size", Scope.GLOBAL, Kind.INT, 0, min=0, max=_U64),
    SysVar("query_cache_type", Scope.BOTH, Kind.ENUM, "OFF", choices=("OFF", "ON", "DEMAND")),
    SysVar("rand_seed1", Scope.SESSION_ONLY, Kind.INT, 0, min=0, max=_U32),
    SysVar("rand_seed2", Scope.SESSION_ONLY, Kind.INT, 0, min=0, max=_U32),
    SysVar("read_only", Scope.GLOBAL, Kind.BOOL, _opt("read_only", 0)),
    # semi-sync (server/semisync.py): MariaDB 10.11's names and defaults; read-only (command-line options)
    SysVar("rpl_semi_sync_master_enabled", Scope.GLOBAL, Kind.BOOL, _semi("semi_sync", "enabled", 0),
           read_only=True),
    SysVar("rpl_semi_sync_master_timeout", Scope.GLOBAL, Kind.INT, _semi("semi_sync", "timeout_ms", 10000),
           read_only=True),
    SysVar("rpl_semi_sync_master_trace_level", Scope.GLOBAL, Kind.INT, 32, read_only=True),
    SysVar("rpl_semi_sync_master_wait_no_slave", Scope.GLOBAL, Kind.BOOL, _semi("semi_sync", "wait_no_slave", 1),
           read_only=True),
    SysVar("rpl_semi_sync_master_wait_point", Scope.GLOBAL, Kind.ENUM, "AFTER_COMMIT",
           choices=("AFTER_SYNC", "AFTER_COMMIT"), read_only=True),
    SysVar("rpl_semi_sync_slave_delay_master", Scope.GLOBAL, Kind.BOOL, 0, read_only=True),
    SysVar("rpl_semi_sync_slave_enabled", Scope.GLOBAL, Kind.BOOL, _semi("semi_sync_slave", "enabled", 0),
           read_only=True),
    SysVar("rpl_semi_sync_slave_kill_conn_timeout", Scope.GLOBAL, Kind.INT, 5, read_only=True),
    SysVar("rpl_semi_sync_slave_trace_level", Scope.GLOBAL, Kind.INT, 32, read_only=True),
    SysVar("server_id", Scope.BOTH, Kind.INT, lambda s: s.server_id, min=1, max=_U32),
    # accepted and recorded (Connector/J sets them on connect); binlogd sends no session-state tracking
    SysVar("session_track_schema", Scope.BOTH, Kind.BOOL, 1),
    SysVar("session_track_state_change", Scope.BOTH, Kind.BOOL, 0),
    SysVar("session_track_system_variables", Scope.BOTH, Kind.STR,
           "autocommit,character_set_client,character_set_connection,character_set_results,time_zone"),
    SysVar("session_track_transaction_info", Scope.BOTH, Kind.ENUM, "OFF", choices=("OFF", "STATE",
                                                                                     "CHARACTERISTICS")),
    SysVar("skip_replication", Scope.SESSION_ONLY, Kind.BOOL, 0),
    SysVar("sql_auto_is_null", Scope.BOTH, Kind.BOOL, 0),
    SysVar("sql_big_selects", Scope.BOTH, Kind.BOOL, 1),
    SysVar("sql_log_bin", Scope.BOTH, Kind.BOOL, 1),
    SysVar("sql_mode", Scope.BOTH, Kind.SET, DEFAULT_SQL_MODE, choices=SQL_MODES),
    SysVar("sql_notes", Scope.BOTH, Kind.BOOL, 1),
    SysVar("sql_quote_show_create", Scope.BOTH, Kind.BOOL, 1),
    SysVar("sql_safe_updates", Scope.BOTH, Kind.BOOL, 0),
    SysVar("sql_select_limit", Scope.BOTH, Kind.INT, _U64, min=0, max=_U64),
    SysVar("sql_warnings", Scope.BOTH, Kind.BOOL, 0),
    SysVar("system_time_zone", Scope.GLOBAL, Kind.STR, _system_time_zone, read_only=True),
    SysVar("time_zone", Scope.BOTH, Kind.TIME_ZONE, "SYSTEM"),
    SysVar("timestamp", Scope.SESSION_ONLY, Kind.DOUBLE, 0.0, min=0, max=2147483647),
    SysVar("tx_isolation", Scope.BOTH, Kind.ENUM, "REPEATABLE-READ",
           choices=("READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE")),
    SysVar("tx_read_only", Scope.BOTH, Kind.BOOL, 0),
    SysVar("unique_checks", Scope.BOTH, Kind.BOOL, 1),
    SysVar("version", Scope.GLOBAL, Kind.STR, lambda s: s.version, read_only=True),
    SysVar("version_comment", Scope.GLOBAL, Kind.STR, _opt("version_comment", "binlogd"), read_only=True),
    SysVar("version_compile_machine", Scope.GLOBAL, Kind.STR, platform.machine() or "x86_64", read_only=True),
    SysVar("version_compile_os", Scope.GLOBAL, Kind.STR, platform.system() or "Linux", read_only=True),
    SysVar("wait_timeout", Scope.BOTH, Kind.INT, 28800, min=_TIMEOUT[0], max=_TIMEOUT[1]),
    SysVar("warning_count", Scope.SESSION_ONLY, Kind.INT, 0, read_only=True),
]

SYSVARS: dict[str, SysVar] = {v.name: v for v in _V}


def lookup(name: str) -> SysVar | None:
    """Case-insensitive lookup (MariaDB variable names are case-insensitive)."""
    return SYSVARS.get(name.lower())


def show_text(var: SysVar, value: Any) -> str:
    """How SHOW VARIABLES prints a value: ON/OFF for booleans, '' for NULL, 6 decimals for doubles."""
    if value is None:
        return ""
    if var.kind is Kind.BOOL:
        return "ON" if value else "OFF"
    if var.kind is Kind.DOUBLE:
        return f"{float(value):.6f}"
    return str(value)


# --- status variables ------------------------------------------------------------------------------------


def _status_uptime(server: ServerView) -> Value:
    return _opt("uptime", None)(server)


def _status_threads(server: ServerView) -> Value:
    return _opt("threads_connected", None)(server)


def _status_slaves(server: ServerView) -> Value:
    v = _opt("slaves_connected", None)(server)
    return len(server.slave_hosts()) if v is None else v


def _status_snapshot_file(server: ServerView) -> Value:
    ms = server.master_status()
    return None if ms is None else ms[0]


def _status_snapshot_pos(server: ServerView) -> Value:
    ms = server.master_status()
    return None if ms is None else ms[1]


# SHOW STATUS rows; a getter returning None means "this server does not know", and the row is left out.
STATUS_VARS: dict[str, Callable[[ServerView], Value]] = {
    "Binlog_snapshot_file": _status_snapshot_file,
    "Binlog_snapshot_position": _status_snapshot_pos,
    **{f"Rpl_semi_sync_master_{k}": _semi_status(k) for k in (
        "clients", "get_ack", "net_avg_wait_time", "net_wait_time", "net_waits", "no_times", "no_tx",
        "request_ack", "status", "timefunc_failures", "tx_avg_wait_time", "tx_wait_time", "tx_waits",
        "wait_pos_backtraverse", "wait_sessions", "yes_tx")},
    "Rpl_semi_sync_slave_send_ack": _semi("semi_sync_slave", "send_ack", None),
    "Rpl_semi_sync_slave_status": _semi("semi_sync_slave", "status_text", None),
    "Slaves_connected": _status_slaves,
    "Threads_connected": _status_threads,
    "Threads_running": _opt("threads_running", None),
    "Uptime": _status_uptime,
    "Uptime_since_flush_status": _status_uptime,
}


# --- character sets and collations (MariaDB 10.11.19: SHOW CHARACTER SET, information_schema.COLLATIONS) ---

_B4 = "bin general_ci general_nopad_ci nopad_bin"
_UNI = ("bin croatian_ci croatian_mysql561_ci czech_ci danish_ci esperanto_ci estonian_ci general_ci "
        "general_nopad_ci german2_ci hungarian_ci icelandic_ci latvian_ci lithuanian_ci myanmar_ci nopad_bin "
        "persian_ci polish_ci roman_ci romanian_ci sinhala_ci slovak_ci slovenian_ci spanish2_ci spanish_ci "
        "swedish_ci thai_520_w2 turkish_ci unicode_520_ci unicode_520_nopad_ci unicode_ci unicode_nopad_ci "
        "vietnamese_ci")
# charset -> (default collation suffix, all collation suffixes)
_CHARSET_DATA: dict[str, tuple[str, str]] = {
    "armscii8": ("general_ci", _B4), "ascii": ("general_ci", _B4),
    "big5": ("chinese_ci", "bin chinese_ci chinese_nopad_ci nopad_bin"), "binary": ("", ""),
    "cp1250": ("general_ci", _B4 + " croatian_ci czech_cs polish_ci"),
    "cp1251": ("general_ci", _B4 + " bulgarian_ci general_cs ukrainian_ci"), "cp1256": ("general_ci", _B4),
    "cp1257": ("general_ci", _B4 + " lithuanian_ci"), "cp850": ("general_ci", _B4), "cp852": ("general_ci", _B4),
    "cp866": ("general_ci", _B4), "cp932": ("japanese_ci", "bin japanese_ci japanese_nopad_ci nopad_bin"),
    "dec8": ("swedish_ci", "bin nopad_bin swedish_ci swedish_nopad_ci"),
    "eucjpms": ("japanese_ci", "bin japanese_ci japanese_nopad_ci nopad_bin"),
    "euckr": ("korean_ci", "bin korean_ci korean_nopad_ci nopad_bin"),
    "gb2312": ("chinese_ci", "bin chinese_ci chinese_nopad_ci nopad_bin"),
    "gbk": ("chinese_ci", "bin chinese_ci chinese_nopad_ci nopad_bin"), "geostd8": ("general_ci", _B4),
    "greek": ("general_ci", _B4), "hebrew": ("general_ci", _B4),
    "hp8": ("english_ci", "bin english_ci english_nopad_ci nopad_bin"), "keybcs2": ("general_ci", _B4),
    "koi8r": ("general_ci", _B4), "koi8u": ("general_ci", _B4),
    "latin1": ("swedish_ci", "bin danish_ci general_ci general_cs german1_ci german2_ci nopad_bin spanish_ci "
                             "swedish_ci swedish_nopad_ci"),
    "latin2": ("general_ci", _B4 + " croatian_ci czech_cs hungarian_ci"),
    "latin5": ("turkish_ci", "bin nopad_bin turkish_ci turkish_nopad_ci"),
    "latin7": ("general_ci", _B4 + " estonian_cs general_cs"), "macce": ("general_ci", _B4),
    "macroman": ("general_ci", _B4), "sjis": ("japanese_ci", "bin japanese_ci japanese_nopad_ci nopad_bin"),
    "swe7": ("swedish_ci", "bin nopad_bin swedish_ci swedish_nopad_ci"),
    "tis620": ("thai_ci", "bin nopad_bin thai_ci thai_nopad_ci"),
    "ucs2": ("general_ci", _UNI + " general_mysql500_ci"),
    "ujis": ("japanese_ci", "bin japanese_ci japanese_nopad_ci nopad_bin"),
    "utf16": ("general_ci", _UNI), "utf16le": ("general_ci", _B4), "utf32": ("general_ci", _UNI),
    "utf8mb3": ("general_ci", _UNI + " general_mysql500_ci"), "utf8mb4": ("general_ci", _UNI),
}
_UCA1400_CHARSETS = frozenset({"ucs2", "utf8mb3", "utf8mb4", "utf16", "utf32"})
_UCA1400 = re.compile(
    r"uca1400_(?:(?:croatian|czech|danish|esperanto|estonian|german2|hungarian|icelandic|latvian|lithuanian|"
    r"persian|polish|roman|romanian|sinhala|slovak|slovenian|spanish|spanish2|swedish|turkish|vietnamese)_)?"
    r"(?:nopad_)?a[is]_c[is]"
)
# character sets a client cannot talk in (SET NAMES ucs2 -> 1231 on character_set_client)
CLIENT_FORBIDDEN_CHARSETS = frozenset({"ucs2", "utf16", "utf16le", "utf32"})


def charset(name: str) -> str | None:
    """Canonical character set name, or None. 'utf8' means utf8mb3 (10.11 default old_mode UTF8_IS_UTF8MB3)."""
    n = name.lower()
    if n == "utf8":
        n = "utf8mb3"
    return n if n in _CHARSET_DATA else None


def default_collation(cs: str) -> str:
    return "binary" if cs == "binary" else f"{cs}_{_CHARSET_DATA[cs][0]}"


def is_uca1400_short(name: str) -> bool:
    return _UCA1400.fullmatch(name.lower()) is not None


def collation(name: str, cs: str | None = None) -> tuple[str, str] | None:
    """(canonical collation, its charset) for a collation name, or None when MariaDB would say 1273.

    Short UCA-14.0.0 names ('uca1400_ai_ci') are only valid with a character set context (SET NAMES x COLLATE
    uca1400_ai_ci); as a variable value they are unknown, like in MariaDB.
    """
    n = name.lower()
    if n == "binary":
        return "binary", "binary"
    if cs is not None and cs in _UCA1400_CHARSETS and _UCA1400.fullmatch(n):
        return f"{cs}_{n}", cs
    if n.startswith("utf8_"):
        n = "utf8mb3_" + n[5:]
    for c, (_, suffixes) in _CHARSET_DATA.items():
        if n.startswith(c + "_"):
            rest = n[len(c) + 1 :]
            if rest in suffixes.split() or (c in _UCA1400_CHARSETS and _UCA1400.fullmatch(rest)):
                return n, c
    return None


# --- sql_mode -----------------------------------------------------------------------------------------


def parse_sql_mode(value: str | int) -> str:
    """Canonical sql_mode text for a string or bitmask, or the offending element (as `ValueError` arg).

    MariaDB splits on ',' without trimming (so 'A, B' fails on ' B'), ignores empty elements, expands the
    combination modes and prints the result in bit order.
    """
    bits = 0
    if isinstance(value, int):
        if value < 0 or value >= 1 << len(SQL_MODES):
            raise ValueError(str(value))
        bits = value
    else:
        for part in value.split(","):
            if not part:
                continue
            bit = _MODE_BIT.get(part.upper())
            if bit is None:
                raise ValueError(part)
            bits |= bit
    for combo, members in _MODE_EXPANSION.items():
        if bits & _MODE_BIT[combo]:
            for m in members:
                bits |= _MODE_BIT[m]
    return ",".join(m for m in SQL_MODES if bits & _MODE_BIT[m])


# --- time_zone ----------------------------------------------------------------------------------------

_TZ_OFFSET = re.compile(r"([+-])(\d{1,2}):(\d{1,2})")


def parse_time_zone(value: str) -> tuple[str, int | None] | None:
    """('SYSTEM', None) or ('+hh:mm', offset seconds); None when MariaDB says 1298.

    Named zones need the mysql.time_zone tables, which binlogd does not have: like a MariaDB without them
    loaded, they are "Unknown or incorrect time zone". MariaDB accepts offsets from -12:59 to +13:00.
    """
    if value.upper() == "SYSTEM":
        return "SYSTEM", None
    m = _TZ_OFFSET.fullmatch(value)
    if not m:
        return None
    h, mi = int(m.group(2)), int(m.group(3))
    if mi > 59:
        return None
    minutes = h * 60 + mi
    if m.group(1) == "-":
        minutes = -minutes
    if not -(12 * 60 + 59) <= minutes <= 13 * 60:
        return None
    sign = "-" if minutes < 0 else "+"
    a = abs(minutes)
    return f"{sign}{a // 60:02d}:{a % 60:02d}", minutes * 60
