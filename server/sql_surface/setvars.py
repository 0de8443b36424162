"""SET: user and system variables, NAMES / CHARACTER SET, TRANSACTION (checked all, then applied)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from binlogd.protocol import constants as C

from .. import sysvars as SV
from ..replica_filters import check_session_var
from ..sysvars import Kind, Scope, SysVar
from .base import StatementBase
from .errors import SqlError, _unknown_sysvar, _wrong_type, _wrong_value, not_supported
from .lexer import _Hex, _Tok
from .nodes import _Lit, _Node
from .parser import _RESERVED, _Parser
from .results import Ok
from .values import _DBL_MAX, _U64, DecimalText, _decimal_text, _out, _to_text

_BOOL_WORDS = {"ON": 1, "OFF": 0}


@dataclass
class _SetItem:
    """One assignment of a SET statement, checked before any is applied (MariaDB's check/update phases)."""

    kind: str  # 'user' | 'sys' | 'names' | 'charset'
    name: str = ""
    scope: str = "session"
    expr: _Node | None = None  # None with kind 'sys' means DEFAULT
    charset: str | None = None
    collate: str | None = None
    pos: int = 0


class SetStatements(StatementBase):
    """SET and SET TRANSACTION."""

    def do_set(self, p: _Parser) -> Ok:
        t = p.peek()
        if p.is_kw(t, "TRANSACTION") or (p.is_kw(t, "GLOBAL", "SESSION", "LOCAL") and
                                        p.is_kw(p.peek(1), "TRANSACTION")):
            return self.set_transaction(p)
        if p.is_kw(t, "PASSWORD", "ROLE", "DEFAULT", "STATEMENT"):
            words = "SET " + t.text.upper()
            if p.is_kw(t, "DEFAULT") and p.is_kw(p.peek(1), "ROLE"):
                words = "SET DEFAULT ROLE"
            elif p.is_kw(t, "DEFAULT"):
                p.fail(p.peek(1))
            raise not_supported(words)
        items: list[_SetItem] = []
        scope = "session"
        while True:
            item, scope = self.set_item(p, scope)
            items.append(item)
            if not p.accept_op(","):
                break
        p.finish()
        # check phase: evaluate every right-hand side and validate before changing anything
        planned = [self.check_set_item(it) for it in items]
        for apply in planned:
            apply()
        return Ok()

    def set_item(self, p: _Parser, scope: str) -> tuple[_SetItem, str]:
        t = p.peek()
        if t.kind == "OP" and t.text == "@":
            p.fail(p.peek(1))  # '@ x': MariaDB complains at the name
        if t.kind == "UVAR":
            p.next()
            if p.accept_op("=", ":=") is None:
                p.fail()
            return _SetItem("user", name=str(t.value).lower(), expr=p.expr(), pos=t.pos), scope
        if p.is_kw(t, "NAMES"):
            p.next()
            if p.accept_kw("DEFAULT"):
                return _SetItem("names", charset=None, pos=t.pos), scope
            cs = p.name_or_string()
            coll = p.name_or_string() if p.accept_kw("COLLATE") else None
            return _SetItem("names", charset=cs, collate=coll, pos=t.pos), scope
        if p.is_kw(t, "CHARSET") or (p.is_kw(t, "CHARACTER") and p.is_kw(p.peek(1), "SET")):
            p.next()
            if t.text.upper() == "CHARACTER":
                p.next()
            if p.accept_kw("DEFAULT"):
                return _SetItem("charset", charset=None, pos=t.pos), scope
            return _SetItem("charset", charset=p.name_or_string(), pos=t.pos), scope
        kw = p.accept_kw("GLOBAL", "SESSION", "LOCAL")
        if kw is not None:
            scope = "global" if kw == "GLOBAL" else "session"
            t = p.peek()
        if t.kind == "SVAR":
            p.next()
            vscope, name, component = t.value
            if component is not None:
                raise _unknown_sysvar(name)
            item_scope = "global" if vscope == "global" else ("session" if vscope else scope)
            if kw is not None and vscope is not None:
                p.fail(t)
        elif t.kind in ("ID", "QID"):
            if t.kind == "ID" and t.text.upper() in _RESERVED - {"DEFAULT"}:
                p.fail(t)
            p.next()
            name = str(t.value)
            item_scope = scope
        else:
            p.fail(t)
        if p.accept_op("=", ":=") is None:
            p.fail()
        value_tok = p.peek()
        if p.is_kw(value_tok, "DEFAULT") and self._ends_item(p.peek(1)):
            p.next()
            return _SetItem("sys", name=name, scope=item_scope, expr=None, pos=t.pos), scope
        if value_tok.kind == "ID" and self._ends_item(p.peek(1)) and \
                value_tok.text.upper() not in ("NULL", "TRUE", "FALSE"):
            # SET x = ON / ROW / utf8: a bare word is the value's name
            p.next()
            return _SetItem("sys", name=name, scope=item_scope,
                            expr=_Lit(value_tok.pos, value_tok.end, value_tok.text, is_string=True),
                            pos=t.pos), scope
        return _SetItem("sys", name=name, scope=item_scope, expr=p.expr(), pos=t.pos), scope

    @staticmethod
    def _ends_item(t: _Tok) -> bool:
        return t.kind == "EOF" or (t.kind == "OP" and t.text in (",", ";"))

    def check_set_item(self, it: _SetItem) -> Callable[[], None]:
        ev = self.ev
        ev.clause = "SET"
        s = self.session
        if it.kind == "user":
            assert it.expr is not None
            raw = ev.ev(it.expr)
            value = DecimalText(_decimal_text(raw)) if isinstance(raw, Decimal) else _out(raw)
            check_session_var(it.name, value)  # @binlogd_replicate_*: 1210 for a bad rule (server/replica_filters.py)

            def apply_user() -> None:
                s.user_vars[it.name] = value

            return apply_user
        if it.kind in ("names", "charset"):
            return self.check_names(it)
        var = SV.lookup(it.name)
        if var is None:
            raise _unknown_sysvar(it.name)
        raw = None if it.expr is None else ev.ev(it.expr)
        is_default = it.expr is None
        if var.read_only:
            raise SqlError(C.ER_INCORRECT_GLOBAL_LOCAL_VAR, f"Variable '{var.name}' is a read only variable")
        if it.scope == "global":
            if var.name == "sql_log_bin":
                raise SqlError(C.ER_INCORRECT_GLOBAL_LOCAL_VAR, "Variable 'sql_log_bin' is a SESSION variable")
            if var.scope is Scope.SESSION_ONLY:
                raise SqlError(C.ER_LOCAL_VARIABLE,
                               f"Variable '{var.name}' is a SESSION variable and can't be used with SET GLOBAL")
        else:
            if var.scope is Scope.GLOBAL:
                raise SqlError(C.ER_GLOBAL_VARIABLE,
                               f"Variable '{var.name}' is a GLOBAL variable and should be set with SET GLOBAL")
            if var.session_read_only:
                raise SqlError(C.ER_VARIABLE_IS_READONLY,
                               f"SESSION variable '{var.name}' is read-only. Use SET GLOBAL to assign the value")
        if is_default:
            value: Any = var.global_value(self.server) if var.scope is not Scope.SESSION_ONLY else var.default
            extra: dict[str, Any] = {}
        else:
            value, extra = self.coerce(var, raw, it.expr)
        if var.name == "skip_replication" and s.in_transaction:
            raise SqlError(C.ER_INSIDE_TRANSACTION_PREVENTS_SWITCH_SKIP_REPLICATION,
                           "Cannot modify @@session.skip_replication inside a transaction")
        if var.name == "sql_log_bin" and s.in_transaction:
            raise SqlError(1694, "Cannot modify @@session.sql_log_bin inside a transaction")
        if it.scope == "global":
            if var.name == "gtid_slave_pos":
                raise not_supported("SET GLOBAL gtid_slave_pos (binlogd is a binlog server, not a replica)")
            raise not_supported(f"SET GLOBAL {var.name} (binlogd's configuration is not changed through SQL)")
        return lambda: self.apply_session(var, value, extra, is_default)

    def apply_session(self, var: SysVar, value: Any, extra: dict[str, Any], is_default: bool) -> None:
        s = self.session
        name = var.name
        if name == "skip_replication":
            s.skip_replication = bool(value)
        elif name == "autocommit":
            if value and not s.autocommit:
                s.in_transaction = False  # switching autocommit on commits the open transaction
            s.autocommit = bool(value)
        elif name == "sql_log_bin":
            s.sql_log_bin = bool(value)
        elif name == "timestamp" and is_default:
            s.session_sysvars.pop("timestamp", None)
        else:
            s.session_sysvars[name] = value
        for k, v in extra.items():
            s.session_sysvars[k] = v

    def coerce(self, var: SysVar, raw: Any, expr: _Node | None) -> tuple[Any, dict[str, Any]]:
        """Validate a SET value the way MariaDB's Sys_var classes do; returns (value, dependent updates)."""
        name = var.name
        kind = var.kind
        is_str = isinstance(raw, str | bytes) and not isinstance(raw, _Hex)
        text = _to_text(raw) if raw is not None else None
        if kind is Kind.BOOL:
            if raw is None:
                raise _wrong_value(name, None)
            if is_str:
                v = _BOOL_WORDS.get(str(text).upper())
                if v is None:
                    raise _wrong_value(name, text)
                return v, {}
            if isinstance(raw, int) and not isinstance(raw, bool):
                if raw in (0, 1):
                    return raw, {}
                raise _wrong_value(name, raw)
            if isinstance(raw, _Hex):
                iv = int.from_bytes(raw, "big") if raw else 0
                if iv in (0, 1):
                    return iv, {}
                raise _wrong_value(name, iv)
            raise _wrong_type(name)
        if kind is Kind.INT:
            if raw is None or is_str or isinstance(raw, float | Decimal):
                raise _wrong_type(name)
            iv = int.from_bytes(raw, "big") if isinstance(raw, _Hex) else int(raw)
            lo = var.min if var.min is not None else 0
            hi = var.max if var.max is not None else _U64
            if not lo <= iv <= hi:
                self.warnings.append(("Warning", C.ER_TRUNCATED_WRONG_VALUE,
                                      f"Truncated incorrect {name} value: '{iv}'"))
                iv = min(max(iv, lo), hi)
            return iv, {}
        if kind is Kind.DOUBLE:
            if raw is None or is_str:
                raise _wrong_type(name)
            fv = float(self.ev.number(raw) or 0)
            lo_f, hi_f = float(var.min or 0), float(var.max if var.max is not None else _DBL_MAX)
            if not lo_f <= fv <= hi_f:
                self.warnings.append(("Warning", C.ER_TRUNCATED_WRONG_VALUE,
                                      f"Truncated incorrect {name} value: '{_to_text(raw)}'"))
                fv = min(max(fv, lo_f), hi_f)
            return fv, {}
        if kind is Kind.ENUM:
            if raw is None:
                raise _wrong_value(name, None)
            if is_str:
                for c in var.choices:
                    if c.upper() == str(text).upper():
                        return c, {}
                raise _wrong_value(name, text)
            if isinstance(raw, int):
                if 0 <= raw < len(var.choices):
                    return var.choices[raw], {}
                raise _wrong_value(name, raw)
            raise _wrong_type(name)
        if kind is Kind.SET:
            if raw is None:
                raise _wrong_value(name, None)
            if isinstance(raw, float | Decimal):
                raise _wrong_type(name)
            try:
                return SV.parse_sql_mode(raw if isinstance(raw, int) else str(text)), {}
            except ValueError as e:
                raise _wrong_value(name, e.args[0]) from None
        if kind is Kind.TIME_ZONE:
            if raw is None:
                raise _wrong_value(name, None)
            if not is_str:
                raise _wrong_type(name)
            tz = SV.parse_time_zone(str(text))
            if tz is None:
                raise SqlError(C.ER_UNKNOWN_TIME_ZONE, f"Unknown or incorrect time zone: '{text}'")
            return tz[0], {}
        if kind is Kind.CHARSET:
            if raw is None:
                if var.nullable:
                    return None, {}
                raise _wrong_value(name, None)
            cs = SV.charset(str(text))
            if cs is None:
                raise SqlError(C.ER_UNKNOWN_CHARACTER_SET, f"Unknown character set: '{text}'")
            if name == "character_set_client" and cs in SV.CLIENT_FORBIDDEN_CHARSETS:
                raise _wrong_value(name, cs)
            extra = {}
            partner = {"character_set_connection": "collation_connection",
                       "character_set_database": "collation_database",
                       "character_set_server": "collation_server"}.get(name)
            if partner:
                extra[partner] = SV.default_collation(cs)
            return cs, extra
        if kind is Kind.COLLATION:
            if raw is None:
                raise _wrong_value(name, None)
            found = SV.collation(str(text))
            if found is None:
                raise SqlError(C.ER_UNKNOWN_COLLATION, f"Unknown collation: '{text}'")
            coll, cs = found
            partner = {"collation_connection": "character_set_connection",
                       "collation_database": "character_set_database",
                       "collation_server": "character_set_server"}[name]
            return coll, {partner: cs}
        # plain strings (init_connect, gtid_slave_pos...)
        if raw is None:
            raise _wrong_value(name, None)
        if not is_str:
            raise _wrong_type(name)
        return str(text), {}

    def check_names(self, it: _SetItem) -> Callable[[], None]:
        """SET NAMES / SET CHARACTER SET: validate like MariaDB (1115, 1231 for ucs2..., 1273, 1253)."""
        s = self.session
        if it.charset is None:  # DEFAULT
            cs = SV.charset(str(SV.SYSVARS["character_set_client"].global_value(self.server))) or "utf8mb4"
        else:
            found = SV.charset(it.charset)
            if found is None:
                raise SqlError(C.ER_UNKNOWN_CHARACTER_SET, f"Unknown character set: '{it.charset}'")
            cs = found
        if cs in SV.CLIENT_FORBIDDEN_CHARSETS:
            raise _wrong_value("character_set_client", cs)
        updates: dict[str, Any] = {"character_set_client": cs, "character_set_results": cs}
        if it.kind == "names":
            coll = SV.default_collation(cs)
            if it.collate is not None:
                found_c = SV.collation(it.collate, cs)
                if found_c is None and SV.is_uca1400_short(it.collate):
                    found_c = (it.collate, "")  # a UCA-14 name that exists, just not for this charset
                if found_c is None:
                    raise SqlError(C.ER_UNKNOWN_COLLATION, f"Unknown collation: '{it.collate}'")
                if found_c[1] != cs:
                    raise SqlError(C.ER_COLLATION_CHARSET_MISMATCH,
                                   f"COLLATION '{it.collate}' is not valid for CHARACTER SET '{cs}'")
                coll = found_c[0]
            updates["character_set_connection"] = cs
            updates["collation_connection"] = coll
        else:
            db_cs = self.sysvar_session("character_set_database")
            db_coll = self.sysvar_session("collation_database")
            updates["character_set_connection"] = db_cs
            updates["collation_connection"] = db_coll
        return lambda: s.session_sysvars.update(updates)

    def set_transaction(self, p: _Parser) -> Ok:
        kw = p.accept_kw("GLOBAL", "SESSION", "LOCAL")
        p.expect_kw("TRANSACTION")
        updates: dict[str, Any] = {}
        while True:
            if p.accept_kw("ISOLATION"):
                p.expect_kw("LEVEL")
                w = p.expect_kw("READ", "REPEATABLE", "SERIALIZABLE")
                if w == "READ":
                    w2 = p.expect_kw("COMMITTED", "UNCOMMITTED")
                    level = f"READ-{w2}"
                elif w == "REPEATABLE":
                    p.expect_kw("READ")
                    level = "REPEATABLE-READ"
                else:
                    level = "SERIALIZABLE"
                updates["tx_isolation"] = level
            else:
                p.expect_kw("READ")
                updates["tx_read_only"] = 1 if p.expect_kw("ONLY", "WRITE") == "ONLY" else 0
            if not p.accept_op(","):
                break
        p.finish()
        if kw == "GLOBAL":
            raise not_supported("SET GLOBAL TRANSACTION (binlogd's configuration is not changed through SQL)")
        if kw is not None:  # SESSION: the session default; without a scope it only concerns the next transaction
            self.session.session_sysvars.update(updates)
        return Ok()
