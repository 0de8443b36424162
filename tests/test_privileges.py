"""Users-file privileges, REQUIRE SSL and host patterns, each refusal side by side with a real MariaDB 10.11 whose
accounts have the same grants (CREATE USER / GRANT), plus SIGHUP reload and `binlogd passwd`.

MariaDB names the client by its resolved host ('localhost') where binlogd names it by its address (127.0.0.1):
texts are compared with that one difference normalised, as the 1045 tests elsewhere do.
"""

from __future__ import annotations

import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest
from binlogd.protocol.accounts import Priv, host_matches
from binlogd.server.auth import BinlogdIdentityProvider, UsersFileError, native_hash, parse_line

from tests.harness import REPO_ROOT
from tests.tlsca import Certs, make_certs

PW = "s3cret pass"
COM_BINLOG_DUMP, COM_REGISTER_SLAVE = 0x12, 0x15

# account -> (MariaDB grants, users-file options); every account has password PW
ACCOUNTS = {
    "nobody": ("USAGE", "GRANT USAGE"),
    "repl": ("REPLICATION SLAVE", "GRANT REPLICATION SLAVE"),
    "mon": ("REPLICATION CLIENT", "GRANT REPLICATION CLIENT"),
    "tlsrepl": ("REPLICATION SLAVE", "GRANT REPLICATION SLAVE REQUIRE SSL"),
}


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def users_file(path: Path) -> Path:
    lines = ["root@localhost:''", *(f"{u}:{native_hash(PW)} {opts}" for u, (_, opts) in ACCOUNTS.items()),
             f"far@10.9.9.9:{native_hash(PW)}", "legacy:plain password  # the older form: every privilege"]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def pair(binlogd_factory: Any, mariadb: Any, certs: Certs, tmp_path: Path) -> tuple[Any, Any]:
    """(real MariaDB 10.11, binlogd standalone) with the same accounts, both offering TLS, both holding shop.t."""
    tls = [f"--ssl-cert={certs.cert}", f"--ssl-key={certs.key}", f"--ssl-ca={certs.ca}"]
    real = mariadb("grants", 1, "--log-bin=mysql-bin", *tls)
    script = ["CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY)"]
    for user, (grants, opts) in ACCOUNTS.items():
        script.append(f"CREATE USER {user}@'%' IDENTIFIED BY '{PW}'" + (" REQUIRE SSL" if "REQUIRE" in opts else ""))
        script.append(f"GRANT {grants} ON *.* TO {user}@'%'")
    script.append(f"CREATE USER far@'10.9.9.9' IDENTIFIED BY '{PW}'")
    real.execute(";".join(script))
    ours = binlogd_factory.standalone(["--users", str(users_file(tmp_path / "users")), "--ssl-cert", str(certs.cert),
                                       "--ssl-key", str(certs.key)])
    ours.execute("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY)")
    return real, ours


def norm(text: str) -> str:
    return text.replace("'@'localhost'", "'@'127.0.0.1'")


def error_of(fn: Any) -> tuple[int, str]:
    with pytest.raises(pymysql.err.MySQLError) as ei:
        fn()
    return int(ei.value.args[0]), norm(str(ei.value.args[1]))


def login(server: Any, user: str, **kw: Any) -> Any:
    return server.connect(user=user, password=PW, **kw)


def run(server: Any, user: str, sql: str) -> Any:
    with login(server, user) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def command(server: Any, user: str, cmd: int, payload: bytes) -> bytes:
    """Send a replication command as `user`; its first answer packet (ERR raises)."""
    with login(server, user) as conn:
        conn._execute_command(cmd, payload)
        return bytes(conn._read_packet().get_all_data())


def dump_payload(file: str) -> bytes:
    return struct.pack("<IHI", 4, 0, 4242) + file.encode()


def register_payload() -> bytes:
    return struct.pack("<IBBBHII", 4243, 0, 0, 0, 0, 0, 0)


@pytest.mark.parametrize("sql", ["SHOW BINARY LOGS", "SHOW MASTER STATUS", "SHOW BINLOG EVENTS",
                                 "/* a comment first */ SHOW SLAVE HOSTS", "SHOW SLAVE STATUS",
                                 "SHOW ALL SLAVES STATUS"])
def test_show_without_monitor_is_1227_as_mariadb(pair: tuple[Any, Any], sql: str) -> None:
    real, ours = pair
    expected = error_of(lambda: run(real, "nobody", sql))
    assert expected[0] == 1227
    assert error_of(lambda: run(ours, "nobody", sql)) == expected


