"""What a logged-in user may do, by MariaDB 10.11's privilege names and with its refusal texts.

The users file (protocol/accounts.py) grants each user a set of these; a line without GRANT keeps the meaning every
users-file line had before privileges existed: everything. Checked here, in one place each:

- COM_BINLOG_DUMP needs REPLICATION SLAVE (1227), and so does COM_REGISTER_SLAVE (1045 naming the account), as a
  real 10.11 answers;
- SHOW BINARY LOGS / MASTER STATUS / BINLOG EVENTS need BINLOG MONITOR (its 10.5+ alias: REPLICATION CLIENT),
  SHOW SLAVE HOSTS needs REPLICATION MASTER ADMIN, SHOW [ALL] SLAVE[S] STATUS needs SLAVE MONITOR (1227);
- in standalone mode a data or schema change needs WRITE (binlogd's name for the table privileges INSERT,
  UPDATE, DELETE, CREATE, DROP, ALTER...): 1142 for a table, 1044 for a database, as MariaDB answers a user
  without them; FLUSH BINARY LOGS needs RELOAD, PURGE BINARY LOGS (also in relay mode) BINLOG ADMIN (1227).
"""

from __future__ import annotations

from binlogd.protocol.accounts import Priv

from .sql_surface import SqlError, leading_words

ER_DBACCESS_DENIED_ERROR = 1044
ER_SPECIFIC_ACCESS_DENIED_ERROR = 1227
ER_TABLEACCESS_DENIED_ERROR = 1142


def _need(*names: str) -> SqlError:
    return SqlError(ER_SPECIFIC_ACCESS_DENIED_ERROR, "Access denied; you need (at least one of) the "
                    f"{', '.join(names)} privilege(s) for this operation", "42000")


def check_dump(privs: Priv) -> None:
    """COM_BINLOG_DUMP."""
    if Priv.REPLICATION_SLAVE not in privs:
        raise _need("REPLICATION SLAVE")


def check_register(privs: Priv, user: str, account_host: str) -> None:
    """COM_REGISTER_SLAVE: a real 10.11 answers 1045 naming the account (not 1227) to a user without REPLICATION
    SLAVE."""
    if Priv.REPLICATION_SLAVE not in privs:
        raise SqlError(1045, f"Access denied for user '{user}'@'{account_host}' (using password: YES)", "28000")


def check_show(sql: str, privs: Priv, version: str) -> None:
    """The SHOW statements that reveal replication state; others (and statements that are no SHOW) pass."""
    if privs == Priv.ALL:
        return
    w = leading_words(sql, 5, version)
    if not w or w[0] != "SHOW":
        return
    w = w[1:]
    if w[:2] in (["BINARY", "LOGS"], ["MASTER", "LOGS"], ["MASTER", "STATUS"], ["BINLOG", "STATUS"]):
        need, names = Priv.BINLOG_MONITOR, ("SUPER", "BINLOG MONITOR")
    elif w[:2] == ["BINLOG", "EVENTS"]:
        need, names = Priv.BINLOG_MONITOR, ("BINLOG MONITOR",)
    elif w[:2] in (["SLAVE", "HOSTS"], ["REPLICA", "HOSTS"]):
        need, names = Priv.REPLICATION_MASTER_ADMIN, ("REPLICATION MASTER ADMIN",)
    elif (w[:1] in (["SLAVE"], ["REPLICA"]) and "STATUS" in w[1:3]) or w[:2] in (["ALL", "SLAVES"],
                                                                                 ["ALL", "REPLICAS"]):
        need, names = Priv.SLAVE_MONITOR, ("SUPER", "SLAVE MONITOR")
    else:
        return
    if need not in privs:
        raise _need(*names)


def check_purge(privs: Priv) -> None:
    """PURGE BINARY LOGS, standalone and relay modes."""
    if Priv.BINLOG_ADMIN not in privs:
        raise _need("BINLOG ADMIN")


_DML_PRIV = {"INSERT": "INSERT", "REPLACE": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE"}
_DDL_PRIV = {"CREATE": "CREATE", "DROP": "DROP", "ALTER": "ALTER", "TRUNCATE": "DROP", "RENAME": "ALTER"}


def check_write(stmt: object, sql: str, privs: Priv, user: str, peer: str, account_host: str,
                default_db: str | None, version: str) -> None:
    """A standalone statement `stmt` (server.standalone.classify.Statement) that writes, for a user without the
    right: MariaDB's refusal. Import of the classifier is the caller's (it already has the Statement)."""
    from .standalone.classify import Kind

    kind = getattr(stmt, "kind", None)
    if kind is Kind.FLUSH_LOGS and Priv.RELOAD not in privs:
        raise _need("RELOAD")
    if kind is Kind.PURGE:
        check_purge(privs)
    if kind not in (Kind.DML, Kind.DDL, Kind.DB_DDL) or Priv.WRITE in privs:
        return
    verb = (leading_words(sql, 1, version) or ["?"])[0]
    if kind is Kind.DB_DDL:
        db = getattr(stmt, "database", None) or default_db or ""
        raise SqlError(ER_DBACCESS_DENIED_ERROR, f"Access denied for user '{user}'@'{account_host}' to database "
                       f"'{db}'", "42000")
    db, table = _first_table(stmt, default_db)
    command = _DML_PRIV.get(verb) if kind is Kind.DML else _DDL_PRIV.get(verb, verb)
    raise SqlError(ER_TABLEACCESS_DENIED_ERROR, f"{command or verb} command denied to user '{user}'@'{peer}' "
                   f"for table `{db}`.`{table}`", "42000")


def _first_table(stmt: object, default_db: str | None) -> tuple[str, str]:
    plan = getattr(stmt, "plan", None)
    if plan is not None and plan.target is not None:
        db, table = plan.target
        return db or default_db or "", table
    tree = getattr(stmt, "tree", None)
    if tree is not None:
        from sqlglot import exp

        t = tree.find(exp.Table)
        if t is not None and t.name:
            return t.db or default_db or "", t.name
    return default_db or "", ""
