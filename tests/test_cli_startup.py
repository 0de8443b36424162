"""`binlogd` start-up: refusals write nothing, one binlogd per datadir, help texts, passwords kept out of argv.

A refused start (port in use, datadir locked, bad options, unreadable files) must exit 2 with one line on stderr
and leave the datadir exactly as it was (names, sizes, mtimes) or not create it at all. Relay passwords come from
--upstream-password-file or $BINLOGD_UPSTREAM_PASSWORD and must then appear nowhere: not in
/proc/PID/cmdline, the log, or SHOW SLAVE STATUS.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from binlogd.server.cli import build_parser
from binlogd.server.demo import write_demo_dir

from tests.harness import MariaDB
from tests.harness.cli import run_cli
from tests.test_relay import relay_master_status, relay_status, wait_relay_caught_up

PASSWORD = "pw-S3cr#t:@/ ü"  # characters a URL would need escaped, and a '#' a users file could not hold


def refused(res: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit status 2 and exactly one line on stderr holding every needle; returns that line."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("binlogd: "), res.stderr
    for n in needles:
        assert n in lines[0], f"{n!r} not in {lines[0]!r}"
    return lines[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def snapshot(d: Path) -> dict[str, tuple[int, int]]:
    """Every entry below `d` (and `d` itself) -> (size, mtime_ns): a refused start must change none of them."""
    out = {".": (0, d.stat().st_mtime_ns)}
    for p in sorted(d.rglob("*")):
        st = p.stat()
        out[str(p.relative_to(d))] = (st.st_size if p.is_file() else 0, st.st_mtime_ns)
    return out


@pytest.fixture
def binlog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of real binlog files (the demo session) to serve read-only."""
    d = tmp_path_factory.mktemp("binlogs")
    write_demo_dir(d)
    return d


# ---- help ---------------------------------------------------------------------------------------------------


def test_bare_binlogd_prints_the_full_help_and_exits_0() -> None:
    res = run_cli()
    assert res.returncode == 0 and res.stderr == "", res
    out = res.stdout
    assert out.startswith("usage: binlogd")
    for mode, example in (("standalone (default)", "binlogd serve --datadir ./var"),
                          ("relay", "binlogd serve --upstream mysql://repl@10.0.0.5:3306"),
                          ("directory", "binlogd serve --binlog-dir /var/lib/mysql-binlogs")):
        assert f"\n  {mode} " in out, mode
        assert example in out, example
    # a command line with options but no command is still a usage error
    res = run_cli("--log-level", "DEBUG")
    assert res.returncode == 2 and "required: COMMAND" in res.stderr, res


def test_serve_help_groups_options_by_mode_and_shows_defaults() -> None:
    res = run_cli("serve", "--help")
    assert res.returncode == 0, res
    titles = ["common options (every mode):", "standalone mode (the default: neither --upstream nor --binlog-dir):",
              "relay mode (--upstream):", "directory mode (--binlog-dir):", "audit ledger (every mode):"]
    where = [res.stdout.find(f"\n{t}\n") for t in titles]
    assert all(w > 0 for w in where) and where == sorted(where), where
    sections = dict(zip(titles, [res.stdout[a:b] for a, b in zip(where, [*where[1:], len(res.stdout)], strict=True)],
                        strict=True))
    for title, options in ((titles[0], ["--port", "--bind-address", "--server-id", "--users", "--compat"]),
                           (titles[1], ["--datadir", "--max-binlog-size", "--sync-binlog",
                                        "--binlog-with-tables-info"]),
                           (titles[2], ["--upstream ", "--upstream-password-file", "--upstream-heartbeat",
                                        "--upstream-retry-max", "--upstream-use-gtid"]),
                           (titles[3], ["--binlog-dir"]),
                           (titles[4], ["--ledger ", "--no-ledger", "--ledger-max-size"])):
        for opt in options:
            assert f"\n  {opt}" in sections[title], (opt, title)
    assert "BINLOGD_UPSTREAM_PASSWORD" in sections[titles[2]]
    # every option with a default says what it is
    serve = build_parser()._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    for action in serve._actions:
        if action.help and action.help != "show this help message and exit" and action.option_strings[0] not in (
                "--upstream", "--upstream-password-file", "--binlog-dir", "--no-ledger"):
            assert "default" in action.help, action.option_strings


# ---- refusals that write nothing ----------------------------------------------------------------------------


