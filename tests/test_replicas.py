"""Real MariaDB 10.11 replicas replicating from binlogd, next to replicas of a real MariaDB primary that
serves copies of the same binlog files.

For REPLICATE / FILTER_ON_SLAVE / FILTER_ON_MASTER, in GTID (slave_pos) and file/pos modes: both
replicas end with identical table checksums, IO and SQL threads running, and the binlogd replica's
Read/Exec_Master_Log_Pos at binlogd's end position, even though the binlog ends with flagged
(skip_replication) transactions that FILTER_ON_MASTER replicas never receive.
"""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pymysql
import pytest
from binlogd.protocol.binlog_file import scan

from tests.harness import MariaDB

WORKLOAD = """
CREATE DATABASE shop;
CREATE DATABASE audit;
CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40), qty INT) ENGINE=InnoDB;
CREATE TABLE audit.log (id INT AUTO_INCREMENT PRIMARY KEY, msg VARCHAR(80)) ENGINE=InnoDB;
INSERT INTO shop.items VALUES (1,'apple',10),(2,'pear',5);
SET skip_replication=1;
INSERT INTO shop.items VALUES (100,'skipped autocommit',1);
CREATE TABLE shop.skipped_table (x INT);
SET skip_replication=0;
BEGIN; UPDATE shop.items SET qty=qty+1 WHERE id=1; INSERT INTO audit.log (msg) VALUES ('restock'); COMMIT;
BEGIN; INSERT INTO shop.items VALUES (3,'rolled back',0); ROLLBACK;
SET SESSION binlog_format=STATEMENT;
SET @who='stmt user var';
INSERT INTO audit.log (msg) VALUES (@who);
SET skip_replication=1;
BEGIN; INSERT INTO audit.log (msg) VALUES ('skipped stmt trx'); UPDATE shop.items SET qty=0; COMMIT;
SET skip_replication=0;
SET SESSION binlog_format=ROW;
ALTER TABLE shop.items ADD COLUMN price DECIMAL(8,2) NULL;
UPDATE shop.items SET price=1.25 WHERE id=1;
FLUSH BINARY LOGS;
INSERT INTO shop.items VALUES (4,'after rotate',4,2.50);
DELETE FROM shop.items WHERE id=2;
SET skip_replication=1;
INSERT INTO shop.items VALUES (101,'skipped at the end',1,0);
BEGIN; INSERT INTO audit.log (msg) VALUES ('skipped last trx'); DELETE FROM shop.items WHERE id=1; COMMIT;
"""
DATABASES = ["shop", "audit"]
MODES = ["REPLICATE", "FILTER_ON_SLAVE", "FILTER_ON_MASTER"]


@pytest.fixture(scope="module")
def workload_binlogs(tmp_path_factory: pytest.TempPathFactory, mariadb_base: Path,
                     mariadb_binaries: dict[str, str]) -> Path:
    """Binlog files written by a real 10.11 primary running WORKLOAD (ROW + annotate, some STATEMENT)."""
    base = tmp_path_factory.mktemp("gen")
    gen = MariaDB.start(base, "gen", 1, "--log-bin=mysql-bin", "--binlog-format=ROW",
                        "--binlog-annotate-row-events=ON", template_dir=mariadb_base / "_template")
    try:
        gen.execute(WORKLOAD)
        files = [f for f, _ in gen.binary_logs()]
        # the checkpoint of a rotated-away file is written asynchronously: wait until the binlog is quiet
        size = -1
        for _ in range(100):
            now = sum(s for _, s in gen.binary_logs())
            if now == size:
                break
            size = now
            time.sleep(0.1)
        datadir = gen.datadir
        out = tmp_path_factory.mktemp("binlogs")
        for f in files:
            shutil.copy(datadir / f, out / f)
    finally:
        gen.stop()
    (out / "mysql-bin.index").write_text("".join(f"./{f}\n" for f in files))
    return out


def _end(binlog_dir: Path) -> tuple[str, int]:
    last = sorted(p for p in binlog_dir.glob("mysql-bin.0*"))[-1]
    data = last.read_bytes()
    res = scan(data)
    assert not res.torn
    return last.name, res.end


def _flagged_trailing(binlog_dir: Path) -> bool:
    last = sorted(p for p in binlog_dir.glob("mysql-bin.0*"))[-1]
    data = last.read_bytes()
    return bool(scan(data).events[-1].flags & 0x8000)


