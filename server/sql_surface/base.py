"""StatementBase: one statement's state (session, server, warnings, sql_mode) and system-variable reads,
shared by the SELECT, SET and SHOW statement classes."""

from __future__ import annotations

from typing import Any

from binlogd.protocol import constants as C

from .. import sysvars as SV
from ..sysvars import Scope, SysVar
from .errors import SqlError, _unknown_sysvar
from .evaluator import _Eval
from .lexer import _trim_query
from .server_view import ServerView
from .session import SessionState

_SESSION_BOUND = {"skip_replication", "autocommit", "sql_log_bin", "in_transaction", "warning_count",
                  "error_count"}


class StatementBase:
    """One statement: its text, session, server view, warnings and evaluator."""

    def __init__(self, sql: str, session: SessionState, server: ServerView) -> None:
        # MariaDB's alloc_query() trims leading whitespace and trailing ';' / whitespace before parsing, so
        # error positions and line numbers count from the first real character.
        self.sql = _trim_query(sql)
        self.session = session
        self.server = server
        self.warnings: list[tuple[str, int, str]] = []
        self.clears_diagnostics = False
        self.hidden: list[tuple[int, int]] = []
        modes = str(self.sysvar_session("sql_mode") or "")
        self.modes = set(modes.split(","))
        self.ev = _Eval(self)

    # --- system variables
    def sysvar_session(self, name: str) -> Any:
        """The session value of a BOTH/SESSION_ONLY variable (global value when not overridden)."""
        if name in self.session.session_sysvars:
            return self.session.session_sysvars[name]
        return SV.SYSVARS[name].global_value(self.server)

    def session_bound(self, name: str) -> Any:
        s = self.session
        if name == "skip_replication":
            return int(s.skip_replication)
        if name == "autocommit":
            return int(s.autocommit)
        if name == "sql_log_bin":
            return int(s.sql_log_bin)
        if name == "in_transaction":
            return int(s.in_transaction)
        if name == "warning_count":
            return len(s.diagnostics)
        return sum(1 for d in s.diagnostics if d[0] == "Error")  # error_count

    def value_of(self, var: SysVar, scope: str) -> Any:
        """@@scope.name as SELECT sees it."""
        if scope == "global":
            return var.global_value(self.server)
        if var.name in _SESSION_BOUND:
            return self.session_bound(var.name)
        if var.name == "timestamp":
            ts = self.session.session_sysvars.get("timestamp")
            return float(ts) if isinstance(ts, int | float) and ts else self.ev.now()
        if var.scope is Scope.GLOBAL:
            return var.global_value(self.server)
        return self.sysvar_session(var.name)

    def read_sysvar(self, scope: str | None, name: str, component: str | None = None) -> Any:
        var = SV.lookup(name)
        if var is None:
            raise _unknown_sysvar(name)
        if component is not None:
            raise SqlError(C.ER_VARIABLE_IS_NOT_STRUCT,
                           f"Variable '{var.name}' is not a variable component (can't be used as "
                           f"XXXX.variable_name)")
        if scope == "global" and var.scope is Scope.SESSION_ONLY:
            raise SqlError(C.ER_INCORRECT_GLOBAL_LOCAL_VAR, f"Variable '{var.name}' is a SESSION variable")
        if scope in ("session", "local") and var.scope is Scope.GLOBAL:
            raise SqlError(C.ER_INCORRECT_GLOBAL_LOCAL_VAR, f"Variable '{var.name}' is a GLOBAL variable")
        return self.value_of(var, "global" if scope == "global" else "session")
