"""binlogd-apply's replication filters against a real MariaDB 10.11 multi-source replica.

Two real primaries (GTID domains 1 and 2) run one workload in ROW and STATEMENT format over several databases:
cross-database statements (where statement and row events are filtered differently), CREATE TABLE ... LIKE,
RENAME TABLE, CREATE DATABASE, and skip_replication sessions. Then, for each filter configuration, a real
MariaDB replica with connections c1/c2 (`SET GLOBAL c1.replicate_do_db=...`, MariaDB's per-connection
filters) and binlogd-apply with channels c1/c2 and the same rules as `--replicate-*=[channel:]rule` replicate
the same binlogs from the start; their databases must end with identical table checksums, and the effective
per-channel rules they report (SHOW ALL SLAVES STATUS) must agree, which also checks WL#7361's copy of global
rules into channels against MariaDB's own.

The base tables (a_i.t1, b_i.t2, shared.s_i and the rewrite targets) and a few base rows exist everywhere
before replication (created with sql_log_bin=0), so that statements into a filtered-out database do not stop
either replica; the rest of the schema is created by replicated DDL.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pymysql
import pytest
from binlogd.applier.filters import FilterRegistry, FilterType

from binlogd.testing.mariadb import HOST, MariaDB, free_port, wait_until
from tests.harness.applier import running_applier

pytestmark = pytest.mark.mariadb

SYSTEM_DBS = ("mysql", "information_schema", "performance_schema", "sys", "binlogd_apply")
BASE_SCHEMA = {
    "a{i}": ["CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(32), n INT)",
             "INSERT INTO t1 VALUES (100,'a-base',100),(101,'a-base',101)"],
    "b{i}": ["CREATE TABLE t2 (id INT PRIMARY KEY, v VARCHAR(32))",
             "INSERT INTO t2 VALUES (100,'b-base'),(101,'b-base')"],
    "shared": ["CREATE TABLE s{i} (id INT PRIMARY KEY, v VARCHAR(32))"],
}


def workload(i: int) -> list[str]:
    """Primary i's statements; `F:ROW` / `F:STATEMENT` switch binlog_format, `@db` is USE db."""
    a, b, n = f"a{i}", f"b{i}", f"n{i}"
    return [
        "F:ROW", f"@{a}",
        "INSERT INTO t1 VALUES (1,'r1',1),(2,'r2',2),(3,'r3',3)",
        "F:STATEMENT",
        "INSERT INTO t1 VALUES (4,'s4',4),(5,'s5',5)",
        # multi-table statements: only the changed table counts for table rules (MariaDB)
        f"UPDATE t1 JOIN {b}.t2 ON t2.id = t1.id SET t1.v = t2.v WHERE t1.id = 100",
        f"DELETE t1 FROM t1 JOIN {b}.t2 ON t2.id = t1.id WHERE t1.id = 101",
        "CREATE TABLE t3 LIKE t1",
        "INSERT INTO t3 SELECT * FROM t1",
        "RENAME TABLE t3 TO t4",
        f"INSERT INTO {b}.t2 VALUES (1,'from {a}, statement')",  # default db a_i, table in b_i
        "F:ROW",
        "UPDATE t4 SET n = n + 100 WHERE id <= 3",
        f"INSERT INTO {b}.t2 VALUES (2,'from {a}, row')",
        f"@{b}",
        "F:STATEMENT",
        f"UPDATE {a}.t1 SET n = n + 1000",  # default db b_i, table in a_i
        "INSERT INTO t2 VALUES (3,'own db, statement')",
        f"CREATE TABLE t5 LIKE {a}.t1",
        "F:ROW",
        "INSERT INTO t5 VALUES (1,'t5',1),(2,'t5',2)",
        f"UPDATE {a}.t1 SET v = 'row-upd' WHERE id = 1",
        "@", f"CREATE DATABASE {n}",
        f"@{n}", "CREATE TABLE n (id INT PRIMARY KEY, v INT)",
        "INSERT INTO n VALUES (1,1),(2,2)",
        "F:STATEMENT", "INSERT INTO n VALUES (3,3)",
        "@shared", f"INSERT INTO s{i} VALUES (1,'shared statement')",
        "F:ROW", f"INSERT INTO shared.s{i} VALUES (2,'shared row')",
        # skip_replication sessions: flagged events in both formats
        "SET skip_replication=1",
        f"INSERT INTO {a}.t1 VALUES (10,'flagged row',0)",
        "F:STATEMENT",
        f"UPDATE {b}.t2 SET v = 'flagged statement' WHERE id = 3",
        f"INSERT INTO shared.s{i} VALUES (10,'flagged')",
        "SET skip_replication=0",
        # a run of one-row transactions in ROW format on tables of two databases: --parallel-apply spreads them
        "F:ROW", f"@{a}",
        *(f"INSERT INTO t1 VALUES ({20 + k},'run',{k})" for k in range(4)),
        *(f"INSERT INTO {b}.t2 VALUES ({20 + k},'run')" for k in range(4)),
        "UPDATE t1 SET n = n + 1 WHERE id = 21", f"DELETE FROM {b}.t2 WHERE id = 20",
        # the last transaction is unflagged, so both replicas' positions end at the primary's end
        "F:ROW", f"@{a}", "INSERT INTO t1 VALUES (99,'last',99)",
    ]


