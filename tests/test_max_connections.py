"""--max-connections (MariaDB's max_connections) compared with a real MariaDB 10.11 started with max_connections=10
(its minimum): the connection after the limit gets the greeting and, after a correct password, ERR 1040 with
SQLSTATE 08004 unless the account may take the extra admin connection; one more gets ERR 1040 at once, in place of
the greeting, without SQLSTATE (sequence id 0)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pymysql.err
import pytest
from binlogd.server.auth import native_hash

from tests.harness import wait_until
from tests.oracle_data import ORACLE

PW = "pw"
LIMIT = 10
AFTER_AUTH = b"\xff\x10\x04#08004Too many connections"  # MariaDB's, checked against the real one below
BEFORE_GREETING = b"\x17\x00\x00\x00\xff\x10\x04Too many connections"


@pytest.fixture
def err_payloads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The ERR payloads pymysql receives (its exception keeps no SQLSTATE)."""
    seen: list[bytes] = []
    real = pymysql.err.raise_mysql_exception

    def keep(data: bytes) -> None:
        seen.append(bytes(data))
        real(data)

    monkeypatch.setattr(pymysql.protocol.err, "raise_mysql_exception", keep)  # type: ignore[attr-defined]
    yield seen


def _first_packet(port: int) -> bytes:
    """What the server sends first on a new connection (the greeting or an ERR), read until it closes or 2 s."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.settimeout(2)
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:3], "little"):
            try:
                chunk = s.recv(4096)
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
        return data


def observe(port: int, err_payloads: list[bytes]) -> dict[str, Any]:
    """Hold LIMIT connections of a REPLICATION SLAVE account, then see what the next ones get."""
    def login(user: str, password: str) -> Any:
        return pymysql.connect(host="127.0.0.1", port=port, user=user, password=password, connect_timeout=5)

    held = [login("u", PW) for _ in range(LIMIT)]
    try:
        got: dict[str, Any] = {"greeting_kind": _first_packet(port)[4]}  # 10: a protocol-10 greeting
        err_payloads.clear()
        with pytest.raises(pymysql.err.OperationalError) as e:
            login("u", PW)
        got["plain_user"] = (e.value.args, err_payloads[-1])
        admin = wait_until(lambda: _try(login, "root", ""), 10, message="the admin's extra connection")
        held.append(admin)
        with admin.cursor() as cur:
            cur.execute("SHOW VARIABLES LIKE 'max_connections'")
            got["variable"] = cur.fetchall()
        got["one_more"] = _first_packet(port)
        err_payloads.clear()
        with pytest.raises(pymysql.err.OperationalError) as e:
            login("root", "")
        got["one_more_admin"] = e.value.args
        return got
    finally:
        for c in held:
            c.close()


def _try(login: Any, user: str, password: str) -> Any:
    try:
        return login(user, password)
    except pymysql.err.OperationalError:
        return None  # the refused connection may still be counted for a moment


EXPECTED = {"greeting_kind": 10, "plain_user": ((1040, "Too many connections"), AFTER_AUTH),
            "variable": (("max_connections", str(LIMIT)),), "one_more": BEFORE_GREETING,
            "one_more_admin": (1040, "Too many connections")}


def test_real_mariadb_max_connections(mariadb: Any, err_payloads: list[bytes]) -> None:
    real = mariadb("maxconn", 1, f"--max-connections={LIMIT}")
    real.execute(f"CREATE USER u@'%' IDENTIFIED BY '{PW}'; GRANT REPLICATION SLAVE ON *.* TO u@'%'")
    assert observe(real.port, err_payloads) == EXPECTED


@pytest.mark.parametrize("mode", ["standalone", "directory"])
def test_binlogd_max_connections_as_mariadb(binlogd: Any, tmp_path: Path, err_payloads: list[bytes],
                                            mode: str) -> None:
    users = tmp_path / "users"
    users.write_text(f"root:''\nu:{native_hash(PW)} GRANT REPLICATION SLAVE\n")
    args = ["--users", str(users), "--max-connections", str(LIMIT)]
    if mode == "standalone":
        server = binlogd.standalone(args)
    else:
        (tmp_path / "binlogs").mkdir()
        shutil.copyfile(ORACLE / "mysql-bin.000001", tmp_path / "binlogs" / "mysql-bin.000001")
        server = binlogd(["--binlog-dir", str(tmp_path / "binlogs"), *args])
    assert observe(server.port, err_payloads) == EXPECTED


def test_max_connections_default_and_range(binlogd: Any, tmp_path: Path) -> None:
    with binlogd.standalone().connect() as c, c.cursor() as cur:
        cur.execute("SELECT @@max_connections")
        assert cur.fetchall() == ((151,),)
    p = subprocess.run([sys.executable, "-m", "binlogd.server.cli", "serve", "--datadir", str(tmp_path / "d"),
                        "--max-connections", "9"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.endswith("binlogd serve: error: argument --max-connections: must be "
                                                   "between 10 and 100000 (MariaDB's max_connections range)\n")
