"""The shared binlog writer: commit visibility, rotation, purge, crash recovery (server/binlog/writer.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from pathlib import Path

import pytest
from binlogd.protocol.binlog_file import scan, verify
from binlogd.protocol.constants import (
    BIN_LOG_HEADER_SIZE,
    FLAGS_OFFSET,
    GTID_EVENT,
    LOG_EVENT_BINLOG_IN_USE_F,
    ROTATE_EVENT,
)
from binlogd.protocol.groups import GroupTracker, last_group_end
from binlogd.protocol.gtid import Gtid, peek_gtid
from binlogd.server.binlog.store import BinlogStore, DirectoryWatcher
from binlogd.server.binlog.writer import BinlogWriteError, BinlogWriter
from binlogd.server.demo import demo_files

DEMO = demo_files()
NAMES = sorted(n for n in DEMO if not n.endswith(".index"))


def groups_of(data: bytes) -> tuple[bytes, list[bytes]]:
    """(FDE, [each group's bytes]) of a whole file image, split by the test's own walk over event lengths."""
    res = scan(data)
    fde = res.events[0]
    tracker = GroupTracker()
    groups, start = [], fde.end
    for ev in res.events[1:]:
        if tracker.feed(data, ev.pos, ev.end):
            groups.append(data[start : ev.end])
            start = ev.end
    assert start == len(data), "demo files end on a group boundary"
    return data[BIN_LOG_HEADER_SIZE : fde.end], groups


def write_demo(w: BinlogWriter) -> None:
    for name in NAMES:
        fde, groups = groups_of(DEMO[name])
        w.start_file(name, fde)
        for g in groups:
            w.write(g)
            w.commit()


def in_use(path: Path) -> bool:
    return bool(path.read_bytes()[BIN_LOG_HEADER_SIZE + FLAGS_OFFSET] & LOG_EVENT_BINLOG_IN_USE_F)


def test_files_are_byte_identical_to_the_source_and_flag_cleared_on_close(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    assert w.recover().file is None
    write_demo(w)
    assert not in_use(tmp_path / NAMES[0]), "rotation closes the previous file"
    assert in_use(tmp_path / NAMES[-1]), "the active file carries the in-use flag"
    w.close()
    for name in NAMES:
        assert (tmp_path / name).read_bytes() == DEMO[name]
        assert verify((tmp_path / name).read_bytes()).crc_failures == []
    assert (tmp_path / "mysql-bin.index").read_text() == "".join(f"./{n}\n" for n in NAMES)


def test_mariadb_binlog_reads_the_files(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    write_demo(w)
    out = subprocess.run(["mariadb-binlog", str(tmp_path / NAMES[-1])], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "End of log file" in out.stdout


def test_uncommitted_bytes_are_invisible_and_discard_drops_them(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    fde, groups = groups_of(DEMO[NAMES[0]])
    w.start_file(NAMES[0], fde)
    base = w.end
    assert w.store.end_of(NAMES[0]) == base
    w.write(groups[0][:10])
    assert w.store.end_of(NAMES[0]) == base, "half a group is not readable"
    assert w.store.published_end(NAMES[0]) == base  # where dump streams stop reading the active file
    w.discard()
    assert os.path.getsize(tmp_path / NAMES[0]) == base
    w.write(groups[0])
    w.commit()
    assert w.store.end_of(NAMES[0]) == base + len(groups[0])


async def test_commit_from_a_thread_wakes_waiting_dumps(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    w.store.bind_loop(asyncio.get_running_loop())
    fde, groups = groups_of(DEMO[NAMES[0]])
    await asyncio.to_thread(w.start_file, NAMES[0], fde)
    v = w.store.version
    waiter = asyncio.create_task(w.store.wait_change(v, 30))
    await asyncio.sleep(0)

    def append() -> None:
        w.write(groups[0])
        w.commit()

    threading.Thread(target=append).start()
    assert await asyncio.wait_for(waiter, 10) != v


def test_recovery_truncates_torn_event_and_unfinished_group(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    write_demo(w)
    last = tmp_path / NAMES[-1]
    whole = last.read_bytes()
    # a crash in the middle of a transaction: its GTID and first events were written, the rest was not
    _, groups = groups_of(DEMO[NAMES[0]])
    txn = next(g for g in groups if g[4] == GTID_EVENT and not g[19 + 12] & 1)
    partial = txn[: len(txn) - 7]
    with open(last, "ab") as f:
        f.write(partial)
    del w  # kill -9: no close
    w2 = BinlogWriter(tmp_path, "mysql-bin")
    rep = w2.recover()
    assert rep.file == NAMES[-1]
    assert rep.truncated_from == len(whole) and rep.truncated_bytes == len(partial)
    assert last.read_bytes()[len(whole) :] == b""
    # the state is the last whole group's GTID, computed here from the file by the test's own walk
    gtids = [peek_gtid(whole, e.pos)[:3] for e in scan(whole).events if e.type_code == GTID_EVENT]
    d, s, n = gtids[-1]
    assert rep.state.last(d) == Gtid(d, s, n)
    # the writer continues where the whole groups end
    w2.write(txn)
    w2.commit()
    w2.close()
    assert last_group_end(last.read_bytes(), scan(last.read_bytes()).events[0].end) == len(whole) + len(txn)
    assert verify(last.read_bytes()).crc_failures == []


def test_recovery_cuts_at_a_corrupt_crc(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    write_demo(w)
    last = tmp_path / NAMES[-1]
    data = bytearray(last.read_bytes())
    fde_end = scan(data).events[0].end
    _, groups = groups_of(bytes(data))
    cut = fde_end + len(groups[0])
    data[cut + 30] ^= 0xFF  # a sector of garbage inside the second group
    last.write_bytes(bytes(data))
    rep = BinlogWriter(tmp_path, "mysql-bin").recover()
    assert rep.truncated_from == cut
    assert len(last.read_bytes()) == cut


def test_recovery_drops_a_file_without_a_whole_header(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    write_demo(w)
    w.close()
    nxt = "mysql-bin.000003"
    (tmp_path / nxt).write_bytes(DEMO[NAMES[0]][:40])  # crashed while writing the FDE
    (tmp_path / "mysql-bin.index").write_text("".join(f"./{n}\n" for n in [*NAMES, nxt]))
    w2 = BinlogWriter(tmp_path, "mysql-bin")
    rep = w2.recover()
    assert rep.dropped_file == nxt and rep.file == NAMES[-1]
    assert not (tmp_path / nxt).exists()
    assert w2.files() == NAMES


def test_purge_only_oldest_inactive_files(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    write_demo(w)
    with pytest.raises(BinlogWriteError):
        w.purge([NAMES[-1]])
    with pytest.raises(BinlogWriteError):
        w.purge(list(NAMES))
    w.purge([NAMES[0]])
    assert w.files() == NAMES[1:] and not (tmp_path / NAMES[0]).exists()
    assert w.store.files() == NAMES[1:]


def test_start_file_refuses_bad_names_and_headers(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    fde, _ = groups_of(DEMO[NAMES[0]])
    for bad in ("other.000001", "mysql-bin.000001/x"):
        with pytest.raises(BinlogWriteError):
            w.start_file(bad, fde)
    with pytest.raises(BinlogWriteError):
        w.start_file(NAMES[0], b"\0" * 40)
    w.start_file(NAMES[0], fde)
    with pytest.raises(BinlogWriteError):
        w.start_file(NAMES[0], fde)


def test_recovered_state_continues_the_previous_file_when_the_last_has_no_gtid_list(tmp_path: Path) -> None:
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    fde, groups = groups_of(DEMO[NAMES[0]])
    w.start_file(NAMES[0], fde)
    for g in groups:
        w.write(g)
        w.commit()
    w.start_file(NAMES[1], fde)  # crash right after the new file's FDE, before its GTID_LIST
    data = (tmp_path / NAMES[0]).read_bytes()
    gtids = [peek_gtid(data, e.pos)[:3] for e in scan(data).events if e.type_code == GTID_EVENT]
    rep = BinlogWriter(tmp_path, "mysql-bin").recover()
    assert rep.file == NAMES[1]
    d, s, n = gtids[-1]
    assert rep.state.last(d) == Gtid(d, s, n)


def test_a_closing_rotate_is_published_with_the_file_it_names(tmp_path: Path) -> None:
    """A replica that got a ROTATE and reconnects asks for the file it names: that file must exist by then,
    also after a crash between the ROTATE and the new file."""
    fde, groups = groups_of(DEMO[NAMES[0]])
    assert groups[-1][4] == ROTATE_EVENT
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    w.start_file(NAMES[0], fde)
    for g in groups[:-1]:
        w.write(g)
        w.commit()
    before = w.store.end_of(NAMES[0])
    w.write(groups[-1])  # the ROTATE, written but not committed by the caller
    del w  # kill -9 here
    w2 = BinlogWriter(tmp_path, "mysql-bin")
    rep = w2.recover()
    assert rep.last_end == before + len(groups[-1]) and w2.end == rep.last_end
    assert w2.store.end_of(NAMES[0]) == before, "the ROTATE stays unpublished while its file does not exist"
    assert w2.store.published_end(NAMES[0]) == before  # dump streams do not read it
    fde2, _ = groups_of(DEMO[NAMES[1]])
    w2.start_file(NAMES[1], fde2)
    assert w2.store.end_of(NAMES[0]) == before + len(groups[-1])
    assert w2.store.published_end(NAMES[0]) is None  # closed, and the index names the next file
    assert w2.store.files() == NAMES
    w2.close()
    assert (tmp_path / NAMES[0]).read_bytes() == DEMO[NAMES[0]]


async def test_a_purge_starts_a_new_generation_of_cached_blocks(tmp_path: Path) -> None:
    """Blocks are cached by (generation, inode, offset, length): a file created after a purge may get a purged file's
    inode (ext4 and tmpfs reuse them at once), and the same (inode, offset, length) then names other bytes. After a
    purge the keys are of a new generation, so the new file's bytes are read, not the purged file's."""
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    write_demo(w)
    store = w.store
    old = tmp_path / NAMES[0]
    new_bytes = (tmp_path / NAMES[-1]).read_bytes()
    n = min(len(new_bytes), old.stat().st_size)
    assert old.read_bytes()[:n] != new_bytes[:n]
    with open(old, "rb") as f:
        ino = os.fstat(f.fileno()).st_ino
        cached = await store.blocks.read((store.generation, ino, 0, n), f.fileno(), 0, n)
    assert cached == old.read_bytes()[:n]
    w.purge([NAMES[0]])
    assert not old.exists()
    with open(tmp_path / NAMES[-1], "rb") as f:  # as if it had got the purged file's inode
        got = await store.blocks.read((store.generation, ino, 0, n), f.fileno(), 0, n)
    assert got == new_bytes[:n]


async def test_a_watched_directory_whose_files_went_starts_a_new_generation(tmp_path: Path) -> None:
    """A directory binlogd only reads (another process writes it): files deleted or cut there start a new generation
    of cache keys, as a purge does; files that only grow do not."""
    w = BinlogWriter(tmp_path, "mysql-bin")
    w.recover()
    write_demo(w)
    w.close()
    store = BinlogStore(tmp_path)
    watcher = DirectoryWatcher(store, interval=0.01)
    watcher.start()
    try:
        gen = store.generation
        with open(tmp_path / NAMES[-1], "ab") as f:
            f.write(b"\0" * 10)  # grows: the cached bytes stay valid
        await asyncio.sleep(0.2)
        assert store.generation == gen
        (tmp_path / "mysql-bin.index").write_text("".join(f"./{n}\n" for n in NAMES[1:]))
        (tmp_path / NAMES[0]).unlink()
        for _ in range(200):
            if store.generation != gen:
                break
            await asyncio.sleep(0.01)
        assert store.generation != gen
    finally:
        await watcher.stop()
