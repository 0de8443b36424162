"""Record the multi-domain MariaDB 10.11 captures: .venv/bin/python -m tests.data.oracle.multidomain.record [--out DIR]

Starts a private MariaDB 10.11 primary (the oracle's: server_id 1, ROW, annotate events, CRC32), runs workload.sql
(four GTID domains, three server_ids, waiting at each FLUSH BINARY LOGS for the new file's checkpoint so every run
has the same layout), rotates once more so files 1-3 are closed, then records the COM_BINLOG_DUMP streams of
variants() with the tests' own dump client: file/position connects before, inside and after each domain's first
group in file 2 (capabilities 0/2/4, skip off/on), starts in the middle of an event, GTID connects from every
replica state along the binlog, with some domains left out, with states the binlog cannot serve (ahead, diverged,
unknown server_id or domain), with START SLAVE UNTIL master_gtid_pos (@slave_until_gtid), and, after PURGE BINARY
LOGS TO file 2, the connects that then need the purged file. Last, dump/corrupt: eight more closed files of about 23
KiB, each damaged on purpose while the primary is stopped, and its 1236 texts for dumps from several start
positions. Default DIR: dump/ beside this file; a recording is published there only once it is complete. A re-run
changes only run-dependent bytes (timestamps, CRCs, xids: ../shape.py).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pymysql

from binlogd.testing.mariadb import HarnessError, MariaDB

from ..records import write_capture
from ..regenerate import WORKLOAD_CHARSET, capture, show_binlog_events, start_primary, wait_checkpoint
from ..sqlscript import statements
from ..variants import Variant

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "dump"
WORKLOAD = HERE / "workload.sql"
FILES = [f"mysql-bin.00000{n}" for n in (1, 2, 3, 4)]
PURGED_PREFIX = "purged_"
CORRUPT_DIR = "corrupt"
CORRUPT_FIRST = 5  # files 5-12 get a damaged copy each; 13 and 14 are the ones the restarted primary leaves
BIG_ROWS = 60  # rows per damaged file: about 25 KiB, so reads cross MariaDB's 8 KiB IO_CACHE buffers


@dataclass(frozen=True, slots=True)
class Group:
    """One event group of the binlog as SHOW BINLOG EVENTS shows it."""

    file: str
    gtid: str  # d-s-n
    start: int  # the GTID event's position
    second: int  # the position of the group's second event (a boundary inside the group)
    end: int  # the end of its last event

    @property
    def domain(self) -> int:
        return int(self.gtid.split("-")[0])


def run_workload(primary: MariaDB) -> None:
    """Every statement in one session; after each FLUSH BINARY LOGS, wait for the new file's second checkpoint
    (InnoDB writes it asynchronously: waiting keeps it at the same place in every run)."""
    conn = primary.connect(charset=WORKLOAD_CHARSET)
    file_no = 1
    try:
        with conn.cursor() as cur:
            for stmt in statements(WORKLOAD.read_text()):
                cur.execute(stmt)
                if stmt.upper() == "FLUSH BINARY LOGS":
                    file_no += 1
                    wait_checkpoint(primary, f"mysql-bin.{file_no:06d}")
            cur.execute("FLUSH BINARY LOGS")  # file 4 becomes the active file; 1-3 end in a ROTATE
            wait_checkpoint(primary, FILES[3])
    finally:
        conn.close()


def groups(primary: MariaDB, file: str) -> list[Group]:
    rows = primary.query(f"SHOW BINLOG EVENTS IN '{file}'")
    out: list[Group] = []
    for i, row in enumerate(rows):
        if row[2] != "Gtid":
            continue
        gtid = str(row[5]).split()[-1]
        j = i + 1
        while not (rows[j][2] == "Xid" or (rows[j][2] == "Query" and str(rows[j][5]) in ("COMMIT", "ROLLBACK"))
                   or not str(row[5]).startswith("BEGIN")):
            j += 1
        out.append(Group(file, gtid, int(row[1]), int(rows[i + 1][1]), int(rows[j][4])))
    return out


def _state(done: Sequence[Group]) -> str:
    """What a replica that applied ``done`` sends as @slave_connect_state (gtid_slave_pos: last GTID per domain)."""
    last: dict[int, str] = {}
    for g in done:
        last[g.domain] = g.gtid
    return ",".join(last.values())


def variants(g2: list[Group], g3: list[Group], g1: list[Group]) -> list[Variant]:
    """All variants in recording order (the purged ones last); names say what each one is."""
    f2 = g2[0].file
    out: list[Variant] = []
    seen: set[int] = set()
    for g in g2:  # each domain's first group in file 2: before it, at its second event, after it
        if g.domain in seen:
            continue
        seen.add(g.domain)
        for where, pos in (("before", g.start), ("ingroup", g.second), ("after", g.end)):
            for cap in ("0", "2", "4"):
                for skip in (0, 1):
                    out.append(Variant(f"f2_d{g.domain}_{where}_cap{cap}_skip{skip}", capability=cap, skip=skip,
                                       file=f2, pos=pos))
        out.append(Variant(f"f2_d{g.domain}_midevent", file=f2, pos=g.start + 7))
    out += [Variant(f"f3_start_cap{c}", capability=c, file=g3[0].file) for c in ("0", "2", "4")]
    out.append(Variant("f2_beyond_end", file=f2, pos=g2[-1].end + 1000))
    history = g1 + g2 + g3
    for k in range(len(history) + 1):  # a replica at every point of the binlog
        state = _state(history[:k])
        out.append(Variant(f"gtid_after{k:02d}_cap4", gtid=state))
        if k % 3 == 1:
            out.append(Variant(f"gtid_after{k:02d}_cap4_skip1", gtid=state, skip=1))
            out.append(Variant(f"gtid_after{k:02d}_cap2", gtid=state, capability="2"))
    first = {g.domain: g for g in reversed(g2)}
    d10, d7 = first[10].gtid, first[7].gtid
    out += [Variant("gtid_only_d10_cap4", gtid=d10),  # domain 0 left out: file 2's GTID_LIST names it
            Variant("gtid_d0_d7_cap4", gtid=f"{g1[-1].gtid},{d7}"),
            Variant("gtid_ahead_cap4", gtid="0-1-100"),
            Variant("gtid_diverged_cap4", gtid=f"0-1-{_seq_of_server(history, 0, 3)}"),
            Variant("gtid_unknown_server_cap4", gtid="10-9-1"),
            Variant("gtid_unknown_domain_cap4", gtid=f"{g1[-1].gtid},99-1-5"),
            Variant("gtid_strict_hole_cap4", gtid=f"0-3-{_seq_of_server(history, 0, 3) - 1}"),
            # several domains, one of them ahead / naming a server_id the domain never had
            Variant("gtid_ahead_in_d10_cap4", gtid=f"{first[0].gtid},10-2-100,2-1-1"),
            Variant("gtid_unknown_server_in_d7_cap4", gtid=f"{first[0].gtid},{d10},7-9-1"),
            Variant("gtid_unknown_domains_cap4", gtid=f"{first[0].gtid},{d10},98-1-1,99-2-7")]
    all_at = _state(g1 + g2)
    out += [UntilVariant("until_inside_file2", gtid=g1[-1].gtid, until=f"{first[0].gtid},{d10}"),
            UntilVariant("until_names_every_domain", gtid=f"{first[0].gtid},{d10}", until="0-3-5,10-2-2,2-1-1,7-2-1"),
            UntilVariant("until_missing_seq", gtid="0-3-5,10-2-2,2-1-1,7-2-1", until="0-1-5,7-2-2"),
            UntilVariant("until_reached_before_start", gtid=all_at, until=first[0].gtid),
            UntilVariant("until_file3", gtid=all_at, until=_state(g3)),
            UntilVariant("until_from_empty", gtid="", until="0-3-5"),
            UntilVariant("until_malformed", gtid=g1[-1].gtid, until="0-1")]
    out += [Variant(f"{PURGED_PREFIX}gtid_file1_cap4", gtid=g1[0].gtid),
            Variant(f"{PURGED_PREFIX}gtid_file2_cap4", gtid=g1[-1].gtid),
            Variant(f"{PURGED_PREFIX}file1_cap4", file=FILES[0]),
            Variant(f"{PURGED_PREFIX}gtid_empty_cap4", gtid="")]
    return out


def _seq_of_server(history: list[Group], domain: int, server: int) -> int:
    for g in history:
        d, s, n = (int(x) for x in g.gtid.split("-"))
        if d == domain and s == server:
            return n
    raise HarnessError(f"no GTID of server {server} in domain {domain}: is workload.sql the one of the captures?")


def record(primary: MariaDB, out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    run_workload(primary)
    (out / "show_binlog_events.txt").write_text(show_binlog_events(primary, FILES))
    for f in FILES:
        shutil.copyfile(primary.datadir / f, out / f)
    chosen = variants(groups(primary, FILES[1]), groups(primary, FILES[2]), groups(primary, FILES[0]))
    strict = {"gtid_strict_hole_cap4"}
    purged = False
    for v in chosen:
        if v.name.startswith(PURGED_PREFIX) and not purged:
            primary.query(f"PURGE BINARY LOGS TO '{FILES[1]}'")
            purged = True
        doc, raw = capture(primary, _strict(v) if v.name in strict else v)
        write_capture(out, v.name, doc, raw)
    names = [v.name for v in chosen]
    return names + record_corrupt(primary, out / CORRUPT_DIR)


def _big_files(primary: MariaDB) -> list[str]:
    """One more closed file per damage, of about 23 KiB (BIG_ROWS autocommit groups; tornfar twice as many)."""
    conn = primary.connect(charset=WORKLOAD_CHARSET)
    names = []
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE m.big (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB")
            for n, how in enumerate(DAMAGES, CORRUPT_FIRST):
                cur.execute("FLUSH BINARY LOGS")
                names.append(f"mysql-bin.{n:06d}")
                wait_checkpoint(primary, names[-1])
                for i in range(BIG_ROWS * (2 if how == "tornfar" else 1)):
                    cur.execute(f"INSERT INTO m.big VALUES ({n * 1000 + i}, REPEAT('{n % 10}', 150))")
            cur.execute("FLUSH BINARY LOGS")
            wait_checkpoint(primary, f"mysql-bin.{CORRUPT_FIRST + len(DAMAGES):06d}")
    finally:
        conn.close()
    return names


def _events(data: bytes) -> list[tuple[int, int]]:
    out, p = [], 4
    while p + 19 <= len(data):
        n = int.from_bytes(data[p + 9 : p + 13], "little")
        out.append((p, n))
        p += n
    return out


def _damage(path: Path, how: str, others: str) -> list[Variant]:
    """Damage a closed file the way `how` says; return the dumps to record: from 4 and from an event boundary past
    the first 8 KiB or 12 KiB (MariaDB's read buffer then ends at other places), or for a GTID event too short to
    hold a GTID, file/pos dumps with capabilities 0 and 4 and a GTID connect that has to look at it (its state:
    `others`, the other domains' last GTIDs, and a GTID after the damaged one)."""
    data = bytearray(path.read_bytes())
    evs = _events(bytes(data))
    if how == "shortgtid":
        gtids = [(p, n) for p, n in evs if data[p + 4] == 162]
        p, _ = gtids[len(gtids) // 2]
        later = gtids[len(gtids) // 2 + 2][0]
        seq = int.from_bytes(data[later + 19 : later + 27], "little")
        domain = int.from_bytes(data[later + 27 : later + 31], "little")
        server = int.from_bytes(data[later + 5 : later + 9], "little")
        data[p + 9 : p + 13] = (27).to_bytes(4, "little")
        path.write_bytes(bytes(data))
        return [Variant("shortgtid_cap0", capability="0", file=path.name), Variant("shortgtid_cap4", file=path.name),
                Variant("shortgtid_gtid_cap4", gtid=",".join([f"{domain}-{server}-{seq}", *(
                    g for g in others.split(",") if not g.startswith(f"{domain}-"))]))]
    near = {target: min(evs, key=lambda e: abs(e[0] - target)) for target in (5000, 12000, 16000)}
    mid = next(p for p, _ in evs if p > 8192)
    starts = [4, mid]
    if how == "toolarge":  # an event length over 1 GiB: LOG_READ_TOO_LARGE
        data[near[16000][0] + 9 : near[16000][0] + 13] = (0xFFFFFFF0).to_bytes(4, "little")
    elif how == "bogus":  # an event length under 19: LOG_READ_BOGUS
        data[near[16000][0] + 9 : near[16000][0] + 13] = (7).to_bytes(4, "little")
    elif how == "tornbody":  # the file ends inside an event's body: LOG_READ_TRUNC
        del data[near[16000][0] + 100 :]
    elif how == "tornheader":  # the file ends inside an event's header
        del data[near[16000][0] + 10 :]
    elif how == "longer":  # an event claims 5000 more bytes: the reads that follow are misaligned
        p, n = near[12000]
        data[p + 9 : p + 13] = (n + 5000).to_bytes(4, "little")
    elif how == "tornspan":  # the file ends inside an event that crosses a buffer boundary (16 KiB from 4)
        p, n = next((p, n) for p, n in evs if p + HEADER < 16384 < p + n)
        del data[min(p + n - 1, 16384 + 20) :]
        starts.append(next(p for p, _ in evs if p > 12288 + 100))
    elif how == "tornfar":  # the same at 32 KiB, from 4 (a buffer ends there) and from a start whose seek
        # leaves the first buffer, so that its refills end at 36 KiB instead
        p, n = next((p, n) for p, n in evs if p + HEADER < 32768 < p + n)
        del data[min(p + n - 1, 32768 + 20) :]
        starts = [4, next(p for p, _ in evs if p > 20480 + 100)]
    path.write_bytes(bytes(data))
    return [Variant(f"{how}_from{pos}", file=path.name, pos=pos) for pos in starts]


HEADER = 19
DAMAGES = ("toolarge", "bogus", "tornbody", "tornheader", "longer", "tornspan", "shortgtid", "tornfar")


def record_corrupt(primary: MariaDB, out: Path) -> list[str]:
    """Damaged closed files served by a real primary (restarted on them): its 1236 texts and "last byte read"
    positions. Their own directory: the damaged files and the one the restart opens."""
    others = str(primary.query("SELECT @@gtid_binlog_pos")[0][0])
    names = _big_files(primary)
    primary.stop()
    dumps = [v for f, how in zip(names, DAMAGES, strict=True) for v in _damage(primary.datadir / f, how, others)]
    primary.restart()
    out.mkdir(parents=True, exist_ok=True)
    recorded = []
    for v in dumps:
        doc, raw = capture(primary, v)
        write_capture(out, v.name, doc, raw)
        recorded.append(f"{CORRUPT_DIR}/{v.name}")
    files = sorted(p.name for p in primary.datadir.glob("mysql-bin.[0-9]*") if int(p.suffix[1:]) >= CORRUPT_FIRST)
    for f in files:
        shutil.copyfile(primary.datadir / f, out / f)
    return recorded


def _strict(v: Variant) -> Variant:
    """The strict-mode variant: Variant has no field for it, so its statements are patched in capture()."""
    return StrictVariant(**{f: getattr(v, f) for f in v.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class StrictVariant(Variant):
    def session_statements(self) -> list[str]:
        return [s.replace("@slave_gtid_strict_mode=0", "@slave_gtid_strict_mode=1")
                for s in Variant.session_statements(self)]


@dataclass(frozen=True, slots=True)
class UntilVariant(Variant):
    """A GTID connect with START SLAVE UNTIL master_gtid_pos: the replica's IO thread sets @slave_until_gtid."""

    until: str = ""

    def session_statements(self) -> list[str]:
        return [*Variant.session_statements(self), f"SET @slave_until_gtid='{self.until}'"]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.data.oracle.multidomain.record",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where to write (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="binlogd-multidomain-", dir="/tmp"))
    primary: MariaDB | None = None
    try:
        primary = start_primary(base)
        names = record(primary, base / "new")
        if args.out.exists():
            shutil.rmtree(args.out)
        shutil.copytree(base / "new", args.out)
    except (HarnessError, TimeoutError, OSError, pymysql.Error) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if primary is not None:
            primary.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(f"{len(names)} captures and the binlog files written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
