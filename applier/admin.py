"""The applier's admin SQL port: a small MariaDB-speaking surface for the mariadb CLI (mysql-mimic).

Statements (case-insensitive; MariaDB's `'name'` connection syntax and MySQL's `FOR CHANNEL 'name'` both work):

  SHOW SLAVE|REPLICA ['c'] STATUS [FOR CHANNEL 'c']     SHOW ALL SLAVES|REPLICAS STATUS
  START|STOP SLAVE|REPLICA ['c'] [FOR CHANNEL 'c']      START|STOP ALL SLAVES|REPLICAS
  RESET SLAVE|REPLICA ['c'] [ALL] [FOR CHANNEL 'c']
  CHANGE REPLICATION FILTER f = (...)[, ...] [FOR CHANNEL 'c']     (MySQL 8 syntax; seed WL#7361)
  SET GLOBAL [c.]replicate_do_db = 'a,b'  (and the other six; MariaDB's syntax, same effect as the above)
  SET GLOBAL sql_slave_skip_counter = N     SET GLOBAL replicate_events_marked_for_skip = MODE
  SELECT cols|* FROM performance_schema.replication_applier_filters|replication_applier_global_filters
         [WHERE COL = 'v' [AND ...]]
  SELECT 1 / 'text' / @@version / @@server_id / VERSION() ... (health checks: applier/selects.py)

Without a channel name a statement acts on the default channel '' when it exists (MariaDB's default
connection); when it does not, START/STOP/RESET act on every channel and SHOW SLAVE STATUS lists every
channel (MySQL's multi-source behaviour). Anything else gets a MySQL error: 1064 for text the surface
cannot parse, 1235 for statements it does not serve, 1617 for an unknown channel, 1198 for changes that need
stopped channels.

Names used from part A (`applier.runner.Applier`): `channels` (name -> Channel with `status() -> dict`),
`filters` (FilterRegistry), `skip_mode` (str), `skip_counter` (int), async `start_channel(name)`,
`stop_channel(name)`, `reset_channel(name, all)`.

The connection glue (strict handshake, bounded packet reads) is shared with the primary through
`protocol.sqlserver` (`StrictConnection`, `SafeStream`), and so are the logins (`protocol.accounts`: the users
file format of binlogd's --users, given with --admin-users; without it root with no password from loopback
only; unknown users get 1045): reused, not copied, and no import of `server/`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from binlogd.protocol.accounts import AccountsIdentityProvider
from binlogd.protocol.constants import ER_MALFORMED_PACKET, ER_UNKNOWN_ERROR
from binlogd.protocol.packets import err_packet
from binlogd.protocol.sqlserver import MALFORMED_INPUT, SafeStream, StrictConnection
from mysql_mimic import types
from mysql_mimic.errors import MysqlError
from mysql_mimic.server import MysqlServer
from mysql_mimic.session import BaseSession
from mysql_mimic.stream import ConnectionClosed
from mysql_mimic.variables import GlobalVariables, SessionVariables

from .filters import FilterError, FilterRegistry, FilterType, UnknownChannel
from .selects import UnknownVariable, evaluate_select
from .status import (
    ALL_SLAVES_COLUMNS,
    APPLIER_FILTERS_COLUMNS,
    GLOBAL_FILTERS_COLUMNS,
    SLAVE_STATUS_COLUMNS,
    gtid_slave_pos,
    slave_status_row,
)

log = logging.getLogger("binlogd.apply.admin")

ER_PARSE_ERROR = 1064
ER_NOT_SUPPORTED_YET = 1235
ER_MASTER_INFO_MISSING = 1617  # MariaDB: "There is no master connection '%s'"
ER_SLAVE_MUST_STOP = 1198
ER_WRONG_VALUE_FOR_VAR = 1231
ER_WRONG_ARGUMENTS = 1210
ER_NO_SUCH_TABLE = 1146
ER_BAD_FIELD_ERROR = 1054
ER_UNKNOWN_SYSTEM_VARIABLE = 1193
SKIP_MODES = ("REPLICATE", "FILTER_ON_SLAVE", "FILTER_ON_MASTER")
VERSION = "10.11.99-binlogd-apply"
VERSION_COMMENT = "binlogd-apply admin port"


_SQLSTATES = {ER_PARSE_ERROR: "42000", ER_NOT_SUPPORTED_YET: "42000", ER_WRONG_VALUE_FOR_VAR: "42000",
              ER_NO_SUCH_TABLE: "42S02", ER_BAD_FIELD_ERROR: "42S22", 1065: "42000"}


class AdminError(Exception):
    """A MySQL error for the client; the SQLSTATE is MariaDB's for the code unless given."""

    def __init__(self, code: int, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.sqlstate = code, message, sqlstate or _SQLSTATES.get(code, "HY000")


class ApplierLike(Protocol):
    config: Any  # ApplierConfig: server_id
    channels: dict[str, Any]
    filters: FilterRegistry
    skip_mode: str
    skip_counter: int

    async def start_channel(self, name: str) -> None: ...
    async def stop_channel(self, name: str) -> None: ...
    async def reset_channel(self, name: str, all: bool) -> None: ...


@dataclass
class Result:
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


# --- parsing ---------------------------------------------------------------------------------------------

_NAME = r"(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|`((?:[^`]|``)*)`|(\w+))"
_SLAVE = r"(?:SLAVE|REPLICA)"
_FOR_CHANNEL = rf"(?:\s+FOR\s+CHANNEL\s+{_NAME})?"
_RE_SHOW_ALL = re.compile(r"SHOW\s+ALL\s+(?:SLAVES|REPLICAS)\s+STATUS", re.I)
_RE_SHOW = re.compile(rf"SHOW\s+{_SLAVE}(?:\s+{_NAME})?\s+STATUS{_FOR_CHANNEL}", re.I)
_RE_START_STOP_ALL = re.compile(r"(START|STOP)\s+ALL\s+(?:SLAVES|REPLICAS)", re.I)
_RE_START_STOP = re.compile(
    rf"(START|STOP)\s+{_SLAVE}(?:\s+{_NAME})??(?:\s+(?:IO_THREAD|SQL_THREAD)(?:\s*,\s*(?:IO_THREAD|SQL_THREAD))?)?"
    rf"{_FOR_CHANNEL}", re.I)
_RE_RESET = re.compile(rf"RESET\s+{_SLAVE}(?:\s+{_NAME})??(\s+ALL)?{_FOR_CHANNEL}", re.I)
_RE_CHANGE_FILTER = re.compile(r"CHANGE\s+REPLICATION\s+FILTER\s+(.*)", re.I | re.S)
_RE_SET_GLOBAL = re.compile(r"SET\s+(?:GLOBAL\s+|@@GLOBAL\.)(?:(\w+)\.)?(\w+)\s*(?:=|:=)\s*(.+)", re.I | re.S)
_RE_SELECT_PS = re.compile(
    r"SELECT\s+(.+?)\s+FROM\s+(?:`?performance_schema`?\s*\.\s*)`?(\w+)`?(?:\s+WHERE\s+(.+?))?"
    r"(?:\s+ORDER\s+BY\s+[\w\s,]+)?", re.I | re.S)
_RE_NOOP = re.compile(r"(SET\s+(NAMES|CHARACTER\s+SET|AUTOCOMMIT|SESSION|@@SESSION|SQL_MODE|@\w)|USE\s|BEGIN|COMMIT)",
                      re.I)
_TOKEN = re.compile(r"\s*(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|`((?:[^`]|``)*)`|([\w$%\-*>]+)|(.))", re.S)


def _name(m: re.Match[str], first: int) -> str | None:
    """The channel name captured by the `_NAME` groups starting at group `first`."""
    for i in range(first, first + 4):
        v = m.group(i)
        if v is not None:
            return v.replace("``", "`") if i == first + 2 else v
    return None


def _syntax_error(near: str) -> AdminError:
    return AdminError(ER_PARSE_ERROR, "You have an error in your SQL syntax; check the manual that corresponds to "
                      f"your MariaDB server version for the right syntax to use near '{near[:80]}' at line 1", "42000")


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text): kind 'q' quoted, 'w' word, 'p' punctuation."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        if m.group(1) is not None or m.group(2) is not None:
            out.append(("q", m.group(1) if m.group(1) is not None else m.group(2)))
        elif m.group(3) is not None:
            out.append(("q", m.group(3).replace("``", "`")))
        elif m.group(4) is not None:
            out.append(("w", m.group(4)))
        elif m.group(5) is not None and not m.group(5).isspace():
            out.append(("p", m.group(5)))
    return out