def test_replication_client_may_show_binlogs(pair: tuple[Any, Any]) -> None:
    real, ours = pair
    for server in pair:
        assert run(server, "mon", "SHOW BINARY LOGS")
        assert run(server, "mon", "SHOW MASTER STATUS")
    for sql in ("SHOW SLAVE HOSTS", "SHOW SLAVE STATUS"):  # not BINLOG MONITOR's (MariaDB 10.5+)
        assert error_of(lambda s=sql: run(ours, "mon", s)) == error_of(lambda s=sql: run(real, "mon", s))


@pytest.mark.parametrize("cmd,payload,refusal", [
    (COM_BINLOG_DUMP, dump_payload("mysql-bin.000001"),
     (1227, "Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s) for this operation")),
    (COM_REGISTER_SLAVE, register_payload(), (1045, "Access denied for user 'mon'@'%' (using password: YES)")),
], ids=["dump", "register"])
def test_replication_without_replication_slave_is_refused_as_mariadb(pair: tuple[Any, Any], cmd: int,
                                                                     payload: bytes, refusal: tuple[int, str]) -> None:
    real, ours = pair
    expected = error_of(lambda: command(real, "mon", cmd, payload))
    assert expected == refusal
    assert error_of(lambda: command(ours, "mon", cmd, payload)) == expected
    # with the privilege both start: OK for REGISTER, the first event (an OK-marked packet) for a dump
    for server in pair:
        assert command(server, "repl", cmd, payload)[0] == 0


@pytest.mark.parametrize("sql", ["INSERT INTO shop.t VALUES (1)", "UPDATE shop.t SET id = 2",
                                 "DELETE FROM shop.t", "CREATE TABLE shop.t2 (a INT)", "DROP TABLE shop.t",
                                 "ALTER TABLE shop.t ADD COLUMN b INT", "CREATE DATABASE other",
                                 "DROP DATABASE shop"])
def test_write_without_the_right_is_refused_as_mariadb(pair: tuple[Any, Any], sql: str) -> None:
    real, ours = pair
    expected = error_of(lambda: run(real, "mon", sql))
    assert expected[0] in (1142, 1044), expected
    assert error_of(lambda: run(ours, "mon", sql)) == expected


@pytest.mark.parametrize("sql", ["PREPARE s FROM 'INSERT INTO shop.t VALUES (?)'",
                                 "PREPARE s FROM 'DELETE FROM shop.t WHERE id = ?'"])
def test_prepare_without_the_right_is_refused_as_mariadb(pair: tuple[Any, Any], sql: str) -> None:
    """SQL PREPARE of a write: refused when prepared, as MariaDB checks the statement's privileges then."""
    real, ours = pair
    expected = error_of(lambda: run(real, "mon", sql))
    assert expected[0] == 1142, expected
    assert error_of(lambda: run(ours, "mon", sql)) == expected


def test_legacy_line_keeps_every_privilege(pair: tuple[Any, Any]) -> None:
    _, ours = pair
    with ours.connect(user="legacy", password="plain password") as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO shop.t VALUES (7)")
        cur.execute("SHOW BINARY LOGS")
        assert cur.fetchall()


def test_require_ssl_and_host_pattern_are_1045_as_mariadb(pair: tuple[Any, Any], certs: Certs) -> None:
    real, ours = pair
    for user in ("tlsrepl", "far"):
        expected = error_of(lambda u=user: login(real, u).close())
        assert expected == (1045, f"Access denied for user '{user}'@'127.0.0.1' (using password: YES)")
        assert error_of(lambda u=user: login(ours, u).close()) == expected
    for server in pair:  # over TLS the REQUIRE SSL account logs in and may dump
        with login(server, "tlsrepl", ssl={"ca": str(certs.ca)}, ssl_disabled=False) as conn, conn.cursor() as cur:
            cur.execute("SHOW STATUS LIKE 'Ssl_version'")
            assert cur.fetchall()[0][1] == "TLSv1.3"


# ---- the users file, reload, passwd -----------------------------------------------------------------------------


