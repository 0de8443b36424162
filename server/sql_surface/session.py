"""Per-connection SQL state (SessionState) and the USE rule; read by the dump, the write path and SHOW."""

from __future__ import annotations

from dataclasses import dataclass, field

from binlogd.protocol import constants as C

from .errors import SqlError


@dataclass
class SessionState:
    """Everything one connection's SQL changes. The dump code reads `user_vars` and `skip_replication`.

    `user_vars` keys are lower-case names without '@' (MariaDB user variables are case-insensitive); values
    are str | int | float | bytes | None. `session_sysvars` holds SET SESSION overrides by lower-case name;
    the flags the dump depends on (skip_replication, autocommit, sql_log_bin) are attributes instead.
    """

    user_vars: dict[str, object] = field(default_factory=dict)
    skip_replication: bool = False
    autocommit: bool = True
    database: str | None = None
    sql_log_bin: bool = True
    session_sysvars: dict[str, object] = field(default_factory=dict)
    in_transaction: bool = False  # after BEGIN / START TRANSACTION until COMMIT / ROLLBACK (the 1929 rule)
    connection_id: int = 0  # CONNECTION_ID()
    user: str = ""  # USER() is user@host
    host: str = "localhost"
    diagnostics: list[tuple[str, int, str]] = field(default_factory=list)  # SHOW WARNINGS (Level, Code, Message)
    status: dict[str, str] = field(default_factory=dict)  # session status set by the connection (Ssl_cipher ...)


def change_database(session: SessionState, name: str) -> None:
    """USE / COM_INIT_DB: binlogd serves no databases except information_schema (1049 otherwise)."""
    if name.lower() == "information_schema":
        session.database = "information_schema"
        # USE also switches @@character_set_database to the database's (information_schema: utf8mb3)
        session.session_sysvars["character_set_database"] = "utf8mb3"
        session.session_sysvars["collation_database"] = "utf8mb3_general_ci"
        return
    raise SqlError(C.ER_BAD_DB_ERROR, f"Unknown database '{name}'")