def _replica(mariadb, name: str, sid: int, mode: str) -> MariaDB:
    r = mariadb(name, sid, "--relay-log=relay-bin", "--log-bin=mysql-bin", "--log-slave-updates=ON")
    r.set_skip_mode(mode)
    return r


def _point(replica: MariaDB, host: str, port: int, gtid: bool, first_file: str) -> None:
    if gtid:
        replica.change_master(host, port, use_gtid="slave_pos")
    else:
        replica.change_master(host, port, use_gtid="no", log_file=first_file, log_pos=4)
    replica.start_slave()


@pytest.mark.parametrize("gtid", [True, False], ids=["gtid", "filepos"])
@pytest.mark.parametrize("mode", MODES)
def test_replica_of_binlogd_equals_replica_of_mariadb(mode: str, gtid: bool, workload_binlogs: Path, mariadb,
                                                      binlogd) -> None:
    assert _flagged_trailing(workload_binlogs), "the workload must end with flagged events"
    files = sorted(p for p in workload_binlogs.glob("mysql-bin.0*"))
    server = binlogd(["--binlog-dir", str(workload_binlogs), "--server-id", "100"])
    with ThreadPoolExecutor(4) as pool:
        fut_real = pool.submit(mariadb.primary_from_binlogs, "real", 101, files)
        fut_a = pool.submit(_replica, mariadb, "via_binlogd", 2, mode)
        fut_b = pool.submit(_replica, mariadb, "via_mariadb", 3, mode)
        real, a, b = fut_real.result(), fut_a.result(), fut_b.result()
    _point(a, server.host, server.port, gtid, files[0].name)
    _point(b, real.host, real.port, gtid, files[0].name)

    end_file, end_pos = _end(workload_binlogs)
    status_a = a.wait_slave_pos(end_file, end_pos, timeout=30)
    status_b = b.wait_caught_up(real, timeout=30)
    for st in (status_a, status_b):
        assert st["Slave_IO_Running"] == "Yes" and st["Slave_SQL_Running"] == "Yes", MariaDB.format_slave_status(st)

    sums_a, sums_b = a.table_checksums(DATABASES), b.table_checksums(DATABASES)
    assert sums_a == sums_b
    skipped = a.query("SELECT COUNT(*) FROM shop.items WHERE id >= 100")[0][0]
    has_skipped_table = bool(a.query("SELECT COUNT(*) FROM information_schema.tables WHERE table_name='skipped_table'")
                             [0][0])
    if mode == "REPLICATE":
        assert skipped == 2 and has_skipped_table  # rows 100 and 101 were written under skip_replication
    else:
        assert skipped == 0 and not has_skipped_table
    # binlogd's own positions: still there after a moment (nothing moves them back)
    time.sleep(0.3)
    st = a.slave_status()
    assert (st["Relay_Master_Log_File"], int(st["Read_Master_Log_Pos"]), int(st["Exec_Master_Log_Pos"])) == (
        end_file, end_pos, end_pos)
    if gtid:
        assert a.gtid_slave_pos() == b.gtid_slave_pos()


def test_compat_mariadb_leaves_filter_on_master_replica_behind(workload_binlogs: Path, mariadb, binlogd) -> None:
    """What MariaDB itself does (and binlogd's default fixes): trailing filtered events leave the replica's
    Read/Exec_Master_Log_Pos behind the primary's end."""
    files = sorted(p for p in workload_binlogs.glob("mysql-bin.0*"))
    server = binlogd(["--binlog-dir", str(workload_binlogs), "--server-id", "100", "--compat", "mariadb"])
    a = _replica(mariadb, "compat", 2, "FILTER_ON_MASTER")
    _point(a, server.host, server.port, False, files[0].name)
    end_file, end_pos = _end(workload_binlogs)
    def row4() -> bool:
        try:
            return a.query("SELECT COUNT(*) FROM shop.items WHERE id=4")[0][0] == 1
        except pymysql.err.ProgrammingError:  # the table is not there yet
            return False

    a.wait_until(row4, timeout=30, message="row 4 replicated")
    time.sleep(1.0)
    st = a.slave_status()
    assert st["Slave_IO_Running"] == "Yes" and st["Slave_SQL_Running"] == "Yes"
    assert st["Master_Log_File"] == end_file
    assert int(st["Read_Master_Log_Pos"]) < end_pos
