"""binlogd's server TLS (--ssl-cert/--ssl-key/--ssl-ca, --require-secure-transport) with real MariaDB 10.11 clients.

A real replica with MASTER_SSL=1 and MASTER_SSL_VERIFY_SERVER_CERT=1 replicates through binlogd, `mariadb --ssl`
and `mariadb-binlog --ssl` connect, Ssl_cipher/Ssl_version answer; a client trusting another CA is refused by its
own verification; a clear-text login under --require-secure-transport gets what a real 10.11 answers; bad
certificate files stop the start before anything is written; a TLS hello of garbage or a stalled one cost only
that connection. The CA and certificates are made at run time (tests/tlsca.py).
"""

from __future__ import annotations

import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from binlogd.testing.mariadb import find_binary
from tests.harness import MariaDB
from tests.harness.cli import run_cli
from tests.test_cli_startup import refused
from tests.tlsca import Certs, make_certs

TIMEOUT = 10


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def tls_args(c: Certs) -> list[str]:
    return ["--ssl-cert", str(c.cert), "--ssl-key", str(c.key), "--ssl-ca", str(c.ca)]


@pytest.fixture
def tls_server(binlogd_factory: Any, certs: Certs) -> Any:
    server = binlogd_factory.standalone(tls_args(certs))
    server.execute("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20));"
                   "INSERT INTO shop.t VALUES (1, 'over tls'), (2, 'verified')")
    return server


def tls_connect(server: Any, ca: Path, **kw: Any) -> pymysql.connections.Connection:  # type: ignore[type-arg]
    return server.connect(ssl={"ca": str(ca), "check_hostname": True}, ssl_disabled=False, **kw)


def session_status(conn: Any, name: str) -> str:
    with conn.cursor() as cur:
        cur.execute(f"SHOW STATUS LIKE '{name}'")
        rows = cur.fetchall()
    assert len(rows) == 1, rows
    return str(rows[0][1])


def client(name: str, server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    """The MariaDB 10.11 client program `name` (mariadb, mariadb-binlog) against `server` as root."""
    binary = find_binary(name)
    assert binary is not None, f"{name} not installed"
    return subprocess.run([binary, "--no-defaults", "-h127.0.0.1", f"-P{server.port}", "-uroot", *args],
                          capture_output=True, text=True, timeout=30)


def test_replica_with_master_ssl_verify_server_cert(tls_server: Any, mariadb_replica: MariaDB, certs: Certs) -> None:
    """A real 10.11 replica verifies binlogd's certificate (CA and 127.0.0.1 in its SAN) and replicates over TLS."""
    r = mariadb_replica
    r.change_master(tls_server.host, tls_server.port)
    r.query("CHANGE MASTER TO MASTER_SSL=1, MASTER_SSL_CA=%s, MASTER_SSL_VERIFY_SERVER_CERT=1", str(certs.ca))
    r.master = tls_server
    r.start_slave()
    st = r.wait_caught_up(timeout=30)
    assert st["Master_SSL_Allowed"] == "Yes" and st["Master_SSL_Verify_Server_Cert"] == "Yes"
    assert r.query("SELECT id, v FROM shop.t ORDER BY id") == [(1, "over tls"), (2, "verified")]
    tls_server.query("INSERT INTO shop.t VALUES (3, 'live')")
    r.wait_caught_up(timeout=30)
    assert r.query("SELECT v FROM shop.t WHERE id = 3") == [("live",)]


def test_replica_trusting_another_ca_is_refused(tls_server: Any, mariadb_replica: MariaDB, certs: Certs) -> None:
    """Verification is real: with MASTER_SSL_CA of a CA that did not sign binlogd's certificate the IO thread
    fails with 2026 and binlogd stays up for the next client."""
    r = mariadb_replica
    r.change_master(tls_server.host, tls_server.port)
    r.query("CHANGE MASTER TO MASTER_SSL=1, MASTER_SSL_CA=%s, MASTER_SSL_VERIFY_SERVER_CERT=1", str(certs.other_ca))
    r.start_slave()
    r.wait_until(lambda: int(r.slave_status().get("Last_IO_Errno") or 0) != 0, timeout=30,
                 message="an IO thread error")
    status = r.slave_status()
    assert status["Last_IO_Errno"] == 2026, status
    assert "SSL connection error" in status["Last_IO_Error"]
    r.stop_slave()
    assert tls_server.query("SELECT 1") == [(1,)]


def test_mariadb_cli_over_tls_reports_cipher(tls_server: Any, certs: Certs) -> None:
    res = client("mariadb", tls_server, "--ssl", f"--ssl-ca={certs.ca}", "--ssl-verify-server-cert",
                 "-N", "-e", "SHOW STATUS LIKE 'Ssl_cipher'; SHOW STATUS LIKE 'Ssl_version'; "
                 "SELECT 6 * 7")
    assert res.returncode == 0, res.stderr
    rows = [line.split("\t") for line in res.stdout.splitlines()]
    assert rows[0][0] == "Ssl_cipher" and rows[0][1].startswith("TLS_"), rows
    assert rows[1] == ["Ssl_version", "TLSv1.3"], rows
    assert rows[2] == ["42"]
    # a clear-text session on the same server: both empty, as on MariaDB
    with tls_server.connect() as conn:
        assert session_status(conn, "Ssl_cipher") == "" and session_status(conn, "Ssl_version") == ""
    with tls_connect(tls_server, certs.ca) as conn:
        assert session_status(conn, "Ssl_version") in ("TLSv1.2", "TLSv1.3")


def test_mariadb_cli_with_wrong_ca_fails_alone(tls_server: Any, certs: Certs) -> None:
    res = client("mariadb", tls_server, "--ssl", f"--ssl-ca={certs.other_ca}",
                 "--ssl-verify-server-cert", "-e", "SELECT 1")
    assert res.returncode != 0 and "2026" in res.stderr, res.stderr
    with tls_connect(tls_server, certs.ca) as conn, conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)