def parse_change_filter(text: str) -> tuple[dict[FilterType, list[str]], str | None]:
    """`filter[, filter] [FOR CHANNEL c]` of CHANGE REPLICATION FILTER -> ({type: values}, channel)."""
    toks = _tokens(text)
    i = 0
    changes: dict[FilterType, list[str]] = {}
    channel: str | None = None

    def expect(kind: str, value: str | None = None) -> str:
        nonlocal i
        if i >= len(toks) or toks[i][0] != kind or (value is not None and toks[i][1].upper() != value):
            raise _syntax_error(" ".join(t for _, t in toks[i:]) or text[-20:])
        i += 1
        return toks[i - 1][1]

    def item() -> str:
        """One list element: names and dots joined (db, db.t, 'db.t%')."""
        nonlocal i
        parts = []
        while i < len(toks) and not (toks[i][0] == "p" and toks[i][1] in ",()"):
            parts.append(toks[i][1])
            i += 1
        if not parts:
            raise _syntax_error(" ".join(t for _, t in toks[i:]))
        return "".join(parts)

    while True:
        word = expect("w")
        try:
            ftype = FilterType.from_name(word)
        except ValueError:
            raise _syntax_error(" ".join(t for _, t in toks[i - 1:])) from None
        if not word.upper().startswith("REPLICATE_"):
            raise _syntax_error(" ".join(t for _, t in toks[i - 1:]))
        expect("p", "=")
        expect("p", "(")
        values: list[str] = []
        if not (i < len(toks) and toks[i] == ("p", ")")):
            while True:
                if ftype is FilterType.REWRITE_DB:
                    expect("p", "(")
                    src = item()
                    expect("p", ",")
                    dst = item()
                    expect("p", ")")
                    values.append(f"{src}->{dst}")
                else:
                    values.append(item())
                if i < len(toks) and toks[i] == ("p", ","):
                    i += 1
                    continue
                break
        expect("p", ")")
        if ftype in changes:
            raise AdminError(ER_PARSE_ERROR, f"{ftype.value} is listed twice", "42000")
        changes[ftype] = values
        if i < len(toks) and toks[i] == ("p", ","):
            i += 1
            continue
        break
    if i < len(toks) and toks[i][0] == "w" and toks[i][1].upper() == "FOR":
        i += 1
        expect("w", "CHANNEL")
        if i >= len(toks) or toks[i][0] not in "qw":
            raise _syntax_error(text[-20:])
        channel = toks[i][1]
        i += 1
    if i != len(toks):
        raise _syntax_error(" ".join(t for _, t in toks[i:]))
    return changes, channel