@dataclass
class Config:
    name: str
    options: list[tuple[FilterType, str]]  # binlogd-apply's `--replicate-*=[channel:]value`, in order
    skip_mode: str = "REPLICATE"
    extra_dbs: list[tuple[str, str]] = field(default_factory=list)  # (copy of db template, as name) for rewrites


T = FilterType
CONFIGS = [
    Config("do-db-per-channel", [(T.DO_DB, "c1:a1"), (T.DO_DB, "c1:shared"), (T.DO_DB, "c2:b2")]),
    Config("ignore-db-global-with-channel-override",
           [(T.IGNORE_DB, "shared"), (T.IGNORE_DB, "b1"), (T.IGNORE_DB, "c2:a2")], "FILTER_ON_SLAVE"),
    Config("table-rules", [(T.DO_TABLE, "a1.t1"), (T.DO_TABLE, "a2.t1"), (T.WILD_DO_TABLE, "shared.%"),
                           (T.WILD_DO_TABLE, "c2:b2.%"), (T.WILD_DO_TABLE, "c2:n2.%"), (T.DO_TABLE, "c2:a2.t1")],
           "FILTER_ON_MASTER"),
    Config("wild-ignore-databases", [(T.WILD_IGNORE_TABLE, "n%.%"), (T.WILD_IGNORE_TABLE, "shared.s_"),
                                     (T.WILD_IGNORE_TABLE, "c1:b1.%"), (T.IGNORE_TABLE, "c2:a2.t4")],
           "FILTER_ON_SLAVE"),
    Config("rewrite-db", [(T.REWRITE_DB, "c1:a1->r1"), (T.REWRITE_DB, "c2:b2->r2"), (T.DO_DB, "c2:r2"),
                          (T.DO_DB, "c2:shared")], "REPLICATE", [("a{i}", "r1"), ("b{i}", "r2")]),
    Config("mixed-db-and-table", [(T.DO_DB, "a1"), (T.DO_DB, "a2"), (T.DO_DB, "b2"), (T.WILD_IGNORE_TABLE, "a%.t4"),
                                  (T.IGNORE_DB, "c1:a1"), (T.REWRITE_DB, "c2:n2->a2")], "FILTER_ON_MASTER"),
    # MariaDB compares table and wild rules case-insensitively, database rules exactly
    Config("letter-case", [(T.WILD_DO_TABLE, "c1:A1.%"), (T.WILD_DO_TABLE, "c1:SHARED.S_"), (T.IGNORE_DB, "c2:A2"),
                           (T.IGNORE_TABLE, "c2:B2.T2")], "FILTER_ON_SLAVE"),
    Config("no-filters", [], "REPLICATE"),
]


# --- the world: two primaries with the workload, a real replica, the applier's target ----------------------


@dataclass
class World:
    p: dict[str, MariaDB]  # channel -> primary
    replica: MariaDB
    target: MariaDB
    ends: dict[str, tuple[str, int]]  # channel -> primary's SHOW MASTER STATUS after the workload
    log_dir: Path