def test_mariadb_binlog_over_tls(tls_server: Any, certs: Certs) -> None:
    res = client("mariadb-binlog", tls_server, "--ssl", f"--ssl-ca={certs.ca}",
                 "--ssl-verify-server-cert", "--read-from-remote-server", "mysql-bin.000001")
    assert res.returncode == 0, res.stderr
    assert "INSERT INTO shop.t VALUES (1, 'over tls'), (2, 'verified')" in res.stdout


class _TlsProbe:
    """A binlogd whose readiness probe and helpers log in over TLS (clear text is refused under
    --require-secure-transport)."""

    ca: Path

    def connect(self, **kw: Any) -> Any:
        kw.setdefault("ssl", {"ca": str(self.ca)})
        kw.setdefault("ssl_disabled", False)
        return super().connect(**kw)  # type: ignore[misc]


@pytest.fixture
def secure_server(binlogd_factory: Any, certs: Certs, tmp_path: Path) -> Iterator[Any]:
    from binlogd.testing.binlogd_server import Binlogd

    cls = type("SecureBinlogd", (_TlsProbe, Binlogd), {"ca": certs.ca})
    server = cls.start(["--datadir", str(tmp_path / "data"), *tls_args(certs), "--require-secure-transport"],
                       log_path=tmp_path / "binlogd.log")
    try:
        yield server
    finally:
        server.stop()


def _clear_login_error(server: Any) -> tuple[int, str]:
    with pytest.raises(pymysql.err.OperationalError) as ei:
        server.connect(ssl=None, ssl_disabled=True, connect_timeout=TIMEOUT).close()
    return int(ei.value.args[0]), str(ei.value.args[1])


def test_require_secure_transport_as_mariadb(secure_server: Any, mariadb: Any, certs: Certs) -> None:
    """Clear-text root login: 1045 and the access-denied text on both (MariaDB names the host by its resolved name,
    binlogd by its address, as for every 1045); a TLS login works on both."""
    real = mariadb("secure", 1, *[f"--{a[2:]}={v}" for a, v in zip(tls_args(certs)[::2], tls_args(certs)[1::2],
                                                                     strict=True)])
    real.query("SET GLOBAL require_secure_transport=ON")
    real_code, real_text = _clear_login_error(real)
    ours_code, ours_text = _clear_login_error(secure_server)
    assert (real_code, real_text) == (1045, "Access denied for user 'root'@'localhost' (using password: NO)")
    assert (ours_code, ours_text) == (1045, "Access denied for user 'root'@'127.0.0.1' (using password: NO)")
    with real.connect(ssl={"ca": str(certs.ca)}, ssl_disabled=False) as conn:
        assert session_status(conn, "Ssl_version") == "TLSv1.3"
    with secure_server.connect() as conn:
        assert session_status(conn, "Ssl_version") == "TLSv1.3"