def _unquote_value(raw: str) -> str:
    toks = _tokens(raw.strip())
    if len(toks) != 1:
        raise _syntax_error(raw.strip())
    return toks[0][1]


# --- execution -------------------------------------------------------------------------------------------


class Admin:
    """Executes admin statements against one applier. One instance per applier; sessions share it."""

    def __init__(self, applier: ApplierLike) -> None:
        self.applier = applier
        self._lock = asyncio.Lock()  # one state change at a time

    # helpers

    def _channel(self, name: str) -> Any:
        try:
            return self.applier.channels[name]
        except KeyError:
            raise AdminError(ER_MASTER_INFO_MISSING, f"There is no master connection '{name}'") from None

    def _targets(self, name: str | None) -> list[str]:
        """The channels a statement without/with a name acts on."""
        if name is not None:
            self._channel(name)
            return [name]
        if "" in self.applier.channels:
            return [""]
        return list(self.applier.channels)

    @staticmethod
    def _running(channel: Any) -> bool:
        running = getattr(channel, "running", None)
        if running is not None:
            return bool(running)
        st = channel.status()
        return st.get("Slave_SQL_Running") == "Yes" or st.get("Slave_IO_Running") in ("Yes", "Preparing", "Connecting")

    def _must_be_stopped(self, names: list[str]) -> None:
        for n in names:
            if self._running(self._channel(n)):
                raise AdminError(ER_SLAVE_MUST_STOP, f"This operation cannot be performed as you have a running "
                                 f"slave '{n}'; run STOP SLAVE '{n}' first")

    def _status_rows(self, names: list[str], all_slaves: bool) -> Result:
        rows = []
        slave_pos = gtid_slave_pos(ch.status()["Gtid_Slave_Pos"] for ch in self.applier.channels.values())
        for n in names:
            ch = self._channel(n)
            st = {**ch.status(), "Gtid_Slave_Pos": slave_pos}
            rows.append(slave_status_row(n, st, self.applier.filters.for_channel(n), self.applier.skip_counter,
                                         all_slaves=all_slaves))
        return Result(ALL_SLAVES_COLUMNS if all_slaves else SLAVE_STATUS_COLUMNS, rows)

    # the statement dispatcher

    async def execute(self, sql: str) -> Result | None:
        try:
            return await self._execute(sql)
        except AdminError:
            raise
        except Exception as e:
            code, message = getattr(e, "code", None), getattr(e, "message", None)
            if isinstance(code, int) and isinstance(message, str):  # the runner's ApplierError: MariaDB's code/text
                # client-side codes (2003 "can't connect"...) are not server errors: ER_UNKNOWN_ERROR carries the text
                raise AdminError(code if code < 2000 else ER_UNKNOWN_ERROR, message) from e
            raise

    async def _execute(self, sql: str) -> Result | None:
        text = sql.strip().rstrip(";").strip()
        if not text:
            raise AdminError(1065, "Query was empty", "42000")
        if _RE_SHOW_ALL.fullmatch(text):
            return self._status_rows(sorted(self.applier.channels), all_slaves=True)
        if m := _RE_SHOW.fullmatch(text):
            name = _name(m, 5) if _name(m, 5) is not None else _name(m, 1)
            if name is None and "" not in self.applier.channels:
                return self._status_rows(sorted(self.applier.channels), all_slaves=False)
            return self._status_rows([name or ""], all_slaves=False)
        if m := _RE_START_STOP_ALL.fullmatch(text):
            return await self._start_stop(m.group(1).upper(), list(self.applier.channels))
        if m := _RE_START_STOP.fullmatch(text):
            name = _name(m, 6) if _name(m, 6) is not None else _name(m, 2)
            return await self._start_stop(m.group(1).upper(), self._targets(name))
        if m := _RE_RESET.fullmatch(text):
            name = _name(m, 6) if _name(m, 6) is not None else _name(m, 1)
            return await self._reset(self._targets(name), bool(m.group(5)))
        if m := _RE_CHANGE_FILTER.fullmatch(text):
            changes, channel = parse_change_filter(m.group(1))
            return await self._change(channel, changes)
        if m := _RE_SET_GLOBAL.fullmatch(text):
            return await self._set_global(m.group(1), m.group(2).lower(), m.group(3))
        if m := _RE_SELECT_PS.fullmatch(text):
            return self._select_ps(m.group(1), m.group(2).lower(), m.group(3))
        try:
            selected = evaluate_select(text, self._variable)
        except UnknownVariable as e:
            raise AdminError(ER_UNKNOWN_SYSTEM_VARIABLE, f"Unknown system variable '{e.name}'") from None
        if selected is not None:
            return Result(*selected)
        if _RE_NOOP.match(text):
            return None  # session settings the mariadb CLI and drivers send
        verb = " ".join(text.split()[:3])
        raise AdminError(ER_NOT_SUPPORTED_YET,
                         f"This version of binlogd-apply's admin port doesn't yet support '{verb}'", "42000")

    async def _start_stop(self, verb: str, names: list[str]) -> None:
        async with self._lock:
            for n in names:
                self._channel(n)
                if verb == "START":
                    await self.applier.start_channel(n)
                else:
                    await self.applier.stop_channel(n)
                log.info("%s SLAVE '%s'", verb, n)
        return None

    async def _reset(self, names: list[str], all_: bool) -> None:
        async with self._lock:
            self._must_be_stopped(names)
            for n in names:
                await self.applier.reset_channel(n, all_)
                if all_ and n in self.applier.filters.channels:
                    self.applier.filters.remove_channel(n)
                log.info("RESET SLAVE '%s'%s", n, " ALL" if all_ else "")
        return None

    async def _change(self, channel: str | None, changes: dict[FilterType, list[str]]) -> None:
        async with self._lock:
            if channel is not None:
                self._channel(channel)
            self._must_be_stopped([channel] if channel is not None else list(self.applier.channels))
            try:
                self.applier.filters.change(channel, changes)
            except FilterError as e:
                raise AdminError(ER_WRONG_ARGUMENTS, f"Incorrect arguments to CHANGE REPLICATION FILTER: {e}") from e
            except UnknownChannel as e:
                raise AdminError(ER_MASTER_INFO_MISSING, f"There is no master connection '{e.name}'") from e
            log.info("CHANGE REPLICATION FILTER %s%s", {t.value: v for t, v in changes.items()},
                     f" FOR CHANNEL '{channel}'" if channel is not None else "")
        return None

    async def _set_global(self, prefix: str | None, var: str, raw: str) -> None:
        if var.startswith("replicate_") and var != "replicate_events_marked_for_skip":
            try:
                ftype = FilterType.from_name(var)
            except ValueError:
                raise AdminError(ER_UNKNOWN_SYSTEM_VARIABLE, f"Unknown system variable '{var}'") from None
            value = _unquote_value(raw)
            values = [v.strip() for v in value.split(",") if v.strip()]  # MariaDB: comma-separated, 'a->b' pairs
            return await self._change(prefix, {ftype: values})
        if prefix is not None:
            raise AdminError(ER_UNKNOWN_SYSTEM_VARIABLE, f"Unknown system variable '{prefix}.{var}'")
        value = _unquote_value(raw)
        if var == "sql_slave_skip_counter":
            if not re.fullmatch(r"\d+", value):
                raise AdminError(ER_WRONG_VALUE_FOR_VAR, f"Variable '{var}' can't be set to the value of '{value}'")
            self.applier.skip_counter = min(int(value), 0xFFFFFFFF)
            return None
        if var == "replicate_events_marked_for_skip":
            mode = value.upper()
            if re.fullmatch(r"[0-2]", mode):
                mode = SKIP_MODES[int(mode)]
            if mode not in SKIP_MODES:
                raise AdminError(ER_WRONG_VALUE_FOR_VAR, f"Variable '{var}' can't be set to the value of '{value}'")
            async with self._lock:
                self._must_be_stopped(list(self.applier.channels))
                setter = getattr(self.applier, "set_skip_mode", None)
                if setter is not None:
                    setter(mode)
                else:
                    self.applier.skip_mode = mode
            return None
        raise AdminError(ER_UNKNOWN_SYSTEM_VARIABLE, f"Unknown system variable '{var}'")

    def _variable(self, name: str) -> Any:
        """The system variables the admin port has (SELECT @@name): the applier's own, or fixed by it."""
        values: dict[str, Any] = {
            "version": VERSION,
            "version_comment": VERSION_COMMENT,
            "server_id": self.applier.config.server_id,  # what the applier registers with on its sources
            "hostname": socket.gethostname(),
            "sql_slave_skip_counter": self.applier.skip_counter,
            "replicate_events_marked_for_skip": self.applier.skip_mode,
            "max_allowed_packet": 16 << 20,
            "autocommit": 1,
        }
        if name not in values:
            raise UnknownVariable(name)
        return values[name]

    def _select_ps(self, select: str, table: str, where: str | None) -> Result:
        reg = self.applier.filters
        if table == "replication_applier_filters":
            columns, rows = APPLIER_FILTERS_COLUMNS, reg.applier_filters_rows()
        elif table == "replication_applier_global_filters":
            columns, rows = GLOBAL_FILTERS_COLUMNS, reg.global_filters_rows()
        else:
            raise AdminError(ER_NO_SUCH_TABLE, f"Table 'performance_schema.{table}' doesn't exist", "42S02")
        index = {c: i for i, c in enumerate(columns)}

        def col(name: str) -> int:
            key = name.strip().strip("`").upper()
            if key not in index:
                raise AdminError(ER_BAD_FIELD_ERROR, f"Unknown column '{name.strip()}' in 'field list'", "42S22")
            return index[key]

        if where:
            for cond in re.split(r"\s+AND\s+", where.strip(), flags=re.I):
                m = re.fullmatch(r"\s*`?(\w+)`?\s*=\s*(.+?)\s*", cond, re.S)
                if m is None:
                    raise _syntax_error(cond)
                ci, want = col(m.group(1)), _unquote_value(m.group(2))
                rows = [r for r in rows if str(r[ci]) == want]
        picked = list(range(len(columns))) if select.strip() == "*" else [col(c) for c in select.split(",")]
        out = [tuple(_ps_value(r[i]) for i in picked) for r in rows]
        return Result(tuple(columns[i] for i in picked), out)


