"""The pytest plugin's fixtures used as a user uses them (binlogd.testing.plugin), against real MariaDB and binlogd.

The examples/ directory is run from a fresh virtualenv by test_plugin_install.py; this file covers the calls the
examples do not: a standalone binlogd written to and replicated from, a relay, the session server, waiting for
clients, and what a failing test's report carries.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from binlogd.testing.servers import Server


def test_standalone_server_replica_and_wait_for_clients(binlogd_server: Server, mariadb_replica: Any) -> None:
    binlogd_server.execute("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(10))")
    binlogd_server.execute("INSERT INTO shop.t VALUES (1, 'a'); SET skip_replication=1; "
                           "INSERT INTO shop.t VALUES (2, 'flagged')")

    mariadb_replica.change_master_to(binlogd_server, skip_mode="FILTER_ON_MASTER")
    (dump,) = binlogd_server.wait_for_clients(1, timeout=30)
    status = mariadb_replica.wait_caught_up(timeout=30)

    assert dump.server_id == mariadb_replica.server_id and dump.skip_replication and dump.capability == 4
    assert mariadb_replica.query("SELECT id FROM shop.t") == [(1,)]
    assert status["Slave_SQL_Running"] == "Yes" and mariadb_replica.status()["Slave_IO_Running"] == "Yes"
    (after,) = binlogd_server.connections()
    assert after.count("hole", "skip_replication") == 3  # the flagged group's GTID, Query and XID: withheld


def test_wait_for_clients_times_out_with_the_server_named(binlogd_server: Server) -> None:
    with pytest.raises(Exception, match="1 open dump connection"):
        binlogd_server.wait_for_clients(1, timeout=0.5)


def test_relay_of_a_mariadb_primary(binlogd_factory: Any, mariadb_primary: Any) -> None:
    mariadb_primary.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY); INSERT INTO d.t VALUES (1)")
    relay = binlogd_factory.relay(mariadb_primary)
    want = mariadb_primary.master_status()

    def stored() -> bool:  # (empty until the relay has stored its first file)
        rows = relay.query("SHOW MASTER STATUS")
        return bool(rows) and tuple(rows[0][:2]) == want

    from binlogd.testing import wait_until

    wait_until(stored, 30, 0.05, f"relay at {want}")
    name = want[0]
    ours, theirs = (relay.datadir / name).read_bytes(), (mariadb_primary.datadir / name).read_bytes()
    assert ours[100:] == theirs[100:len(ours)]  # the upstream's file byte for byte (the FDE's in-use flag aside)


def test_session_server_is_shared(binlogd_session_server: Server, request: pytest.FixtureRequest) -> None:
    db = f"s_{threading.get_ident() % 100000}_{len(request.node.name)}"
    binlogd_session_server.execute(f"CREATE DATABASE IF NOT EXISTS {db}")
    assert (db,) in binlogd_session_server.query("SHOW DATABASES")


def test_a_failing_test_report_carries_the_server_log(tmp_path: Path) -> None:
    """Run a failing user test in a separate pytest: its report has a `binlogd :PORT` section with the log tail."""
    (tmp_path / "test_user.py").write_text(
        "def test_fails(binlogd_server):\n"
        "    binlogd_server.execute('CREATE DATABASE shown_in_report')\n"
        "    assert False, 'on purpose'\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "test_user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "binlogd :" in r.stdout and "binlogd-1.log (tail)" in r.stdout, r.stdout
    assert "on purpose" in r.stdout
