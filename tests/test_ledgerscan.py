"""The ledger's C scanner (spark_analytics/_ledgerscan.c) gives exactly pyarrow.json's table, or refuses.

`ledger._table_of` tries the scanner first and parses with pyarrow when it refuses (BINLOGD_NO_NATIVE: pyarrow
only). Whatever the scanner accepts must be what the pyarrow path gives (`Table.equals`: schema, values, nulls) and
never something that path refuses; refusing is always allowed. Checked on ledgers as binlogd's writer formats them
(which the scanner must accept, or the audit loses the speed-up unnoticed), on random ledgers (random keys of the
schema in random order, unknown keys, nulls, escapes and unicode, int boundaries, whitespace), on the edge cases
where pyarrow's behaviour decides, and on random ledgers with one thing broken.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from binlogd.server.ledger import NULL, dict_line, ev_lines, jstr
from binlogd.spark_analytics import ledger
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.skipif(ledger._ledgerscan is None,
                                reason="spark_analytics/_ledgerscan.c is not built (pip install -e .)")

SCHEMA = ledger._arrow_schema()
TYPES = {f.name: str(f.type) for f in SCHEMA}
NAMES = list(TYPES)
MAX_LINE = 1 << 19
INT_RANGE = {"int64": (-(1 << 63), (1 << 63) - 1), "int32": (-(1 << 31), (1 << 31) - 1)}


@contextmanager
def _pyarrow_only() -> Iterator[None]:
    old = os.environ.get("BINLOGD_NO_NATIVE")
    os.environ["BINLOGD_NO_NATIVE"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["BINLOGD_NO_NATIVE"]
        else:
            os.environ["BINLOGD_NO_NATIVE"] = old


def _native(raw: bytes) -> Any:
    """The scanner's table (None: refused); checked to be a valid Arrow table (offsets, UTF-8)."""
    assert "BINLOGD_NO_NATIVE" not in os.environ
    t = ledger._native_table(raw, MAX_LINE)
    if t is not None:
        t.validate(full=True)
    return t


def _check(raw: bytes) -> Any:
    """The scanner's table for `raw` (None: refused) after checking it against the pyarrow path's."""
    with _pyarrow_only():
        want = ledger._table_of(raw)
    got = _native(raw)
    if got is not None:
        assert want is not None, "the scanner accepted what the pyarrow path refuses"
        assert got.schema.equals(want.schema) and got.equals(want)
    full = ledger._table_of(raw)  # the path the audit takes: the scanner's table, else pyarrow's
    assert (full is None) == (want is None) and (full is None or full.equals(want))
    return got


# --- ledgers as binlogd writes them ----------------------------------------------------------------------------


def _conn(seq: int, conn: int, **over: Any) -> str:
    """A `conn` record as server/dump/records.py writes it (`filters_from` is no schema field: ignored)."""
    body = {"thread_id": 2, "peer": "127.0.0.1:50684", "user": "root", "server_id": 21, "capability": 4,
            "capability_set": True, "skip_replication": False, "dump_flags": 1, "checksum": True,
            "start_file": "mysql-bin.000001", "start_pos": 4, "req_file": "mysql-bin.000001", "req_pos": 4,
            "start_gtid": None, "heartbeat_ms": 0, "compat": "binlogd", "send_tables_info": False,
            "transcode": None, "table_filters": None, "filters_from": None, "source_server_id": 100,
            "binlog_dir": "/tmp/s35/m10/binlogs", **over}
    return dict_line("conn", seq, conn, 1796006622853909 + seq, body)