def _ps_value(v: Any) -> Any:
    """P_S renders ACTIVE_SINCE as TIMESTAMP(6)."""
    return v.strftime("%Y-%m-%d %H:%M:%S.%f") if isinstance(v, datetime) else v


# --- mysql-mimic glue ------------------------------------------------------------------------------------


class AdminSession(BaseSession):
    def __init__(self, admin: Admin) -> None:
        self.admin = admin
        self.variables = SessionVariables(GlobalVariables())
        self.variables.set("version", f"5.5.5-{VERSION}", force=True)  # the 5.5.5- prefix: MariaDB's handshake
        self.variables.set("version_comment", VERSION_COMMENT, force=True)
        self.username: str | None = None
        self.database: str | None = None

    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
        try:
            result = await self.admin.execute(sql)
        except AdminError as e:
            log.info("admin: %r -> error %d %s", sql[:200], e.code, e.message)
            err = MysqlError(e.message, e.code)  # type: ignore[arg-type]
            err.sqlstate = e.sqlstate.encode()  # type: ignore[attr-defined]
            raise err from e
        if result is None:
            return None
        return result.rows, list(result.columns)

    async def init(self, connection: Any) -> None:
        self.database = None  # no databases here: a database named in the handshake is ignored

    async def use(self, database: str) -> None:
        return None


