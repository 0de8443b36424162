"""Helpers of the `binlogd show` tests (no tests here): run the real CLIs (`binlogd show`, `mariadb-binlog`, the
`mariadb` client) as a user would, read which GTIDs a server's binlog flags, copy a server's binlog files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from binlogd.protocol.constants import GTID_EVENT, LOG_EVENT_SKIP_REPLICATION_F
from binlogd.protocol.events import GtidBody, fde_checksum_alg, iter_binlog, parse_event

from tests.harness import MariaDB, find_binary

BINLOGD = str(Path(sys.executable).with_name("binlogd"))


def show(*args: str | Path, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """`binlogd show ARGS` as a subprocess (stdout and stderr captured)."""
    proc = subprocess.run([BINLOGD, "show", "--progress=off", *map(str, args)], capture_output=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"binlogd show {args} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")
    return proc


def mariadb_binlog(*args: str | Path, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """The real `mariadb-binlog --no-defaults ARGS`."""
    exe = find_binary("mariadb-binlog")
    assert exe is not None
    proc = subprocess.run([exe, "--no-defaults", *map(str, args)], capture_output=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"mariadb-binlog {args} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}")
    return proc


def replay(target: MariaDB, sql: bytes, timeout: float = 120) -> None:
    """Pipe text into the real `mariadb` client connected to `target` (what `... | mariadb` does)."""
    exe = find_binary("mariadb")
    assert exe is not None
    proc = subprocess.run([exe, "--no-defaults", "-h", target.host, "-P", str(target.port), "-uroot"],
                          input=sql, capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"mariadb client on {target.name} exited {proc.returncode}: "
                             f"{proc.stderr.decode(errors='replace')}")


def copy_binlogs(server: MariaDB, dest: Path) -> list[Path]:
    """The server's binlog files (SHOW BINARY LOGS order) copied into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for name, _size in server.binary_logs():
        shutil.copy(server.datadir / name, dest / name)
        out.append(dest / name)
    return out


def gtid_flags(files: Sequence[Path]) -> dict[str, bool]:
    """{GTID: whether its GTID event carries 0x8000} over binlog files."""
    out: dict[str, bool] = {}
    for path in files:
        data = path.read_bytes()
        alg = -1
        for _pos, raw in iter_binlog(data):
            if alg < 0:
                alg = fde_checksum_alg(raw)
                continue
            ev = parse_event(raw, alg)
            if ev.header.type_code == GTID_EVENT and isinstance(ev.body, GtidBody):
                gtid = f"{ev.body.domain_id}-{ev.header.server_id}-{ev.body.seq_no}"
                out[gtid] = bool(ev.header.flags & LOG_EVENT_SKIP_REPLICATION_F)
    return out


def server_binlogs(server: MariaDB) -> list[Path]:
    return [server.datadir / name for name, _ in server.binary_logs()]
