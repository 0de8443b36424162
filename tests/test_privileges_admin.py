"""The applier's admin port requires a login: accounts from --admin-users (binlogd's users-file format), 1045 with
MariaDB's text for an unknown user or a wrong password; without the option only root from loopback, as binlogd's
own default. Also: 100 wrong passwords in a row on binlogd never slow another client's login."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.accounts import native_hash

from binlogd.testing.mariadb import HOST, free_port, wait_until
from tests.harness.applier import running_applier


def _login_error(port: int, user: str, password: str) -> tuple[int, str]:
    with pytest.raises(pymysql.err.OperationalError) as ei:
        pymysql.connect(host=HOST, port=port, user=user, password=password, ssl_disabled=True,
                        connect_timeout=5).close()
    return int(ei.value.args[0]), str(ei.value.args[1])


def _admin(port: int, user: str, password: str) -> Any:
    return pymysql.connect(host=HOST, port=port, user=user, password=password, ssl_disabled=True, connect_timeout=5)


def test_admin_port_requires_a_login(tmp_path: Path) -> None:
    users = tmp_path / "admin-users"
    users.write_text(f"ops:{native_hash('0ps pw')}\n")
    port = free_port()
    args = ["--target=mysql://root@127.0.0.1:1", f"--channel==mysql://root@{HOST}:{free_port()}", "--no-start",
            "--admin-port", str(port), "--admin-users", str(users)]
    with running_applier(args, tmp_path / "applier.log") as p:
        def up() -> bool:
            assert p.alive, p.log()[-3000:]
            try:
                _admin(port, "ops", "0ps pw").close()
                return True
            except pymysql.MySQLError:
                return False

        wait_until(up, 20, 0.05, "the admin port")
        assert _login_error(port, "root", "") == (
            1045, "Access denied for user 'root'@'127.0.0.1' (using password: NO)")
        assert _login_error(port, "ops", "wrong") == (
            1045, "Access denied for user 'ops'@'127.0.0.1' (using password: YES)")
        with _admin(port, "ops", "0ps pw") as conn, conn.cursor() as cur:
            cur.execute("SHOW ALL SLAVES STATUS")
            assert len(cur.fetchall()) == 1  # the default channel


def test_admin_users_file_errors_stop_the_start(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.harness import REPO_ROOT

    bad = tmp_path / "bad"
    bad.write_text("no colon here\n")
    for extra, needle in ((["--admin-port", "0", "--admin-users", str(bad)], "expected USER"),
                          (["--admin-users", str(bad)], "--admin-users without --admin-port")):
        res = subprocess.run([sys.executable, "-m", "binlogd.applier.cli", "--target=mysql://root@127.0.0.1:1",
                              "--channel==mysql://root@127.0.0.1:1", "--no-start", *extra],
                             capture_output=True, text=True, timeout=30, cwd=REPO_ROOT)
        assert res.returncode == 2 and needle in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_wrong_passwords_do_not_slow_other_clients(binlogd_factory: Any, tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text(f"root@localhost:''\nvictim:{native_hash('right')}\n")
    server = binlogd_factory.standalone(["--users", str(users)])

    def login_time() -> float:
        t0 = time.monotonic()
        server.connect(user="victim", password="right").close()
        return time.monotonic() - t0

    baseline = sorted(login_time() for _ in range(5))[2]
    failures = 0
    done = threading.Event()

    def attack() -> None:
        nonlocal failures
        for _ in range(100):
            try:
                server.connect(user="victim", password="wrong").close()
            except pymysql.err.OperationalError as e:
                assert e.args[0] == 1045
                failures += 1
        done.set()

    t = threading.Thread(target=attack)
    t.start()
    during = []
    while not done.is_set():
        during.append(login_time())
    t.join()
    after = sorted(login_time() for _ in range(5))[2]
    assert failures == 100
    assert during, "the attack ended before another login could be timed"
    # no lock-out, no growing delay: the other client's logins stay fast during and after the 100 failures
    assert max(during) < max(0.5, 20 * baseline), (baseline, during)
    assert after < max(0.2, 5 * baseline), (baseline, after)