def test_second_binlogd_on_the_same_port_or_datadir_is_refused_and_writes_nothing(binlogd: Any,
                                                                                  harness_dir: Path) -> None:
    datadir = harness_dir / "d"
    first = binlogd(["--datadir", str(datadir), "--server-id", "7"])
    conn = first.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE s")
    conn.close()
    files = relay_master_status(first)
    before = snapshot(datadir)
    assert {"binlogd.lock", "mysql-bin.000001", "mysql-bin.index", "ledger"} <= set(before)

    # same port, same datadir
    refused(run_cli("serve", "--datadir", str(datadir), "--port", str(first.port)),
            f"cannot listen on 127.0.0.1:{first.port}: Address already in use")
    assert snapshot(datadir) == before
    # same port, a fresh datadir: not even created
    fresh = harness_dir / "fresh"
    refused(run_cli("serve", "--datadir", str(fresh), "--port", str(first.port)), "Address already in use")
    assert not fresh.exists()
    # another port, same datadir: the lock names the first process
    refused(run_cli("serve", "--datadir", str(datadir), "--port", str(free_port())),
            f"datadir {datadir} is in use by another binlogd (pid {first.pid}", "binlogd.lock")
    assert snapshot(datadir) == before
    # relay mode on the same datadir: the same lock
    refused(run_cli("serve", "--upstream", "mysql://root@127.0.0.1:1", "--datadir", str(datadir),
                    "--port", str(free_port())), f"(pid {first.pid}")
    assert snapshot(datadir) == before
    assert relay_master_status(first) == files  # the first one still serves, unchanged

    # the lock dies with its process: after kill -9 a new binlogd takes the datadir over
    first.kill9()
    second = binlogd(["--datadir", str(datadir), "--server-id", "7"])
    assert (datadir / "binlogd.lock").read_text() == f"{second.pid}\n"
    assert relay_master_status(second) is not None


def test_a_ledger_directory_is_written_by_one_binlogd(binlogd: Any, harness_dir: Path, binlog_dir: Path) -> None:
    ledger = harness_dir / "ledger"
    first = binlogd(["--binlog-dir", str(binlog_dir), "--ledger", str(ledger)])
    before = snapshot(ledger)
    refused(run_cli("serve", "--binlog-dir", str(binlog_dir), "--ledger", str(ledger), "--port", str(free_port())),
            f"ledger directory {ledger} is in use by another binlogd (pid {first.pid}")
    assert snapshot(ledger) == before
    assert not (binlog_dir / "binlogd.lock").exists()  # a served directory is only read


@pytest.mark.parametrize("case", [
    "users_missing", "users_bad_line", "datadir_is_a_file", "ledger_under_a_file", "bad_bind_address",
    "basename_with_slash", "relay_option_in_standalone", "standalone_option_in_relay", "sync_binlog_with_dir",
    "ledger_size_without_ledger", "password_file_missing", "password_file_is_a_directory", "password_file_empty",
    "password_twice", "bad_upstream_url", "row_metadata_in_standalone",
])
def test_bad_start_conditions_are_one_line_and_write_nothing(case: str, tmp_path: Path, binlog_dir: Path) -> None:
    datadir = tmp_path / "data"
    afile = tmp_path / "afile"
    afile.write_text("x")
    empty = tmp_path / "empty-pw"
    empty.write_text("\n")
    upstream = ["--upstream", "mysql://repl@127.0.0.1:1"]
    args, needles = {
        "users_missing": (["--users", str(tmp_path / "nope")], [str(tmp_path / "nope")]),
        "users_bad_line": (["--users", str(afile)], [f"{afile}:1"]),
        "datadir_is_a_file": (["--datadir", str(afile)], [f"datadir {afile} is not a directory"]),
        "ledger_under_a_file": (["--ledger", str(afile / "l")], [f"cannot create ledger directory {afile / 'l'}"]),
        "bad_bind_address": (["--bind-address", "no-such-host.invalid"], ["cannot listen on no-such-host.invalid"]),
        "basename_with_slash": (["--basename", "a/b"], ["--basename", "'a/b' is not a file name"]),
        "relay_option_in_standalone": (["--upstream-use-gtid"], ["--upstream-use-gtid is for relay mode"]),
        "standalone_option_in_relay": ([*upstream, "--max-binlog-size", "8K"],
                                       ["--max-binlog-size is for the standalone primary"]),
        "sync_binlog_with_dir": (["--sync-binlog", "1", "--binlog-dir", str(binlog_dir)],
                                 ["--sync-binlog is for the modes that write"]),
        "ledger_size_without_ledger": (["--no-ledger", "--ledger-max-size", "2M"], ["--ledger-max-size"]),
        "password_file_missing": ([*upstream, "--upstream-password-file", str(tmp_path / "nope")],
                                  [f"--upstream-password-file {tmp_path / 'nope'}: cannot read it: No such file"]),
        "password_file_is_a_directory": ([*upstream, "--upstream-password-file", str(tmp_path)],
                                         ["cannot read it: Is a directory"]),
        "password_file_empty": ([*upstream, "--upstream-password-file", str(empty)], ["the first line is empty"]),
        "password_twice": (["--upstream", f"mysql://repl:{quote(PASSWORD, safe='')}@127.0.0.1:1",
                            "--upstream-password-file", str(afile)], ["given twice"]),
        "bad_upstream_url": (["--upstream", "mysql://repl:hunter2@127.0.0.1:99999"], ["bad port"]),
        "row_metadata_in_standalone": (["--binlog-row-metadata", "FULL"], ["--binlog-row-metadata is for the modes"]),
    }[case]
    if "--binlog-dir" not in args and "--datadir" not in args:
        args = [*args, "--datadir", str(datadir)]
    res = run_cli("serve", "--port", str(free_port()), *args)
    if case in ("basename_with_slash", "bad_upstream_url"):  # argparse's own two lines: usage + error
        assert res.returncode == 2 and "Traceback" not in res.stderr, res
        assert all(n in res.stderr for n in needles), res.stderr
    else:
        refused(res, *needles)
    assert "hunter2" not in res.stderr and PASSWORD not in res.stderr
    assert not datadir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "empty-pw"]


