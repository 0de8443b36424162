"""The store's inventory of a directory another process writes (server/binlog/index.py `IndexReader`): the index is
read again whenever it changed, and names read while its last change was too recent to be told apart by its stat
are not trusted (a change within the same timestamp tick that keeps the size)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from binlogd.server.binlog import index
from binlogd.server.binlog.index import IndexReader


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = index.read_names

    def counted(*a: object) -> list[str]:
        calls.append(1)
        return real(*a)  # type: ignore[arg-type]

    monkeypatch.setattr(index, "read_names", counted)
    return calls


def _write(p: Path, names: list[str], mtime_ns: int | None = None) -> None:
    p.write_text("".join(f"./{n}\n" for n in names))
    if mtime_ns is not None:
        os.utime(p, ns=(mtime_ns, mtime_ns))


def test_an_unchanged_index_is_read_once_and_every_change_is_seen(tmp_path: Path, reads: list[int]) -> None:
    idx = tmp_path / "b.index"
    old = time.time_ns() - 10 * IndexReader.RACY_NS
    _write(idx, ["b.000001"], old)
    r = IndexReader(tmp_path, "b", idx)
    assert [r.names() for _ in range(5)] == [["b.000001"]] * 5
    assert len(reads) == 1
    _write(idx, ["b.000001", "b.000002"], old + 1)  # a rotation: the size and mtime move
    assert r.names() == ["b.000001", "b.000002"]
    _write(idx, ["b.000003", "b.000004"], old + 2)  # a purge and a rotation at once: same size, new mtime
    assert r.names() == ["b.000003", "b.000004"]
    idx.unlink()  # no index: the numbered files (keyed on the directory)
    (tmp_path / "b.000007").write_bytes(b"")
    assert r.names() == ["b.000007"]


def test_names_read_in_the_racy_window_are_read_again(tmp_path: Path, reads: list[int]) -> None:
    idx = tmp_path / "b.index"
    now = time.time_ns()
    _write(idx, ["b.000001", "b.000002"], now)
    r = IndexReader(tmp_path, "b", idx)
    assert r.names() == ["b.000001", "b.000002"]
    # rewritten in place within the same tick: same inode, size and mtime (ctime may move; the test pins mtime)
    _write(idx, ["b.000003", "b.000004"], now)
    assert r.names() == ["b.000003", "b.000004"]
    assert len(reads) == 2