class AdminConnection(StrictConnection):
    """The primary's strict handshake and error handling; only the ordinary query commands."""

    async def command_phase(self) -> None:
        handlers = {
            types.Commands.COM_QUERY: self.handle_query,
            types.Commands.COM_PING: self.handle_ping,
            types.Commands.COM_INIT_DB: self.handle_init_db,
            types.Commands.COM_RESET_CONNECTION: self.handle_reset_connection,
        }
        while True:
            try:
                data = await self.stream.read()
            except (ConnectionClosed, ConnectionError, asyncio.IncompleteReadError):
                return
            except MysqlError as e:
                with contextlib.suppress(Exception):
                    await self._write_raw(err_packet(int(e.code), str(e.msg), b"08S01"))
                return
            if not data:
                await self._write_raw(err_packet(ER_MALFORMED_PACKET, "Malformed communication packet"))
                self.stream.reset_seq()
                continue
            if data[0] == types.Commands.COM_QUIT:
                return
            handler = handlers.get(data[0])  # type: ignore[call-overload]
            try:
                if handler is None:
                    await self._write_raw(err_packet(1047, "Unknown command", b"08S01"))
                else:
                    await handler(data[1:])
            except MysqlError as e:
                await self._write_raw(err_packet(int(e.code), str(e.msg),
                                                 getattr(e, "sqlstate", b"HY000") or b"HY000"))
            except MALFORMED_INPUT as e:  # e.g. a COM_QUERY that is not valid UTF-8
                log.info("admin connection %d: malformed command 0x%02x: %s", self.connection_id, data[0], e)
                await self._write_raw(err_packet(ER_MALFORMED_PACKET, "Malformed communication packet"))
            except Exception:
                log.exception("admin connection %d: command failed", self.connection_id)
                await self._write_raw(err_packet(ER_UNKNOWN_ERROR, "Internal error"))
            self.stream.reset_seq()


