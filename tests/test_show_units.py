"""`binlogd show` on hand-built binlogs (binlogd.protocol codecs): MySQL's Rows_query event printed as comments, read
the same way (skipped) by the real mariadb-binlog; the skip-flag state printed only on changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from binlogd.protocol.constants import (
    FORMAT_DESCRIPTION_EVENT,
    LOG_EVENT_IGNORABLE_F,
    LOG_EVENT_SKIP_REPLICATION_F,
    QUERY_EVENT,
    ROWS_QUERY_LOG_EVENT,
)
from binlogd.protocol.events import (
    FormatDescriptionBody,
    QueryBody,
    build_event,
    encode_format_description,
    encode_query,
)

from tests.test_show_helpers import mariadb_binlog, show

pytestmark = pytest.mark.mariadb  # the real mariadb-binlog reads the same files

TS = 1_800_000_000


def _binlog(path: Path, events: list[tuple[int, bytes, int]]) -> Path:
    """magic + a 10.11 FDE + (type, body, flags) events with their end positions and CRCs."""
    out = bytearray(b"\xfebin")
    fde = encode_format_description(FormatDescriptionBody.mariadb_10_11("10.11.19-MariaDB-log", TS))
    for type_code, body, flags in [(FORMAT_DESCRIPTION_EVENT, fde, 0), *events]:
        end = len(out) + 19 + len(body) + 4
        out += build_event(type_code=type_code, body=body, checksum=True, timestamp=TS, server_id=1, log_pos=end,
                           flags=flags)
    path.write_bytes(bytes(out))
    return path


def _query(sql: bytes) -> bytes:
    return encode_query(QueryBody(thread_id=1, exec_time=0, error_code=0, db=b"d", query=sql))


def test_rows_query_is_printed_as_comments(tmp_path: Path) -> None:
    f = _binlog(tmp_path / "mysql-bin.000001", [
        (ROWS_QUERY_LOG_EVENT, b"\x1fINSERT INTO t VALUES (1),\n  (2)", LOG_EVENT_IGNORABLE_F),
    ])
    text = show(f).stdout
    assert b"\tRows_query\n# INSERT INTO t VALUES (1),\n#   (2)\n" in text
    assert b"Ignorable event type 29" in mariadb_binlog(f).stdout  # MariaDB's reader skips it


def test_skip_flag_printed_only_when_it_changes(tmp_path: Path) -> None:
    flagged = LOG_EVENT_SKIP_REPLICATION_F
    f = _binlog(tmp_path / "mysql-bin.000001", [
        (QUERY_EVENT, _query(b"CREATE TABLE a (x INT)"), 0),
        (QUERY_EVENT, _query(b"CREATE TABLE b (x INT)"), flagged),
        (QUERY_EVENT, _query(b"CREATE TABLE c (x INT)"), flagged),
        (QUERY_EVENT, _query(b"CREATE TABLE e (x INT)"), 0),
    ])
    text = show(f).stdout
    assert text == mariadb_binlog(f).stdout
    body = text.split(b"CREATE TABLE a")[1]
    assert body.count(b"/*!50521 SET skip_replication=1*/") == 1
    assert body.index(b"SET skip_replication=1") < body.index(b"CREATE TABLE b")
    assert body.index(b"SET skip_replication=0") < body.index(b"CREATE TABLE e")
    assert body.index(b"SET skip_replication=0") > body.index(b"CREATE TABLE c")
    assert b"SET skip_replication" not in show("--skip-flagged", f).stdout
    assert b"CREATE TABLE b" not in show("--skip-flagged", f).stdout