def _run(conn: pymysql.connections.Connection, sql: str) -> None:
    with conn.cursor() as cur:
        cur.execute(sql)


def _base_schema(server: MariaDB, extra: list[tuple[str, str]], log_bin: bool) -> None:
    """The base tables of both primaries, plus `extra` (template, name): a copy of primary N's template
    database named `name` (N = the name's last digit), for rewrite targets."""
    wanted = [(tmpl.format(i=i), stmts, i) for i in (1, 2) for tmpl, stmts in BASE_SCHEMA.items()]
    wanted += [(name, BASE_SCHEMA[tmpl], int(name[-1])) for tmpl, name in extra]
    conn = server.connect()
    try:
        if not log_bin:
            _run(conn, "SET SESSION sql_log_bin=0")
        for db, stmts, i in wanted:
            _run(conn, f"CREATE DATABASE IF NOT EXISTS `{db}`")
            for stmt in stmts:
                _run(conn, stmt.format(i=i).replace("CREATE TABLE ", f"CREATE TABLE IF NOT EXISTS `{db}`.", 1)
                     .replace("INSERT INTO ", f"INSERT INTO `{db}`.", 1))
    finally:
        conn.close()


def run_workload(prim: MariaDB, statements: list[str]) -> None:
    conn = prim.connect()
    fmt = "ROW"
    try:
        for stmt in statements:
            if stmt.startswith("F:"):
                fmt = stmt[2:]
                _run(conn, f"SET SESSION binlog_format={fmt}")
            elif stmt == "@":  # no default database: a new session
                conn.close()
                conn = prim.connect()
                _run(conn, f"SET SESSION binlog_format={fmt}")
            elif stmt.startswith("@"):
                conn.select_db(stmt[1:])
            else:
                _run(conn, stmt)
    finally:
        conn.close()


def _user_dbs(server: MariaDB) -> list[str]:
    marks = ", ".join(["%s"] * len(SYSTEM_DBS))
    return [str(r[0]) for r in server.query(
        f"SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN ({marks})", *SYSTEM_DBS)]


def _drop_user_dbs(server: MariaDB, also: tuple[str, ...] = ()) -> None:
    for db in [*_user_dbs(server), *also]:
        server.query(f"DROP DATABASE IF EXISTS `{db}`")


@pytest.fixture(scope="module")
def world(mariadb_base: Path, mariadb_binaries: dict[str, str]) -> Iterator[World]:
    base = mariadb_base / "filters-compare"
    template = mariadb_base / "_template"
    started: list[MariaDB] = []

    def start(name: str, sid: int, *args: str) -> MariaDB:
        inst = MariaDB.start(base, name, sid, *args, template_dir=template)
        started.append(inst)
        return inst

    try:
        p1 = start("p1", 1, "--log-bin=mysql-bin", "--gtid-domain-id=1", "--binlog-format=ROW")
        p2 = start("p2", 2, "--log-bin=mysql-bin", "--gtid-domain-id=2", "--binlog-format=ROW")
        replica = start("replica", 10)
        target = start("target", 11)
        ends = {}
        for i, (chan, prim) in enumerate((("c1", p1), ("c2", p2)), 1):
            _base_schema(prim, [], log_bin=False)
            run_workload(prim, workload(i))
            ends[chan] = prim.master_status()
        yield World({"c1": p1, "c2": p2}, replica, target, ends, base)
    finally:
        for inst in reversed(started):
            with contextlib.suppress(Exception):
                inst.stop()


# --- the real replica -------------------------------------------------------------------------------------


def replica_args(cfg: Config) -> list[str]:
    """The same rules as MariaDB startup options: `--replicate-do-db=db` (global, copied at startup into the
    connections that lack the type, WL#7361's rule) and `--c1.replicate-do-db=db` (MariaDB's per-connection
    form of binlogd-apply's `--replicate-do-db=c1:db`)."""
    args = []
    for ftype, raw in cfg.options:
        chan, sep, value = raw.partition(":")
        args.append(f"--{chan}.{ftype.option}={value}" if sep else f"--{ftype.option}={raw}")
    return args