def _writer_ledger(conns: int = 3, runs: int = 50) -> bytes:
    """conn, ev (single events, runs with null type/flags/gtid, holes, an error record) and close records through
    the writer's own formatting (server/ledger.py), as a dump writes them."""
    out: list[str] = []
    seq = 0
    for c in range(1, conns + 1):
        seq += 1
        out.append(_conn(seq, c, user="répl\u2028😀" if c == 2 else "root", filters_from="user" if c == 3 else None,
                         start_gtid="0-1-100" if c == 2 else None))
        recs = [(jstr("mysql-bin.000001"), 4, 4, 1, 0, "fake", jstr("rotate"), 4, 32, NULL, 47, 0),
                (jstr("mysql-bin.000001"), 4, 256, 1, 252, "sent", NULL, 15, 0, NULL, 252, 0)]
        pos = 256
        for i in range(runs):
            n = 5 + i % 13
            if i % 3 == 1:
                recs.append((jstr("mysql-bin.000001"), pos, pos + 733, n, 733, "hole", jstr("skip_replication"),
                             NULL, NULL, NULL, 0, 0))
            elif i % 7 == 2:
                recs.append((jstr("mysql-bin.000001"), pos, pos + 60, 1, 60, "begin", jstr("capability"), 2, 8,
                             jstr(f"0-1-{i}"), 60, 0))
            else:
                recs.append((jstr("mysql-bin.000001"), pos, pos + 983, n, 983, "sent", NULL, NULL, NULL, NULL,
                             856, i % 4))
            pos += 983
        out.extend(ev_lines(seq + 1, c, 1796006624000085, recs))
        seq += len(recs)
        if c == 2:
            seq += 1
            out.append(dict_line("ev", seq, c, 1796006625000000, {
                "file": "mysql-bin.000001", "start": pos, "end": pos, "count": 0, "length": 0, "action": "error",
                "why": None, "type": None, "flags": None, "gtid": None, "sent_length": 0, "code": 1236,
                "message": 'binlog truncated in the middle of event; "consider" \\ / \t'}))
        seq += 1
        out.append(dict_line("close", seq, c, 1796006661649202, {
            "file": "mysql-bin.000001", "pos": pos, "reason": "error" if c == 2 else "eof",
            "error_code": 1236 if c == 2 else None, "error": "x" if c == 2 else None, "events": 10000019,
            "heartbeats": 0, "bytes": 590372395}))
    return "".join(out).encode()


def test_writer_ledger_is_taken_by_the_scanner() -> None:
    """The records binlogd writes are inside the scanner's subset: its table, equal to pyarrow's."""
    raw = _writer_ledger()
    t = _check(raw)
    assert t is not None, "the scanner refused a ledger as binlogd writes it"
    assert t.num_rows == raw.count(b"\n")
    rows = t.to_pylist()
    assert [r["r"] for r in rows[:3]] == ["conn", "ev", "ev"] and rows[-1]["r"] == "close"
    assert rows[0]["capability_set"] is True and rows[0]["skip_replication"] is False
    users = [r["user"] for r in rows if r["r"] == "conn"]
    assert users == ["root", "répl\u2028😀", "root"]
    err = next(r for r in rows if r["action"] == "error")
    assert err["code"] == 1236 and err["message"].endswith('"consider" \\ / \t') and err["type"] is None


def test_json_dumps_separators_are_taken() -> None:
    """Ledgers that tests edit with json.dumps' default separators (", ", ": ") are taken too."""
    lines = [json.loads(line) for line in _writer_ledger(1, 10).decode().splitlines()]
    raw = "".join(json.dumps(r) + "\n" for r in lines).encode()
    assert _check(raw) is not None


def test_large_ledger_in_several_pyarrow_blocks() -> None:
    """Past pyarrow's 8 MB blocks (its table in several chunks, the scanner's in one): the same table."""
    raw = _writer_ledger(conns=6, runs=6000)
    assert len(raw) > 8 << 20
    with _pyarrow_only():
        want = ledger._table_of(raw)
    got = _native(raw)
    assert want is not None and got is not None and want.column("seq").num_chunks > 1
    assert got.equals(want)