# ---- passwords out of argv ----------------------------------------------------------------------------------


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _relay(binlogd: Any, upstream: MariaDB, datadir: Path, url_password: str | None = None,
           extra: tuple[str, ...] = (), env: Mapping[str, str] | None = None) -> Any:
    """A relay binlogd registering with its own server_id (two with one id would make the upstream drop one)."""
    auth = "repl" if url_password is None else f"repl:{url_password}"
    return binlogd(["--upstream", f"mysql://{auth}@{upstream.host}:{upstream.port}", "--datadir", str(datadir),
                    "--server-id", str(100 + len(binlogd.servers)), "--upstream-heartbeat", "1",
                    "--upstream-retry-max", "0.5", *extra],
                   env=env)


def _assert_secret_nowhere(relay: Any) -> None:
    assert PASSWORD not in _cmdline(relay.pid)
    assert PASSWORD not in relay.log_text()
    assert all(PASSWORD not in str(v) for v in relay_status(relay).values())


def _wait_io(relay: Any, upstream: MariaDB, **expect: Any) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        st = relay_status(relay)
        return st if all(st.get(k) == v for k, v in expect.items()) else None

    return upstream.wait_until(check, timeout=30, interval=0.05, message=lambda: f"{expect} in {relay_status(relay)}")


def test_relay_password_from_a_file_or_the_environment(mariadb: Any, binlogd: Any, harness_dir: Path) -> None:
    upstream = mariadb.primary("upstream", 1)
    quoted = PASSWORD.replace("'", "''")
    upstream.execute(f"CREATE USER 'repl'@'%' IDENTIFIED BY '{quoted}'; GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%';"
                     "CREATE DATABASE p; CREATE TABLE p.t (id INT PRIMARY KEY); INSERT INTO p.t VALUES (1)")
    pwfile = harness_dir / "repl.pw"
    pwfile.write_text(f"{PASSWORD}\nsecond line ignored\n")

    # from the file: connects (repl has no empty password, so the file's is what got it in)
    by_file = _relay(binlogd, upstream, harness_dir / "d1", extra=("--upstream-password-file", str(pwfile)))
    _wait_io(by_file, upstream, Slave_IO_Running="Yes", Last_IO_Errno=0)
    wait_relay_caught_up(by_file, upstream)
    _assert_secret_nowhere(by_file)
    # from the environment
    by_env = _relay(binlogd, upstream, harness_dir / "d2", env={"BINLOGD_UPSTREAM_PASSWORD": PASSWORD})
    _wait_io(by_env, upstream, Slave_IO_Running="Yes", Last_IO_Errno=0)
    wait_relay_caught_up(by_env, upstream)
    _assert_secret_nowhere(by_env)
    assert "WARNING" not in by_file.log_text() + by_env.log_text()

    # a wrong password in the file is refused by the upstream like any wrong password (1045): the file is used
    wrong = harness_dir / "wrong.pw"
    wrong.write_text("not-it\r\n")
    by_wrong = _relay(binlogd, upstream, harness_dir / "d3", extra=("--upstream-password-file", str(wrong)))
    st = _wait_io(by_wrong, upstream, Last_IO_Errno=1045)
    assert "Access denied for user 'repl'" in st["Last_IO_Error"] and "not-it" not in str(st)

    # in the URL it still works, with a warning that ps shows it
    by_url = _relay(binlogd, upstream, harness_dir / "d4", url_password=quote(PASSWORD, safe=""))
    _wait_io(by_url, upstream, Slave_IO_Running="Yes", Last_IO_Errno=0)
    assert "WARNING" in by_url.log_text() and "ps and /proc/PID/cmdline show it" in by_url.log_text()
    assert PASSWORD not in by_url.log_text()
    assert all(PASSWORD not in str(v) for v in relay_status(by_url).values())
