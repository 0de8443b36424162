"""Option files (binlogd/optionfiles.py): `binlogd serve` and `binlogd-apply` read MariaDB-style my.cnf files named
with --defaults-file / --defaults-extra-file; the real CLIs are run with them, and a binlogd started from one is
reached by the real mariadb client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pymysql
import pytest

from binlogd.testing import free_port, wait_until
from tests.harness import REPO_ROOT
from tests.harness.cli import run_cli

HEADER = "binlogd would have been started with the following arguments:\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def run_apply(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "binlogd.applier.cli", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_print_defaults_reads_groups_includes_quotes_and_comments(tmp_path: Path) -> None:
    conf = tmp_path / "conf.d"
    conf.mkdir()
    _write(conf / "20-ledger.cnf", "[binlogd]\nledger_max_size = 1M\n")
    _write(conf / "10-id.cnf", "[binlogd]\nserver-id=9\n[mysqld]\nserver-id=1\n")
    _write(conf / "ignored.txt", "[binlogd]\nnosuch=1\n")  # not *.cnf: not read
    _write(tmp_path / "extra.cnf", "[binlogd]\nport=3400\n")
    main = _write(tmp_path / "my.cnf", """\
# a comment
; another
[client]
user = someone
[binlogd]
port = 3399          # the command line wins over this
bind_address = "127.0.0.1"
compat='mariadb'
basename = "my bin \\"x\\""
loose-no-such-option = 1
binlog-with-tables-info
sync_binlog=0
!include sub/inc.cnf
!includedir conf.d
[BINLOGD]
gtid_domain_id = 3
""")
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub" / "inc.cnf", "[binlogd]\nmax-binlog-size=4M\n")
    r = run_cli("serve", f"--defaults-file={main}", "--defaults-extra-file", str(tmp_path / "extra.cnf"),
                "--print-defaults")
    assert r.returncode == 0, r.stderr
    assert r.stdout == HEADER + ("--port=3399 --bind-address=127.0.0.1 --compat=mariadb --basename=my bin \"x\" "
                                 "--binlog-with-tables-info --sync-binlog=0 --max-binlog-size=4M --server-id=9 "
                                 "--ledger-max-size=1M --gtid-domain-id=3 --port=3400\n")
    assert r.stderr == (f"binlogd: warning: {main}:10: unknown option 'loose-no-such-option' in [binlogd] ignored "
                        "(loose-)\n")
    r = run_cli("serve", "--no-defaults", f"--defaults-file={main}", "--print-defaults")
    assert (r.returncode, r.stdout) == (0, HEADER + "\n")


GROUP_FREE = ("before any [group]", "!include", "!exec")  # errors whatever the group: binlogd-apply has them too


@pytest.mark.parametrize(("text", "message"), [
    ("[binlogd]\nport=1\nnosuch = 2\n", "{f}:3: unknown option 'nosuch' in [binlogd]"),
    ("[binlogd]\n\nport=99999\n", "{f}:3: bad value '99999' for option 'port': must be a TCP port (0-65535)"),
    ("[binlogd]\ncompat=maria\n", "{f}:2: bad value 'maria' for option 'compat' (choose from binlogd, mariadb)"),
    ("[binlogd]\nmax_binlog_size=lots\n", "{f}:2: bad value 'lots' for option 'max_binlog_size': not a size: "
     "'lots' (examples: 1048576, 512K, 64M, 1G)"),
    ("[binlogd]\nserver-id\n", "{f}:2: option 'server-id' needs a value (server-id=VALUE)"),
    ("[binlogd]\nno-ledger=maybe\n", "{f}:2: option 'no-ledger' is a flag: give it bare or as no-ledger=1 / "
     "no-ledger=0, not 'maybe'"),
    ("port=1\n", "{f}:1: option 'port=1' before any [group] line"),
    ("[binlogd]\nbasename='unterminated\n", "{f}:2: unterminated quoted value"),
    ("[binlogd]\ndefaults-file=/etc/my.cnf\n", "{f}:2: unknown option 'defaults-file' in [binlogd]"),
    ("[binlogd]\n!include missing.cnf\n", "{f}:2: !include missing.cnf: no such file"),
    ("[binlogd]\n!includedir nodir\n", "{f}:2: !includedir nodir: not a directory"),
    ("[binlogd]\n!include my.cnf\n", "{f}:2: !include cycle: {f} -> {f}"),
    ("[binlogd]\n!exec rm\n", "{f}:2: unknown directive '!exec' (known: !include FILE, !includedir DIR)"),
])
def test_a_bad_option_file_fails_at_start_naming_file_line_and_option(tmp_path: Path, text: str,
                                                                       message: str) -> None:
    f = _write(tmp_path / "my.cnf", text)
    expected = message.format(f=f)
    r = run_cli("serve", f"--defaults-file={f}")
    assert (r.returncode, r.stderr) == (2, f"binlogd: {expected}\n")
    if any(k in expected for k in GROUP_FREE):
        r = run_apply(f"--defaults-file={f}")
        assert (r.returncode, r.stderr) == (2, f"binlogd-apply: {expected}\n")


def test_missing_file_and_misplaced_options(tmp_path: Path) -> None:
    r = run_cli("serve", f"--defaults-file={tmp_path / 'nope.cnf'}")
    assert (r.returncode, r.stderr) == (2, f"binlogd: --defaults-file: could not open required defaults file: "
                                           f"{tmp_path / 'nope.cnf'}\n")
    f = _write(tmp_path / "my.cnf", "[binlogd]\nport=3399\n")
    r = run_cli("serve", "--port", "3399", f"--defaults-file={f}")
    assert r.returncode == 2 and r.stderr == ("binlogd: --defaults-file, --defaults-extra-file, --no-defaults and "
                                              "--print-defaults come first, right after `serve` (as in MariaDB)\n")
    d = tmp_path / "d"
    d.mkdir()
    _write(d / "a.cnf", "[binlogd]\n!include ../b.cnf\n")
    _write(tmp_path / "b.cnf", "[binlogd]\n!includedir d\n")
    r = run_cli("serve", f"--defaults-file={d / 'a.cnf'}")
    assert r.returncode == 2 and "!include cycle: " in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_binlogd_apply_reads_its_own_group(tmp_path: Path) -> None:
    f = _write(tmp_path / "apply.cnf", """\
