"""`binlogd-apply --metrics-port`: a channel applying a real MariaDB 10.11 primary to a real target, its metrics
against the admin port's SHOW ALL SLAVES STATUS and P_S replication_applier_filters; the port in use refuses the
start; the dashboard's binlogd_apply_* expressions name scraped metrics."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pymysql

from binlogd.testing.mariadb import HOST, free_port, wait_until
from tests.harness.applier import running_applier
from tests.metrics_scrape import dashboard_metric_names, scrape, scraped_names, value


def admin_row(port: int, sql: str) -> dict[str, Any]:
    conn = pymysql.connect(host=HOST, port=port, user="root", password="", ssl_disabled=True,
                           cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return dict(cur.fetchone())
    finally:
        conn.close()


def test_channel_metrics_match_the_admin_port(mariadb, harness_dir):
    primary = mariadb.primary("p", 1)
    target = mariadb("target", 11)
    primary.query("CREATE DATABASE keep")
    primary.query("CREATE DATABASE drop_me")
    for db in ("keep", "drop_me"):  # with the database as default: ignore-db rules look at the default database
        conn = primary.connect(database=db)
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB")
            cur.execute("INSERT INTO t VALUES (1),(2)")
            cur.execute("INSERT INTO t VALUES (3)")
        conn.close()
    file, end = primary.master_status()
    mport, aport = free_port(), free_port()
    args = ["--target", f"mysql://root@{HOST}:{target.port}", "--channel", f"c1=mysql://root@{HOST}:{primary.port}",
            "--replicate-ignore-db=drop_me", "--admin-port", str(aport), "--metrics-port", str(mport),
            "--row-apply=sql"]  # rows decoded and counted (BINLOG statements carry rows the target counts itself)
    with running_applier(args, harness_dir / "apply.log") as proc:
        def applied() -> dict[str, Any] | None:
            assert proc.alive, proc.log()
            try:
                st = admin_row(aport, "SHOW ALL SLAVES STATUS")
            except pymysql.MySQLError:
                return None
            return st if (st["Relay_Master_Log_File"], st["Exec_Master_Log_Pos"]) == (file, end) else None

        st = wait_until(applied, 60, 0.05, "the channel to apply everything")
        s = scrape(mport)
        ch = {"channel": "c1"}
        assert value(s, "binlogd_apply_channels") == 1
        assert value(s, "binlogd_apply_slave_io_running", channel="c1", state="Yes") == 1
        assert value(s, "binlogd_apply_slave_sql_running", **ch) == 1
        assert value(s, "binlogd_apply_seconds_behind_master", **ch) == 0
        assert value(s, "binlogd_apply_exec_master_log_pos", **ch) == end
        assert value(s, "binlogd_apply_read_master_log_pos", **ch) == end
        for kind, column in (("ddl", "Slave_DDL_Groups"), ("transactional", "Slave_Transactional_Groups"),
                             ("non_transactional", "Slave_Non_Transactional_Groups")):
            assert value(s, "binlogd_apply_transactions_total", channel="c1", kind=kind) == st[column], kind
        # 4 DDL (2 CREATE DATABASE, 2 CREATE TABLE) and 4 InnoDB transactions, the dropped ones counted too
        assert value(s, "binlogd_apply_transactions_total", channel="c1", kind="ddl") == 4
        assert value(s, "binlogd_apply_transactions_total", channel="c1", kind="transactional") == 4
        assert value(s, "binlogd_apply_executed_events_total", **ch) == st["Executed_log_entries"]
        assert value(s, "binlogd_apply_rows_total", **ch) == 3  # keep.t's rows; drop_me's were filtered
        assert target.query("SELECT COUNT(*) FROM keep.t") == [(3,)]
        p_s = admin_row(aport, "SELECT FILTER_NAME, FILTER_RULE, COUNTER FROM "
                               "performance_schema.replication_applier_filters WHERE CHANNEL_NAME = 'c1'")
        assert p_s["FILTER_NAME"] == "REPLICATE_IGNORE_DB" and p_s["COUNTER"] >= 3
        assert value(s, "binlogd_apply_filter_events_total", channel="c1", filter_name="REPLICATE_IGNORE_DB",
                     filter_rule="drop_me") == p_s["COUNTER"]
        assert value(s, "binlogd_apply_last_io_errno", **ch) == value(s, "binlogd_apply_last_sql_errno", **ch) == 0
        wanted = {n for n in dashboard_metric_names() if n.startswith("binlogd_apply_")}
        assert wanted and wanted - scraped_names(s) == set()

        # STOP SLAVE: both sides stopped, Seconds_Behind_Master NULL -> no sample
        conn = pymysql.connect(host=HOST, port=aport, user="root", ssl_disabled=True)
        try:
            conn.query("STOP SLAVE 'c1'")
        finally:
            conn.close()
        s = wait_until(lambda: (s := scrape(mport)) and value(s, "binlogd_apply_slave_sql_running", **ch) == 0
                       and s, 20, 0.05)
        assert value(s, "binlogd_apply_slave_io_running", channel="c1", state="No") == 1
        assert ("binlogd_apply_seconds_behind_master", (("channel", "c1"),)) not in s


def test_metrics_port_in_use_refuses_the_start():
    taken = socket.socket()
    taken.bind((HOST, 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        p = subprocess.run([sys.executable, "-m", "binlogd.applier.cli", "--target", f"mysql://root@{HOST}:1",
                            "--channel", f"=mysql://root@{HOST}:1", "--no-start", "--metrics-port", str(port)],
                           capture_output=True, text=True, timeout=60)
    finally:
        taken.close()
    assert p.returncode == 2
    assert p.stderr.splitlines() == [(f"binlogd-apply: --metrics-port: cannot listen on 127.0.0.1:{port}: "
                                          "Address already in use")]
    assert "Traceback" not in p.stderr
