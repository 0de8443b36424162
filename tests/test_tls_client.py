"""TLS on binlogd's outgoing links against a real MariaDB 10.11 started with TLS: the relay's upstream and the
applier's channel and target, each by an account with REQUIRE SSL (so clear text is refused with 1045 and only
the TLS path can work), with certificate verification (`?ssl-ca=...&ssl-verify=1`); a CA that did not sign the
server's certificate fails with 2026, as a 10.11 replica's IO thread does.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.harness.applier import running_applier
from tests.test_relay import relay_status, wait_relay_caught_up
from tests.tlsca import Certs, make_certs

PW = "tls-pw"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def tls_primary(mariadb: Any, certs: Certs) -> Any:
    """A 10.11 primary offering TLS whose account `sec` must use it (REQUIRE SSL)."""
    m = mariadb("tlsprimary", 1, "--log-bin=mysql-bin", "--binlog-format=ROW", f"--ssl-cert={certs.cert}",
                f"--ssl-key={certs.key}", f"--ssl-ca={certs.ca}")
    m.execute(f"SET sql_log_bin=0; CREATE USER sec@'%' IDENTIFIED BY '{PW}' REQUIRE SSL; GRANT ALL ON *.* TO "
              "sec@'%'; SET sql_log_bin=1; CREATE DATABASE d;"
              "CREATE TABLE d.t (a INT PRIMARY KEY, b VARCHAR(10)) ENGINE=InnoDB;"
              "INSERT INTO d.t VALUES (1, 'one'), (2, 'two')")
    return m


def _pwfile(tmp_path: Path) -> Path:
    p = tmp_path / "pw"
    p.write_text(PW + "\n")
    return p


def _relay(binlogd_factory: Any, primary: Any, tmp_path: Path, query: str) -> Any:
    url = f"mysql://sec@127.0.0.1:{primary.port}" + (f"?{query}" if query else "")
    return binlogd_factory(["--upstream", url, "--upstream-password-file", str(_pwfile(tmp_path)),
                            "--datadir", str(tmp_path / "relay"), "--server-id", "11", "--upstream-retry-max", "1"])


def _wait_io_error(server: Any, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = relay_status(server)
        if int(st.get("Last_IO_Errno") or 0):
            return st
        time.sleep(0.1)
    raise AssertionError(f"no IO error: {relay_status(server)}")


def test_relay_upstream_requiring_tls(binlogd_factory: Any, tls_primary: Any, certs: Certs, tmp_path: Path) -> None:
    relay = _relay(binlogd_factory, tls_primary, tmp_path, f"ssl-ca={certs.ca}&ssl-verify=1")
    wait_relay_caught_up(relay, tls_primary)
    tls_primary.query("INSERT INTO d.t VALUES (3, 'three')")
    wait_relay_caught_up(relay, tls_primary)
    st = relay_status(relay)
    assert st["Slave_IO_Running"] == "Yes" and int(st["Last_IO_Errno"]) == 0
    ssl = {k: st[k] for k in ("Master_SSL_Allowed", "Master_SSL_CA_File", "Master_SSL_Verify_Server_Cert")}
    assert ssl == {"Master_SSL_Allowed": "Yes", "Master_SSL_CA_File": str(certs.ca),
                   "Master_SSL_Verify_Server_Cert": "Yes"}  # as a 10.11 replica with MASTER_SSL_CA shows it
    for name, _ in tls_primary.binary_logs():  # stored byte for byte (only the FDE in-use flag may differ)
        ours, theirs = (tmp_path / "relay" / name).read_bytes(), (tls_primary.datadir / name).read_bytes()
        assert len(ours) == len(theirs) and ours[100:] == theirs[100:]


@pytest.mark.parametrize("query,errno,text", [
    ("", 1045, "Access denied for user 'sec'@'localhost' (using password: YES)"),
    ("ssl-ca={other}&ssl-verify=1", 2026, "SSL connection error"),
], ids=["clear-text", "other-ca"])
def test_relay_upstream_tls_refusals(binlogd_factory: Any, tls_primary: Any, certs: Certs, tmp_path: Path,
                                     query: str, errno: int, text: str) -> None:
    relay = _relay(binlogd_factory, tls_primary, tmp_path, query.format(other=certs.other_ca))
    st = _wait_io_error(relay)
    assert int(st["Last_IO_Errno"]) == errno and text in st["Last_IO_Error"], st
    with relay.connect() as conn, conn.cursor() as cur:  # binlogd itself serves on
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)


def test_relay_tls_url_errors_at_start(certs: Certs, tmp_path: Path) -> None:
    from tests.harness.cli import run_cli

    for query, needle in ((f"ssl-ca={tmp_path}/nope.pem", "No such file"), ("ssl-verify=maybe", "expected 1 or 0"),
                          ("sslca=x", "unknown URL parameter 'sslca'"), (f"ssl-key={certs.key}", "without ssl-cert")):
        res = run_cli("serve", "--upstream", f"mysql://r:secret@127.0.0.1:1?{query}", "--datadir", str(tmp_path / "d"))
        assert res.returncode == 2 and needle in res.stderr and "secret" not in res.stderr, res.stderr
    assert not (tmp_path / "d").exists()


def test_applier_channel_and_target_over_tls(mariadb: Any, tls_primary: Any, certs: Certs, tmp_path: Path) -> None:
    target = mariadb("tlstarget", 3, f"--ssl-cert={certs.cert}", f"--ssl-key={certs.key}", f"--ssl-ca={certs.ca}")
    target.execute(f"CREATE USER sec@'%' IDENTIFIED BY '{PW}' REQUIRE SSL; GRANT ALL ON *.* TO sec@'%'")
    pw = _pwfile(tmp_path)
    tls = f"ssl-ca={certs.ca}&ssl-verify=1"
    args = [f"--target=mysql://sec@127.0.0.1:{target.port}?password_file={pw}&{tls}",
            f"--channel==mysql://sec@127.0.0.1:{tls_primary.port}?password_file={pw}&{tls}&gtid=no"]
    with running_applier(args, tmp_path / "applier.log") as proc:
        target.wait_until(lambda: target.query("SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                                               "TABLE_SCHEMA='d' AND TABLE_NAME='t'") == [(1,)]
                          and target.query("SELECT COUNT(*) FROM d.t") == [(2,)], timeout=60,
                          message=lambda: f"applier log:\n{proc.log()[-3000:]}")
        assert target.query("SELECT a, b FROM d.t ORDER BY a") == [(1, "one"), (2, "two")]
        assert "Traceback" not in proc.log()


# ---- client_ed25519 ---------------------------------------------------------------------------------------------


def test_ed25519_signature_rfc8032_vector() -> None:
    from binlogd.protocol.ed25519 import public_key, sign

    seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    assert public_key(seed).hex() == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    assert sign(seed, b"").hex() == ("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33"
                                     "bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")


def test_client_ed25519_against_real_mariadb(mariadb: Any, certs: Certs) -> None:
    """An account IDENTIFIED VIA ed25519 on a real 10.11 (auth_ed25519 plugin): the replication client logs in
    (clear text and over verified TLS) and dumps; MariaDB stores the public key our arithmetic derives; a wrong
    password is 1045."""
    import asyncio
    import base64

    from binlogd.protocol.connection import ClientConfig, ReplicationClient, ReplicationError
    from binlogd.protocol.ed25519 import public_key
    from binlogd.protocol.tls_options import TlsOptions

    m = mariadb("ed", 1, "--log-bin=mysql-bin", "--plugin-load-add=auth_ed25519", f"--ssl-cert={certs.cert}",
                f"--ssl-key={certs.key}")
    m.execute("CREATE USER ed@'%' IDENTIFIED VIA ed25519 USING PASSWORD('s3cret ed');"
              "GRANT REPLICATION SLAVE ON *.* TO ed@'%'; CREATE DATABASE shop")
    stored = m.query("SELECT authentication_string FROM mysql.user WHERE user = 'ed'")[0][0]
    assert stored == base64.b64encode(public_key(b"s3cret ed")).decode().rstrip("=")

    async def first_events(password: str, tls: TlsOptions | None) -> list[bytes]:
        cfg = ClientConfig(host=m.host, port=m.port, server_id=77, user="ed", password=password, tls=tls)
        async with await ReplicationClient.connect(cfg) as client:
            await client.start_dump("mysql-bin.000001", 4, non_blocking=True)
            return [e async for e in client.events()]

    for tls in (None, TlsOptions(ca=str(certs.ca), verify=True)):
        evs = asyncio.run(first_events("s3cret ed", tls))
        assert any(b"CREATE DATABASE shop" in e for e in evs)
    with pytest.raises(ReplicationError) as ei:
        asyncio.run(first_events("wrong", None))
    assert ei.value.code == 1045 and "Access denied for user 'ed'" in ei.value.message


def test_binlogd_serves_ed25519_accounts(binlogd_factory: Any, mariadb: Any, tmp_path: Path) -> None:
    """An ed25519 account in binlogd's users file (the public key a real 10.11 stores for the same password): a
    real replica, the mariadb CLI (its client_ed25519 plugin) and binlogd's own client log in; a wrong password is
    1045 with the text a real 10.11 gives for its own ed25519 account."""
    import subprocess

    from binlogd.protocol.accounts import ed25519_string

    from binlogd.testing.mariadb import find_binary

    real = mariadb("edref", 1, "--plugin-load-add=auth_ed25519")
    real.execute("CREATE USER ed@'%' IDENTIFIED VIA ed25519 USING PASSWORD('ed pw')")
    stored = real.query("SELECT authentication_string FROM mysql.user WHERE user = 'ed'")[0][0]
    assert ed25519_string("ed pw") == f"ed25519:{stored}"
    users = tmp_path / "users"
    users.write_text(f"root@localhost:''\ned:{ed25519_string('ed pw')} GRANT REPLICATION SLAVE, BINLOG MONITOR\n")
    server = binlogd_factory.standalone(["--users", str(users)])
    server.execute("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY); INSERT INTO shop.t VALUES (5)")

    def cli(target: Any, password: str) -> subprocess.CompletedProcess[str]:
        binary = find_binary("mariadb")
        assert binary is not None
        return subprocess.run([binary, "--no-defaults", "-h127.0.0.1", f"-P{target.port}", "-ued", f"-p{password}",
                               "-N", "-e", "SELECT CURRENT_USER()"], capture_output=True, text=True, timeout=30)

    ok = cli(server, "ed pw")
    assert ok.returncode == 0, ok.stderr
    bad, bad_real = cli(server, "nope"), cli(real, "nope")
    assert bad.returncode != 0 and "ERROR 1045" in bad.stderr
    assert bad.stderr.replace("'@'127.0.0.1'", "'@'localhost'").split(" (28000)")[-1] == \
        bad_real.stderr.split(" (28000)")[-1]
    # the server package's plugin directory lacks the client side; the client library's has it
    client_plugin = next(Path("/usr/lib").rglob("client_ed25519.so"))
    r = mariadb("edreplica", 2, f"--plugin-dir={client_plugin.parent}")
    r.change_master(server.host, server.port, user="ed", password="ed pw")
    r.master = server
    r.start_slave()
    r.wait_caught_up(timeout=30)
    assert r.query("SHOW TABLES FROM shop") == [("t",)]


    import asyncio

    from binlogd.protocol.connection import ClientConfig, ReplicationClient

    async def own_client() -> list[bytes]:
        cfg = ClientConfig(host=server.host, port=server.port, server_id=78, user="ed", password="ed pw")
        async with await ReplicationClient.connect(cfg) as client:
            await client.start_dump("mysql-bin.000001", 4, non_blocking=True)
            return [e async for e in client.events()]

    assert any(b"INSERT INTO shop.t VALUES (5)" in e for e in asyncio.run(own_client()))