[binlogd]
port = 3399
[binlogd-apply]
target = mysql://root@127.0.0.1:3306
channel = a=mysql://root@127.0.0.1:3307
replicate_do_db = a:sales
replicate-events-marked-for-skip = FILTER_ON_SLAVE
""")
    r = run_apply(f"--defaults-file={f}", "--print-defaults")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("binlogd-apply would have been started with the following arguments:\n"
                        "--target=mysql://root@127.0.0.1:3306 --channel=a=mysql://root@127.0.0.1:3307 "
                        "--replicate-do-db=a:sales --replicate-events-marked-for-skip=FILTER_ON_SLAVE\n")
    bad = _write(tmp_path / "bad.cnf", "[binlogd-apply]\n# ids\nserver_id = many\n")
    r = run_apply(f"--defaults-file={bad}")
    assert (r.returncode, r.stderr) == (2, f"binlogd-apply: {bad}:3: bad value 'many' for option 'server_id': not an "
                                           "integer\n")
    bad = _write(tmp_path / "bad.cnf", "[binlogd-apply]\nreplicate-do-tabel = a.b\n")
    r = run_apply(f"--defaults-file={bad}")
    assert (r.returncode, r.stderr) == (2, f"binlogd-apply: {bad}:2: unknown option 'replicate-do-tabel' in "
                                           "[binlogd-apply]\n")


def test_binlogd_serve_started_from_an_option_file_serves_a_real_client(tmp_path: Path, mariadb_binaries: dict[
        str, str]) -> None:
    port = free_port()
    datadir = tmp_path / "data"
    f = _write(tmp_path / "binlogd.cnf", f"""\
[binlogd]
port = {port}
datadir = {datadir}
server_id = 5
expire_logs_days = 1.5
no_ledger
""")
    cmd = [sys.executable, "-m", "binlogd.server.cli", "serve", f"--defaults-file={f}", "--server-id", "6"]
    log = open(tmp_path / "binlogd.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        def ready() -> bool:
            try:
                pymysql.connect(host="127.0.0.1", port=port, user="root", password="").close()
                return True
            except pymysql.MySQLError:
                assert proc.poll() is None, (tmp_path / "binlogd.log").read_text()
                return False

        wait_until(ready, 30, 0.1, "binlogd started from an option file")
        mariadb = os.path.join(os.path.dirname(mariadb_binaries["mariadbd"]).replace("/sbin", "/bin"), "mariadb")
        client = mariadb if os.path.exists(mariadb) else "mariadb"
        out = subprocess.run([client, "-h127.0.0.1", f"-P{port}", "-uroot", "--batch", "--skip-column-names", "-e",
                              "CREATE DATABASE shop; SELECT @@server_id, @@binlog_expire_logs_seconds; "
                              "SHOW VARIABLES LIKE 'expire_logs_days'; SHOW BINARY LOGS"],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == "6\t129600"  # the command line's server id wins over the file's
        assert lines[1] == "expire_logs_days\t1.500000"
        assert lines[2].startswith("mysql-bin.000001\t")
        assert (datadir / "mysql-bin.000001").exists() and not (datadir / "ledger").exists()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
    assert proc.returncode == 0
