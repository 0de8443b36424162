"""Which replicate-* table filters a dump gets: bound to its replica's server_id (`--replica-filter`), to its user
(the users file), or set by the client for its own session (`SET @binlogd_replicate_do_table='db.t1,db.%'`).

One binding applies, the first of: the server_id's, the user's, the session's. A replica or user the operator
bound cannot widen its binding: its session variables are then not used (the ledger's `filters_from` says which
applied). Bad values are refused where they are given: at start-up (exit 2), in the users file, or at SET time
with MariaDB's own error for a bad replicate-* value (the matching rules are `protocol.repl_filters`, the events
they reject `protocol.table_filter`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from binlogd.protocol import constants as C
from binlogd.protocol.repl_filters import ConfiguredBy, FilterError, FilterSet, FilterType
from binlogd.protocol.table_filter import SESSION_VARS, build_filter_set, parse_assignment, split_values

Assignments = dict[FilterType, tuple[str, ...]]


def parse_cli(values: Iterable[str]) -> dict[int, Assignments]:
    """`--replica-filter SERVER_ID:replicate-OPTION=VALUE[,VALUE...]` (repeatable; values of one option add up);
    FilterError with the option's text for a bad one."""
    out: dict[int, Assignments] = {}
    for text in values:
        sid, sep, rule = text.partition(":")
        try:
            server_id = int(sid)
        except ValueError:
            server_id = -1
        if not sep or not 0 < server_id < 1 << 32:
            raise FilterError(f"--replica-filter {text!r}: expected SERVER_ID:replicate-OPTION=VALUE[,VALUE...] "
                              "with a server_id of 1..4294967295")
        try:
            ftype, vals = parse_assignment(rule)
        except FilterError as e:
            raise FilterError(f"--replica-filter {text!r}: {e}") from None
        by = out.setdefault(server_id, {})
        by[ftype] = by.get(ftype, ()) + vals
    return out


def check_session_var(name: str, value: object) -> None:
    """SET @binlogd_replicate_*: refuse a value that is not a rule list of its option, as MariaDB refuses
    `SET GLOBAL replicate_do_table='nodot'`: 1210 "Incorrect arguments to SET". Other user variables pass."""
    ftype = SESSION_VARS.get(name.lower())
    if ftype is None or value is None:
        return
    from .sql_surface import SqlError

    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    try:
        if text.strip():
            split_values(ftype, text)
    except FilterError:
        raise SqlError(C.ER_WRONG_ARGUMENTS, "Incorrect arguments to SET") from None


def session_assignments(user_vars: Mapping[str, object]) -> Assignments:
    """The rules a session set (values were checked at SET time; an empty string or NULL sets none)."""
    out: Assignments = {}
    for name, ftype in SESSION_VARS.items():
        v = user_vars.get(name)
        if v is None:
            continue
        text = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
        if text.strip():
            out[ftype] = split_values(ftype, text)
    return out


def filters_for(server_id: int, by_server_id: Mapping[int, Assignments], user_rules: Assignments,
                user_vars: Mapping[str, object]) -> tuple[FilterSet | None, str | None]:
    """The dump's FilterSet (a fresh one: its counters are the connection's) and where it came from."""
    if server_id in by_server_id:
        return build_filter_set(by_server_id[server_id], ConfiguredBy.STARTUP_OPTIONS_FOR_CHANNEL), "server_id"
    if user_rules:
        return build_filter_set(user_rules, ConfiguredBy.STARTUP_OPTIONS), "user"
    session = session_assignments(user_vars)
    if session:
        return build_filter_set(session, ConfiguredBy.CHANGE_REPLICATION_FILTER), "session"
    return None, None
