"""The oracle's capture format: from the bytes a primary sent after COM_BINLOG_DUMP to dump/<name>.json.

One record per packet before the end (offset into the .raw, seq, header fields, flag names, whether the CRC
checks, the fields the tests and people look at, whether the primary replaced the event by a dummy, the
event's hex), then how the stream ended. The layout and key order are those of the stored captures:
tests/test_oracle_regenerate.py rebuilds every stored .json from its .raw with this module and compares.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.dumpclient import DumpCapture, split_packets

# Event type names as the capture format spells them (not SHOW BINLOG EVENTS' names).
TYPE_NAMES: dict[int, str] = {
    0: "UNKNOWN", 1: "START_V3", 2: "QUERY", 3: "STOP", 4: "ROTATE", 5: "INTVAR", 6: "LOAD",
    7: "SLAVE", 8: "CREATE_FILE", 9: "APPEND_BLOCK", 10: "EXEC_LOAD", 11: "DELETE_FILE",
    12: "NEW_LOAD", 13: "RAND", 14: "USER_VAR", 15: "FORMAT_DESCRIPTION", 16: "XID",
    17: "BEGIN_LOAD_QUERY", 18: "EXECUTE_LOAD_QUERY", 19: "TABLE_MAP", 20: "PRE_GA_WRITE_ROWS",
    21: "PRE_GA_UPDATE_ROWS", 22: "PRE_GA_DELETE_ROWS", 23: "WRITE_ROWS_V1", 24: "UPDATE_ROWS_V1",
    25: "DELETE_ROWS_V1", 26: "INCIDENT", 27: "HEARTBEAT", 28: "IGNORABLE", 29: "ROWS_QUERY",
    30: "WRITE_ROWS_V2", 31: "UPDATE_ROWS_V2", 32: "DELETE_ROWS_V2", 33: "GTID(mysql)",
    34: "ANONYMOUS_GTID", 35: "PREVIOUS_GTIDS",
    160: "ANNOTATE_ROWS", 161: "BINLOG_CHECKPOINT", 162: "GTID", 163: "GTID_LIST",
    164: "START_ENCRYPTION", 165: "QUERY_COMPRESSED", 166: "WRITE_ROWS_COMPRESSED_V1",
    167: "UPDATE_ROWS_COMPRESSED_V1", 168: "DELETE_ROWS_COMPRESSED_V1",
    169: "WRITE_ROWS_COMPRESSED", 170: "UPDATE_ROWS_COMPRESSED", 171: "DELETE_ROWS_COMPRESSED",
}
FLAG_NAMES: dict[int, str] = {0x1: "BINLOG_IN_USE", 0x4: "THREAD_SPECIFIC", 0x8: "SUPPRESS_USE",
                              0x20: "ARTIFICIAL", 0x40: "RELAY_LOG", 0x80: "IGNORABLE",
                              0x8000: "SKIP_REPLICATION"}
ROWS_TYPES = frozenset((23, 24, 25, 30, 31, 32, 166, 167, 168, 169, 170, 171))
DUMMY_QUERY = "# Dummy event replacing event type"
DUMMY_VAR = "!dummyvar"
HEADER = struct.Struct("<IBIIIH")


def flag_names(flags: int) -> list[str]:
    known = sum(FLAG_NAMES)
    return [n for b, n in FLAG_NAMES.items() if flags & b] + ([hex(flags & ~known)] if flags & ~known else [])


def decode_body(etype: int, ev: bytes, has_crc: bool) -> dict[str, Any]:
    """The fields a reader of the .json wants, from the whole event (header included).

    Lenient on purpose: dummies are truncated events by design, and whatever fails to decode is kept as
    ``decode_error`` in the record instead of stopping the capture.
    """
    body = ev[19 : len(ev) - (4 if has_crc else 0)]
    d: dict[str, Any] = {}
    try:
        if etype == 4:
            d["position"] = struct.unpack_from("<Q", body, 0)[0]
            d["next_file"] = body[8:].decode()
        elif etype == 15:
            d["binlog_version"] = struct.unpack_from("<H", body, 0)[0]
            d["server_version"] = body[2:52].rstrip(b"\0").decode()
            d["create_timestamp"] = struct.unpack_from("<I", body, 52)[0]
            d["header_length"] = body[56]
            if has_crc:  # the checksum-algorithm byte is the body's last, right before the CRC
                d["checksum_alg"] = body[-1]
                d["post_header_lengths_count"] = len(body) - 57 - 1
            else:
                d["checksum_alg_byte_if_present"] = body[-1]
        elif etype in (2, 165):
            d.update(_query(etype, body))
        elif etype == 162:
            seq, dom, fl2 = struct.unpack_from("<QIB", body, 0)
            d.update(seq_no=seq, domain_id=dom, flags2=fl2)
            if fl2 & 2:  # FL_GROUP_COMMIT_ID
                d["commit_id"] = struct.unpack_from("<Q", body, 13)[0]
        elif etype == 163:
            (cnt,) = struct.unpack_from("<I", body, 0)
            n = cnt & 0x0FFFFFFF
            d.update(count=n, flags=cnt >> 28,
                     gtids=["{}-{}-{}".format(*struct.unpack_from("<IIQ", body, 4 + 16 * i)) for i in range(n)])
        elif etype == 161:
            (ln,) = struct.unpack_from("<I", body, 0)
            d["file"] = body[4 : 4 + ln].decode()
        elif etype == 160:
            d["query"] = body.decode(errors="replace")
        elif etype == 16:
            d["xid"] = struct.unpack_from("<Q", body, 0)[0]
        elif etype == 19:
            dl = body[8]
            tl = body[10 + dl]
            d.update(table_id=int.from_bytes(body[0:6], "little"), db=body[9 : 9 + dl].decode(),
                     table=body[11 + dl : 11 + dl + tl].decode())
        elif etype == 13:
            d["seed1"], d["seed2"] = struct.unpack_from("<QQ", body, 0)
        elif etype in ROWS_TYPES:
            d["table_id"] = int.from_bytes(body[0:6], "little")
            d["rows_flags"] = struct.unpack_from("<H", body, 6)[0]
        elif etype == 14:
            d.update(_user_var(body))
        elif etype == 27:
            d["log_ident"] = body.decode(errors="replace")
        elif etype == 5:
            d["type"], d["value"] = body[0], struct.unpack_from("<Q", body, 1)[0]
    except Exception as e:  # a record with the error beats a capture that stops here
        d["decode_error"] = repr(e)
    return d


def _query(etype: int, body: bytes) -> dict[str, Any]:
    thread_id, exec_time, db_len, err, sv_len = struct.unpack_from("<IIBHH", body, 0)
    p = 13 + sv_len
    db = body[p : p + db_len].decode(errors="replace")
    q = body[p + db_len + 1 :]
    d: dict[str, Any] = {}
    if etype == 165:  # 1 byte (0x80 | n), n-byte big-endian uncompressed length, zlib stream
        n = q[0] & 0x07
        d["uncompressed_len"] = int.from_bytes(q[1 : 1 + n], "big")
        q = zlib.decompress(q[1 + n :])
    d.update(thread_id=thread_id, exec_time=exec_time, error_code=err, status_vars_len=sv_len, db=db,
             query=q.decode(errors="replace"))
    return d


def _user_var(body: bytes) -> dict[str, Any]:
    """Name and NULL flag only: the stored captures carry no value fields (the event's hex has them)."""
    (ln,) = struct.unpack_from("<I", body, 0)
    return {"name": body[4 : 4 + ln].decode(errors="replace"), "is_null": body[4 + ln]}


def is_dummy(etype: int, decoded: dict[str, Any]) -> bool:
    """A primary's same-length stand-in for an event the client cannot take (truncated text or name)."""
    if etype == 2:
        q = decoded.get("query")
        return bool(q) and (DUMMY_QUERY.startswith(q.rstrip()) or q.startswith("# Dummy"))
    if etype == 14:
        return DUMMY_VAR.startswith(decoded.get("name") or "?")
    return False


def crc_ok(ev: bytes) -> bool:
    """Whether the event ends in a valid CRC32 of the rest (how the format decides what has a checksum)."""
    return len(ev) >= 23 and zlib.crc32(ev[:-4]) == int.from_bytes(ev[-4:], "little")


def event_record(i: int, raw_offset: int, seq: int, payload: bytes, t_ms: float) -> dict[str, Any]:
    ev = payload[1:]
    ts, etype, sid, esize, logpos, flags = HEADER.unpack_from(ev, 0)
    has_crc = crc_ok(ev)
    decoded = decode_body(etype, ev, has_crc)
    rec: dict[str, Any] = {
        "i": i, "raw_offset": raw_offset, "seq": seq, "packet_len": len(payload), "t_ms": t_ms,
        "ok_byte": payload[0], "type": etype, "type_name": TYPE_NAMES.get(etype, str(etype)), "timestamp": ts,
        "server_id": sid, "event_size": esize, "log_pos": logpos, "flags": f"0x{flags:04x}",
        "flag_names": flag_names(flags), "crc32_ok": has_crc, "size_matches": esize == len(ev), "decoded": decoded,
    }
    if is_dummy(etype, decoded):
        rec["dummy"] = True
    rec["hex"] = ev.hex()
    return rec


def end_record(payload: bytes, seq: int) -> dict[str, Any] | None:
    """The end of the stream if this packet is one: EOF, or ERR with code, SQL state and message."""
    if payload[:1] == b"\xfe" and len(payload) < 9:
        return {"kind": "EOF", "hex": payload.hex(), "seq": seq}
    if payload[:1] == b"\xff":
        return {"kind": "ERR", "code": struct.unpack_from("<H", payload, 1)[0],
                "sqlstate": payload[4:9].decode(errors="replace"), "message": payload[9:].decode(errors="replace"),
                "hex": payload.hex()}
    return None


def stream_records(raw: bytes, times: Sequence[float]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Event records and the end record of a dump stream (``times``: seconds of each packet after the dump).

    A stream without EOF or ERR ended by the reader: ``max_seconds`` / ``idle_timeout`` / ``closed``.
    Events over 16 MiB (split packets) do not occur in the oracle's workload and are not joined here.
    """
    events: list[dict[str, Any]] = []
    offset = 0
    for n, pk in enumerate(split_packets(raw)):
        end = end_record(pk.payload, pk.seq)
        if end is not None:
            return events, end
        t_ms = round(times[n] * 1000, 1) if n < len(times) else 0.0
        events.append(event_record(len(events), offset, pk.seq, pk.payload, t_ms))
        offset += 4 + len(pk.payload)
    return events, {}


def reader_end(cap: DumpCapture, after_s: float) -> dict[str, Any]:
    """How a stream the primary did not end stopped, in the capture format."""
    if cap.end == "max_seconds":
        return {"kind": "max_seconds", "after_s": round(after_s, 3)}
    if cap.end == "idle":
        return {"kind": "idle_timeout", "after_s": round(after_s, 3)}
    return {"kind": "closed", "detail": "connection closed"}


def capture_document(settings: dict[str, Any], statements: list[str], session_check: dict[str, Any],
                     register_cmd: bytes, dump_cmd: bytes, cap: DumpCapture, after_s: float) -> dict[str, Any]:
    """The whole .json object of one capture, keys in the stored order."""
    events, end = stream_records(cap.raw, cap.times)
    return {
        "settings": settings,
        "session_statements": statements,
        "session_check": session_check,
        "com_register_slave_hex": register_cmd.hex(),
        "register_response_hex": (cap.register_reply or b"").hex(),
        "com_binlog_dump_hex": dump_cmd.hex(),
        "events": events,
        "end": end or reader_end(cap, after_s),
        "raw_bytes": len(cap.raw),
    }


def dumps(doc: dict[str, Any]) -> str:
    """The stored layout: one top-level key per line, one event per line (diffs stay readable)."""
    lines = ["{"]
    items = list(doc.items())
    for n, (k, v) in enumerate(items):
        sep = "," if n < len(items) - 1 else ""
        if k == "events":
            lines.append(' "events": [')
            lines.append(",\n".join("  " + json.dumps(e, separators=(",", ":")) for e in v))
            lines.append(" ]" + sep)
        else:
            lines.append(f" {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}{sep}")
    return "\n".join(lines) + "\n}\n"


def write_capture(out: Path, name: str, doc: dict[str, Any], raw: bytes) -> None:
    (out / f"{name}.json").write_text(dumps(doc))
    (out / f"{name}.raw").write_bytes(raw)