# ---- bad input ---------------------------------------------------------------------------------------------------

CLIENT_PROTOCOL_41, CLIENT_SSL, CLIENT_SECURE_CONNECTION = 0x200, 0x800, 0x8000


def _ssl_request(sock: socket.socket) -> None:
    """Read the server's greeting and send a 32-byte SSLRequest (sequence 1)."""
    head = _recv_exact(sock, 4)
    _recv_exact(sock, int.from_bytes(head[:3], "little"))
    payload = struct.pack("<IIB23x", CLIENT_PROTOCOL_41 | CLIENT_SSL | CLIENT_SECURE_CONNECTION, 1 << 24, 45)
    sock.sendall(len(payload).to_bytes(3, "little") + b"\x01" + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


def test_garbage_instead_of_tls_hello_closes_only_that_connection(tls_server: Any, certs: Certs) -> None:
    stalled = socket.create_connection((tls_server.host, tls_server.port), timeout=TIMEOUT)
    _ssl_request(stalled)  # ... and then nothing: its TLS handshake waits, nobody else does
    garbage = socket.create_connection((tls_server.host, tls_server.port), timeout=TIMEOUT)
    _ssl_request(garbage)
    garbage.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)) * 4)
    assert _closed_within(garbage, 5), "binlogd kept a connection whose TLS hello was garbage"
    t0 = time.monotonic()
    with tls_connect(tls_server, certs.ca) as conn:
        assert session_status(conn, "Ssl_version") == "TLSv1.3"
    with tls_server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT 6 * 7")
        assert cur.fetchall() == ((42,),)
    assert time.monotonic() - t0 < 8  # not held up by the stalled hello (it waits 10 s before it is closed)
    assert _closed_within(stalled, 15), "a stalled TLS hello was kept past the handshake timeout"
    garbage.close()
    stalled.close()
    log = tls_server.log_text()
    assert "TLS handshake failed" in log and "Traceback" not in log


def test_ssl_request_without_tls_configured_is_bad_handshake(binlogd_factory: Any) -> None:
    server = binlogd_factory.standalone()
    with socket.create_connection((server.host, server.port), timeout=TIMEOUT) as sock:
        _ssl_request(sock)
        head = _recv_exact(sock, 4)
        body = _recv_exact(sock, int.from_bytes(head[:3], "little"))
    assert body[0] == 0xFF and int.from_bytes(body[1:3], "little") == 1043, body
    assert server.query("SELECT 1") == [(1,)]


# ---- start-up refusals -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["missing cert", "missing key", "mismatched key", "not pem", "missing ca",
                                  "key without cert", "require without cert"])
def test_bad_tls_files_refuse_start_and_write_nothing(case: str, certs: Certs, tmp_path: Path) -> None:
    datadir = tmp_path / "data"
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    args, needles = {
        "missing cert": (["--ssl-cert", str(tmp_path / "nope.pem"), "--ssl-key", str(certs.key)],
                         ["--ssl-cert", "nope.pem", "No such file"]),
        "missing key": (["--ssl-cert", str(certs.cert), "--ssl-key", str(tmp_path / "nokey.pem")],
                        ["--ssl-key", "nokey.pem", "No such file"]),
        "mismatched key": (["--ssl-cert", str(certs.cert), "--ssl-key", str(certs.other_key)],
                           ["--ssl-key", "does not match", "server.pem"]),
        "not pem": (["--ssl-cert", str(junk), "--ssl-key", str(certs.key)], ["--ssl-cert", "junk.pem", "PEM"]),
        "missing ca": ([*tls_args(certs)[:4], "--ssl-ca", str(tmp_path / "noca.pem")], ["--ssl-ca", "noca.pem"]),
        "key without cert": (["--ssl-key", str(certs.key)], ["--ssl-key without --ssl-cert"]),
        "require without cert": (["--require-secure-transport"], ["--require-secure-transport without --ssl-cert"]),
    }[case]
    res = run_cli("serve", "--datadir", str(datadir), "--port", "0", *args)
    refused(res, *needles)
    assert not datadir.exists()
