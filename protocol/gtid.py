"""MariaDB GTIDs: text form `domain-server-seq`, the binlog state, and header peeks of GTID events."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .constants import GTID_LIST_COUNT_MASK, HEADER_LEN


class GtidError(ValueError):
    """A GTID position text MariaDB refuses: `code` is 1941 (ER_INCORRECT_GTID_STATE) or 1943
    (ER_DUPLICATE_GTID_DOMAIN), `str()` is MariaDB's message."""

    def __init__(self, message: str, code: int = 1941) -> None:
        super().__init__(message)
        self.code = code

    @property
    def duplicate_domain(self) -> bool:
        return self.code == 1943


@dataclass(frozen=True, slots=True, order=True)
class Gtid:
    domain: int
    server: int
    seq: int

    def __str__(self) -> str:
        return f"{self.domain}-{self.server}-{self.seq}"


def parse_gtid(text: str) -> Gtid:
    parts = text.strip().split("-")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise GtidError("Could not parse GTID list")
    d, s, n = (int(p) for p in parts)
    if d > 0xFFFFFFFF or s > 0xFFFFFFFF or n > 0xFFFFFFFFFFFFFFFF:
        raise GtidError("Could not parse GTID list")
    return Gtid(d, s, n)


def parse_gtid_list(text: str) -> dict[int, Gtid]:
    """`d-s-n,d-s-n` -> {domain: Gtid}, like slave_connection_state::load: spaces are allowed, an empty
    item (`0-1-4,`) is not, and a domain may appear once."""
    out: dict[int, Gtid] = {}
    if not text.strip():
        return out
    for item in text.split(","):
        g = parse_gtid(item)
        old = out.get(g.domain)
        if old is not None:
            raise GtidError(f"GTID {g} and {old} conflict (duplicate domain id {g.domain})", code=1943)
        out[g.domain] = g
    return out


def format_gtid_list(gtids: list[Gtid] | tuple[Gtid, ...]) -> str:
    return ",".join(str(g) for g in gtids)


class BinlogState:
    """Last seq_no per (domain, server), with each domain's most recent GTID remembered.

    `as_list()` orders entries the way MariaDB's `rpl_binlog_state::get_gtid_list` does: per domain,
    the other servers' entries first and the domain's last GTID last (the start-file search relies on it).
    """

    def __init__(self) -> None:
        self._by_domain: dict[int, dict[int, int]] = {}
        self._last: dict[int, Gtid] = {}

    def update(self, g: Gtid) -> None:
        self._by_domain.setdefault(g.domain, {})[g.server] = g.seq
        self._last[g.domain] = g

    def update_all(self, domains: list[int], servers: list[int], seqs: list[int]) -> None:
        """`update()` with each GTID (domains[i], servers[i], seqs[i]) in turn, without an object per GTID: only
        what the last ones leave matters (each pair's last seq, each domain's last GTID), and the pairs and domains
        are entered in the order they first appear, so the state, its order included, is the same."""
        pairs: dict[tuple[int, int], int] = {}
        last: dict[int, tuple[int, int]] = {}
        for d, s, n in zip(domains, servers, seqs, strict=True):
            pairs[d, s] = n  # an existing key keeps its place: first appearance order, last value
            last[d] = s, n
        for (d, s), n in pairs.items():
            self._by_domain.setdefault(d, {})[s] = n
            if d not in self._last:
                self._last[d] = Gtid(d, s, n)  # its place; the value is set below
        for d, (s, n) in last.items():
            self._last[d] = Gtid(d, s, n)

    def load(self, gtids: list[Gtid]) -> None:
        for g in gtids:
            self.update(g)

    def copy(self) -> BinlogState:
        c = BinlogState()
        c._by_domain = {d: dict(m) for d, m in self._by_domain.items()}
        c._last = dict(self._last)
        return c

    def last(self, domain: int) -> Gtid | None:
        return self._last.get(domain)

    def seq_of(self, domain: int, server: int) -> int | None:
        return self._by_domain.get(domain, {}).get(server)

    def as_list(self) -> list[Gtid]:
        out: list[Gtid] = []
        for d in sorted(self._by_domain):
            last = self._last[d]
            out.extend(Gtid(d, s, n) for s, n in self._by_domain[d].items() if s != last.server)
            out.append(last)
        return out

    def current_pos(self) -> list[Gtid]:
        """@@gtid_binlog_pos: the last GTID of every domain."""
        return [self._last[d] for d in sorted(self._last)]

    def __bool__(self) -> bool:
        return bool(self._last)


_GTID_PEEK = struct.Struct("<QIB")


def peek_gtid(ev: bytes | bytearray | memoryview, offset: int = 0) -> tuple[int, int, int, int]:
    """(domain, server, seq, flags2) of a GTID event starting at `offset`; raises ValueError if short."""
    if len(ev) - offset < HEADER_LEN + 13:
        raise ValueError("GTID event too short")
    (server,) = struct.unpack_from("<I", ev, offset + 5)
    seq, domain, flags2 = _GTID_PEEK.unpack_from(ev, offset + HEADER_LEN)
    return domain, server, seq, flags2


def peek_gtid_list(ev: bytes | bytearray | memoryview, offset: int, data_end: int) -> tuple[list[Gtid], int]:
    """(entries, flags) of a GTID_LIST event body between offset+19 and data_end (CRC excluded)."""
    p = offset + HEADER_LEN
    if data_end - p < 4:
        raise ValueError("GTID_LIST event too short")
    (cf,) = struct.unpack_from("<I", ev, p)
    count = cf & GTID_LIST_COUNT_MASK
    p += 4
    if data_end - p < 16 * count:
        raise ValueError("GTID_LIST count exceeds event length")
    out = [Gtid(*struct.unpack_from("<IIQ", ev, p + 16 * i)) for i in range(count)]
    return out, cf & ~GTID_LIST_COUNT_MASK
