"""The standalone primary's lean per-statement path, against a real binlogd: pipelined COM_QUERYs taken from the
buffer (server/command_io.py) on both event loops, bad framing inside a pipelined burst still answered as before,
and sync_binlog 0 appends on the event loop handing over to the writer thread at rotations without losing or
reordering a group (server/standalone/source.py)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from binlogd.protocol.binlog_file import scan
from binlogd.protocol.constants import GTID_EVENT, QUERY_EVENT
from binlogd.protocol.events import parse_event
from binlogd.server import event_loop

from tests.standalone_client import TIMEOUT, connect, packet, read_packet, start, with_table


def logged(datadir: Path) -> list[tuple[int, Any]]:
    """(type code, body) of every GTID and QUERY event in the binlog files, in index order."""
    out = []
    for name in (datadir / "mysql-bin.index").read_text().split():
        data = (datadir / Path(name).name).read_bytes()
        for ev in scan(data).events:
            if ev.type_code in (GTID_EVENT, QUERY_EVENT):
                out.append((ev.type_code, parse_event(data[ev.pos : ev.end], 1).body))
    return out


def inserts(datadir: Path) -> list[str]:
    return [b.query.decode() for t, b in logged(datadir) if t == QUERY_EVENT and b.query.startswith(b"INSERT")]


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_pipelined_statements_get_their_oks_in_order(binlogd: Any, tmp_path: Path, loop: str) -> None:
    """Five INSERTs in one TCP segment: the first is read through the timed stream, the other four come from the
    buffer; each gets one OK with sequence id 1, and the binlog holds them once each, in order."""
    server = start(binlogd, tmp_path / "data", "--event-loop", loop)
    assert f"event loop: {loop}" in server.log_text()
    conn = with_table(server)
    sqls = [f"INSERT INTO d.t VALUES ({i})" for i in range(5)]
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    sock.sendall(b"".join(packet(b"\x03" + s.encode()) for s in sqls))
    answers = [read_packet(sock) for _ in sqls]
    assert all(seq == 1 and payload[0] == 0 for seq, payload in answers), answers
    with conn.cursor() as cur:  # the session goes on as usual afterwards
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)
    conn.close()
    assert inserts(tmp_path / "data") == sqls


def test_bad_framing_inside_a_burst_is_answered_as_before(binlogd: Any, tmp_path: Path) -> None:
    """A good INSERT followed, in the same segment, by a packet with a wrong sequence id: the INSERT is logged and
    answered, the bad packet gets MariaDB's 1156 and the connection ends; nothing else is logged."""
    server = start(binlogd, tmp_path / "data")
    conn = with_table(server)
    sock: socket.socket = conn._sock  # type: ignore[attr-defined]
    sock.sendall(packet(b"\x03INSERT INTO d.t VALUES (1)") + packet(b"\x03INSERT INTO d.t VALUES (2)", seq=5))
    seq, ok = read_packet(sock)
    assert (seq, ok[0]) == (1, 0)
    _, err = read_packet(sock)
    assert err[0] == 0xFF and int.from_bytes(err[1:3], "little") == 1156, err
    sock.settimeout(TIMEOUT)
    assert sock.recv(1) == b""  # closed by the server
    conn2 = connect(server)  # the server serves on
    with conn2.cursor() as cur:
        cur.execute("INSERT INTO d.t VALUES (3)")
    conn2.close()
    assert inserts(tmp_path / "data") == ["INSERT INTO d.t VALUES (1)", "INSERT INTO d.t VALUES (3)"]


def test_sync0_appends_and_rotations_keep_every_group_in_gtid_order(binlogd: Any, tmp_path: Path) -> None:
    """4 concurrent writers, --max-binlog-size 4096: appends on the event loop and rotations in the writer thread
    alternate many times; every statement is logged once, GTID sequence numbers run 1..N without a gap across the
    files, and each file but the last ended at the size limit."""
    datadir = tmp_path / "data"
    server = start(binlogd, datadir, "--sync-binlog", "0", "--max-binlog-size", "4096")
    conn = with_table(server, "w INT, i INT")
    conn.close()
    errors: list[str] = []

    def work(w: int) -> None:
        try:
            c = connect(server, database="d")
            with c.cursor() as cur:
                for i in range(100):
                    cur.execute(f"INSERT INTO t VALUES ({w}, {i})")
            c.close()
        except Exception as e:  # reported below
            errors.append(f"writer {w}: {e!r}")

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    names = (datadir / "mysql-bin.index").read_text().split()
    assert len(names) > 10, names  # rotated many times
    seqs = [b.seq_no for t, b in logged(datadir) if t == GTID_EVENT]
    assert seqs == list(range(1, len(seqs) + 1))
    got = inserts(datadir)
    assert sorted(got) == sorted(f"INSERT INTO t VALUES ({w}, {i})" for w in range(4) for i in range(100))
    for w in range(4):  # each writer's statements in its own order
        mine = [s for s in got if s.startswith(f"INSERT INTO t VALUES ({w},")]
        assert mine == [f"INSERT INTO t VALUES ({w}, {i})" for i in range(100)]


def test_event_loop_choice() -> None:
    assert event_loop.resolve("asyncio") == "asyncio"
    assert event_loop.resolve(None) == event_loop.resolve("auto") == (
        "uvloop" if event_loop.uvloop_available() else "asyncio")
    with pytest.raises(ValueError, match="not one of"):
        event_loop.resolve("trio")