def test_users_file_lines() -> None:
    e = parse_line(f"r@'10.0.%':{native_hash('x')} GRANT REPLICATION SLAVE, binlog monitor REQUIRE SSL", "f:1")
    assert e is not None and e.host == "10.0.%" and e.require_ssl
    assert e.privileges == Priv.REPLICATION_SLAVE | Priv.BINLOG_MONITOR
    assert parse_line("old:pa ss:word", "f:2") == parse_line("old:pa ss:word ", "f:2")
    assert parse_line("old:pa ss:word", "f:2").privileges == Priv.ALL  # type: ignore[union-attr]
    for bad, why in (("u:secret GRANT REPLICATION SLAVE", "need the password as a hash"),
                     (f"u:{native_hash('x')} GRANT SUPERPOWERS", "unknown privilege 'SUPERPOWERS'"),
                     (f"u:{native_hash('x')} WHATEVER", "only GRANT"), ("nocolon", "expected USER"),
                     ("u:ed25519:c2hvcnQ GRANT ALL", "32-byte public key")):
        with pytest.raises(UsersFileError, match=why):
            parse_line(bad, "f:3")
    assert host_matches("10.0.%", "10.0.3.4") and not host_matches("10.0.%", "10.1.0.1")
    assert host_matches("localhost", "127.0.0.1") and host_matches("10.0.0.0/255.255.0.0", "10.0.9.9")
    idp = BinlogdIdentityProvider([parse_line(f"u@127.0.0.1:{native_hash('a')} GRANT USAGE", "x"),  # type: ignore[list-item]
                                   parse_line(f"u:{native_hash('b')}", "x")])
    assert idp.entry_for("u", "127.0.0.1").privileges == Priv.NONE  # type: ignore[union-attr]  # most specific
    assert idp.entry_for("u", "10.1.1.1").privileges == Priv.ALL  # type: ignore[union-attr]


def passwd(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "binlogd.server.cli", "passwd", *args], input=stdin, text=True,
                          capture_output=True, cwd=REPO_ROOT, timeout=30)


def test_passwd_writes_an_entry_and_sighup_reloads(binlogd_factory: Any, tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("root@localhost:''\n")
    res = passwd("--users", str(users), "--grant", "REPLICATION SLAVE", "newbie", stdin="n3w pass\n")
    assert res.returncode == 0, res.stderr
    assert f"newbie:{native_hash('n3w pass')} GRANT REPLICATION SLAVE" in users.read_text()
    assert "n3w pass" not in users.read_text()
    users.write_text("root@localhost:''\n")  # binlogd starts without newbie
    server = binlogd_factory.standalone(["--users", str(users)])
    kept = server.connect()
    assert error_of(lambda: server.connect(user="newbie", password="n3w pass").close())[0] == 1045
    assert passwd("--users", str(users), "--grant", "REPLICATION SLAVE", "newbie", stdin="n3w pass\n").returncode == 0
    server._signal_group(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "users file" not in server.log_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    with server.connect(user="newbie", password="n3w pass") as conn, conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError) as ei:
            cur.execute("SHOW BINARY LOGS")
        assert ei.value.args[0] == 1227
    # a malformed file: the accounts in use stay, the log says why, connections are kept
    users.write_text("root@localhost:''\nbroken line without colon\n")
    server._signal_group(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "not reloaded" not in server.log_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "users file not reloaded" in server.log_text() and "broken line" in server.log_text()
    server.connect(user="newbie", password="n3w pass").close()
    with kept.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)
    kept.close()


def test_passwd_refuses_bad_input(tmp_path: Path) -> None:
    res = passwd("--grant", "SUPERPOWERS", "x", stdin="pw\n")
    assert res.returncode == 2 and "unknown privilege 'SUPERPOWERS'" in res.stderr and "Traceback" not in res.stderr
    res = passwd("bad:name", stdin="pw\n")
    assert res.returncode == 2 and "':'" in res.stderr
    res = passwd("x", stdin="")
    assert res.returncode == 2 and "password" in res.stderr
    ok = passwd("x@'10.0.%'", "--require-ssl", stdin="pw\n")
    assert ok.returncode == 0 and ok.stdout.strip() == f"x@10.0.%:{native_hash('pw')} REQUIRE SSL"
    ed = passwd("--ed25519", "--grant", "REPLICATION SLAVE", "e", stdin="pw\n")
    entry = parse_line(ed.stdout, "passwd")
    assert ed.returncode == 0 and entry is not None and entry.plugin == "ed25519"
    assert entry.privileges == Priv.REPLICATION_SLAVE and "pw" not in ed.stdout.replace("ed25519", "")


def test_change_user_to_a_require_ssl_account_in_clear_text_is_refused(pair: tuple[Any, Any]) -> None:
    """COM_CHANGE_USER is a login too: REQUIRE SSL refuses it in clear text (1045) and the session does not go on
    as the previous user."""
    _, ours = pair
    conn = login(ours, "mon")
    payload = b"tlsrepl\0\0\0" + (45).to_bytes(2, "little") + b"mysql_native_password\0\0"  # no attributes
    conn._execute_command(0x11, payload)
    with pytest.raises(pymysql.err.OperationalError) as ei:
        conn._read_packet()
    assert ei.value.args == (1045, "Access denied for user 'tlsrepl'@'127.0.0.1' (using password: NO)")
    with pytest.raises(pymysql.err.MySQLError):
        conn.query("SELECT 1")
    conn.close()
