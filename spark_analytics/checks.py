"""The ten checks of the audit, as Spark DataFrame operations over the binlog events and the ledger records.

Sizes: the binlog events (`E`, one row per event) and the ledger records are big; connections, files and the
per-policy rule table are small: they reach the big tables as literal maps looked up per row (`literal_map`), not
as joins. Expected non-send actions come from `protocol/decision.py`'s `decide()`, the one place of the per-event
rule, evaluated once per distinct connection policy (`rule_hits`).

Every check returns findings as rows of FINDING_DDL; `severity` is `error` (the audit fails: exit 1), `warning`
(reported, e.g. a torn last ledger record or MariaDB's documented holes under `--compat mariadb`) or `info`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlogd.protocol.constants import (
    ANNOTATE_ROWS_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    CAP_TOLERATE_HOLES,
    EVENT_TYPE_NAMES,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    QUERY_EVENT,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    USER_VAR_EVENT,
)
from binlogd.protocol.decision import WHY_CAPABILITY, Action, Compat, ReplicaPolicy, clamp_capability, explain

FINDING_DDL = "`check` INT, severity STRING, connection_id BIGINT, file STRING, pos BIGINT, message STRING"
# (name, SQL type) of each FINDING_DDL column
FINDING_COLUMNS = tuple((n.strip("`"), t) for n, t in (c.strip().split(" ", 1) for c in FINDING_DDL.split(",")))
CHECK_NAMES = {
    1: "coverage", 2: "hole legality", 3: "dummy integrity", 4: "filter correctness", 5: "transaction atomicity",
    6: "position continuity", 7: "convergence", 8: "relay-log reconciliation", 9: "divergence",
    10: "ledger integrity",
}
FILTERED = ("hole", "dummy", "begin", "renamed")  # `renamed`: sent with its database rewritten (replicate-rewrite-db)
# events that carry no transaction content: capability rules may filter them alone without splitting a group
_METADATA_TYPES = (GTID_EVENT, ANNOTATE_ROWS_EVENT, GTID_LIST_EVENT, BINLOG_CHECKPOINT_EVENT,
                   FORMAT_DESCRIPTION_EVENT, ROTATE_EVENT, START_ENCRYPTION_EVENT, 159)
_ACTION_NAMES = {Action.HOLE: "hole", Action.DUMMY: "dummy", Action.BEGIN: "begin"}


@dataclass
class Connection:
    """One dump as the ledger describes it (driver side: connections are few)."""

    conn: int
    server_id: int
    capability: int
    capability_set: bool
    skip_replication: bool
    dump_flags: int
    compat: str
    send_tables_info: bool
    checksum: bool
    peer: str | None
    user: str | None
    start_file: str | None
    start_pos: int
    start_gtid: str | None
    end_file: str | None = None
    end_pos: int | None = None
    reason: str | None = None  # close.reason; None: no close record
    close_events: int | None = None
    ts_us: int | None = None
    policy_id: int = 0
    transcode: str | None = None  # conn.transcode: strip_crc / add_crc (positions and lengths stay the file's)
    table_filters: str | None = None  # the conn record's replicate-* rules (JSON text), None: no table filter

    def policy(self) -> ReplicaPolicy:
        kw: dict[str, Any] = {
            "capability": clamp_capability(self.capability),
            "skip_replication": bool(self.skip_replication),
            "send_annotate": bool(self.dump_flags & 2),
            "compat": Compat.MARIADB if self.compat == "mariadb" else Compat.BINLOGD,
        }
        if "send_tables_info" in {f.name for f in dataclasses.fields(ReplicaPolicy)}:
            kw["send_tables_info"] = bool(self.send_tables_info)
        if "table_filters" in {f.name for f in dataclasses.fields(ReplicaPolicy)}:
            kw["table_filters"] = self.table_filters is not None
        return ReplicaPolicy(**kw)


@dataclass
class AuditData:
    spark: Any
    events: Any  # E: binlog events (binlog_source COLUMNS)
    ledger: Any  # the ev/conn/close records the checks read: BOUNDS and `run_ok` added (`verify_policy_runs`)
    files: list[str]  # binlog files in order
    file_stats: dict[str, dict[str, int]]  # file -> {"events", "end", "bytes"}
    binlog_dir: Path
    connections: list[Connection] = field(default_factory=list)
    torn: list[tuple[str, int, int]] = field(default_factory=list)
    relays: dict[str, Any] = field(default_factory=dict)  # replica server_id (text) -> relay events DataFrame
    raw_ledger: Any = None  # the records as read (check 10's seq test); None: same as `ledger`
    cached: list[Any] = field(default_factory=list)  # kept for the whole audit (unpersisted at its end)
    withheld: Any = None  # `withheld_events` of every FILTERED action, checkpointed at its first use
    event_types: frozenset[int] | None = None  # the event types the binlog holds (None: not known, any of 256)
    # policy-run records (`sent`, `policy` > 0) per connection, counted by `load_connections`' job
    run_counts: dict[int | None, int] = field(default_factory=dict)
    filtered_records: int | None = None  # the FILTERED ev records (`load_connections`); None: not counted
    strict_ledger: bool = False  # the ledger was parsed strictly (staged): no `_corrupt_record` can be set
    # the records' seqs as pyarrow parsed them (`ledger.SeqStats`, staged ledger); None: Spark counts them
    seq_stats: Any = None
    runs: Any = None  # `run_counts`: the policy runs with the events their type rules filtered, per action
    run_slices: Any = None  # the same per run and timeline slice (`run_counts`)
    # `rule_suspects`' records with their class counts, counted in `run_counts`' job (None: counted by itself)
    suspect_counts: Any = None
    # the ledger's BOUNDS and per-key counts, found before Spark ran (`record_probes`); None: `_with_bounds` and
    # `class_counts`' sorted pass find them
    probes: Any = None
    crc_bad: int | None = None  # stored events whose CRC32 fails, counted as they were decoded (None: not counted)


def _F() -> Any:
    from pyspark.sql import functions as F

    return F


def finding(check: int, severity: str, conn: int | None, file: str | None, pos: int | None, message: str
            ) -> tuple[int, str, int | None, str | None, int | None, str]:
    return (check, severity, conn, file, pos, message)


def type_name(t: int | None) -> str:
    return "?" if t is None else f"{EVENT_TYPE_NAMES.get(t, 'Unknown')}({t})"


# ---- tables derived once ---------------------------------------------------------------------------------------


def drop_repeated_records(data: AuditData) -> None:
    """A line repeated byte for byte (same seq, same content) is one fact reported once, by check 10 ("appears 2
    times"): the other checks read each record once, so a copied line is not also an overlap. `data.raw_ledger`
    keeps the records as written. Cached, not checkpointed: its lineage is short (the ledger's scan and one
    aggregate), and the cache is filled by `load_connections`' job, where a checkpoint is a job of its own. A
    ledger whose records all have their own seq (`SeqStats.all_distinct`, known from pyarrow's parse) has no repeated
    line: read as it is (no aggregate of every column, no cache)."""
    L = data.ledger
    if data.raw_ledger is None:
        data.raw_ledger = L
    if data.seq_stats is not None and data.seq_stats.all_distinct:
        return
    data.ledger = L.dropDuplicates([c for c in L.columns if c != "ledger_file"]).cache()
    data.cached.append(data.ledger)


# the (compat, checksum-aware) of the only connections a checksum transcoding (server/transcode.py) is given to
_TRANSCODES = {"strip_crc": ("binlogd", False), "add_crc": ("binlogd", True)}


def load_connections(data: AuditData) -> list[tuple]:
    """Fill `data.connections` from the conn/close records; findings (check 10) for malformed structure."""
    F = _F()
    L = data.ledger
    out: list[tuple] = []
    # one job: the conn and close records (`rec`) and what the ev records say per connection (`ev_conn`, `last`,
    # and `runs`: its policy runs, which `verify_policy_runs` needs to know before it plans)
    # the seq of the last sent/filtered record; its position is looked up only for a connection without a close
    # record (`_last_positions`): every aggregate buffer fixed-width, a hash aggregate (max_by of a struct made it
    # a sort-based one over every record)
    last = F.max(F.when(F.col("action").isin("sent", *FILTERED), F.col("seq")))
    # the columns of the records as written: a staged ledger's probe columns are null on these, and each read
    # column is decoded for every record of the ledger
    probed = set(data.probes.columns()) if data.probes is not None else set()
    recs = L.filter(F.col("r").isin("conn", "close")).select(
        F.struct(*[c for c in L.columns if c not in probed]).alias("rec"))
    evs = L.filter(F.col("r") == "ev").groupBy("conn").agg(
        last.alias("last"), F.count(F.when(_is_run(F), 1)).alias("runs"),
        F.count(F.when(F.col("action").isin(*FILTERED), 1)).alias("filtered"))
    both = recs.select("rec", F.lit(None).cast(evs.schema["conn"].dataType).alias("ev_conn"),
                       F.lit(None).cast(evs.schema["last"].dataType).alias("last"),
                       F.lit(None).cast("bigint").alias("runs"), F.lit(None).cast("bigint").alias("filtered")
                       ).unionByName(
        evs.select(F.lit(None).cast(recs.schema["rec"].dataType).alias("rec"), F.col("conn").alias("ev_conn"),
                   "last", "runs", "filtered")).collect()
    per_conn = [r for r in both if r.rec is None]
    data.run_counts = {r.ev_conn: int(r.runs) for r in per_conn if r.runs}
    data.filtered_records = sum(int(r.filtered) for r in per_conn)
    # sorted here as orderBy("seq") would (nulls first), not by Spark: its sort is a sampling job and a shuffle
    rows = sorted((r.rec for r in both if r.rec is not None), key=lambda r: (r.seq is not None, r.seq or 0))
    conn_rows = [r for r in rows if r.r == "conn"]
    close_rows = [r for r in rows if r.r == "close"]
    seen: dict[int, Connection] = {}
    for r in conn_rows:
        if r.conn in seen:
            out.append(finding(10, "error", r.conn, None, None, f"connection {r.conn} has a second conn record "
                                                               f"(seq {r.seq})"))
            continue
        seen[r.conn] = Connection(
            conn=r.conn, server_id=r.server_id or 0, capability=r.capability or 0,
            capability_set=bool(r.capability_set), skip_replication=bool(r.skip_replication),
            dump_flags=r.dump_flags or 0, compat=r.compat or "binlogd", send_tables_info=bool(r.send_tables_info),
            checksum=bool(r.checksum), peer=r.peer, user=r.user, start_file=r.start_file, start_pos=r.start_pos or 4,
            start_gtid=r.start_gtid, ts_us=r.ts_us, transcode=r.transcode,
            table_filters=r.table_filters if r.table_filters not in (None, "null") else None)
        if r.transcode is not None and _TRANSCODES.get(r.transcode) != (r.compat or "binlogd", bool(r.checksum)):
            out.append(finding(10, "error", r.conn, r.start_file, r.start_pos, f"conn record says transcode "
                               f"{r.transcode!r}, which its compat and checksum awareness do not allow"))
    closed: set[int] = set()
    for r in close_rows:
        c = seen.get(r.conn)
        if c is None:
            out.append(finding(10, "error", r.conn, r.file, r.pos, f"close record (seq {r.seq}) of connection "
                                                                   f"{r.conn}, which has no conn record"))
            continue
        if r.conn in closed:
            out.append(finding(10, "error", r.conn, r.file, r.pos, f"second close record (seq {r.seq})"))
            continue
        closed.add(r.conn)
        c.end_file, c.end_pos, c.reason, c.close_events = r.file, r.pos, r.reason, r.events
    # connections without a close record end where their records end
    last_by = _last_positions(data, {r.ev_conn: r["last"] for r in per_conn if r["last"] is not None
                                     and r.ev_conn in seen and seen[r.ev_conn].reason is None})
    for c in seen.values():
        if c.reason is None:
            lr = last_by.get(c.conn)
            c.end_file, c.end_pos = (lr.file, lr.end) if lr is not None else (c.start_file, c.start_pos)
            out.append(finding(10, "warning", c.conn, c.end_file, c.end_pos,
                               "no close record: the dump was still running or binlogd stopped abruptly; "
                               "audited up to its last record"))
    for r in per_conn:
        if r.ev_conn not in seen:
            out.append(finding(10, "error", r.ev_conn, None, None, f"ev records of connection {r.ev_conn}, which has "
                                                                   "no conn record"))
    policies: dict[ReplicaPolicy, int] = {}
    for c in seen.values():
        c.policy_id = policies.setdefault(c.policy(), len(policies))
    data.connections = sorted(seen.values(), key=lambda c: c.conn)
    return out


def _last_positions(data: AuditData, last_seq: dict[int, int]) -> dict[int, Any]:
    """Per connection of `last_seq` (conn -> the seq of its last sent/filtered ev record), that record's (file,
    end): the greatest where records share the seq. One small job, and only when a connection has no close
    record."""
    if not last_seq:
        return {}
    F = _F()
    at = F.lit(False)
    for conn, seq in last_seq.items():
        at = at | ((F.col("conn") == conn) & (F.col("seq") == seq))
    rows = (data.ledger.filter((F.col("r") == "ev") & F.col("action").isin("sent", *FILTERED) & at)
            .groupBy("conn").agg(F.max(F.struct("file", "end")).alias("last")).collect())
    return {r.conn: r["last"] for r in rows}


# The small driver-side tables (connections, files, the rule table) reach the big ones as literal maps looked up
# per row, not as joined DataFrames: a join with a driver-built table runs a broadcast job in every plan that uses
# it (15 in the policy-run step, 19 in the findings step of a 20 000-event audit), and its analysis is a join's.
CONN_FIELDS = (("c_server_id", "BIGINT"), ("c_capability", "INT"), ("c_skip", "BOOLEAN"), ("c_compat", "STRING"),
               ("policy_id", "INT"), ("start_fi", "INT"), ("start_pos", "BIGINT"), ("end_fi", "INT"),
               ("end_pos", "BIGINT"), ("start_gtid", "STRING"))


def _conn_rows(data: AuditData) -> list[tuple]:
    """(conn, *CONN_FIELDS) per connection, with file indexes of the audited range [start, end)."""
    fi = {f: i for i, f in enumerate(data.files)}
    return [(c.conn, c.server_id, c.capability, c.skip_replication, c.compat, c.policy_id,
             fi.get(c.start_file or "", -1), c.start_pos, fi.get(c.end_file or "", -1), c.end_pos or 0,
             c.start_gtid) for c in data.connections]


def conns_df(data: AuditData) -> Any:
    """The small connection table (check 8's range joins; the other checks use `with_conn`)."""
    F = _F()
    ddl = "conn BIGINT, " + ", ".join(f"{n} {t}" for n, t in CONN_FIELDS)
    return F.broadcast(data.spark.createDataFrame(_conn_rows(data), ddl))


def _sql_literal(v: Any, t: Any) -> str:
    from pyspark.sql.types import ArrayType, StructType

    if isinstance(t, StructType):
        return "named_struct(" + ", ".join(f"'{f.name}', {_sql_literal(x, f.dataType)}"
                                           for x, f in zip(v, t.fields, strict=True)) + ")"
    if isinstance(t, ArrayType) and v and all(type(x) is int for x in v):  # no CAST per element: a long array's
        return f"CAST(array({', '.join(map(str, v))}) AS {t.simpleString()})"  # analysis was most of its cost
    if isinstance(t, ArrayType):
        return f"CAST(array({', '.join(_sql_literal(x, t.elementType) for x in v)}) AS {t.simpleString()})"
    if v is None:
        text = "NULL"
    elif isinstance(v, bool):
        text = "true" if v else "false"
    elif isinstance(v, int):
        text = str(v)
    else:
        text = "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"
    return f"CAST({text} AS {t.simpleString()})"


def literal_map(entries: dict[Any, Any], key_type: str, value_type: str) -> Any:
    """A map literal of `entries` (values: scalars, tuples for a struct type, lists for an array type), looked up
    per row; Spark folds it into one constant. Built as SQL text: one call into the JVM, not one per element."""
    F = _F()
    from pyspark.sql.types import _parse_datatype_string

    kt, vt = _parse_datatype_string(key_type), _parse_datatype_string(value_type)
    if not entries:
        return F.expr(f"CAST(NULL AS map<{kt.simpleString()}, {vt.simpleString()}>)")
    return F.expr("map(" + ", ".join(f"{_sql_literal(k, kt)}, {_sql_literal(v, vt)}" for k, v in entries.items())
                  + ")")


def _conn_struct_type() -> str:
    return "struct<" + ", ".join(f"{n}: {t}" for n, t in CONN_FIELDS) + ">"


def with_conn(data: AuditData, df: Any, names: tuple[str, ...] | None = None) -> Any:
    """`df` (a `conn` column) joined with the connection table as an inner join would be: rows of connections
    without a conn record dropped, CONN_FIELDS (or `names` of them) added."""
    F = _F()
    rows = _conn_rows(data)
    m = literal_map({r[0]: r[1:] for r in rows}, "BIGINT", _conn_struct_type())
    c = m[F.col("conn")]
    return df.filter(F.col("conn").isin([r[0] for r in rows])).select(
        "*", *[c[n].alias(n) for n, _ in CONN_FIELDS if names is None or n in names])


def file_index(data: AuditData, col: Any) -> Any:
    """The binlog file's index in `data.files` (null: not in the binlog directory)."""
    return literal_map({f: i for i, f in enumerate(data.files)}, "STRING", "INT")[col]


def files_df(data: AuditData) -> Any:
    F = _F()
    rows = [(f, i, data.file_stats.get(f, {}).get("end", 4)) for i, f in enumerate(data.files)]
    return F.broadcast(data.spark.createDataFrame(rows, "file STRING, fi INT, file_end BIGINT"))


def _rule_key(F: Any) -> Any:
    """(type, flagged, standalone) of an event as one int: the rule table's key."""
    return (F.col("type") * 4 + F.when(F.col("flags").bitwiseAND(0x8000) != 0, 2).otherwise(0)
            + F.when(F.coalesce(F.col("gtid_standalone"), F.lit(False)), 1).otherwise(0))


def policy_rules(data: AuditData, conns: list[int] | None = None) -> dict[int, dict[int, tuple[str, str]]]:
    """Per policy of the connections (of `conns`; all by default): the rule table explain() gives, keyed by
    (type, flagged, standalone) as `_rule_key` (`type * 4 + flagged * 2 + standalone`), of every key it does not
    send: (expected action, why). Only the types the binlog holds: a skip_replication policy filters every flagged
    type (~520 keys for 256 types), and the map literals built from it are paid in every plan and task."""
    types = sorted(data.event_types) if data.event_types is not None else range(256)
    out: dict[int, dict[int, tuple[str, str]]] = {}
    for pid, c in {c.policy_id: c for c in data.connections if conns is None or c.conn in conns}.items():
        pol = c.policy()
        table = out.setdefault(pid, {})
        for t in types:
            for flagged in (False, True):
                for standalone in (False, True):
                    a, reason = explain(t, 0x8000 if flagged else 0, standalone, pol)
                    if a != Action.SEND:
                        table[t * 4 + flagged * 2 + standalone] = (_ACTION_NAMES[Action(a)], reason)
    return out


def _rule_table(data: AuditData, why: str | None = None, conns: list[int] | None = None,
                actions: tuple[str, ...] | None = None, content: bool = False
                ) -> dict[int, list[tuple[int, str, bool]]]:
    """`rule_hits`' table: rule key -> (policy_id, expected action, whether the why is the type rules) of every
    policy (of `conns`) that does not send it; `why`, `actions`: only those answers; `content`: only the keys of
    types that carry transaction content (not _METADATA_TYPES)."""
    table: dict[int, list[tuple[int, str, bool]]] = {}
    for pid, rules_of in policy_rules(data, conns).items():
        for key, (action, reason) in rules_of.items():
            if ((why is None or reason == why) and (actions is None or action in actions)
                    and not (content and key // 4 in _METADATA_TYPES)):
                table.setdefault(key, []).append((pid, action, reason == WHY_CAPABILITY))
    return table


def rule_hits(data: AuditData, why: str | None = None, conns: list[int] | None = None,
              table: dict[int, list[tuple[int, str, bool]]] | None = None) -> Any:
    """Per event (its `type`, `flags`, `gtid_standalone`): the array of (conn, expected action, cap) of every
    connection (of `conns`; all by default) for whose policy decide() does not send it (`why` given: only the
    answers for that reason, e.g. the connection's type rules, "capability"; `cap`: the answer is the type rules').
    `table`: a `_rule_table` already built. The rule table (`policy_rules`) and each policy's connections are two
    map literals."""
    F = _F()
    by_policy: dict[int, list[int]] = {}
    for c in data.connections:
        if conns is None or c.conn in conns:
            by_policy.setdefault(c.policy_id, []).append(c.conn)
    if table is None:
        table = _rule_table(data, why, conns)
    st = "array<struct<policy_id: INT, expected: STRING, cap: BOOLEAN>>"
    rules = literal_map(table, "INT", st)[_rule_key(F)]
    conns_of = literal_map(by_policy, "INT", "array<BIGINT>")
    return F.flatten(F.transform(F.coalesce(rules, F.array().cast(st)), lambda h: F.transform(
        conns_of[h["policy_id"]], lambda c: F.struct(c.alias("conn"), h["expected"].alias("expected"),
                                                     h["cap"].alias("cap")))))


def prefix_classes(data: AuditData) -> dict[str, list[int]]:
    """The event classes whose per-file prefix counts `rule_suspects` reads at every record's two ends (the events
    of a class in a record's range: one subtraction). Per policy `pid` of the connections without a
    table filter (a table filter's decisions are not a function of the event's type: its connections are checked
    per event): `hole<pid>`, `dummy<pid>`, `begin<pid>` (the three: not sent), `ncap<pid>` (not sent for another
    reason than the type rules a policy run applies). Keys from `policy_rules`: decide() stays the one rule."""
    conns = [c.conn for c in data.connections if c.table_filters is None]
    out: dict[str, list[int]] = {}
    for pid, rules_of in policy_rules(data, conns).items():
        for action in ("hole", "dummy", "begin"):
            out[f"{action}{pid}"] = sorted(k for k, (a, _) in rules_of.items() if a == action)
        out[f"ncap{pid}"] = sorted(k for k, (_, why) in rules_of.items() if why != WHY_CAPABILITY)
    return {n: keys for n, keys in out.items() if keys}


def in_range(F: Any, bounds: dict[str, Any] | None = None) -> Any:
    """Condition: the event (fi, start, end) lies in the connection's audited range: its `start_fi`, `start_pos`,
    `end_fi`, `end_pos` columns, or these values of `bounds` (one connection's, as literals)."""
    b = {n: F.col(n) if bounds is None else F.lit(bounds[n]) for n in ("start_fi", "start_pos", "end_fi", "end_pos")}
    after_start = (F.col("fi") > b["start_fi"]) | ((F.col("fi") == b["start_fi"])
                                                   & (F.col("start") >= b["start_pos"]))
    before_end = (F.col("fi") < b["end_fi"]) | ((F.col("fi") == b["end_fi"])
                                               & (F.col("end") <= b["end_pos"]))
    return after_start & before_end


def records(data: AuditData, extra: tuple[str, ...] = (), ledger: Any = None) -> Any:
    """Non-fake ev records with the file index (a file unknown to the binlog directory gets fi null); `ledger`:
    another version of the records than `data.ledger`."""
    F = _F()
    L = data.ledger if ledger is None else ledger
    # a probed ledger has the index as a column (`record_probes.FILE_INDEX`)
    fi = F.col("fi") if data.probes is not None else file_index(data, F.col("file"))
    return (L.filter((F.col("r") == "ev") & F.col("action").isin("sent", *FILTERED))
            .select("seq", "conn", "file", "start", "end", "count", "length", "action", "why", "type", "flags",
                    "gtid", "sent_length", *extra, fi.alias("fi")))


# a record's binlog events at its boundaries: `s_ord`, `e_type`, `e_flags` of the event starting at its start,
# `e_ord` of the one ending at its end (null: not an event boundary)
BOUNDS = ("s_ord", "e_type", "e_flags", "e_ord")


def _with_bounds(data: AuditData, L: Any) -> Any:
    """`L` with BOUNDS on its ev records (sent and FILTERED), from one probe of the events by those records'
    (file, start) and (file, end), broadcast (the records are few next to the events: E is scanned, not
    shuffled). (file, start) and (file, end) are unique among the events: `L`'s rows, one each."""
    F = _F()
    E = data.events
    recs = L.filter((F.col("r") == "ev") & F.col("action").isin("sent", *FILTERED))
    SK = E.select("file", "start", F.col("ordinal").alias("s_ord"), F.col("type").alias("e_type"),
                  F.col("flags").alias("e_flags")).join(F.broadcast(recs.select("file", "start").distinct()),
                                                        ["file", "start"])
    TK = E.select("file", "end", F.col("ordinal").alias("e_ord")).join(
        F.broadcast(recs.select("file", "end").distinct()), ["file", "end"])
    return L.join(SK, ["file", "start"], "left").join(TK, ["file", "end"], "left")


def record_bounds(data: AuditData) -> Any:
    """`records` with their BOUNDS, which `verify_policy_runs` gave every record: check 1 reads every record's,
    `withheld_events` the filtered ones'; each joined the records with the events twice in its own plan before."""
    return records(data, BOUNDS)


def events_fi(data: AuditData) -> Any:
    F = _F()
    return data.events.withColumn("fi", F.col("file_index"))


def withheld_events(data: AuditData, actions: tuple[str, ...] = FILTERED) -> Any:
    """One row per binlog event covered by a `hole`/`dummy`/`begin`/`renamed` record (not a policy run's: those are
    `run_events`): a record of several events is expanded to the events of its range through the events' per-file
    ordinals (an equi-join, no range join). Columns: the record's `seq`, `conn`, `action`, `why`, `rec_start`,
    `rec_end`, `count`, `rec_length`, `sent_length`, `r_type`, `r_flags`, and the event's `file`, `ordinal`, `start`,
    `end`, `length`, `type`, `flags`, `log_pos`, `crc_ok`, `trx`. The range is [record start, record end); when the end
    is not an event boundary (check 1 reports it) the record's `count` gives it. A record whose start is not an event
    boundary expands to nothing (check 1).

    Computed once per audit (every FILTERED action) and checkpointed: checks 2-5 and 8 read it, and each of their
    plans would otherwise expand the records again (joins and a generator). Not
    eagerly: the first job that reads it (check 5's aggregate of the withheld transactions) fills it, where an eager
    checkpoint is a job of its own."""
    F = _F()
    if data.withheld is None:
        data.withheld = _withheld_events(data).localCheckpoint(eager=False)
    return data.withheld if set(actions) >= set(FILTERED) else data.withheld.filter(F.col("action").isin(*actions))


def _withheld_events(data: AuditData) -> Any:
    F = _F()
    # the records' boundaries from `record_bounds` (a record not starting at an event expands to nothing)
    R = (record_bounds(data).filter(F.col("action").isin(*FILTERED) & F.col("s_ord").isNotNull())
         .select("seq", "conn", "file", "fi", F.col("start").alias("rec_start"), F.col("end").alias("rec_end"),
                 "count", F.col("length").alias("rec_length"), "sent_length", "action", "why",
                 F.col("type").alias("r_type"), F.col("flags").alias("r_flags"), "s_ord", "e_ord"))
    E = data.events.select("file", "ordinal", "start", "end", "length", "type", "flags", "log_pos", "crc_ok", "trx")
    most = max((st.get("events", 0) for st in data.file_stats.values()), default=0)  # a tampered count stays bounded
    last = F.greatest(F.col("s_ord"), F.coalesce(
        F.col("e_ord"), F.col("s_ord") + F.least(F.greatest(F.col("count"), F.lit(1)), F.lit(most)) - 1))
    rec = [c for c in R.columns if c not in ("file", "fi", "s_ord", "e_ord")]
    if data.filtered_records is not None and 0 < data.filtered_records <= BROADCAST_RECORDS:
        # The records broadcast, keyed by the buckets of WITHHELD_BUCKET ordinals they touch, and the events
        # scanned once, each looking up its bucket: no shuffle and sort of every event (the sort-merge join's
        # two thirds of check 3's time at 10 M events). Keyed by the file's index, not its name: two ints, which
        # Spark packs into one long key (a string key was hashed and compared per event)
        bucket = F.expr(f"CAST(s_ord div {WITHHELD_BUCKET} AS INT)"), F.expr(f"CAST(last div {WITHHELD_BUCKET} AS INT)")
        RB = R.drop("file").withColumn("last", last).withColumn("bk", F.explode(F.sequence(*bucket)))
        J = (data.events.select(*E.columns, F.col("file_index").alias("fi"),
                                F.expr(f"CAST(ordinal div {WITHHELD_BUCKET} AS INT)").alias("bk"))
             .join(F.broadcast(RB), ["fi", "bk"])
             .filter(F.col("ordinal").between(F.col("s_ord"), F.col("last"))))
        return J.select("file", "ordinal", *rec, *[c for c in E.columns if c not in ("file", "ordinal")])
    X = (R.withColumn("ordinal", F.explode(F.sequence(F.col("s_ord"), last))).drop("s_ord", "e_ord", "fi"))
    return X.join(E, ["file", "ordinal"]).select("file", "ordinal", *rec, *[c for c in E.columns
                                                                           if c not in ("file", "ordinal")])


# `withheld_events` broadcasts the filtered records (not their events) up to this many, each keyed by the buckets of
# this many ordinals it touches; above, their events are joined with the binlog's by a sort-merge join
BROADCAST_RECORDS = 1 << 20
WITHHELD_BUCKET = 64


# ---- policy runs: `sent` records with `policy` > 0, checked from counts at their two ends ----------------------


def _is_run(F: Any) -> Any:
    """An ev record that is a policy run (a `sent` record with `policy` > 0)."""
    return (F.col("action") == "sent") & (F.coalesce(F.col("policy"), F.lit(0)) > 0)


# what a policy run's events got from the connection's type rules, besides sent as stored
RUN_ACTIONS = ("hole", "dummy", "begin")


def run_classes(data: AuditData) -> dict[str, list[int]]:
    """The event classes a policy run is counted against: per policy `pid` of the connections with runs,
    `cap<action><pid>`: the rule keys (`_rule_key`) its type rules give that action (`policy_rules`: decide() stays
    the one rule)."""
    conns = [c for c in data.run_counts if c is not None]
    out: dict[str, list[int]] = {}
    for pid, rules_of in policy_rules(data, conns).items():
        for action in RUN_ACTIONS:
            keys = sorted(k for k, (a, why) in rules_of.items() if a == action and why == WHY_CAPABILITY)
            if keys:
                out[f"cap{action}{pid}"] = keys
    return out


def verify_policy_runs(data: AuditData) -> list[tuple]:
    """Give every record its BOUNDS (one probe of the events) and check each policy run (a `sent` record with
    `policy` > 0: `policy` of its events got the connection's type rules, holes, dummies or BEGINs with why
    "capability", the rest were sent as stored) from the events of the rule's classes in its range (`run_counts`):
    findings for a run whose policy count (check 4) or `sent_length` (check 1) differs from what the binlog and the
    connection's rules give. A run that does not match the binlog (not on event boundaries; `count`, `length`, a
    single event's `type`/`flags` differ) is `run_ok` false: check 1 reports it, every other check reads it as a
    plain `sent` record.

    Runs are not expanded into the records they stand for: a run's events are the rule's by construction, so the
    checks read its counts (`ledger_totals`, `timeline`) and, where a check needs them one by one, the events of
    its classes (`run_events`: check 3's dummies, check 5's content, check 8). Expanding every run (a window over
    every filtered event per connection and file, islands, ~10x the records) was most of the audit's time."""
    F = _F()
    if data.raw_ledger is None:
        data.raw_ledger = data.ledger
    L = data.ledger if data.probes is not None else _with_bounds(data, data.ledger)
    ok = (F.col("s_ord").isNotNull() & F.col("e_ord").isNotNull()
          & (F.col("count") == F.col("e_ord") - F.col("s_ord") + 1) & (F.col("length") == F.col("end") - F.col("start"))
          & ((F.col("count") != 1) | F.col("type").isNull()
             | ((F.col("type") == F.col("e_type")) & (F.col("flags") == F.col("e_flags")))))
    L = L.withColumn("run_ok", F.coalesce((F.col("r") == "ev") & _is_run(F) & ok, F.lit(False)))
    if data.probes is not None and per_record_rules(data):
        # a large ledger: a scan of the staged Parquet, its readers read only their columns (a checkpoint would
        # hold every probe column of every record)
        data.ledger = L
    else:
        # checkpointed, not only cached: every check builds on these records. Not eager: the first job that reads
        # them fills it, where an eager checkpoint is a job of its own
        data.ledger = L.localCheckpoint(eager=False)
        data.cached.append(data.ledger)
    if not data.run_counts:
        return []  # ledgers written before policy runs, or dumps without any (`load_connections` counted them)
    RC = run_counts(data)
    n = F.col("n_hole") + F.col("n_dummy") + F.col("n_begin")
    sent_len = F.col("length") - F.col("b_hole")
    return _rows_of(RC, [
        (n != F.col("policy"), 4, "error",
         F.format_string("record seq %d says %d events got the connection's type rules; the binlog and the "
                         "policy give %d", F.col("seq"), F.col("policy"), n)),
        (~F.col("sent_length").eqNullSafe(sent_len), 1, "error",
         F.format_string("record seq %d says sent_length %d; its events and policy holes give %d",
                         F.col("seq"), F.col("sent_length"), sent_len))])


def run_counts(data: AuditData) -> Any:
    """Per policy run that fits the binlog (`run_ok`): its columns and, per RUN_ACTIONS action, the events its
    connection's type rules give that action in its range (`n_<action>`) and their bytes (`b_<action>`). A run of
    a connection without a conn record counts none. Counted per slice of the timeline the run spans (`timeline`
    reads the slices: `data.run_slices`) by prefix counts of the classes at the slices' two ends (`class_counts`):
    no per-event row is kept. Checkpointed at its first reader (the findings, `ledger_totals`, `timeline`)."""
    F = _F()
    if data.runs is None:
        classes = run_classes(data)
        pids = {c.conn: c.policy_id for c in data.connections}
        probed = _probe_columns(data)
        R = (data.ledger.filter(F.col("run_ok"))
             .select("seq", "conn", "file", F.col("start").alias("r_start"), F.col("end").alias("r_end"), "count",
                     "length", "sent_length", "policy", literal_map(pids, "BIGINT", "INT")[F.col("conn")].alias("pid"),
                     F.monotonically_increasing_id().alias("rid"), *probed))
        # the run cut at the timeline's slice boundaries: an event is in the slice its start is in
        (offs, total), n = _span(data), TIMELINE_SLICES
        b0, b1 = _slice_of(F, offs + F.col("r_start"), total), _slice_of(F, offs + F.col("r_end") - 1, total)
        R = R.withColumn("b", F.explode(F.sequence(b0, F.greatest(b0, b1))))
        first = F.expr(f"(CAST(b AS BIGINT) * {total} + {n - 1}) div {n}") - offs  # where slice b begins in the file
        nxt = F.expr(f"(CAST(b + 1 AS BIGINT) * {total} + {n - 1}) div {n}") - offs
        R = R.select("*", F.greatest(F.col("r_start"), first).alias("start"),
                     F.when(F.col("b") == F.greatest(b0, b1), F.col("r_end"))
                     .otherwise(F.least(F.col("r_end"), nxt)).alias("end"))

        def per(action: str, prefix: str) -> Any:
            v = F.lit(0).cast("bigint")
            for pid in set(pids.values()):
                if f"cap{action}{pid}" in classes:
                    v = F.when(F.col("pid") == pid, F.col(f"{prefix}_cap{action}{pid}")).otherwise(v)
            return v

        S, s_classes, s_pids = _suspect_records(data) if per_record_rules(data) else (None, {}, {})
        r_cols = [c for c in R.columns if c not in probed]
        if probed:  # each from its own columns (no scan of the events to share)
            C = class_counts(data, _probes_of_pieces(data, R, classes), classes, sized=tuple(classes))
            if s_classes:
                data.suspect_counts = class_counts(data, _to_count(S, s_pids), s_classes)
        else:
            # `rule_suspects`' records are counted in the same pass (one scan of the events for both), kept for
            # the three readers
            both = R if not s_classes else R.withColumn("part", F.lit(0)).unionByName(
                _to_count(S, s_pids).withColumn("part", F.lit(1)), allowMissingColumns=True)
            C = class_counts(data, both, {**classes, **s_classes}, sized=tuple(classes)).localCheckpoint(eager=False)
            data.cached.append(C)
            if s_classes:
                data.suspect_counts = C.filter(F.col("part") == 1).select(*S.columns, *[f"n_{n}" for n in s_classes])
                C = C.filter(F.col("part") == 0)
        C = C.select(*r_cols, *[per(a, "n").alias(f"n_{a}") for a in RUN_ACTIONS],
                     *[per(a, "b").alias(f"b_{a}") for a in RUN_ACTIONS])
        keys = [c for c in r_cols if c not in ("b", "start", "end")]
        data.run_slices = C.select("conn", "file", "start", "end", "b", "r_start", "r_end", "count",
                                   *[f"n_{a}" for a in RUN_ACTIONS])
        data.runs = (C.groupBy(*keys).agg(*[F.sum(f"{p}_{a}").alias(f"{p}_{a}") for p in "nb" for a in RUN_ACTIONS])
                     .withColumnRenamed("r_start", "start").withColumnRenamed("r_end", "end")
                     .localCheckpoint(eager=False))
        data.cached.append(data.runs)
    return data.runs


def _probe_columns(data: AuditData) -> list[str]:
    """The per-key columns `record_probes` gave the staged ledger (none without probes)."""
    return data.probes.key_columns() if data.probes is not None else []


def _probes_of_pieces(data: AuditData, R: Any, classes: dict[str, list[int]]) -> Any:
    """Runs cut at the timeline's slice boundaries (`start`, `end` inside [`r_start`, `r_end`]) with each piece's
    per-key columns of the keys of `classes` (the others dropped): at a cut, the counts before it from the
    boundaries' probes; a piece's bytes are its run's on its first piece, none on the others (only the run's total
    is read)."""
    from binlogd.spark_analytics.record_probes import c0, nb, nn

    F = _F()
    probes = data.probes
    wanted = {k for ks in classes.values() for k in ks}
    keys = [(i, k) for i, k in enumerate(probes.keys) if k in wanted]
    R = R.drop(*[c for k in probes.keys if k not in wanted for c in (c0(k), nn(k), nb(k))])
    first = F.col("start") == F.col("r_start")
    last = F.col("end") == F.col("r_end")
    # one lookup per piece and end, in a column of its own: the map is large, and each key's column naming it
    # would copy it into the plan (its analysis then took most of the step)
    at = literal_map({p: [v[i] for i, _ in keys] for p, v in probes.bounds.items()}, "STRING", "array<BIGINT>")
    none = F.lit(None).cast("array<bigint>")
    R = R.withColumns({
        "p_at0": F.when(first, none).otherwise(at[F.concat_ws(":", F.col("file"), F.col("start").cast("string"))]),
        "p_at1": F.when(last, none).otherwise(at[F.concat_ws(":", F.col("file"), F.col("end").cast("string"))])})
    cols = {}
    for j, (_, k) in enumerate(keys):
        before_start = F.when(first, F.col(c0(k))).otherwise(F.col("p_at0")[j])
        before_end = F.when(last, F.col(c0(k)) + F.col(nn(k))).otherwise(F.col("p_at1")[j])
        cols[nn(k)] = before_end - before_start
        cols[nb(k)] = F.when(first, F.col(nb(k))).otherwise(F.lit(0).cast("bigint"))
    return R.withColumns(cols).drop("p_at0", "p_at1")


def _probed_counts(data: AuditData, R: Any, classes: dict[str, list[int]], sized: tuple[str, ...]) -> Any:
    """`class_counts` from the records' per-key columns (`record_probes`): a class's events (bytes) in a range are
    the sum of its keys' events (bytes) there."""
    from binlogd.spark_analytics.record_probes import nb, nn

    F = _F()
    probed = set(_probe_columns(data))
    present = {k for k in data.probes.keys if nn(k) in R.columns}  # `_probes_of_pieces` keeps only its keys
    rec_cols = [c for c in R.columns if c != "file" and c not in probed]

    def total(keys: list[int], term: Callable[[int], Any]) -> Any:
        v = F.lit(0).cast("bigint")
        for k in keys:
            if k in present:
                v = v + term(k)
        return v

    return R.select("file", *rec_cols,
                    *[total(ks, lambda k: F.col(nn(k))).alias(f"n_{n}") for n, ks in classes.items()],
                    *[total(classes[n], lambda k: F.col(nb(k))).alias(f"b_{n}") for n in sized])


# the timeline's slices of the audited binlog span (`timeline`, `run_counts`)
TIMELINE_SLICES = 120


def _span(data: AuditData) -> tuple[Any, int]:
    """The binlog files laid end to end in file order (`record_probes.span`): per row, the offset of its file
    (`file`; null: not one of them), and the span's total bytes."""
    from binlogd.spark_analytics.record_probes import span

    base, total = span(data.files, data.file_stats)
    return literal_map(base, "STRING", "BIGINT")[_F().col("file")], total


def _slice_of(F: Any, at: Any, total: int) -> Any:
    """The timeline slice of a position in the span (`_span`'s offset + position in its file)."""
    return F.least(F.lit(TIMELINE_SLICES - 1), (at * TIMELINE_SLICES / total).cast("int"))


def class_counts(data: AuditData, R: Any, classes: dict[str, list[int]], sized: tuple[str, ...] = ()) -> Any:
    """`R` (records: `file`, `start`, `end`, their other columns a unique key) with, per class of `classes` (rule
    keys, `_rule_key`), `n_<class>`: the binlog events of that class in [start, end), and for the `sized` classes
    `b_<class>`: their bytes. One scan of the events (only those of the classes are kept) and one sorted pass: the
    records' two ends are put among those events in file order (by position: a record's start sorts before the
    event starting there); per chunk of PREFIX_CHUNK bytes of a file (parallel tasks) a running sum gives each end
    the events of each class before it in its chunk, and a marker row at the chunk's last byte (after any event
    there) that chunk's total, whose running sum over the file's chunks is each chunk's offset; each record is its
    end minus its start. The sorted pass is checkpointed: the offsets and the ends are read from it, not from a
    second scan of the events."""
    from pyspark.sql import Window

    if data.probes is not None:
        return _probed_counts(data, R, classes, sized)
    F = _F()
    rec_cols = [c for c in R.columns if c != "file"]
    sums = [(f"n_{n}", n, F.lit(1)) for n in classes] + [(f"b_{n}", n, F.col("length")) for n in sized]
    if not sums:
        return R.select("*")
    zero = [F.lit(0).cast("bigint").alias(f"i_{o}") for o, _, _ in sums]
    at_ends = F.array(F.struct(F.col("start").alias("pos"), F.lit(-1).alias("sign")),
                      F.struct(F.col("end").alias("pos"), F.lit(1).alias("sign")))
    ends = (R.select("file", *rec_cols, F.explode(at_ends).alias("at"))
            .select("*", F.col("at.pos").alias("pos"), F.col("at.sign").alias("sign"), F.lit(0).alias("kind"), *zero)
            .drop("at"))
    key = _rule_key(F)
    hit = F.lit(False)
    for ks in classes.values():
        hit = hit | key.isin(ks)
    evs = (data.events.filter(hit)
           .select("file", F.col("start").alias("pos"), F.lit(1).alias("kind"),
                   *[F.when(key.isin(classes[n]), v).otherwise(0).cast("bigint").alias(f"i_{o}") for o, n, v in sums]))
    marks = data.spark.createDataFrame(
        [(f, (c + 1) * PREFIX_CHUNK - 1) for f in data.files for c in range(data.file_stats.get(f, {}).get("end", 4)
                                                                   // PREFIX_CHUNK + 1)],
        "file STRING, pos BIGINT").select("*", F.lit(2).alias("kind"), *zero)
    U = (ends.unionByName(evs, allowMissingColumns=True).unionByName(marks, allowMissingColumns=True)
         .select("*", (F.col("pos") / PREFIX_CHUNK).cast("long").alias("chunk")))
    w = Window.partitionBy("file", "chunk").orderBy("pos", "kind")
    S = (U.select("*", *[F.coalesce(F.sum(f"i_{o}").over(w.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0))
                         .alias(f"l_{o}") for o, _, _ in sums])
         .filter(F.col("kind") != 1).drop(*[f"i_{o}" for o, _, _ in sums]).localCheckpoint(eager=False))
    data.cached.append(S)
    wc = Window.partitionBy("file").orderBy("chunk").rowsBetween(Window.unboundedPreceding, -1)
    offs = S.filter(F.col("kind") == 2).select(
        "file", "chunk", *[F.coalesce(F.sum(f"l_{o}").over(wc), F.lit(0)).alias(f"o_{o}") for o, _, _ in sums])
    at = (S.filter(F.col("kind") == 0).join(F.broadcast(offs), ["file", "chunk"])
          .select("file", *rec_cols, "sign",
                  *[(F.col(f"l_{o}") + F.col(f"o_{o}")).alias(f"c_{o}") for o, _, _ in sums]))
    return (at.groupBy("file", *rec_cols).agg(*[F.sum(F.col("sign") * F.col(f"c_{o}")).alias(o) for o, _, _ in sums])
            .select("file", *rec_cols, *[o for o, _, _ in sums]))


def run_events(data: AuditData, actions: tuple[str, ...] = RUN_ACTIONS, content: bool = False) -> Any:
    """One row per binlog event a policy run withheld or replaced (`actions` of its connection's type rules;
    `content`: only events that carry transaction content), in `withheld_events`' columns (the record: the event
    itself, why "capability"); None when no policy of the connections with runs has such a rule for the binlog's
    event types (no job then). Per (connection, file), the events of the classes and the runs' first events in
    ordinal order: a running `last(run)` gives each event the run holding it."""
    from pyspark.sql import Window

    F = _F()
    conns = [c for c in data.run_counts if c is not None]
    table = _rule_table(data, WHY_CAPABILITY, conns, actions, content) if conns else {}
    if not table:
        return None
    E = data.events
    EV = (E.filter(_rule_key(F).isin(list(table)))
          .select("file", "ordinal", "start", "end", "length", "type", "flags", "log_pos", "crc_ok", "trx",
                  F.explode(rule_hits(data, conns=conns, table=table)).alias("h"))
          .select(F.col("h.conn").alias("conn"), "file", F.col("ordinal").alias("k"), F.lit(1).alias("kind"),
                  F.col("h.expected").alias("expected"), "start", "end", "length", "type", "flags", "log_pos",
                  "crc_ok", "trx"))
    run = F.struct("seq", F.col("e_ord").alias("last"))
    RK = data.ledger.filter(F.col("run_ok")).select("conn", "file", F.col("s_ord").alias("k"), F.lit(0).alias("kind"),
                                                    run.alias("run"))
    w = Window.partitionBy("conn", "file").orderBy("k", "kind").rowsBetween(Window.unboundedPreceding, 0)
    A = (RK.unionByName(EV.withColumn("run", F.lit(None).cast(RK.schema["run"].dataType)), allowMissingColumns=True)
         .withColumn("run", F.last("run", ignorenulls=True).over(w))
         .filter((F.col("kind") == 1) & F.col("run").isNotNull() & (F.col("k") <= F.col("run.last"))))
    return A.select(F.col("run.seq").alias("seq"), "conn", F.col("expected").alias("action"),
                    F.lit(WHY_CAPABILITY).alias("why"), F.col("start").alias("rec_start"),
                    F.col("end").alias("rec_end"), F.lit(1).cast("bigint").alias("count"),
                    F.col("length").cast("bigint").alias("rec_length"),
                    F.when(F.col("expected") == "hole", 0).otherwise(F.col("length")).cast("bigint")
                    .alias("sent_length"),
                    F.col("type").alias("r_type"), F.col("flags").alias("r_flags"), "file",
                    F.col("k").alias("ordinal"), "start", "end", "length", "type", "flags", "log_pos", "crc_ok", "trx")


def filtered_events(data: AuditData, actions: tuple[str, ...] = FILTERED, content: bool = False) -> Any:
    """`withheld_events` of the `actions` and the events policy runs withheld or replaced with them
    (`run_events`)."""
    W = withheld_events(data, actions)
    X = run_events(data, tuple(a for a in actions if a in RUN_ACTIONS), content)
    return W if X is None else W.unionByName(X.select(*W.columns))


def _rows(df: Any, check: int, severity: str, msg: Any) -> list[Any]:
    """Findings as a lazy DataFrame (all of an audit's collected together: `collect_findings`)."""
    F = _F()
    return [df.select(F.lit(check).alias("check"), F.lit(severity).alias("severity"),
                      F.col("conn").cast("bigint").alias("connection_id"), F.col("file"),
                      F.col("start").cast("bigint").alias("pos"), msg.alias("message"))]


def _rows_of(df: Any, rules: list[tuple[Any, int, str, Any]], pos: Any = None) -> list[Any]:
    """The findings of several (condition, check, severity, message) rules over the rows of one DataFrame in one
    pass: a row gives one finding per rule whose condition is true (a null condition gives none, as a filter
    would). One plan branch instead of one filtered copy of `df` (and of its joins) per rule."""
    F = _F()
    arr = F.array(*[F.when(cond, F.struct(F.lit(check).alias("check"), F.lit(severity).alias("severity"),
                                          msg.cast("string").alias("message")))
                    for cond, check, severity, msg in rules])
    pos = F.col("start") if pos is None else pos
    # only the rows some rule holds for (few: findings) are exploded into one row per rule and their messages
    # formatted; exploding every row (12 rules over every record for check 1) then dropping the nulls made most of
    # the findings job, and its per-row code, the largest method the JIT compiled
    some = functools.reduce(lambda a, b: a | b, [cond for cond, _, _, _ in rules])
    return [df.filter(some).select(F.col("conn").cast("bigint").alias("connection_id"), F.col("file"),
                      pos.cast("bigint").alias("pos"), F.explode(arr).alias("f"))
            .filter(F.col("f").isNotNull())
            .select("f.check", "f.severity", "connection_id", "file", "pos", "f.message")]


def collect_findings(items: list[Any], partitions: int | None = None) -> list[tuple]:
    """Tuples stay; DataFrames of findings are unioned and collected in one Spark job. The union is one SQL
    statement over temporary views: a chain of `unionByName` analyses every partial union again. `partitions`:
    the union's last stage coalesced to that many tasks (a small audit: its 27 tasks each deserialized the whole
    stage's closure, ~140 ms each, 3.8 of the stage's 5 s)."""
    out = [i for i in items if isinstance(i, tuple)]
    frames = [i for i in items if not isinstance(i, tuple)]
    if not frames:
        return out
    cols = ", ".join(f"`{n}`" for n, _ in FINDING_COLUMNS)
    names = [f"binlogd_findings_{id(frames)}_{i}" for i in range(len(frames))]
    spark = frames[0].sparkSession
    try:
        for name, df in zip(names, frames, strict=True):
            df.createOrReplaceTempView(name)
        union = spark.sql(" UNION ALL ".join(f"SELECT {cols} FROM {n}" for n in names))
        out += [tuple(r) for r in (union if partitions is None else union.coalesce(partitions)).collect()]
    finally:
        for name in names:
            spark.catalog.dropTempView(name)
    return out


# ---- check 1: coverage ------------------------------------------------------------------------------------------


def check_binlog_crc(data: AuditData) -> list[tuple]:
    """A stored event whose CRC32 does not match its bytes: the file changed after it was written. One finding per
    event, whatever the connections did with it (every connection that got it as stored got the changed bytes)."""
    if data.crc_bad == 0:  # counted as the events were decoded or staged: no scan of every event for none
        return []
    F = _F()
    bad = data.events.filter(F.col("crc_ok") == F.lit(False))
    return [bad.select(
        F.lit(1).alias("check"), F.lit("error").alias("severity"), F.lit(None).cast("bigint").alias("connection_id"),
        "file", F.col("start").alias("pos"),
        F.format_string("stored event %s(%d) [%d, %d) fails its CRC32: the binlog file was changed after it was "
                        "written", F.col("type_name"), F.col("type"), F.col("start"), F.col("end")).alias("message"))]


def check_coverage(data: AuditData) -> list[tuple]:
    from pyspark.sql import Window

    F = _F()
    out: list[tuple] = []
    # the records as written (a policy run is one record: the records it stands for would tile its range exactly,
    # consecutive and sharing its seq, so each rule below gives the same findings for it as for them)
    R = record_bounds(data)
    out += _rows(R.filter(F.col("fi").isNull()), 1, "error",
                 F.concat(F.lit("record names binlog file "), F.col("file"), F.lit(", which is not in the binlog "
                                                                                  "directory")))
    R = with_conn(data, R.filter(F.col("fi").isNotNull()), ("start_fi", "start_pos", "end_fi", "end_pos"))
    # the FDE of the first file of a dump that starts after it is sent outside the requested range
    R = R.filter(~((F.col("fi") == F.col("start_fi")) & (F.col("start") == 4) & (F.col("start_pos") > 4)))
    fends = literal_map({i: data.file_stats.get(f, {}).get("end", 4) for i, f in enumerate(data.files)}, "INT",
                        "BIGINT")
    w = Window.partitionBy("conn").orderBy("fi", "start", "seq")
    R = (R.select("*", F.lag("end").over(w).alias("prev_end"), F.lag("fi").over(w).alias("pfi"),
                  F.lead("start").over(w).alias("next_start"), F.lead("fi").over(w).alias("nfi"))
         .withColumn("prev_file_end", fends[F.col("pfi")]))
    # stream order: the ledger promises records in the order the events went out (seq)
    ws = Window.partitionBy("conn").orderBy("seq", "fi", "start")
    R = R.select("*", F.lag("seq").over(ws).alias("s_prev_seq"), F.lag("fi").over(ws).alias("s_prev_fi"),
                 F.lag("start").over(ws).alias("s_prev_start"), F.lag("end").over(ws).alias("s_prev_end"))
    # boundaries and counts against the binlog's events are `record_bounds`' columns: one pass over R for every rule
    first = F.col("prev_end").isNull() & ((F.col("fi") != F.col("start_fi")) | (F.col("start") != F.col("start_pos")))
    same = F.col("pfi") == F.col("fi")
    # records that tile the file but were written in another order (an overlap or a gap is reported as such)
    overlaps = (same & (F.col("start") < F.col("prev_end"))) | (
        (F.col("nfi") == F.col("fi")) & (F.col("next_start") < F.col("end")))
    before = (F.col("fi") < F.col("s_prev_fi")) | ((F.col("fi") == F.col("s_prev_fi"))
                                                  & (F.col("start") < F.col("s_prev_end")))
    newfile = F.col("pfi").isNotNull() & (F.col("pfi") != F.col("fi"))
    ok = F.col("s_ord").isNotNull() & F.col("e_ord").isNotNull()
    out += _rows_of(R, [
        (first, 1, "error", F.format_string("records begin here, but the connection started at position %d of file "
                                            "#%d", F.col("start_pos"), F.col("start_fi"))),
        (same & (F.col("start") > F.col("prev_end")), 1, "error",
         F.format_string("gap: events [%d, %d) are not accounted for", F.col("prev_end"), F.col("start"))),
        (same & (F.col("start") < F.col("prev_end")), 1, "error",
         F.format_string("overlap: [%d, %d) accounted for twice (previous record ends at %d)",
                         F.col("start"), F.least(F.col("end"), F.col("prev_end")), F.col("prev_end"))),
        (before & ~overlaps, 1, "error",
         F.format_string("record seq %d [%d, %d) is out of stream order: the ledger has it after seq %d, "
                         "whose events come after it in the binlog", F.col("seq"), F.col("start"),
                         F.col("end"), F.col("s_prev_seq"))),
        (newfile & (F.col("prev_end") != F.col("prev_file_end")), 1, "error",
         F.format_string("the previous file's records end at %d, before its end %d", F.col("prev_end"),
                         F.col("prev_file_end"))),
        (newfile & ((F.col("fi") != F.col("pfi") + 1) | (F.col("start") != 4)), 1, "error",
         F.format_string("the file's records begin at %d (expected 4, right after file #%d)", F.col("start"),
                         F.col("pfi"))),
        (F.col("next_start").isNull() & (F.col("end_fi") >= 0) &
         ((F.col("fi") != F.col("end_fi")) | (F.col("end") != F.col("end_pos"))), 1, "error",
         F.format_string("records end at %d but the connection's last position is %d in file #%d",
                         F.col("end"), F.col("end_pos"), F.col("end_fi"))),
        (F.col("s_ord").isNull(), 1, "error",
         F.format_string("record [%d, %d) does not start at an event boundary", F.col("start"), F.col("end"))),
        (F.col("s_ord").isNotNull() & F.col("e_ord").isNull(), 1, "error",
         F.format_string("record [%d, %d) does not end at an event boundary", F.col("start"), F.col("end"))),
        (ok & (F.col("count") != F.col("e_ord") - F.col("s_ord") + 1), 1, "error",
         F.format_string("record [%d, %d) says %d events, the binlog has %d there", F.col("start"),
                         F.col("end"), F.col("count"), F.col("e_ord") - F.col("s_ord") + 1)),
        (ok & (F.col("length") != F.col("end") - F.col("start")), 1, "error",
         F.format_string("record [%d, %d) says length %d", F.col("start"), F.col("end"), F.col("length"))),
        (ok & F.col("type").isNotNull() & (F.col("count") == 1) &
         ((F.col("type") != F.col("e_type")) | (F.col("flags") != F.col("e_flags"))), 1, "error",
         F.format_string("record says type %d flags 0x%04x, the binlog event is type %d flags 0x%04x",
                         F.col("type"), F.col("flags"), F.col("e_type"), F.col("e_flags")))])
    return out


# ---- checks 2 and 4: hole legality and filter correctness ---------------------------------------------------------


def expected_filtered(data: AuditData) -> Any:
    """(conn, file, start) of every event the rule filters for that connection, with the expected action; `cap`:
    the type rules' answer (what a policy run applies); `t_why`: the replicate-* rule for a table filter's decision
    (null for the type rules)."""
    F = _F()
    E = data.events.select("file", F.col("file_index").alias("fi"), "start", "end", "type", "flags",
                           ((F.col("flags").bitwiseAND(0x8000)) != 0).alias("flagged"),
                           F.coalesce(F.col("gtid_standalone"), F.lit(False)).alias("standalone"), "trx",
                           F.explode(rule_hits(data)).alias("h"))
    X = with_conn(data, E.select("*", F.col("h.conn").alias("conn"), F.col("h.expected").alias("expected"),
                                 F.col("h.cap").alias("cap"), F.lit(None).cast("string").alias("t_why")).drop("h")
                  ).filter(in_range(F))
    T = table_filter_events(data)
    if T is None:
        return X
    T = (with_conn(data, T.withColumn("fi", file_index(data, F.col("file"))).filter(F.col("fi").isNotNull()))
         .filter(in_range(F)).join(data.events.select("file", "start", "trx"), ["file", "start"], "left"))
    return X.unionByName(T, allowMissingColumns=True)


def _table_filter_rows(binlog_dir: str) -> Callable[[Iterator[Any]], Iterator[tuple]]:
    """Per (connection, file): replay the connection's table filter over the file's events in stream order (the
    dump's own code: protocol/table_filter.py and decision.explain) and yield every event it rejected or renamed."""

    def run(rows: Iterator[Any]) -> Iterator[tuple]:
        import json as _json

        from binlogd.protocol.binlog_file import BinlogFormatError, fde_checksum_alg
        from binlogd.protocol.constants import BINLOG_CHECKSUM_ALG_CRC32
        from binlogd.protocol.decision import WHY_SKIP
        from binlogd.protocol.repl_filters import ConfiguredBy, FilterType
        from binlogd.protocol.table_filter import WATCHED_TYPES, TableFilterStream, build_filter_set

        for conn, file, first, rules_json, cap, skip, dump_flags, compat, tinfo in rows:
            rules = {FilterType.from_name(k): tuple(v) for k, v in _json.loads(rules_json).items()}
            fs = build_filter_set(rules, ConfiguredBy.STARTUP_OPTIONS)
            if fs is None:
                continue
            pol = ReplicaPolicy(clamp_capability(cap), bool(skip), bool(dump_flags & 2),
                                Compat.MARIADB if compat == "mariadb" else Compat.BINLOGD, bool(tinfo), True)
            stream = TableFilterStream(fs)
            try:
                with open(f"{binlog_dir}/{file}", "rb") as fh:
                    data = fh.read()
                fde_len = int.from_bytes(data[4 + 9:4 + 13], "little")
                crc = fde_checksum_alg(data[4:4 + fde_len]) == BINLOG_CHECKSUM_ALG_CRC32
            except (OSError, BinlogFormatError):
                continue
            p = max(first, 4 + fde_len)
            while p + 19 <= len(data):
                length = int.from_bytes(data[p + 9:p + 13], "little")
                if length < 19 or p + length > len(data):
                    break
                typ, flags = data[p + 4], int.from_bytes(data[p + 17:p + 19], "little")
                if typ in WATCHED_TYPES and explain(typ, flags, False, pol)[1] != WHY_SKIP:
                    ev = memoryview(data)[p:p + length]
                    standalone = stream.in_standalone_group
                    v = stream.decide(ev, crc)
                    if typ != GTID_EVENT:  # (GTIDs: only followed)
                        a, why = explain(typ, flags, standalone, pol, v.rule)
                        flagged = bool(flags & 0x8000)
                        if v.rule is not None:
                            yield (conn, file, p, p + length, typ, flagged, _ACTION_NAMES[Action(a)], why)
                        elif v.new_db is not None and a == Action.SEND:
                            yield (conn, file, p, p + length, typ, flagged, "renamed", "replicate-rewrite-db")
                p += length

    return run


def table_filter_events(data: AuditData) -> Any:
    """(conn, file, start, end, type, flagged, expected, t_why) of the events the connections' table filters
    rejected or renamed, recomputed from the binlog (one Spark task per connection and file); None without any."""
    tasks = []
    fi = {f: i for i, f in enumerate(data.files)}
    for c in data.connections:
        if c.table_filters is None or c.start_file not in fi:
            continue
        last = fi.get(c.end_file or "", len(data.files) - 1)
        for i in range(fi[c.start_file], last + 1):
            first = c.start_pos if i == fi[c.start_file] else 4
            tasks.append((c.conn, data.files[i], first, c.table_filters, c.capability, c.skip_replication,
                          c.dump_flags, c.compat, c.send_tables_info))
    if not tasks:
        return None
    rows = (data.spark.sparkContext.parallelize(tasks, max(1, min(len(tasks), 64)))
            .mapPartitions(_table_filter_rows(str(data.binlog_dir))))
    return data.spark.createDataFrame(rows, "conn BIGINT, file STRING, start BIGINT, end BIGINT, type INT, "
                                            "flagged BOOLEAN, expected STRING, t_why STRING")


# suspect ranges kept per connection before all of its events are compared instead (`rule_suspects`)
MAX_SUSPECTS = 64
# below this many binlog events checks 2 and 4 compare every event (no `rule_suspects`): a small audit's cost is
# its plans and jobs, and the record-level job (two windows, a job of its own) cost the 3 400-event audit more
# (check 2 4.2-4.7 s against 1.5-1.8 s) than the per-event comparison it spares
RULE_SUSPECTS_MIN_EVENTS = 100_000
# `rule_suspects`' running sums: per chunk of this many bytes of a binlog file (parallel tasks), then offset by the
# chunks before it
PREFIX_CHUNK = 1 << 24


def rule_suspects(data: AuditData) -> dict[int, list[tuple[str, int, int]] | None]:
    """Checks 2 and 4 per record, from per-file prefix counts of the rule's event classes at its two ends
    (`prefix_classes`): per connection, the (file, start, end) of the records whose events the rule may not agree
    with (None: every event of the connection). A connection not named has none: its records need no per-event
    comparison.

    A record's events agree with the rule when: a `hole`/`dummy`/`begin` record (not a GTID connect's skip, which never
    disagrees) covers only events of its action's class; a plain `sent` record covers no event the rule withholds; a
    policy run (the events its type rules filter are the run's: `verify_policy_runs` counts them) covers none that is
    withheld for another reason than those rules (`ncap`). Every event check 2 or 4 names lies in a record that fails
    this (an expected event with no withheld record is named only inside a `sent` record or a policy run; a withheld one
    only inside its record), so comparing the events of these ranges gives the same findings as comparing all. A record
    outside its connection's range or `renamed`: its own range, unchecked. A record off the events' boundaries, of a
    connection without a conn record or with a table filter: all of that connection's events.

    One job over the records and the events of the classes (`class_counts`); each record sums the counts of the
    classes it is checked against."""
    F = _F()
    out: dict[int, list[tuple[str, int, int]] | None] = {c.conn: None for c in data.connections
                                                          if c.table_filters is not None}
    if data.probes is not None and prefix_classes(data):
        suspects = _probed_suspects(data)
    else:
        R, classes, pids = _suspect_records(data)
        counted = None
        if classes:
            C = data.suspect_counts
            if C is None:
                C = class_counts(data, _to_count(R, pids), classes)
            counted = C.filter(_disagrees(F, classes, pids, lambda p: F.col("policy_id") == p, F.col("mode"),
                                          F.col("n"))).select("conn", "file", "start", "end",
                                                              F.lit(False).alias("whole"))
        # records that need no count: off the events' boundaries (all of the connection's events: the range means
        # nothing), outside their connection's range, `renamed`; and the records of a connection without a conn
        # record (`with_conn` dropped them)
        other = R.filter(F.col("whole") | F.col("out") | (F.col("mode") == 4)).select("conn", "file", "start", "end",
                                                                                       "whole")
        other = other.unionByName(records(data).filter(~F.col("conn").isin(list(pids))).select(
            "conn", "file", "start", "end", F.lit(True).alias("whole")))
        suspects = other if counted is None else counted.unionByName(other)
    rows = (suspects
            .groupBy("conn").agg(F.max("whole").alias("whole"), F.count("*").alias("n"),
                                 F.slice(F.collect_list(F.struct("file", "start", "end")), 1, MAX_SUSPECTS)
                                 .alias("ranges"))
            .collect())
    for r in rows:
        if r.conn in out:
            continue
        out[r.conn] = None if r.whole or r.n > MAX_SUSPECTS else [(x.file, x.start, x.end) for x in r.ranges]
    return out


def _suspect_mode(F: Any) -> Any:
    """What a record is checked against (`rule_suspects`): 1, its action's class covers all its events; 2, the three
    classes (not sent) none; 3, `ncap` none (a policy run); 0: nothing (a GTID connect's skip); 4, never agrees
    (`renamed`)."""
    action = F.col("action")
    run = F.coalesce(F.col("policy"), F.lit(0)) > 0
    return (F.when(action.isin("hole", "dummy", "begin"),
                   F.when(F.coalesce(F.col("why"), F.lit("")) == "gtid_start", 0).otherwise(1))
            .when(action == "sent", F.when(run, 3).otherwise(2)).otherwise(4))


def _disagrees(F: Any, classes: dict[str, list[int]], pids: dict[int, int], policy_is: Callable[[int], Any],
               mode: Any, n: Any) -> Any:
    """Condition on a record with its `_suspect_mode` (`mode`) and its classes' counts (`n_<class>`): its events do
    not agree with its connection's rule (`rule_suspects`; mode 0 and 4 are false here). `policy_is(p)`: its
    connection has policy `p` (of `pids`' values); `n`: its events. Each policy's counts only in its branch: one
    comparison per record."""
    action = F.col("action")

    def count(cls: str, p: int) -> Any:
        return F.col(f"n_{cls}{p}") if f"{cls}{p}" in classes else F.lit(0)

    def by_policy(term: Callable[[int], Any]) -> Any:
        v = F.lit(None).cast("boolean")
        for p in sorted(set(pids.values()), reverse=True):
            v = F.when(policy_is(p), term(p)).otherwise(v)
        return v

    own = {a: by_policy(lambda p, a=a: count(a, p) != n) for a in ("hole", "dummy", "begin")}
    return (F.when(mode == 1, F.when(action == "hole", own["hole"]).when(action == "dummy", own["dummy"])
                   .otherwise(own["begin"]))
            .when(mode == 2, by_policy(lambda p: count("hole", p) + count("dummy", p) + count("begin", p) > 0))
            .when(mode == 3, by_policy(lambda p: count("ncap", p) > 0))
            .otherwise(F.lit(False)))


def _off_bounds(F: Any) -> Any:
    """Condition: the record is off the events' boundaries (`whole`: its range means nothing)."""
    return F.coalesce(F.col("s_ord").isNull() | F.col("e_ord").isNull() | (F.col("e_ord") < F.col("s_ord")),
                      F.lit(True))


def _probed_suspects(data: AuditData) -> Any:
    """`rule_suspects`' rows (`conn`, `file`, `start`, `end`, `whole`) from a probed ledger in one pass over the
    records: their classes' counts are sums of their own columns (`_probed_counts`), and the connection's policy
    and range are constants per connection (a CASE on `conn`), not `with_conn`'s map lookups, which the filter
    repeated dozens of times per record (three scans and those lookups: 6.5 CPU s of 740 800 records at 10 M
    events)."""
    F = _F()
    pids = {c.conn: c.policy_id for c in data.connections if c.table_filters is None}
    classes = prefix_classes(data)
    conn = F.col("conn")
    rows = {r[0]: dict(zip((n for n, _ in CONN_FIELDS), r[1:], strict=True)) for r in _conn_rows(data)
            if r[0] in pids}

    # outside its connection's audited range (`in_range` with the connection's bounds as literals)
    outside = F.lit(True)
    for c, bounds in rows.items():
        outside = F.when(conn == c, F.coalesce(~in_range(F, bounds), F.lit(True))).otherwise(outside)
    R = _probed_counts(data, records(data, (*BOUNDS, "policy", *data.probes.count_columns())), classes, ())
    known = conn.isin(list(pids))
    whole = _off_bounds(F)
    n = F.col("e_ord") - F.col("s_ord") + 1
    mode = _suspect_mode(F)
    keep = (~known | whole | outside | (mode == 4)
            | _disagrees(F, classes, pids, lambda p: conn.isin([c for c, q in pids.items() if q == p]), mode, n))
    return R.filter(keep).select("conn", "file", "start", "end", (~known | whole).alias("whole"))


def _suspect_records(data: AuditData) -> tuple[Any, dict[str, list[int]], dict[int, int]]:
    """`rule_suspects`' records (each with what it is checked against: `mode`, `whole`, `out`, `n`), the classes
    (`prefix_classes`) and the policy of each connection checked per record."""
    F = _F()
    pids = {c.conn: c.policy_id for c in data.connections if c.table_filters is None}
    classes = prefix_classes(data)
    probed = data.probes.count_columns() if data.probes is not None else []
    R = with_conn(data, records(data, (*BOUNDS, "policy", *probed)),
                  ("policy_id", "start_fi", "start_pos", "end_fi", "end_pos"))
    R = R.select("conn", "seq", "file", "start", "end", "action", "policy_id", _suspect_mode(F).alias("mode"),
                 _off_bounds(F).alias("whole"), F.coalesce(~in_range(F), F.lit(True)).alias("out"),
                 (F.col("e_ord") - F.col("s_ord") + 1).alias("n"), *probed)
    return R, classes, pids if classes else {}


def _to_count(R: Any, pids: dict[int, int]) -> Any:
    """The records of `_suspect_records` whose classes are counted (`class_counts`)."""
    F = _F()
    return R.filter(F.col("conn").isin(list(pids)) & ~F.col("whole") & ~F.col("out") & F.col("mode").isin(1, 2, 3))


def per_record_rules(data: AuditData) -> bool:
    """Whether checks 2 and 4 compare records (`rule_suspects`) before events: not below RULE_SUSPECTS_MIN_EVENTS
    binlog events."""
    return sum(st.get("events", 0) for st in data.file_stats.values()) >= RULE_SUSPECTS_MIN_EVENTS


def _in_suspects(F: Any, suspects: dict[int, list[tuple[str, int, int]] | None], end: str) -> Any:
    """Condition: the event (`conn`, `file`, `start`, `end`) lies in a suspect range of its connection."""
    cond = F.lit(False)
    for conn, ranges in suspects.items():
        inside = F.lit(True) if ranges is None else F.lit(False)
        for file, start, stop in ranges or ():
            inside = inside | ((F.col("file") == file) & (F.col("start") >= start) & (F.col(end) <= stop))
        cond = cond | ((F.col("conn") == conn) & inside)
    return cond


def check_rules(data: AuditData) -> list[tuple]:
    """Checks 2 and 4: each event a connection was sent as-is or withheld against the rule. Per record first
    (`rule_suspects`); the events are compared one by one only in the ranges whose counts disagree. A binlog of
    fewer than RULE_SUSPECTS_MIN_EVENTS events: every event compared, no record-level job."""
    F = _F()
    out: list[tuple] = []
    if not per_record_rules(data):
        inside = F.lit(True)  # every event compared (a superset of any suspect ranges: the same findings)
    else:
        suspects = rule_suspects(data)
        if not suspects:
            return out
        inside = _in_suspects(F, suspects, "ev_end")
    EXP = expected_filtered(data).select("conn", "file", "start", F.col("end").alias("ev_end"), "type", "flagged",
                                         "expected", "cap", "c_capability", "c_skip", "c_compat", "t_why"
                                         ).filter(inside)
    NS = (withheld_events(data).withColumnRenamed("end", "ev_end").filter(inside)
          .select("conn", "file", "start", "action", "why", F.col("type").alias("r_type")))
    # checkpointed (lazily, filled in the findings job): its two readers below prune different columns, so each
    # planned the full outer join of every withheld and every expected event again (two shuffles each side)
    J = NS.join(EXP, ["conn", "file", "start"], "full_outer").localCheckpoint(eager=False)
    data.cached.append(J)
    tname = F.coalesce(F.col("type"), F.col("r_type"))
    # "sent as-is" only where a `sent` record covers the event: an event no record covers is check 1's gap, one
    # inside a policy run that did not fit the binlog is check 1's finding on that run. Inside a policy run that
    # fits, the events its type rules filter are the run's (`verify_policy_runs` counts them): only an event
    # another rule filters (e.g. skip_replication's) is sent as-is there
    plain = (data.ledger.filter((F.col("r") == "ev") & (F.col("action") == "sent")
                                & ((F.coalesce(F.col("policy"), F.lit(0)) == 0) | F.col("run_ok")))
             .select("conn", "file", F.col("start").alias("s_start"), F.col("end").alias("s_end"),
                     F.col("run_ok").alias("in_run")))
    missing = (J.filter(F.col("action").isNull()).join(plain, ["conn", "file"])
               .filter((F.col("start") >= F.col("s_start")) & (F.col("ev_end") <= F.col("s_end"))
                       & ~(F.col("in_run") & F.coalesce(F.col("cap"), F.lit(False))))
               .drop("s_start", "s_end", "in_run").dropDuplicates(["conn", "file", "start"]))
    skip_flagged = F.col("flagged") & F.col("c_skip")
    out += _rows_of(missing, [
        (skip_flagged, 4, "error",
         F.format_string("event type %d flagged 0x8000 sent as-is to a skip_replication connection "
                         "(the rule says %s)", tname, F.col("expected"))),
        (F.col("t_why").isNotNull(), 4, "error",
         F.format_string("event type %d sent as-is although %s %s it (the rule says %s)", tname,
                         F.col("t_why"), F.when(F.col("expected") == "renamed", "renames")
                         .otherwise("rejects"), F.col("expected"))),
        (~skip_flagged & F.col("t_why").isNull(), 4, "error",
         F.format_string("event type %d sent as-is to capability %d, which cannot take it (the rule says %s)",
                         tname, F.col("c_capability"), F.col("expected")))])
    legal_start = F.coalesce(F.col("why"), F.lit("")) == "gtid_start"
    extra = F.col("expected").isNull() & ~legal_start
    differ = (F.col("expected").isNotNull() & F.col("action").isNotNull() &
              (F.col("expected") != F.col("action")) & ~legal_start)
    is_hole = F.col("action") == "hole"
    out += _rows_of(J, [
        (extra & is_hole, 2, "error",
         F.format_string("hole (why %s) for an event type %d the rule sends as-is", F.col("why"), tname)),
        (extra & (F.col("action") != "hole"), 4, "error",
         F.format_string("%s (why %s) for an event type %d the rule sends as-is", F.col("action"),
                         F.col("why"), tname)),
        (differ & is_hole, 2, "error",
         F.format_string("hole for event type %d where capability %d needs a %s (it cannot take holes)",
                         tname, F.col("c_capability"), F.col("expected"))),
        (differ & (F.col("action") != "hole"), 4, "error",
         F.format_string("%s for event type %d where the rule says %s", F.col("action"), tname,
                         F.col("expected")))])
    return out


# ---- check 3: dummy integrity -------------------------------------------------------------------------------------


def _rebuild_rows(binlog_dir: str) -> Callable[[Iterator[Any]], Iterator[tuple]]:
    """Per partition: rebuild each replaced event with protocol/rewrite.py; yield the ones that are not valid."""

    def run(rows: Iterator[Any]) -> Iterator[tuple]:
        from binlogd.protocol.checksum import crc_ok
        from binlogd.protocol.rewrite import RewriteError, begin_event, dummy_event

        for file, start, length, action, has_crc in rows:
            try:
                with open(f"{binlog_dir}/{file}", "rb") as fh:
                    fh.seek(start)
                    ev = fh.read(length)
                rebuilt = (begin_event if action == "begin" else dummy_event)(ev, bool(has_crc))
            except (OSError, RewriteError) as e:
                yield (file, start, action, str(e))
                continue
            if len(rebuilt) != len(ev):
                yield (file, start, action, f"length {len(rebuilt)} instead of {len(ev)}")
            elif rebuilt[13:17] != ev[13:17]:
                yield (file, start, action, "log_pos differs from the original's")
            elif has_crc and not crc_ok(rebuilt):
                yield (file, start, action, "CRC invalid")

    return run


def check_dummies(data: AuditData) -> list[tuple]:
    F = _F()
    out: list[tuple] = []
    D = (data.ledger.filter((F.col("r") == "ev") & F.col("action").isin("dummy", "begin"))
         .select("seq", "conn", "file", "start", "end", "count", "length", "sent_length", "action"))
    # per event of each record, then per record: what the events it replaces add up to
    W = withheld_events(data, ("dummy", "begin"))  # the records' events (a policy run is checked by its counts)
    # a record is (seq, file, start)
    per_rec = W.groupBy("seq", "file", F.col("rec_start").alias("start")).agg(
        F.sum("length").alias("e_length"), F.max("end").alias("e_end"), F.count("*").alias("e_count"))
    J = D.join(per_rec, ["seq", "file", "start"], "left")
    # a record whose range or length does not fit the binlog's events is check 1's finding; here only what was
    # sent instead of the events of a well-formed record
    K = (F.col("e_length").isNotNull() & (F.col("end") == F.col("e_end")) & (F.col("e_count") == F.col("count"))
         & (F.col("length") == F.col("end") - F.col("start")))
    bad_len = K & ((F.col("length") != F.col("e_length")) | (F.col("sent_length") != F.col("e_length")))
    one = F.col("count") == 1
    out += _rows_of(J, [
        (F.col("e_length").isNull(), 3, "error",
         F.format_string("%s record at a position where the binlog has no event", F.col("action"))),
        (bad_len & one, 3, "error",
         F.format_string("%s of length %d (sent %d bytes) replaces an event of length %d", F.col("action"),
                         F.col("length"), F.col("sent_length"), F.col("e_length"))),
        (bad_len & ~one, 3, "error",
         F.format_string("%s run of %d events of length %d (sent %d bytes) replaces %d events of length %d",
                         F.col("action"), F.col("count"), F.col("length"), F.col("sent_length"),
                         F.col("e_count"), F.col("e_length")))])
    # rebuild each distinct replaced event with protocol/rewrite.py: same length and log_pos, valid CRC (the policy
    # runs' dummies and BEGINs too)
    uniq = (filtered_events(data, ("dummy", "begin"))
            .select("file", "start", F.col("length").alias("e_length"), "action",
                    F.col("crc_ok").isNotNull().alias("has_crc")).distinct())
    bad = data.spark.createDataFrame(uniq.rdd.map(tuple).mapPartitions(_rebuild_rows(str(data.binlog_dir))),
                                     "file STRING, start BIGINT, action STRING, why STRING")
    out.append(bad.select(F.lit(3).alias("check"), F.lit("error").alias("severity"),
                          F.lit(None).cast("bigint").alias("connection_id"), "file", F.col("start").alias("pos"),
                          F.format_string("the %s rebuilt from the stored event (protocol/rewrite.py) is not valid: %s",
                                          F.col("action"), F.col("why")).alias("message")))
    return out


# ---- check 5: transaction atomicity; check 9: divergence ---------------------------------------------------------


def filtered_content(data: AuditData) -> Any:
    """Content events filtered (hole/dummy) per connection: `skipped` marks the groups a GTID connect skipped
    (holes why `gtid_start`: the replica already has them), which are not withheld from it."""
    F = _F()
    return (filtered_events(data, ("hole", "dummy"), content=True)
            # a table filter splits transactions by design (their frame stays: check 4 checks its decisions)
            .filter(~F.coalesce(F.col("why"), F.lit("")).startswith("replicate-"))
            .filter(~F.col("type").isin(*_METADATA_TYPES))
            .select("conn", "trx", "file", "start", "length",
                    (F.coalesce(F.col("why"), F.lit("")) == "gtid_start").alias("skipped"))
            # Two records over one event (check 1's overlap) count it once: grouped by the event with fixed-width
            # buffers, a hash aggregate (`dropDuplicates` keeps first() of the string columns: a sort-based
            # aggregate, every filtered event sorted twice). Partitioned by (conn, trx) first: this grouping and
            # `check_atomicity`'s by transaction share one shuffle
            .repartition("conn", "trx")
            .groupBy("conn", "trx", "file", "start")
            .agg(F.max("length").alias("length"), F.max("skipped").alias("skipped")))


def _gtid_summary(rows: list[Any]) -> dict[int, dict[str, Any]]:
    return {r.conn: {"transactions": r.n, "gtids": [f"{g.d}-{g.s}-{g.q}" for g in r.gtids],
                     "gtids_truncated": r.n_gtids > len(r.gtids), "content_bytes": r.bytes} for r in rows}


EMPTY_GTIDS: dict[str, Any] = {"transactions": 0, "gtids": [], "gtids_truncated": False, "content_bytes": 0}


# `check_atomicity`'s first filtered event: file index * 2^_AT_BITS + position (a binlog file is < 4 GiB)
_AT_BITS = 40


def check_atomicity(data: AuditData) -> tuple[list[Any], dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
    """Check 5 and check 9: per connection, the transactions withheld (filtered) and, apart, those a GTID connect
    skipped; GTIDs in numeric order (domain, server, seq), at most 100 each."""
    F = _F()
    out: list[tuple] = []
    # the first filtered event as one long (file index, position): every buffer of the aggregate fixed-width, a
    # hash aggregate (a struct's minimum made it a sort-based one: two sorts of every filtered content event)
    at = file_index(data, F.col("file")).cast("long") * F.lit(1 << _AT_BITS) + F.col("start")
    FC = filtered_content(data).groupBy("conn", "trx").agg(
        F.count("*").alias("n_filt"), F.min(at).alias("first_at"),
        F.sum("length").alias("bytes"), F.max("skipped").alias("skipped")).cache()
    content = (events_fi(data).filter(~F.col("type").isin(*_METADATA_TYPES))
               .select("trx", "fi", "start", "end"))
    pairs = with_conn(data, FC.select("conn", "trx"), ("start_fi", "start_pos", "end_fi", "end_pos"))
    # the withheld transactions broadcast: a sort-merge join would shuffle every content event by trx
    n_in = content.join(F.broadcast(pairs), "trx").filter(in_range(F)).groupBy("conn", "trx").agg(
        F.count("*").alias("n_in"))
    J = FC.join(n_in, ["conn", "trx"], "left").filter(F.coalesce(F.col("n_in"), F.lit(0)) != F.col("n_filt"))
    out.append(J.select(F.lit(5).alias("check"), F.lit("error").alias("severity"),
                        F.col("conn").cast("bigint").alias("connection_id"),
                        F.element_at(F.array(*[F.lit(f) for f in data.files]),
                                     F.expr(f"CAST(first_at div {1 << _AT_BITS} AS INT)") + 1).alias("file"),
                        F.expr(f"first_at % {1 << _AT_BITS}").cast("bigint").alias("pos"),
                        F.format_string("transaction %s split: %d of its %d events filtered, the rest sent",
                                        F.col("trx"), F.col("n_filt"), F.coalesce(F.col("n_in"), F.lit(0)))
                        .alias("message")))
    # check 9: what each connection did not get (withheld transactions and bytes), GTID-connect skips apart
    parts = F.split(F.col("trx"), "-")
    gtid = F.when(~F.col("trx").contains("#"), F.struct(parts[0].cast("long").alias("d"),
                                                       parts[1].cast("long").alias("s"),
                                                       parts[2].cast("long").alias("q")))
    agg = (FC.withColumn("g", gtid).groupBy("conn", "skipped")
           .agg(F.count("*").alias("n"), F.count("g").alias("n_gtids"),
                F.slice(F.sort_array(F.collect_list("g")), 1, 100).alias("gtids"),
                F.sum("bytes").alias("bytes")).collect())
    div = _gtid_summary([r for r in agg if not r.skipped])
    skipped = _gtid_summary([r for r in agg if r.skipped])
    data.cached.append(FC)  # check 5's findings read it again (`collect_findings`, with every check's)
    return out, div, skipped


# ---- check 6: position continuity ---------------------------------------------------------------------------------


def check_continuity(data: AuditData, totals: list[Any]) -> list[tuple]:
    """Check 6 from `ledger_totals`' rows: the holes (not a GTID connect's) per (connection, why)."""
    out: list[tuple] = []
    by = {c.conn: c for c in data.connections if c.capability < CAP_TOLERATE_HOLES}
    holes = [r for r in totals if r.kind == "hole" and r.conn in by]
    first = _first_holes(data, {r.conn for r in holes}) if holes else {}
    for r in holes:
        c = by[r.conn]
        documented = c.compat == "mariadb" and r.why == "skip_replication"
        sev = "warning" if documented else "error"
        note = (" (MariaDB 10.11's own behaviour, --compat mariadb: the replica's positions are wrong after a "
                "reconnect)" if documented else "")
        at = first[(r.conn, r.why)]
        out.append(finding(6, sev, r.conn, at.file, at.start,
                           f"{r.n} hole(s) (why {r.why}) in the stream of a capability {c.capability} connection, "
                           f"which cannot tolerate holes{note}"))
    return out


# ---- check 7: convergence -----------------------------------------------------------------------------------------


def convergence(data: AuditData) -> dict[int, dict[str, Any]]:
    """How far behind the binlog's end each connection was when it ended (events, bytes, files)."""
    F = _F()
    out: dict[int, dict[str, Any]] = {}
    keys = [(c.end_file, c.end_pos) for c in data.connections if c.end_file]
    ords: dict[tuple[str, int], int] = {}
    if keys:  # a filter on the few keys, not a join with a driver-built table (its broadcast is a job of its own)
        want = set(keys)
        for r in (data.events.filter(F.col("file").isin(list({f for f, _ in want}))
                                     & F.col("start").isin(list({p for _, p in want})))
                  .select("file", "start", "ordinal").collect()):
            if (r.file, r.start) in want:
                ords[(r.file, r.start)] = r.ordinal
    for c in data.connections:
        if c.end_file not in data.files:
            out[c.conn] = {"events": None, "bytes": None, "files": None}
            continue
        i = data.files.index(c.end_file)
        st = data.file_stats.get(c.end_file, {"events": 0, "end": 4})
        later = data.files[i + 1 :]
        ev = st["events"] - ords[(c.end_file, c.end_pos)] if (c.end_file, c.end_pos) in ords else 0
        by = max(0, st["end"] - (c.end_pos or 0))
        for f in later:
            ev += data.file_stats.get(f, {}).get("events", 0)
            by += data.file_stats.get(f, {}).get("end", 4) - 4
        out[c.conn] = {"events": ev, "bytes": by, "files": len(later)}
    return out


# ---- check 8: relay-log reconciliation ---------------------------------------------------------------------------


def _relay_fix(replica: str) -> str:
    return (f"replica {replica}: keep its relay logs for the audit (relay_log_purge=0) and copy them before a "
            "STOP SLAVE / START SLAVE of a GTID replica, which starts again at relay-bin.000001 (docs/audit.md)")


def check_relay(data: AuditData) -> tuple[list[tuple], dict[str, dict[str, Any]]]:
    """Check 8, per replica: what the ledger says its connections were sent against the upstream events in its
    relay logs, keyed by upstream (file, end). Events sent before the first upstream event the relay logs given
    hold are not covered by them (the replica purged or restarted its relay logs): one warning with the fix, not a
    finding; from there on an event absent from the relay logs is missing (error)."""
    F = _F()
    out: list[tuple] = []
    info: dict[str, dict[str, Any]] = {}
    FI = files_df(data).select("file", "fi")
    for replica, RL in data.relays.items():
        conns = [c for c in data.connections if str(c.server_id) == replica]
        if not conns:
            out.append(finding(8, "error", None, None, None, f"relay logs given for replica server_id {replica}, "
                                                             "but the ledger has no connection from it"))
            continue
        ids = [c.conn for c in conns]
        C = conns_df(data).filter(F.col("conn").isin(ids))
        E = events_fi(data).select("file", "fi", "start", "end", "type", "length")
        inr = E.join(C, how="inner", on=in_range(F)).select("conn", "file", "fi", "start", "end", "type", "length")
        L = filtered_events(data).filter(F.col("conn").isin(ids))  # per event (the policy runs' too)
        holes = L.filter(F.col("action") == "hole").select("conn", "file", "start")
        acts = L.filter(F.col("action") != "hole").select("conn", "file", "start", "action")
        S = (inr.join(holes, ["conn", "file", "start"], "left_anti").join(acts, ["conn", "file", "start"], "left")
             .withColumn("action", F.coalesce(F.col("action"), F.lit("sent")))
             .groupBy("file", "end").agg(F.min("conn").alias("conn"), F.first("fi").alias("fi"),
                                         F.first("start").alias("start"), F.first("type").alias("type"),
                                         F.first("length").alias("length"), F.first("action").alias("action")))
        # what the replica wrote: upstream events (not its own), not artificial (fake ROTATE / GTID_LIST)
        R = (RL.filter(~F.col("relay_own") & F.col("source_end").isNotNull() &
                       (F.col("flags").bitwiseAND(0x20) == 0))
             .select(F.col("source_file").alias("file"), F.col("source_end").alias("end"),
                     F.col("file").alias("relay_file"), F.col("start").alias("relay_pos"),
                     F.col("type").alias("r_type"), F.col("length").alias("r_length"), F.col("crc_ok").alias("r_crc"))
             .dropDuplicates(["file", "end"]))
        first = R.join(FI, "file").agg(F.min(F.struct("fi", "end")).alias("f")).collect()[0].f
        J = S.join(R, ["file", "end"], "full_outer").cache()
        gone = J.filter(F.col("relay_file").isNull())
        if first is None:
            covered = F.lit(False)
        else:
            covered = (F.col("fi") > first.fi) | ((F.col("fi") == first.fi) & (F.col("end") >= first.end))
        before = gone.filter(~covered).agg(F.count("*").alias("n"), F.min(F.struct("fi", "file", "start")).alias("m")
                                           ).collect()[0]
        if before.n:
            where = ("hold no upstream event" if first is None else
                     f"begin at {data.files[first.fi]}:{first.end} (the end of their first upstream event)")
            out.append(finding(8, "warning", None, before.m.file, before.m.start,
                               f"replica {replica}: {before.n} event(s) sent from here on are not covered by the relay "
                               f"logs given, which {where}: not checked. {_relay_fix(replica)}"))
        missing = gone.filter(covered).groupBy("conn", "file").agg(
            F.count("*").alias("n"), F.min("start").alias("first"), F.sum("length").alias("bytes")).collect()
        for r in missing:
            out.append(finding(8, "error", r.conn, r.file, r.first,
                               f"replica {replica}: {r.n} event(s) ({r.bytes} bytes) from here on were sent per the "
                               "ledger but are missing from its relay log"))
        # an extra relay event is charged to the replica's connection whose range holds it
        extra = (J.filter(F.col("action").isNull()).drop("conn", "fi").join(FI, "file", "left")
                 .withColumn("start", F.col("end") - F.col("r_length"))
                 .join(C, in_range(F), "left")
                 .groupBy("file", "end", "relay_file", "relay_pos").agg(F.min("conn").alias("conn"))
                 .orderBy("file", "end").limit(50).collect())
        for r in extra:
            out.append(finding(8, "error", r.conn, r.file, r.end, f"replica {replica}: relay log {r.relay_file}:"
                                                                  f"{r.relay_pos} holds an event ending here that the "
                                                                  "ledger does not record as sent"))
        both = J.filter(F.col("action").isNotNull() & F.col("relay_file").isNotNull())
        wrong = both.filter(
            (F.col("r_length") != F.col("length")) |
            ((F.col("action") == "sent") & (F.col("r_type") != F.col("type"))) |
            ((F.col("action") == "dummy") & ~F.col("r_type").isin(QUERY_EVENT, USER_VAR_EVENT)) |
            ((F.col("action") == "begin") & (F.col("r_type") != QUERY_EVENT)) |
            (F.col("r_crc") == F.lit(False))).orderBy("fi", "start").limit(50).collect()
        for r in wrong:
            out.append(finding(8, "error", r.conn, r.file, r.start,
                               f"replica {replica}: relay log {r.relay_file}:{r.relay_pos} has type {r.r_type} length "
                               f"{r.r_length} crc_ok {r.r_crc}; the ledger says {r.action} of type {r.type} length "
                               f"{r.length}"))
        # a relay log cut inside a transaction: charged to the replica's last connection
        last = (RL.filter(~F.col("relay_own")).orderBy(F.col("file_index").desc(), F.col("start").desc())
                .select("file", "start", "end", "group_end", "trx").limit(1).collect())
        if last and not last[0].group_end:
            out.append(finding(8, "error", max(ids), last[0].file, last[0].end,
                               f"replica {replica}: its relay log ends inside transaction {last[0].trx}"))
        counts = J.agg(F.count("relay_file").alias("relay"), F.count("action").alias("ledger"),
                       F.count(F.when(F.col("relay_file").isNotNull() & F.col("action").isNotNull(), 1)).alias("both")
                       ).collect()[0]
        info[replica] = {"connections": ids, "relay_events": counts.relay, "ledger_sent_events": counts.ledger,
                         "matched": counts.both, "not_covered": int(before.n)}
        J.unpersist()
    return out, info


# ---- check 10: ledger integrity ------------------------------------------------------------------------------------


def ledger_seqs(data: AuditData) -> tuple[list[tuple], frozenset[int]]:
    """Check 10's test of the records as written (`data.raw_ledger`): (findings, the connections with lost
    records). An unparsable line is named by the seq and connection its text still shows (and that seq is not also
    reported missing); a torn last line (the length binlogd's startup reports) is a warning. A run of missing seqs
    names its connection only when the records on both sides are that connection's (a lost close record is not
    charged to the next dump). It reads nothing the policy-run step makes: the audit runs it beside that step."""
    from pyspark.sql import Window

    F = _F()
    out: list[tuple] = []
    L = data.ledger if data.raw_ledger is None else data.raw_ledger  # seq per record as written
    torn_files = {t[0]: t for t in data.torn}
    txt = F.col("_corrupt_record")
    # a ledger parsed strictly (staged) has no unparsable record: no job to find none
    bad = [] if data.strict_ledger else (L.filter(txt.isNotNull())
           .select("ledger_file", txt.alias("text"),
                   F.regexp_extract(txt, r'"seq"\s*:\s*(\d+)', 1).alias("t_seq"),
                   F.regexp_extract(txt, r'"conn"\s*:\s*(\d+)', 1).alias("t_conn"),
                   F.octet_length(txt).alias("n_bytes"))
           .withColumn("t_seq", F.when(F.col("t_seq") != "", F.col("t_seq").cast("long")))
           .withColumn("t_conn", F.when(F.col("t_conn") != "", F.col("t_conn").cast("long")))
           .orderBy("ledger_file", "t_seq").limit(1000).collect())
    torn_seen: set[str] = set()
    kept_seqs: list[tuple[int, int | None]] = []
    for r in bad:
        t = torn_files.get(r.ledger_file)
        if t is not None and r.ledger_file not in torn_seen and r.n_bytes == t[2]:
            torn_seen.add(r.ledger_file)
            out.append(finding(10, "warning", None, t[0], t[1], f"torn last record ({t[2]} bytes without a newline): "
                                                                "tolerated, its content is lost"))
            continue
        shown = r.text[:60] + ("…" if len(r.text) > 60 else "")
        if r.t_seq is not None:
            kept_seqs.append((r.t_seq, r.t_conn))
        out.append(finding(10, "error", r.t_conn, r.ledger_file, r.t_seq,
                           f"unparsable record{'' if r.t_seq is None else f' seq {r.t_seq}'} inside the ledger: "
                           f"{shown!r}"))
    S = L.filter(F.col("seq").isNotNull()).select("seq", "ledger_file", "conn")
    if kept_seqs:  # an unparsable record whose seq is readable holds its number
        S = S.unionByName(data.spark.createDataFrame([(q, None, c) for q, c in kept_seqs],
                                                     "seq BIGINT, ledger_file STRING, conn BIGINT"))
    if data.seq_stats is not None and not kept_seqs:  # counted when the ledger was parsed (staged): no job
        agg = data.seq_stats
    else:  # the same fields as `ledger.SeqStats`
        agg = S.agg(F.min("seq").alias("lo"), F.max("seq").alias("hi"), F.count("*").alias("n"),
                    F.countDistinct("seq").alias("distinct")).collect()[0]
    if agg.n == 0:
        out.append(finding(10, "error", None, None, None, "the ledger holds no records"))
        return out, frozenset()
    if agg.distinct != agg.n:
        for r in S.groupBy("seq").agg(F.count("*").alias("k"), F.first("ledger_file").alias("f"),
                                      F.first("conn").alias("conn")).filter(F.col("k") > 1).limit(100).collect():
            out.append(finding(10, "error", r.conn, r.f, r.seq, f"record seq {r.seq} appears {r.k} times "
                                                                "(duplicated record)"))
    lost: set[int] = {c for _, c in kept_seqs if c is not None}
    if agg.distinct != agg.hi - agg.lo + 1:
        w = Window.orderBy("seq")
        G = (S.dropDuplicates(["seq"]).withColumn("prev", F.lag("seq").over(w))
             .withColumn("prev_conn", F.lag("conn").over(w)).filter(F.col("seq") - F.col("prev") > 1))
        for r in G.orderBy("seq").limit(100).collect():
            mine = r.conn if r.conn is not None and r.conn == r.prev_conn else None
            if mine is not None:
                lost.add(mine)
            around = ("" if mine is not None else
                      f", between seq {r.prev} (connection {r.prev_conn}) and seq {r.seq} (connection {r.conn})")
            out.append(finding(10, "error", mine, r.ledger_file, r.prev + 1,
                               f"records seq {r.prev + 1}..{r.seq - 1} are missing (removed or lost){around}"))
    if agg.lo != 1:
        out.append(finding(10, "warning", None, None, agg.lo, f"the ledger starts at seq {agg.lo}: earlier files "
                                                              "were removed"))
    return out, frozenset(lost)


def check_close_events(data: AuditData, totals: list[Any], skip: frozenset[int] = frozenset()) -> list[tuple]:
    """Check 10: each dump's close.events (its own counter) against its records (`ledger_totals`), connections in
    `skip` left out: those with lost records (`ledger_seqs`: they explain the difference) and those whose records
    checks 1-4 found wrong (those findings name the records)."""
    out: list[tuple] = []
    sent = ("sent", "dummy", "begin", "renamed", "fake")
    by_conn: dict[Any, list[int | None]] = {}
    for r in totals:  # `ledger_totals`: kind is the action for these
        if r.kind in sent:
            by_conn.setdefault(r.conn, []).append(r.n)
    sums = {conn: _sum_groups(ns) for conn, ns in by_conn.items()}
    for c in data.connections:
        if c.close_events is not None and c.conn not in skip and sums.get(c.conn, 0) != c.close_events:
            out.append(finding(10, "error", c.conn, c.end_file, c.end_pos,
                               f"the dump counted {c.close_events} events sent, its ledger records add up to "
                               f"{sums.get(c.conn, 0)}"))
    return out


def _action_kind(F: Any) -> Any:
    """The record's action as the summary counts it: holes of a GTID connect (why `gtid_start`, groups the replica
    already has) are `skipped`, not withheld."""
    return F.when((F.col("action") == "hole") & (F.coalesce(F.col("why"), F.lit("")) == "gtid_start"),
                  F.lit("skipped")).otherwise(F.col("action"))


def ledger_totals(data: AuditData) -> list[Any]:
    """One job for what checks 6, 9 and 10 sum over the ev records (`_total_rows`): per (conn, action as the
    summary counts it, and for holes their why) the events, stored bytes and sent bytes. Each reader sums the rows
    it needs (`_sum_groups`: null where Spark's sum over those records would be null). Sums only: a hash aggregate
    (the first position, a struct, made it a sort-based one over every record; check 6 looks it up for the holes it
    reports: `_first_holes`)."""
    F = _F()
    return (_total_rows(data).groupBy("conn", "kind", "why")
            .agg(F.sum("n").alias("n"), F.sum("len").alias("len"), F.sum("sent").alias("sent"))
            .collect())


def _total_rows(data: AuditData) -> Any:
    """`ledger_totals`' rows: per ev record (not a policy run that fits the binlog) its action as the summary counts
    it, why (holes), events, stored and sent bytes and position; a policy run that fits adds its sent events and,
    per action, the events its type rules filtered (`run_counts`; position: the run's, check 6 reads it only for
    holes, which no type rule gives a connection that cannot take them)."""
    F = _F()
    kind = _action_kind(F)
    cols = ["conn", "kind", "why", "n", "len", "sent", "file", "start"]
    R = (data.ledger.filter((F.col("r") == "ev") & ~F.coalesce(F.col("run_ok"), F.lit(False)))
         .select("conn", kind.alias("kind"), F.when(kind == "hole", F.col("why")).alias("why"),
                 F.col("count").alias("n"), F.col("length").alias("len"), F.col("sent_length").alias("sent"), "file",
                 "start"))
    if data.run_counts:
        n_all = F.col("n_hole") + F.col("n_dummy") + F.col("n_begin")
        sent = F.col("length") - F.col("b_hole") - F.col("b_dummy") - F.col("b_begin")
        parts = [F.struct(F.lit("sent").alias("kind"), F.lit(None).cast("string").alias("why"),
                          (F.col("count") - n_all).alias("n"), sent.alias("len"), sent.alias("sent"))]
        for a in RUN_ACTIONS:
            parts.append(F.struct(F.lit(a).alias("kind"), F.lit(WHY_CAPABILITY if a == "hole" else None)
                                  .cast("string").alias("why"), F.col(f"n_{a}").alias("n"),
                                  F.col(f"b_{a}").alias("len"),
                                  (F.lit(0).cast("bigint") if a == "hole" else F.col(f"b_{a}")).alias("sent")))
        X = (run_counts(data).select("conn", "file", "start", F.explode(F.array(*parts)).alias("p"))
             .filter(F.col("p.n") > 0).select("conn", "p.kind", "p.why", "p.n", "p.len", "p.sent", "file", "start"))
        R = R.select(*cols).unionByName(X.select(*[F.col(c).cast(R.schema[c].dataType) for c in cols]))
    return R


def _first_holes(data: AuditData, conns: set[int]) -> dict[tuple[int, str | None], Any]:
    """The first (file, start) of the holes of `conns` per (conn, why), from `_total_rows`: one small job, only
    when check 6 has holes to report."""
    F = _F()
    rows = (_total_rows(data).filter((F.col("kind") == "hole") & F.col("conn").isin(sorted(conns)))
            .groupBy("conn", "why").agg(F.min(F.struct("file", "start")).alias("first")).collect())
    return {(r.conn, r.why): r.first for r in rows}


def _sum_groups(values: list[int | None]) -> int | None:
    """Spark's sum over the union of groups from their sums: null only when every group's was."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def action_totals(totals: list[Any]) -> dict[int, dict[str, dict[str, int]]]:
    """Per connection: events and bytes per action (bytes: stored bytes covered; for fake, bytes generated)."""
    groups: dict[tuple[Any, Any], list[Any]] = {}
    for r in totals:
        groups.setdefault((r.conn, r.kind), []).append(r)
    out: dict[int, dict[str, dict[str, int]]] = {}
    for (conn, action), rows in groups.items():
        n, length, sent = (_sum_groups([getattr(r, k) for r in rows]) for k in ("n", "len", "sent"))
        d = out.setdefault(conn, {"actions": {}, "bytes": {}, "sent_bytes": {}})
        d["actions"][action] = int(n or 0)
        d["bytes"][action] = int((sent if action == "fake" else length) or 0)
        d["sent_bytes"][action] = int(sent or 0)
    return out


def timeline(data: AuditData) -> dict[int, list[dict[str, int]]]:
    """Per connection, the audited binlog span cut into TIMELINE_SLICES slices: events per action in each. A
    record spanning several slices shows in each of them (its events shared out). A policy run, cut at the slices'
    boundaries (`run_counts`): the events its type rules filtered are counted per piece, its sent events are the
    piece's share of its events by bytes less those (runs are long: an even share would overweight the partial
    pieces at their two ends)."""
    F = _F()
    offs, total = _span(data)
    n = TIMELINE_SLICES
    R = (data.ledger.filter((F.col("r") == "ev") & F.col("action").isin("sent", *FILTERED)
                            & F.col("file").isin(data.files) & ~F.coalesce(F.col("run_ok"), F.lit(False)))
         .select("conn", "file", "start", "end", "count", _action_kind(F).alias("action")))
    b0, b1 = _slice_of(F, offs + F.col("start"), total), _slice_of(F, offs + F.col("end") - 1, total)
    S = (R.withColumn("b0", b0).withColumn("b1", F.greatest(b0, b1))
         .withColumn("b", F.explode(F.sequence("b0", "b1")))
         .select("conn", "b", "action", (F.col("count") / (F.col("b1") - F.col("b0") + 1)).alias("share")))
    if data.run_counts:
        run_counts(data)  # makes `data.run_slices`
        n_all = F.col("n_hole") + F.col("n_dummy") + F.col("n_begin")
        part = (F.col("end") - F.col("start")) / (F.col("r_end") - F.col("r_start"))
        sent = F.greatest(F.lit(0.0), F.col("count") * part - n_all)
        parts = [F.struct(F.lit("sent").alias("action"), sent.alias("share"))] + [
            F.struct(F.lit(a).alias("action"), F.col(f"n_{a}").cast("double").alias("share")) for a in RUN_ACTIONS]
        S = S.unionByName(data.run_slices.select("conn", "b", F.explode(F.array(*parts)).alias("p"))
                          .filter(F.col("p.share") > 0).select("conn", "b", "p.action", "p.share"))
    rows = S.groupBy("conn", "b", "action").agg(F.sum("share").alias("n")).collect()
    out: dict[int, list[dict[str, int]]] = {}
    for r in rows:
        sl = out.setdefault(r.conn, [{} for _ in range(n)])
        sl[r.b][r.action] = sl[r.b].get(r.action, 0) + max(1, round(r.n))
    return out