def test_strict_tables_use_the_scanner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`strict_tables` (the audit's entry) goes through the scanner, and not with BINLOGD_NO_NATIVE."""
    calls: list[bool] = []
    real = ledger._ledgerscan

    class Spy:
        @staticmethod
        def scan(*args: Any) -> Any:
            got = real.scan(*args)
            calls.append(got is not None)
            return got

    monkeypatch.setattr(ledger, "_ledgerscan", Spy)
    d = tmp_path / "ledger"
    d.mkdir()
    (d / "ledger.000001.jsonl").write_bytes(_writer_ledger(2, 20))
    (d / "ledger.000002.jsonl").write_bytes(_writer_ledger(1, 5))
    tables = ledger.strict_tables(ledger.ledger_files(d))
    assert tables is not None and calls == [True, True]
    with _pyarrow_only():
        again = ledger.strict_tables(ledger.ledger_files(d))
    assert calls == [True, True] and again is not None
    assert all(a.equals(b) for a, b in zip(tables, again, strict=True))


def test_scan_releases_the_gil_and_threads_agree() -> None:
    """Scans in threads at once (the GIL released while scanning) give the same tables."""
    raw = _writer_ledger(2, 2000)
    want = _native(raw)
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(ledger._native_table(raw, MAX_LINE))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(t.equals(want) for t in got)


def test_scan_refuses_bad_fields() -> None:
    scan = ledger._ledgerscan.scan
    for fields in ([], [("r", "float")], [("r", "string"), ("r", "int64")], [('a"b', "string")],
                   [("a\\b", "string")], [("", "bool")], [("é", "string")]):
        with pytest.raises(ValueError):
            scan(b'{"r":"x"}\n', fields, MAX_LINE)
    with pytest.raises(TypeError):
        scan(b'{"r":"x"}\n', [("r",)], MAX_LINE)
    with pytest.raises(TypeError):
        scan("text", [("r", "string")], MAX_LINE)


def test_long_lines_are_left_to_pyarrow() -> None:
    """A line longer than `max_line` is refused (older pyarrow refused an object longer than its block)."""
    line = b'{"r":"' + b"x" * 100 + b'"}\n'
    assert ledger._ledgerscan.scan(line, [("r", "string")], len(line) - 1) is not None
    assert ledger._ledgerscan.scan(line, [("r", "string")], len(line) - 2) is None


# --- the edge cases: what pyarrow does decides ---------------------------------------------------------------

# accepted by the scanner: pyarrow gives the same values
TAKEN = [
    b'{"seq":-0,"type":-0}\n',  # -0 is 0 in both
    b'{"seq":9223372036854775807,"conn":-9223372036854775808,"type":2147483647,"flags":-2147483648}\n',
    b'{"r":"a\\u0000b\\/c\\b\\f\\n\\r\\t\\"\\\\"}\n',  # every escape, NUL kept
    b'{"r":"\\ud83d\\ude00\\uD83D\\uDE00\\u00e9\\uffff\\ufffe\\u0800"}\n',  # pairs, either case of hex
    b'{"r":"\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbf\x7f"}\n',  # raw UTF-8 and DEL
    b'{"r":"a","seq":1}\n{"seq":2,"r":"b"}\n',  # keys in another order per line
    b'{}\n{ }\n',  # empty objects: rows of nulls
    b'{ "r" : "a" , "seq" : 1 }\n \t{\t"r"\t:\t"b"}\t \n',  # spaces and tabs between tokens
    b'{"filters_from":null,"zz":"x\\u0000","Seq":1,"seq ":true,"r":"a","xx":1,"xx":2}\n',
    b'{"r":null,"checksum":null,"seq":null,"type":null}\n',
    b'{"r":""}\n',
]

# refused by the scanner (pyarrow refuses, gives another table, or its table is refused by the line count); never
# a line `null` first in a file here: pyarrow 26 crashes (SIGSEGV) on it
REFUSED = [
    # numbers pyarrow refuses in an int field, or JSON does not have
    b'{"seq":01}\n', b'{"seq":1.0}\n', b'{"seq":1e3}\n', b'{"seq":1E3}\n', b'{"seq":+1}\n', b'{"seq":-}\n',
    b'{"seq":9223372036854775808}\n', b'{"seq":-9223372036854775809}\n', b'{"seq":18446744073709551616}\n',
    b'{"type":2147483648}\n', b'{"type":-2147483649}\n',
    # a value of another type
    b'{"seq":"1"}\n', b'{"seq":true}\n', b'{"checksum":1}\n', b'{"checksum":"true"}\n', b'{"checksum":True}\n',
    b'{"r":1}\n', b'{"r":true}\n', b'{"r":{}}\n', b'{"r":[]}\n', b'{"r":nul}\n',
    # strings: lone surrogates, bad escapes, raw control characters, bad UTF-8 (which pyarrow takes as it is)
    b'{"r":"\\ud83d"}\n', b'{"r":"\\ude00"}\n', b'{"r":"\\ud83dx"}\n', b'{"r":"\\ud83d\\u0041"}\n',
    b'{"r":"\\x"}\n', b'{"r":"\\u12"}\n', b'{"r":"a\x01b"}\n', b'{"r":"a\tb"}\n', b'{"r":"\xff"}\n',
    b'{"r":"\xc0\x80"}\n', b'{"r":"\xed\xa0\x80"}\n', b'{"r":"\xf4\x90\x80\x80"}\n', b'{"r":"\xc3"}\n',
    # unknown keys: a value pyarrow refuses, or one the scanner does not check (pyarrow takes those)
    b'{"xx":"\xff"}\n', b'{"xx":"\\ud83d"}\n', b'{"xx":1.5}\n', b'{"xx":{"a":[1]}}\n', b'{"xx":[]}\n',
    # repeated keys; keys written with an escape (pyarrow decodes it), not in ASCII, with DEL
    b'{"r":"a","r":"b"}\n', b'{"r":null,"r":"b"}\n', b'{"seq":1,"seq":1}\n', b'{"\\u0072":"a"}\n',
    b'{"r\xc3\xa9":"a"}\n', b'{"a\x7fb":false}\n',
    # lines: CRLF, blank, whitespace only, two objects, no final newline, not an object, a BOM, torn
    b'{"r":"a"}\r\n', b'{"r":"a"}\n\n', b'{"r":"a"}\n \n', b'{"r":"a"}{"r":"b"}\n', b'{"r":"a"}', b'{"r":"a",}\n',
    b"[1]\n", b"1\n", b'\xef\xbb\xbf{"r":"a"}\n', b"", b"\n", b'{"r":"a"}\n{"r":"a"} null\n', b'{"r":"a"}\n[null]\n',
    b'{"r":"a"\n', b'{"r":"a\n"}\n', b'{"r":"a\\\n"}\n',
]


@pytest.mark.parametrize("raw", TAKEN)
def test_edge_cases_taken(raw: bytes) -> None:
    assert _check(raw) is not None


@pytest.mark.parametrize("raw", REFUSED)
def test_edge_cases_refused(raw: bytes) -> None:
    assert _check(raw) is None


# --- random ledgers ------------------------------------------------------------------------------------------

_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CHARS = st.one_of(st.characters(codec="utf-8"), st.sampled_from("\x00\x1f\x7f\"\\/\b\n\té\u2028\uffff😀𝄞"))
_WS = st.sampled_from(["", "", "", " ", "\t", " \t "])
_UNKNOWN = ["filters_from", "zz", "Seq", "seq ", "_x"]


def _u(cp: int, upper: bool) -> str:
    if cp > 0xFFFF:
        cp -= 0x10000
        return _u(0xD800 + (cp >> 10), upper) + _u(0xDC00 + (cp & 0x3FF), upper)
    s = f"\\u{cp:04x}"
    return s.upper().replace("\\U", "\\u") if upper else s


@st.composite
def _string(draw: Any) -> str:
    """A JSON string, each character written raw (where JSON allows), as a short escape or as \\uXXXX."""
    out = ['"']
    for c, how in draw(st.lists(st.tuples(_CHARS, st.integers(0, 3)), max_size=12)):
        if how == 0 and c not in '"\\' and ord(c) >= 0x20:
            out.append(c)
        elif how == 1 and c in _SHORT:
            out.append(_SHORT[c])
        else:
            out.append(_u(ord(c), how == 3))
    return "".join(out) + '"'


def _int(kind: str) -> st.SearchStrategy[str]:
    lo, hi = INT_RANGE[kind]
    edges = [lo, lo + 1, -1, 0, 1, hi - 1, hi]
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi)).map(str) | st.just("-0")


