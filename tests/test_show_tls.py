"""`binlogd show -R` over TLS (--ssl, --ssl-ca, --ssl-verify-server-cert: protocol/tls_options.py's rule) against a
real MariaDB 10.11 whose account REQUIRE SSL: the text equals `mariadb-binlog --ssl`'s; clear text is refused
(1045) and a server certificate from another CA fails verification (2026), each one line on stderr, exit 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_show_helpers import mariadb_binlog, show
from tests.tlsca import make_certs

pytestmark = pytest.mark.mariadb
PW = "s3cret"


def test_remote_read_over_tls(mariadb: Any, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    m = mariadb("tlsprimary", 1, "--log-bin=mysql-bin", "--binlog-format=ROW", f"--ssl-cert={certs.cert}",
                f"--ssl-key={certs.key}", f"--ssl-ca={certs.ca}")
    m.execute(f"SET sql_log_bin=0; CREATE USER sec@'%' IDENTIFIED BY '{PW}' REQUIRE SSL; GRANT ALL ON *.* TO "
              "sec@'%'; SET sql_log_bin=1; CREATE DATABASE d; CREATE TABLE d.t (a INT PRIMARY KEY, u VARCHAR(40));"
              "INSERT INTO d.t VALUES (1, UUID())")
    remote = ("-R", "-h", m.host, "-P", str(m.port), "-u", "sec", f"-p{PW}")
    ours = show(*remote, f"--ssl-ca={certs.ca}", "--ssl-verify-server-cert", "mysql-bin.000001").stdout
    assert b"INSERT INTO d.t VALUES (1, UUID())" in ours  # the Annotate_rows of the row event
    assert ours == mariadb_binlog(*remote, "--ssl", "mysql-bin.000001").stdout

    clear = show(*remote, "mysql-bin.000001", check=False)
    assert clear.returncode == 1 and b"1045" in clear.stderr and b"Traceback" not in clear.stderr
    wrong_ca = show(*remote, f"--ssl-ca={certs.other_ca}", "--ssl-verify-server-cert", "mysql-bin.000001",
                    check=False)
    assert wrong_ca.returncode == 1 and b"2026" in wrong_ca.stderr and b"Traceback" not in wrong_ca.stderr
    assert len(wrong_ca.stderr.strip().splitlines()) == 1
