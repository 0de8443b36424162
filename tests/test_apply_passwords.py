"""binlogd-apply's passwords without argv: `?password_file=PATH` and `?password_env=NAME` on --target and --channel.

The real-server test applies from a password-protected source to a password-protected target and checks that
neither password is in /proc/PID/cmdline, the log or SHOW SLAVE STATUS on the admin port.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.applier.config import ConfigError, parse_channel, parse_endpoint

from tests.harness import REPO_ROOT, MariaDB
from tests.harness.applier import running_applier

SOURCE_PW = "src-S3cr#t:@/ é"
TARGET_PW = "tgt-An0ther&?=%"


def test_password_file_and_env_parameters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          caplog: pytest.LogCaptureFixture) -> None:
    f = tmp_path / "pw"
    f.write_text(f"{SOURCE_PW}\r\nignored\n")
    ep = parse_endpoint(f"mysql://u@h:1?password_file={f}", "--target")
    assert (ep.user, ep.host, ep.port, ep.password) == ("u", "h", 1, SOURCE_PW)
    assert SOURCE_PW not in repr(ep) and SOURCE_PW not in str(ep)
    monkeypatch.setenv("APPLY_PW", TARGET_PW)
    ch = parse_channel("c=mysql://r@h:2?gtid=no&password_env=APPLY_PW")
    assert (ch.source.password, ch.gtid) == (TARGET_PW, False)
    assert TARGET_PW not in repr(ch)
    with caplog.at_level(logging.WARNING):
        assert parse_endpoint("mysql://u:inline@h:1", "--target").password == "inline"
    assert "ps and /proc/PID/cmdline show it" in caplog.text and "inline" not in caplog.text
    for url, why in ((f"mysql://u:inline@h:1?password_file={f}", "given twice"),
                     (f"mysql://u@h:1?password_file={f}&password_env=APPLY_PW", "given twice"),
                     ("mysql://u@h:1?password_env=NO_SUCH_VAR_X", "NO_SUCH_VAR_X: the environment variable is not set"),
                     (f"mysql://u@h:1?password_file={tmp_path / 'nope'}", "cannot read it: No such file"),
                     ("mysql://u@h:1?password_file=", "needs a path"),
                     ("mysql://u@h:1?gtid=no", "unknown parameter 'gtid'"),
                     ("mysql://u:inline@h:99999", "mysql://u:***@h:99999")):
        with pytest.raises(ConfigError, match=None) as e:
            parse_endpoint(url, "--target")
        assert why in str(e.value) and "inline" not in str(e.value), (url, str(e.value))


def test_unreadable_password_file_is_exit_2_before_connecting(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "binlogd.applier.cli", "--target=mysql://root@127.0.0.1:1",
                        f"--channel==mysql://repl@127.0.0.1:1?password_file={tmp_path}"],
                       cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r
    assert f"--channel '': password_file {tmp_path}: cannot read it: Is a directory" in r.stderr
    assert "Traceback" not in r.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _slave_status(port: int) -> dict[str, Any]:
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", password="", connect_timeout=5)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SLAVE STATUS")
            row = cur.fetchone()
            assert row is not None
            return dict(zip([d[0] for d in cur.description], row, strict=True))
    finally:
        conn.close()


def test_applier_with_passwords_from_file_and_env(mariadb: Any, harness_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    source: MariaDB = mariadb.primary("source", 1)
    target: MariaDB = mariadb("target", 2)
    src_q, tgt_q = SOURCE_PW.replace("'", "''"), TARGET_PW.replace("'", "''")
    source.execute(f"SET sql_log_bin=0; CREATE USER 'repl'@'%' IDENTIFIED BY '{src_q}';"
                   "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%'; SET sql_log_bin=1")  # not for the applier to apply
    target.execute(f"CREATE USER 'app'@'%' IDENTIFIED BY '{tgt_q}'; GRANT ALL ON *.* TO 'app'@'%'")
    source.execute("CREATE DATABASE pw; CREATE TABLE pw.t (id INT PRIMARY KEY) ENGINE=InnoDB;"
                   "INSERT INTO pw.t VALUES (1), (2)")
    pwfile = harness_dir / "target.pw"
    pwfile.write_text(TARGET_PW + "\n")
    monkeypatch.setenv("BINLOGD_TEST_SOURCE_PW", SOURCE_PW)  # ApplierProc passes the environment on
    admin = _free_port()
    args = [f"--target=mysql://app@127.0.0.1:{target.port}?password_file={pwfile}",
            f"--channel==mysql://repl@127.0.0.1:{source.port}?password_env=BINLOGD_TEST_SOURCE_PW",
            f"--admin-port={admin}"]
    with running_applier(args, harness_dir / "applier.log") as proc:
        deadline = time.monotonic() + 60
        while not _applied(target):
            assert proc.alive and time.monotonic() < deadline and " ERROR " not in proc.log(), proc.log()[-3000:]
            time.sleep(0.1)
        assert proc.proc is not None
        cmdline = Path(f"/proc/{proc.proc.pid}/cmdline").read_bytes().decode(errors="replace")
        status = _slave_status(admin)
        log = proc.log()
    assert target.query("SELECT id FROM pw.t ORDER BY id") == [(1,), (2,)]
    for secret in (SOURCE_PW, TARGET_PW):
        assert secret not in cmdline and secret not in log
        assert all(secret not in str(v) for v in status.values())
    assert status["Master_User"] == "repl" and status["Slave_IO_Running"] == "Yes"
    assert "WARNING" not in log


def _applied(target: MariaDB) -> bool:
    try:
        return target.query("SELECT COUNT(*) FROM pw.t")[0][0] == 2
    except pymysql.MySQLError:
        return False
