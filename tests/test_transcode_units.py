"""server/transcode.py without servers: who gets which algorithm, and the stage's framing under any slicing."""

from __future__ import annotations

import pytest
from binlogd.protocol.binlog_file import scan
from binlogd.protocol.constants import BINLOG_CHECKSUM_ALG_CRC32, BINLOG_CHECKSUM_ALG_OFF
from binlogd.protocol.packets import frame
from binlogd.protocol.rewrite import fake_rotate
from binlogd.server.transcode import TranscodeRefused, TranscodingWriter, first_rotate_crc, target_algorithm

from tests.dumpclient import MemorySink
from tests.test_transcode import _twin


@pytest.mark.parametrize("aware,crc32,add,mariadb,want", [
    (False, False, None, False, BINLOG_CHECKSUM_ALG_OFF),
    (False, False, None, True, None),
    (True, False, None, False, None),
    (True, True, None, False, None),
    (True, True, 1, False, BINLOG_CHECKSUM_ALG_CRC32),
    (True, True, "1", False, BINLOG_CHECKSUM_ALG_CRC32),
    (True, True, 0, False, None),
    (True, True, "yes", True, None),  # --compat mariadb: the variable means nothing
])
def test_target_algorithm(aware: bool, crc32: bool, add: object, mariadb: bool, want: int | None) -> None:
    assert target_algorithm(aware, crc32, add, mariadb) == want


@pytest.mark.parametrize("aware,crc32,add", [(True, True, "yes"), (True, True, 2), (True, False, 1), (False, False, 1),
                                             (True, True, b"\xff"), (True, True, 1.5)])
def test_target_algorithm_refused(aware: bool, crc32: bool, add: object) -> None:
    with pytest.raises(TranscodeRefused, match="binlogd_add_checksums"):
        target_algorithm(aware, crc32, add, False)


@pytest.mark.parametrize("value,want", [("CRC32", True), ("NONE", False), ("none", False), (b"NONE", False),
                                        ("NON", True), ("", True), (None, True), (1, True)])
def test_first_rotate_crc(value: object, want: bool) -> None:
    assert first_rotate_crc(True, value) is want
    assert first_rotate_crc(False, value) is False


def _framed(path) -> bytes:
    """A dump's packets for a whole file: fake ROTATE (no CRC: a non-aware client's first), then every event."""
    data = path.read_bytes()
    out = bytearray()
    seq = frame(b"\0" + fake_rotate(1, 4, path.name, False), 1, out)
    for e in scan(data).events:
        seq = frame(b"\0" + data[e.pos : e.end], seq, out)
    return bytes(out)



@pytest.mark.parametrize("slice_len", [1, 7, 4096, 1 << 30])
def test_stage_output_does_not_depend_on_slicing(tmp_path, slice_len: int) -> None:
    """Whatever slices the dump writes in, the stage gives the NONE twin's packets."""
    _twin(tmp_path / "c", "CRC32")
    _twin(tmp_path / "n", "NONE")
    name = "mysql-bin.000001"
    src = _framed(tmp_path / "c" / name)
    sink = MemorySink()
    tc = TranscodingWriter(sink, BINLOG_CHECKSUM_ALG_OFF, 1, lambda pos, n: AssertionError(pos))
    tc.open_file(name, 4)
    data = (tmp_path / "c" / name).read_bytes()
    tc.feed(name, data[scan(data).events[0].end :], scan(data).events[0].end)
    for i in range(0, len(src), slice_len):
        tc.write(src[i : i + slice_len])
    want = _framed(tmp_path / "n" / name)
    assert bytes(sink.data) == want and tc.written == len(want)
