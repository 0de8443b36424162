"""`binlogd serve --upstream ... --metrics-port`: the relay's upstream state and lag, a real MariaDB 10.11 replica
of binlogd seen per replica, and the Grafana dashboard's binlogd expressions all naming scraped metrics.

Real components on both sides: a MariaDB 10.11 primary upstream, binlogd relaying it, a MariaDB 10.11 replica of
binlogd. The values are compared with what the servers themselves say (SHOW MASTER STATUS, SHOW SLAVE STATUS).
"""

from __future__ import annotations

from typing import Any

import pymysql

from binlogd.testing.mariadb import free_port, wait_until
from tests.metrics_scrape import dashboard_metric_names, replica_series, scrape, scraped_names, value

STANDALONE_ONLY = {"binlogd_binlog_commits_total"}  # (tests/test_metrics.py scrapes it)


def slave_status(server: Any) -> dict[str, Any]:
    conn = server.connect(cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SLAVE STATUS")
            return dict(cur.fetchone())
    finally:
        conn.close()


def test_relay_upstream_state_lag_and_a_real_replica(mariadb, binlogd) -> None:
    upstream = mariadb.primary("upstream", 1)
    mport = free_port()
    relay = binlogd.relay(upstream, ["--upstream-heartbeat", "1", "--upstream-retry-max", "0.5",
                                     "--metrics-port", str(mport)])
    replica = mariadb("replica", 2)
    replica.change_master(relay.host, relay.port, use_gtid="slave_pos")
    replica.start_slave()
    upstream.execute("CREATE DATABASE m; CREATE TABLE m.t (id INT PRIMARY KEY) ENGINE=InnoDB; "
                     + "; ".join(f"INSERT INTO m.t VALUES ({i})" for i in range(10)))
    file, end = upstream.master_status()

    def caught_up():
        s = scrape(mport)
        behind = replica_series(s, "binlogd_replica_behind_bytes")
        ok = (value(s, "binlogd_relay_exec_master_log_pos") == end and value(s, "binlogd_binlog_end_position") == end
              and len(behind) == 1 and next(iter(behind.values())) == 0)
        return s if ok else None

    s = wait_until(caught_up, 30, 0.1, "the relay and its replica at the upstream's end")
    st = slave_status(relay)
    assert (st["Slave_IO_Running"], st["Seconds_Behind_Master"], st["Exec_Master_Log_Pos"]) == ("Yes", 0, end)
    assert value(s, "binlogd_info", mode="relay", version=relay.query("SELECT VERSION()")[0][0]) == 1
    assert value(s, "binlogd_relay_upstream_up") == 1
    assert value(s, "binlogd_relay_upstream_io_running", state="Yes") == 1
    assert value(s, "binlogd_relay_upstream_io_running", state="Connecting") == 0
    assert value(s, "binlogd_relay_seconds_behind_master") == 0
    assert value(s, "binlogd_relay_read_master_log_pos") == end
    assert value(s, "binlogd_relay_last_io_errno") == 0
    assert value(s, "binlogd_binlog_info", file=file) == 1
    assert value(s, "binlogd_relay_groups_stored_total") == st["Slave_Transactional_Groups"] >= 12
    assert value(s, "binlogd_binlog_group_commits_total") >= 1
    (labels,) = [dict(lv) for (n, lv) in s if n == "binlogd_replica_events_sent_total"]
    assert labels["server_id"] == "2" and labels["user"] == "root"
    assert value(s, "binlogd_replica_events_sent_total", **labels) > 12
    # every binlogd (not binlogd-apply) metric the Grafana dashboard plots is one binlogd serves
    wanted = {n for n in dashboard_metric_names() if not n.startswith("binlogd_apply_")} - STANDALONE_ONLY
    assert wanted - scraped_names(s) == set()

    # the upstream goes away: disconnected, no lag sample (Seconds_Behind_Master is NULL), an IO error
    upstream.stop()
    s = wait_until(lambda: (s := scrape(mport)) and value(s, "binlogd_relay_upstream_up") == 0 and s, 30, 0.1,
                   "the relay to notice the upstream is gone")
    assert value(s, "binlogd_relay_upstream_io_running", state="Yes") == 0
    assert ("binlogd_relay_seconds_behind_master", ()) not in s
    s = wait_until(lambda: (s := scrape(mport)) and value(s, "binlogd_relay_last_io_errno") != 0 and s, 30, 0.1)
    assert value(s, "binlogd_relay_last_io_errno") == slave_status(relay)["Last_IO_Errno"] == 2003
