"""mariadb-binlog reading an event larger than 16 MiB from binlogd (it arrives split over several packets).

Needs MariaDB 10.11's client tools (Debian: apt-get install mariadb-client). Run: `pytest -n 2`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any


def test_mariadb_binlog_reads_a_17_mib_event(binlog_builder: Any, binlogd_factory: Any, tmp_path: Path) -> None:
    big = "x" * (17 << 20)
    binlog_builder.statement("CREATE DATABASE blobs")
    binlog_builder.statement("CREATE TABLE t (id INT PRIMARY KEY, b LONGTEXT)", db="blobs")
    with binlog_builder.transaction() as t:
        t.insert("blobs", "t", ["id INT PRIMARY KEY", "b LONGTEXT"], [(1, big)])
    server = binlogd_factory.serve(binlog_builder)

    tool = shutil.which("mariadb-binlog")
    assert tool, "mariadb-binlog not found: apt-get install mariadb-client"
    out = subprocess.run([tool, "--read-from-remote-server", f"--host={server.host}", f"--port={server.port}",
                          "--user=root", "--raw", f"--result-file={tmp_path}/", "mysql-bin.000001"],
                         capture_output=True, text=True, timeout=60)

    assert out.returncode == 0, out.stderr
    copy = (tmp_path / "mysql-bin.000001").read_bytes()
    stored = (binlog_builder.directory / "mysql-bin.000001").read_bytes()
    fde_end = 4 + int.from_bytes(copy[13:17], "little")  # the FDE is sent with its in-use flag cleared, as MariaDB does
    assert len(copy) > 17 << 20 and copy[fde_end:] == stored[fde_end:len(copy)]