_VALUE = {"string": _string(), "int64": _int("int64"), "int32": _int("int32"),
          "bool": st.sampled_from(["true", "false"])}
_SCALAR = st.one_of(_string(), _int("int64"), st.sampled_from(["true", "false", "null"]))


@st.composite
def _line(draw: Any) -> str:
    keys = draw(st.lists(st.sampled_from(NAMES + _UNKNOWN), unique=True, max_size=len(NAMES)))
    members = []
    for k in keys:
        v = draw(_SCALAR if k not in TYPES else st.just("null") | _VALUE[TYPES[k]])
        members.append(f'"{k}"{draw(_WS)}:{draw(_WS)}{v}')
    sep = draw(_WS) + "," + draw(_WS)
    return draw(_WS) + "{" + draw(_WS) + sep.join(members) + draw(_WS) + "}" + draw(_WS) + "\n"


_LEDGER = st.lists(_line(), min_size=1, max_size=25).map(lambda lines: "".join(lines).encode())


@settings(max_examples=300, deadline=None)
@given(_LEDGER)
def test_random_ledgers(raw: bytes) -> None:
    """Random valid ledgers: the scanner takes every one (they are all in its subset), pyarrow's table."""
    assert _check(raw) is not None


# one thing broken in a valid ledger: a line replaced or added, or the bytes changed
_BAD_LINES = [b.rstrip(b"\n") for b in REFUSED if b.endswith(b"\n") and b.count(b"\n") == 1] + [
    b'{"file":12}', b'{"start":"4"}', b'{"count":1.5}', b'{"type":4294967296}', b'{"r":"ev","r":"ev"}',
    b'{"zz":{"a":1},"r":"ev"}', b'{"r":"ev"} {"r":"ev"}', b"", b'{"peer":"\\ud800"}', b'{"user":"\x80"}',
]


@st.composite
def _broken(draw: Any) -> bytes:
    raw = draw(_LEDGER)
    lines = raw.split(b"\n")[:-1]
    how = draw(st.sampled_from(["replace", "insert", "byte", "insert_byte", "delete", "no_newline", "crlf"]))
    at = draw(st.integers(0, len(lines) - 1))
    if how in ("replace", "insert"):
        lines[at:at + (how == "replace")] = [draw(st.sampled_from(_BAD_LINES))]
        return b"".join(line + b"\n" for line in lines)
    if how == "no_newline":
        return raw[:-1]
    if how == "crlf":
        lines[at] += b"\r"
        return b"".join(line + b"\n" for line in lines)
    i = draw(st.integers(0, len(raw) - 1))
    if how == "delete":
        return raw[:i] + raw[i + 1:]
    b = bytes([draw(st.integers(0, 255))])
    return raw[:i] + b + raw[i + (how == "byte"):]


@settings(max_examples=500, deadline=None)
@given(_broken())
def test_broken_ledgers(raw: bytes) -> None:
    """Whatever the scanner takes of a damaged ledger is pyarrow's table, and nothing pyarrow refuses."""
    _check(raw)