def configure_replica(w: World, cfg: Config) -> None:
    """A fresh multi-source replica: connections c1/c2 from the primaries' first GTID, rules as startup options
    (MariaDB copies its global rules into named connections only from startup options, not SET GLOBAL)."""
    r = w.replica
    for chan in ("c1", "c2"):
        with contextlib.suppress(pymysql.MySQLError):
            r.query(f"STOP SLAVE '{chan}'")
        with contextlib.suppress(pymysql.MySQLError):
            r.query(f"RESET SLAVE '{chan}' ALL")
    r.restart(replica_args(cfg))
    r.query("SET GLOBAL gtid_slave_pos=''")
    _drop_user_dbs(r)
    _base_schema(r, cfg.extra_dbs, log_bin=True)
    r.query(f"SET GLOBAL replicate_events_marked_for_skip={cfg.skip_mode}")
    for chan, prim in w.p.items():
        r.query(f"CHANGE MASTER '{chan}' TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER='root', "
                "MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1", HOST, prim.port)
    r.is_replica = True
    r.query("START ALL SLAVES")


def all_slaves_status(conn_factory) -> dict[str, dict]:
    conn = conn_factory()
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW ALL SLAVES STATUS")
            names = [d[0] for d in cur.description]
            return {row[0]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}
    finally:
        conn.close()


def wait_replica(w: World, timeout: float = 60.0) -> dict[str, dict]:
    def done() -> dict[str, dict] | None:
        st = all_slaves_status(w.replica.connect)
        for chan, (file, pos) in w.ends.items():
            s = st.get(chan, {})
            if s.get("Last_SQL_Errno") or s.get("Last_IO_Errno"):
                raise AssertionError(f"real replica stopped on {chan}: {s.get('Last_SQL_Error')}"
                                     f"{s.get('Last_IO_Error')}")
            if (s.get("Relay_Master_Log_File"), s.get("Exec_Master_Log_Pos")) != (file, pos):
                return None
        return st

    return wait_until(done, timeout, 0.05, "the real replica to reach both primaries' ends")


# --- binlogd-apply ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def run_applier(w: World, cfg: Config, parallel: int = 1) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    admin_port = free_port()
    log_path = w.log_dir / f"apply-{cfg.name}-p{parallel}.log"
    args = ["--target", f"mysql://root@{HOST}:{w.target.port}",
            *[a for chan, prim in w.p.items() for a in ("--channel", f"{chan}=mysql://root@{HOST}:{prim.port}")],
            *[f"--{ftype.option}={raw}" for ftype, raw in cfg.options],
            f"--replicate-events-marked-for-skip={cfg.skip_mode}", "--admin-port", str(admin_port),
            f"--parallel-apply={parallel}", "--parallel-min-bytes=0"]
    with running_applier(args, log_path) as p:
        assert p.proc is not None
        yield p.proc, admin_port, log_path


def wait_applier(w: World, proc: subprocess.Popen[bytes], admin_port: int, log_path: Path,
                 timeout: float = 30.0) -> None:
    """Until every channel's stored position is its primary's end; a channel stopped with an error fails at once."""

    def done() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"binlogd-apply exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
        for chan, st in all_slaves_status(lambda: admin_connect(admin_port)).items():
            if st["Slave_SQL_Running"] == "No" and (st["Last_SQL_Errno"] or st["Last_IO_Errno"]):
                raise AssertionError(f"binlogd-apply channel {chan} stopped: {st['Last_SQL_Error']}"
                                     f"{st['Last_IO_Error']}\n{log_path.read_text()[-3000:]}")
        try:
            rows = w.target.query("SELECT channel, log_file, log_pos FROM binlogd_apply.channel_position")
        except pymysql.MySQLError:
            return False
        got = {str(c): (str(f), int(p)) for c, f, p in rows}
        return all(got.get(chan) == end for chan, end in w.ends.items())

    wait_until(done, timeout, 0.05, lambda: f"binlogd-apply to reach {w.ends}:\n{log_path.read_text()[-3000:]}")


def admin_connect(port: int) -> pymysql.connections.Connection:
    return pymysql.connect(host=HOST, port=port, user="root", password="", autocommit=True)


