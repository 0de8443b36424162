"""What of an oracle recording must come out the same on every run of regenerate.py.

A re-run of the workload on a fresh primary changes only bytes that depend on when it ran or on how many
statements the server had seen: event timestamps (and so every CRC), the FDE's create timestamp, a QUERY's
exec_time and thread id, the query id a DDL carries (Q_XID) and an XID event's xid, Q_HRNOW. Everything
else (event types, sizes, positions, flags, bodies, which events a connection got as dummies or holes, how the
stream ended) is the primary's behaviour and must be identical. These functions keep exactly that.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from binlogd.protocol.constants import (
    FORMAT_DESCRIPTION_EVENT,
    HEARTBEAT_LOG_EVENT,
    Q_HRNOW,
    Q_XID,
    QUERY_EVENT,
    XID_EVENT,
)
from binlogd.protocol.events import EventDecodeError, encode_query, iter_binlog, parse_query

from .records import crc_ok

RUN_DEPENDENT_STATUS_VARS = (Q_XID, Q_HRNOW)
RUN_DEPENDENT_DECODED = frozenset(("create_timestamp", "thread_id", "exec_time", "xid"))
FDE_CREATE_TIMESTAMP = slice(52, 56)  # in the FDE body
READER_ENDS = frozenset(("max_seconds", "idle_timeout"))


def event_shape(ev: bytes) -> dict[str, Any]:
    """An event without its timestamp, CRC and run-dependent body fields.

    An FDE always ends in 4 checksum bytes; in the active file they do not check (the in-use flag was set
    after they were computed), so they are dropped by type rather than by validity.
    """
    etype = ev[4]
    has_crc = crc_ok(ev)
    body = bytearray(ev[19 : len(ev) - (4 if has_crc or etype == FORMAT_DESCRIPTION_EVENT else 0)])
    if etype == FORMAT_DESCRIPTION_EVENT:
        body[FDE_CREATE_TIMESTAMP] = bytes(4)
    elif etype == XID_EVENT:
        body[:8] = bytes(8)
    elif etype == QUERY_EVENT:
        body = bytearray(_query_shape(bytes(body)))
    return {"header_without_timestamp": ev[4:19].hex(), "crc": has_crc, "body": body.hex()}


def _query_shape(body: bytes) -> bytes:
    try:
        q = parse_query(body)
    except EventDecodeError:  # not a structurally valid QUERY (a truncated dummy text is): compare as is
        return body
    kept = {k: v for k, v in q.status_vars.items() if k not in RUN_DEPENDENT_STATUS_VARS}
    return encode_query(dataclasses.replace(q, thread_id=0, exec_time=0, status_vars=kept))


def capture_shape(doc: dict[str, Any]) -> dict[str, Any]:
    """A capture (.json object) without what a re-run changes.

    A stream the reader ended (heartbeat variant) keeps one heartbeat of a run of them: how many arrive in
    the reading window is timing.
    """
    settings = {k: v for k, v in doc["settings"].items() if k not in ("host", "port")}
    end = dict(doc["end"])
    reader_ended = end["kind"] in READER_ENDS
    if reader_ended:
        end = {"kind": end["kind"]}
    events = []
    for e in doc["events"]:
        if reader_ended and e["type"] == HEARTBEAT_LOG_EVENT and events and events[-1]["type"] == HEARTBEAT_LOG_EVENT:
            continue
        rec = {k: v for k, v in e.items() if k not in ("i", "t_ms", "timestamp", "hex", "decoded")}
        rec["decoded"] = {k: v for k, v in e["decoded"].items() if k not in RUN_DEPENDENT_DECODED}
        rec["event"] = event_shape(bytes.fromhex(e["hex"]))
        if reader_ended:  # positions in the stream move with the number of heartbeats before
            del rec["raw_offset"], rec["seq"]
        events.append(rec)
    out = {k: doc[k] for k in ("session_statements", "session_check", "com_register_slave_hex",
                               "register_response_hex", "com_binlog_dump_hex")}
    out.update(settings=settings, events=events, end=end)
    if not reader_ended:
        out["raw_bytes"] = doc["raw_bytes"]
    return out


def binlog_shape(data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """A binlog file as (position, event shape) pairs."""
    return [(pos, event_shape(ev)) for pos, ev in iter_binlog(data)]


def show_binlog_events_shape(text: str) -> list[str]:
    """SHOW BINLOG EVENTS output without the xids in the Info column of Xid rows."""
    return [re.sub(r"xid=\d+", "xid=?", line) for line in text.splitlines()]
