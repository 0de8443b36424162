"""`record_probes.probe_ledger` against a plain Python count over the same events (no Spark, no server).

Random files of contiguous events (random types, flags, GTID standalone bits) and random ledger records: ranges on
and off the events' boundaries, past a file's end, in a file with no events or not in the directory, policy runs and
other actions, and records that are not probed (conn/close, fake). Every BOUNDS value, per-key count and byte sum, and
the prefix counts at the timeline's slice boundaries equal what a scan of the events gives.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from binlogd.spark_analytics.record_probes import (
    BOUND_TYPES,
    c0,
    event_tables_of,
    nb,
    nn,
    probe_ledger,
    slice_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

FILES = ["b.000001", "b.000002", "b.000003"]  # the third has no events; "x.000009" is not in the directory
SLICES = 7


def _key(e: dict[str, Any]) -> int:
    return e["type"] * 4 + (2 if e["flags"] & 0x8000 else 0) + (1 if e["gtid_standalone"] else 0)


@st.composite
def scenarios(draw: Any) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    events: dict[str, list[dict[str, Any]]] = {}
    for f in FILES[:2]:
        pos, evs = 4, []
        for o in range(draw(st.integers(1, 40))):
            length = draw(st.integers(19, 60))
            typ = draw(st.sampled_from([2, 15, 16, 19, 23, 160, 162]))
            evs.append({"file": f, "start": pos, "end": pos + length, "ordinal": o, "type": typ,
                        "flags": draw(st.sampled_from([0, 0x8000, 0x20])), "length": length,
                        "gtid_standalone": draw(st.booleans()) if typ == 162 else None})
            pos += length
        events[f] = evs
    records = []
    for seq in range(draw(st.integers(0, 30))):
        f = draw(st.sampled_from([*FILES, "x.000009"]))
        evs = events.get(f, [])
        bounds = sorted({4, *(e["end"] for e in evs)})
        a = draw(st.sampled_from(bounds) | st.integers(0, 2500))
        b = draw(st.sampled_from(bounds) | st.integers(0, 2500))
        action = draw(st.sampled_from(["sent", "hole", "dummy", "begin", "renamed", "fake"]))
        records.append({"r": draw(st.sampled_from(["ev", "ev", "ev", "conn"])), "seq": seq, "file": f,
                        "start": min(a, b), "end": max(a, b), "action": action,
                        "policy": draw(st.sampled_from([None, 0, 3]))})
    return events, records


def _before(evs: list[dict[str, Any]], key: int, pos: int) -> tuple[int, int]:
    hit = [e for e in evs if _key(e) == key and e["start"] < pos]
    return len(hit), sum(e["length"] for e in hit)


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_probes_equal_a_scan_of_the_events(scn: tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]
                                           ) -> None:
    events, records = scn
    schema = pa.schema([("file", pa.string()), ("start", pa.int64()), ("end", pa.int64()), ("ordinal", pa.int64()),
                        ("type", pa.int32()), ("flags", pa.int32()), ("length", pa.int32()),
                        ("gtid_standalone", pa.bool_())])
    table = pa.Table.from_pylist([e for f in FILES for e in events.get(f, [])], schema=schema)
    ledger = pa.Table.from_pylist(records, schema=pa.schema([
        ("r", pa.string()), ("seq", pa.int64()), ("file", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
        ("action", pa.string()), ("policy", pa.int64())]))
    stats = {f: {"end": evs[-1]["end"]} for f, evs in events.items()}
    (out,), probes = probe_ledger([ledger], FILES, event_tables_of(table), stats, SLICES)
    keys = sorted({_key(e) for evs in events.values() for e in evs})
    assert probes.keys == keys
    rows = out.to_pylist()
    for rec, row in zip(records, rows, strict=True):
        probed = rec["r"] == "ev" and rec["action"] != "fake"
        evs = events.get(rec["file"], [])
        at_start = [e for e in evs if e["start"] == rec["start"]]
        at_end = [e for e in evs if e["end"] == rec["end"]]
        want = {"s_ord": at_start[0]["ordinal"] if probed and at_start else None,
                "e_type": at_start[0]["type"] if probed and at_start else None,
                "e_flags": at_start[0]["flags"] if probed and at_start else None,
                "e_ord": at_end[0]["ordinal"] if probed and at_end else None}
        assert {n: row[n] for n, _, _ in BOUND_TYPES} == want, (rec, row)
        run = probed and rec["action"] == "sent" and (rec["policy"] or 0) > 0
        for k in keys:
            n0, b0 = _before(evs, k, rec["start"])
            n1, b1 = _before(evs, k, rec["end"])
            assert row[nn(k)] == (n1 - n0 if probed else None), (rec, k)
            assert row[nb(k)] == (b1 - b0 if probed else None), (rec, k)
            assert row[c0(k)] == (n0 if run else None), (rec, k)
    cuts = slice_bounds(FILES, stats, SLICES)
    assert set(probes.bounds) == {f"{f}:{p}" for f, ps in cuts.items() for p in ps}
    for name, counts in probes.bounds.items():
        f, p = name.rsplit(":", 1)
        assert counts == [_before(events.get(f, []), k, int(p))[0] for k in keys], name
