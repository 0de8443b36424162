"""START SLAVE UNTIL master_gtid_pos of real MariaDB 10.11 replicas, through binlogd and from a real primary.

Both primaries serve the same four-domain binlog (tests/data/oracle/multidomain/dump, files 1-4): a real MariaDB
started on copies of the files, and `binlogd serve --binlog-dir`. Two real replicas run the same sequence of
`START SLAVE UNTIL master_gtid_pos=...` (positions inside file 2 and file 3, domains left out of the condition,
a position past a missing seq_no, one reached before the start): after each, both replicas must have stopped
their IO and SQL threads at the same place (Gtid_IO_Pos, gtid_slave_pos) with the same rows.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from binlogd.testing import MariaDB
from tests.oracle_data import REPO_ROOT

DUMP = REPO_ROOT / "tests" / "data" / "oracle" / "multidomain" / "dump"
FILES = [DUMP / f"mysql-bin.00000{n}" for n in (1, 2, 3, 4)]
UNTILS = [
    "0-1-4,10-2-1",  # inside file 2; domains 2 and 7 not named: the primary skips them
    "0-3-5,10-2-2,2-1-1,7-2-1",
    "0-1-5,7-2-2",  # 0-1-5 does not exist: stop before 0-1-6
    "0-1-4",  # reached before the replica's position: stop at once
    "7-1-3,0-3-7,10-2-4,2-1-3",  # file 3: every domain
]


def _stopped(r: MariaDB) -> bool:
    """Both threads stopped: only the status is read while the SQL thread may still be creating m.t."""
    st = r.slave_status()
    return st["Slave_IO_Running"] == "No" and st["Slave_SQL_Running"] == "No"


def _state(r: MariaDB) -> dict[str, Any]:
    st = r.slave_status()
    has_table = r.query("SELECT 1 FROM information_schema.tables WHERE table_schema = 'm' AND table_name = 't'")
    return {"io": st["Slave_IO_Running"], "sql": st["Slave_SQL_Running"], "io_errno": st["Last_IO_Errno"],
            "sql_errno": st["Last_SQL_Errno"], "gtid_io_pos": st["Gtid_IO_Pos"], "slave_pos": r.gtid_slave_pos(),
            "rows": r.query("SELECT * FROM m.t ORDER BY id") if has_table else []}


def test_start_slave_until_master_gtid_pos_stops_where_a_real_primary_stops(mariadb: Any, binlogd: Any,
                                                                            tmp_path: Path) -> None:
    real = mariadb.primary_from_binlogs("until_primary", 1, FILES)
    d = tmp_path / "binlog"
    d.mkdir()
    for f in FILES:
        shutil.copy(f, d)
    server = binlogd(["--binlog-dir", str(d), "--server-id", "1"])
    replicas = {"real": mariadb("until_r_real", 21), "binlogd": mariadb("until_r_binlogd", 22)}
    replicas["real"].change_master(real.host, real.port, use_gtid="slave_pos")
    replicas["binlogd"].change_master(server.host, server.port, use_gtid="slave_pos")
    seen = []
    for until in UNTILS:
        for r in replicas.values():
            r.query(f"START SLAVE UNTIL master_gtid_pos='{until}'")
        states = {}
        for name, r in replicas.items():
            r.wait_until(lambda r=r: _stopped(r), timeout=30,
                         message=lambda r=r, u=until: f"replica stopped at UNTIL {u}: {_state(r)}")
            states[name] = _state(r)
        assert states["binlogd"] == states["real"], until
        assert states["real"]["io_errno"] == 0 and states["real"]["sql_errno"] == 0
        seen.append((states["real"]["slave_pos"], len(states["real"]["rows"])))
    assert len(set(seen)) >= 4, seen  # the sequence moves the replicas (a test that cannot fail is none)
    assert "Traceback" not in server.log_text()