def checksums(server: MariaDB) -> tuple[list[str], dict[str, int | None]]:
    dbs = sorted(_user_dbs(server))
    return dbs, server.table_checksums(dbs)


# --- the comparison ---------------------------------------------------------------------------------------

FILTER_COLUMNS = [t.status_column for t in FilterType]
GROUP_COUNTERS = ("Slave_DDL_Groups", "Slave_Non_Transactional_Groups", "Slave_Transactional_Groups")


@pytest.mark.parametrize("parallel", [1, 4], ids=["serial", "parallel4"])  # --parallel-apply
@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.name for c in CONFIGS])
def test_same_tables_as_a_real_multi_source_replica(world: World, cfg: Config, parallel: int) -> None:
    w = world
    configure_replica(w, cfg)
    real_status = wait_replica(w)

    _drop_user_dbs(w.target, also=("binlogd_apply",))
    _base_schema(w.target, cfg.extra_dbs, log_bin=True)
    t0 = time.monotonic()
    with run_applier(w, cfg, parallel) as (proc, admin_port, log_path):
        wait_until(lambda: _admin_up(admin_port, proc), 20, 0.05, "the admin port")
        wait_applier(w, proc, admin_port, log_path)
        ours, real_status = settled_statuses(w, admin_port)
    elapsed = time.monotonic() - t0

    # the effective per-channel rules: MariaDB's copy of its global rules = WL#7361's (MariaDB lists table
    # rules in its hash order, so the lists are compared as sets)
    reg = FilterRegistry.from_options(cfg.options, ["c1", "c2"])
    for chan in ("c1", "c2"):
        expected = rule_sets(reg.for_channel(chan).status_columns())
        assert rule_sets(real_status[chan]) == rule_sets(ours[chan]) == expected, chan

    # what MariaDB counts per applied GTID event (filtered statements count, FILTER_ON_* skipped groups do not),
    # and the replica-wide Gtid_Slave_Pos over both domains
    for chan in ("c1", "c2"):
        assert {c: ours[chan][c] for c in GROUP_COUNTERS} == {c: real_status[chan][c] for c in GROUP_COUNTERS}, chan
        assert ours[chan]["Gtid_Slave_Pos"] == real_status[chan]["Gtid_Slave_Pos"], chan

    real_dbs, real_sums = checksums(w.replica)
    our_dbs, our_sums = checksums(w.target)
    assert our_dbs == real_dbs
    assert our_sums == real_sums, {k: (real_sums.get(k), our_sums.get(k)) for k in set(real_sums) | set(our_sums)
                                   if real_sums.get(k) != our_sums.get(k)}
    print(f"{cfg.name}: {len(real_sums)} tables identical; applier caught up in {elapsed:.1f} s")
    assert ("parallel apply on 4 target sessions" in log_path.read_text()) == (parallel == 4)


def settled_statuses(w: World, admin_port: int, timeout: float = 15.0) -> tuple[dict[str, dict], dict[str, dict]]:
    """Both sides' SHOW ALL SLAVES STATUS once their Gtid_Slave_Pos agree, else the last read (the assertions then
    show the difference). A position row or Exec_Master_Log_Pos at the end does not mean the server-wide
    Gtid_Slave_Pos shown beside it is already updated: one read right after it differed once in a full run."""
    last: list[tuple[dict[str, dict], dict[str, dict]]] = []

    def agree() -> bool:
        ours = all_slaves_status(lambda: admin_connect(admin_port))
        real = all_slaves_status(w.replica.connect)
        last[:] = [(ours, real)]
        return all(ours.get(c, {}).get("Gtid_Slave_Pos") == real.get(c, {}).get("Gtid_Slave_Pos") for c in ("c1", "c2"))

    with contextlib.suppress(TimeoutError):
        wait_until(agree, timeout, 0.1, "Gtid_Slave_Pos to agree")
    return last[0]


def rule_sets(status: dict) -> dict[str, frozenset[str]]:
    return {c: frozenset(v for v in str(status[c]).split(",") if v) for c in FILTER_COLUMNS}


def _admin_up(port: int, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"binlogd-apply exited with {proc.returncode}")
    try:
        admin_connect(port).close()
        return True
    except pymysql.MySQLError:
        return False