class AdminServer(MysqlServer):
    """The admin port; logins are checked against `accounts` (a users file, protocol/accounts.py), or root
    without a password from loopback only."""

    def __init__(self, admin: Admin, accounts: AccountsIdentityProvider | None = None) -> None:
        super().__init__(session_factory=lambda: AdminSession(admin),
                         identity_provider=accounts or AccountsIdentityProvider.default())
        self.admin = admin
        self._next_id = 0

    async def _client_connected_cb(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_id += 1
        conn = AdminConnection(
            stream=SafeStream(reader, writer),  # type: ignore[arg-type]
            session=AdminSession(self.admin),
            control=self.control,
            identity_provider=self.identity_provider,
            server_capabilities=self.capabilities,
        )
        conn.connection_id = self._next_id
        try:
            await conn.start()
        except Exception:
            log.exception("admin connection %d failed", self._next_id)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def start_admin(applier: ApplierLike, port: int, host: str = "127.0.0.1",
                      accounts: AccountsIdentityProvider | None = None) -> AdminServer:
    """Listen on host:port (0 = any free port; read it from `server_port(srv)`)."""
    srv = AdminServer(Admin(applier), accounts)
    await srv.start_server(host=host, port=port, reuse_address=True)
    log.info("admin port on %s:%d", host, server_port(srv))
    return srv


def server_port(srv: AdminServer) -> int:
    return int(srv._server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]
