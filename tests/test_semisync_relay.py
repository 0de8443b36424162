"""binlogd as a semi-synchronous replica (relay mode, --rpl-semi-sync-slave-enabled) of a real MariaDB 10.11 primary
with rpl_semi_sync_master_enabled=ON: binlogd acknowledges each transaction once it is stored and fsynced
(--sync-binlog=1), so the primary's clients commit without waiting for the timeout and its
Rpl_semi_sync_master_yes_tx counts every transaction; when binlogd is killed the primary's next commit waits the
timeout and the primary goes asynchronous. Downstream, a real semi-sync replica of the relay gets the semi-sync
header and replicates everything."""

from __future__ import annotations

import time
from pathlib import Path

from tests.harness import MariaDB
from tests.test_relay import relay_args, relay_master_status


def _st(m: MariaDB) -> dict[str, str]:
    return {str(k): str(v) for k, v in m.query("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master%'")}


def _timed(m: MariaDB, sql: str) -> float:
    t0 = time.monotonic()
    m.query(sql)
    return time.monotonic() - t0


def test_binlogd_acks_a_real_semi_sync_primary(mariadb, binlogd, harness_dir: Path) -> None:
    upstream = mariadb.primary("upstream", 1, "--rpl-semi-sync-master-enabled=ON",
                               "--rpl-semi-sync-master-timeout=60000")
    relay = binlogd([*relay_args(upstream, harness_dir / "relay"), "--sync-binlog", "1",
                     "--rpl-semi-sync-slave-enabled"])
    upstream.wait_until(lambda: _st(upstream)["Rpl_semi_sync_master_clients"] == "1", timeout=30,
                        message="binlogd is the primary's semi-sync replica")
    with relay.connect() as c, c.cursor() as cur:
        cur.execute("SHOW STATUS LIKE 'Rpl_semi_sync_slave_status'")
        assert cur.fetchall() == (("Rpl_semi_sync_slave_status", "ON"),)
        cur.execute("SHOW VARIABLES LIKE 'rpl_semi_sync_slave_enabled'")
        assert cur.fetchall() == (("rpl_semi_sync_slave_enabled", "ON"),)
    before = _st(upstream)
    writes = ["CREATE DATABASE s", "CREATE TABLE s.t (id INT PRIMARY KEY, v VARCHAR(20))",
              *(f"INSERT INTO s.t VALUES ({i}, 'row {i}')" for i in range(1, 21))]
    took = []
    for sql in writes:
        took.append(_timed(upstream, sql))
        # the commit returned, so binlogd acked it: binlogd has stored it already (the ack follows the store)
        end = upstream.query("SHOW MASTER STATUS")[0][:2]
        assert relay_master_status(relay) == (end[0], int(end[1])), sql
    assert max(took) < 5, took  # acked by binlogd, far from the 60 s timeout
    after = _st(upstream)
    assert int(after["Rpl_semi_sync_master_yes_tx"]) - int(before["Rpl_semi_sync_master_yes_tx"]) == len(writes)
    assert after["Rpl_semi_sync_master_no_tx"] == "0" and after["Rpl_semi_sync_master_status"] == "ON", after
    file, pos = upstream.query("SHOW MASTER STATUS")[0][:2]
    assert relay_master_status(relay) == (file, int(pos))  # the ack came after the store: binlogd has it all
    with relay.connect() as c, c.cursor() as cur:
        cur.execute("SHOW STATUS LIKE 'Rpl_semi_sync_slave_send_ack'")
        assert int(cur.fetchall()[0][1]) >= len(writes)

    # a real semi-sync replica of the relay: gets the semi-sync header (no primary-side waits in relay mode)
    down: MariaDB = mariadb("down", 3, "--rpl-semi-sync-slave-enabled=ON")
    down.change_master(relay.host, relay.port, use_gtid="slave_pos")
    down.start_slave()
    down.wait_slave_pos(file, int(pos))
    assert down.query("SELECT COUNT(*) FROM s.t") == [(20,)]
    assert down.query("SHOW STATUS LIKE 'Rpl_semi_sync_slave_status'") == [("Rpl_semi_sync_slave_status", "ON")]
    with relay.connect() as c, c.cursor() as cur:
        cur.execute("SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'")
        assert cur.fetchall() == (("Rpl_semi_sync_master_clients", "1"),)

    # STOP SLAVE / START SLAVE on binlogd: semi-sync OFF while stopped, asked for again on the new connection
    def slave_status_var() -> str:
        with relay.connect() as c, c.cursor() as cur:
            cur.execute("SHOW STATUS LIKE 'Rpl_semi_sync_slave_status'")
            return str(cur.fetchall()[0][1])

    with relay.connect() as c, c.cursor() as cur:
        cur.execute("STOP SLAVE")
    assert slave_status_var() == "OFF"
    upstream.wait_until(lambda: _st(upstream)["Rpl_semi_sync_master_clients"] == "0", timeout=30,
                        message="binlogd's dump ended")
    with relay.connect() as c, c.cursor() as cur:
        cur.execute("START SLAVE")
    upstream.wait_until(lambda: _st(upstream)["Rpl_semi_sync_master_clients"] == "1", timeout=30,
                        message="binlogd is back as a semi-sync replica")
    assert slave_status_var() == "ON"
    yes = int(_st(upstream)["Rpl_semi_sync_master_yes_tx"])
    assert _timed(upstream, "INSERT INTO s.t VALUES (50, 'after restart')") < 5
    assert int(_st(upstream)["Rpl_semi_sync_master_yes_tx"]) == yes + 1

    # binlogd dies: the primary's next commit waits for the timeout, then the primary is asynchronous
    upstream.query("SET GLOBAL rpl_semi_sync_master_timeout=2000")
    relay.kill9()
    t = _timed(upstream, "INSERT INTO s.t VALUES (100, 'after the kill')")
    assert 1.9 <= t < 10, t
    st = _st(upstream)
    assert st["Rpl_semi_sync_master_status"] == "OFF" and st["Rpl_semi_sync_master_no_tx"] == "1", st
