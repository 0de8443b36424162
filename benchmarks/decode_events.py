"""``python -m benchmarks.decode_events [--seconds S]``: µs per event body for each decoder of protocol.events.

Samples are the real events of tests/data/oracle/dump/mysql-bin.00000{1,2,3} (MariaDB 10.11), plus built
bodies for the types those files lack (INTVAR, RAND, a v2 and a compressed rows event) and a 50-column
TABLE_MAP (the applier's worst case). Each decoder runs over its samples for about `--seconds`; the table
prints the best of 3 rounds in µs per call. `--tree DIR` measures another checkout's protocol/events.py (e.g.
one before a change) against this one's, side by side.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from binlogd.protocol.constants import CRC_LEN, HEADER_LEN, WRITE_ROWS_COMPRESSED_EVENT, WRITE_ROWS_EVENT

ORACLE = Path(__file__).resolve().parent.parent / "tests" / "data" / "oracle" / "dump"


def oracle_bodies(ev: ModuleType) -> dict[int, list[bytes]]:
    """Bodies (no header, no CRC) of the oracle files' events by type code."""
    out: dict[int, list[bytes]] = {}
    for n in (1, 2, 3):
        data = (ORACLE / f"mysql-bin.00000{n}").read_bytes()
        fde = next(raw for _pos, raw in ev.iter_binlog(data))
        alg = ev.fde_checksum_alg(fde)
        for _pos, raw in ev.iter_binlog(data):
            code = ev.parse_header(raw).type_code
            crc = CRC_LEN if ev._has_crc(code, alg) else 0
            out.setdefault(code, []).append(raw[HEADER_LEN : len(raw) - crc])
    return out


def table_map_50(ev: ModuleType) -> bytes:
    """A TABLE_MAP of 50 INT/VARCHAR columns with optional metadata, as the applier sees on wide tables."""
    types = bytes([3, 15] * 25)
    meta = b"".join(b"\x00\x01" for _ in range(25))
    return ev.encode_table_map(
        ev.TableMapBody(77, 1, b"bench", b"wide", 50, types, meta, b"\xff" * 7, b"\x01\x07" + b"\x00" * 7)
    )


def cases(ev: ModuleType) -> list[tuple[str, Callable[[bytes], object], list[bytes]]]:
    b = oracle_bodies(ev)
    rows_v2 = ev.encode_rows(ev.RowsBody(5, 1, b"\x02\xff" + bytes(40), b"\x00\x01\x02"))
    rows_c = ev.encode_rows(ev.RowsBody(5, 1, ev.compress_payload(b"\x02\xff" + bytes(40)), b""))
    return [
        ("FORMAT_DESCRIPTION", ev.parse_format_description, b[15]),
        ("ROTATE", ev.parse_rotate, b[4]),
        ("QUERY (+status vars)", ev.parse_query, b[2]),
        ("XID", ev.parse_xid, b[16]),
        ("GTID", ev.parse_gtid, b[162]),
        ("GTID_LIST", ev.parse_gtid_list, b[163]),
        ("BINLOG_CHECKPOINT", ev.parse_binlog_checkpoint, b[161]),
        ("ANNOTATE_ROWS", ev.parse_annotate_rows, b[160]),
        ("USER_VAR", ev.parse_user_var, b[14]),
        ("INTVAR", ev.parse_intvar, [ev.encode_intvar(ev.IntvarBody(2, 12345))]),
        ("RAND", ev.parse_rand, [ev.encode_rand(ev.RandBody(1, 2))]),
        ("TABLE_MAP (oracle)", ev.parse_table_map, b[19]),
        ("TABLE_MAP (50 columns)", ev.parse_table_map, [table_map_50(ev)]),
        ("ROWS v1 (oracle)", lambda x: ev.parse_rows(x, 23), b[23] + b[24] + b[25]),
        ("ROWS v2", lambda x: ev.parse_rows(x, WRITE_ROWS_EVENT), [rows_v2]),
        ("ROWS v2 compressed", lambda x: ev.parse_rows(x, WRITE_ROWS_COMPRESSED_EVENT), [rows_c]),
    ]


def per_call_us(fn: Callable[[bytes], object], samples: list[bytes], seconds: float) -> float:
    """Best of 3 rounds, each about seconds/3 long, in µs per decoder call."""
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < 0.01:  # calibrate
        for s in samples:
            fn(s)
        n += 1
    per_round = max(1, int(n * seconds / 3 / 0.01))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(per_round):
            for s in samples:
                fn(s)
        best = min(best, (time.perf_counter() - t0) / (per_round * len(samples)))
    return best * 1e6


def load_events(tree: Path | None) -> ModuleType:
    """protocol/events.py of `tree` (as a standalone module) or of this checkout."""
    if tree is None:
        from binlogd.protocol import events

        return events
    path = tree / "protocol" / "events.py"
    spec = importlib.util.spec_from_file_location("binlogd.protocol._events_other_tree", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seconds", type=float, default=0.3, help="time per decoder (default 0.3)")
    ap.add_argument("--tree", type=Path, help="also measure this checkout's protocol/events.py (column 'other')")
    args = ap.parse_args(argv)
    modules = [load_events(None)] + ([load_events(args.tree)] if args.tree else [])
    columns = [cases(m) for m in modules]
    head = f"{'event body':<24} {'samples':>7} {'µs/event':>9}" + (f" {'other':>9} {'ratio':>6}" if args.tree else "")
    print(head)
    for i, (name, fn, samples) in enumerate(columns[0]):
        line = f"{name:<24} {len(samples):>7} {(us := per_call_us(fn, samples, args.seconds)):>9.2f}"
        if args.tree:
            other = per_call_us(columns[1][i][1], columns[1][i][2], args.seconds)
            line += f" {other:>9.2f} {other / us:>5.1f}x"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
