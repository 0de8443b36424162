"""The record order of MariaDB's HASH (mysys/hash.c), which decides the order of the GTIDs in its GTID_LISTs.

MariaDB builds a Gtid_list event from a `rpl_binlog_state` by walking its domain HASH, and each domain's
server_id HASH, in array order (`my_hash_element(hash, i)`). That order is neither sorted nor the insertion
order: `my_hash_insert` is linear hashing that moves records between slots as the table grows. A fake GTID_LIST
identical to MariaDB's must list them in that order, so this module replays the same insert algorithm over
4-byte little-endian keys hashed with the binary collation's `my_hash_sort_bin` (no deletes: a binlog
state only grows while a dump reads it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .gtid import Gtid

T = TypeVar("T")
NO_RECORD = 0xFFFFFFFF
_LOWFIND, _LOWUSED, _HIGHFIND, _HIGHUSED = 1, 2, 4, 8
_U64 = (1 << 64) - 1


def hash_sort_bin(key: bytes) -> int:
    """my_hash_sort(&my_charset_bin, key): nr1 starts at 1 and nr2 at 4 (64-bit `ulong`s), truncated to 32 bits."""
    nr1, nr2 = 1, 4
    for b in key:
        nr1 = (nr1 ^ ((((nr1 & 63) + nr2) * b) + (nr1 << 8))) & _U64
        nr2 += 3
    return nr1 & 0xFFFFFFFF


def _mask(hash_nr: int, buffmax: int, maxlength: int) -> int:
    if (hash_nr & (buffmax - 1)) < maxlength:
        return hash_nr & (buffmax - 1)
    return hash_nr & ((buffmax >> 1) - 1)


@dataclass(slots=True)
class _Link(Generic[T]):
    next: int
    hash_nr: int
    data: T | None


@dataclass
class MariaHash(Generic[T]):
    """Records keyed by a uint32 (domain_id or server_id), iterated in MariaDB's HASH array order."""

    _links: list[_Link[T]] = field(default_factory=list)
    _index: dict[int, T] = field(default_factory=dict)
    _blength: int = 1

    def get(self, key: int) -> T | None:
        return self._index.get(key)

    def __iter__(self) -> Iterator[T]:
        return (link.data for link in self._links if link.data is not None)

    def __len__(self) -> int:
        return len(self._links)

    def insert(self, key: int, data: T) -> None:
        """my_hash_insert of a new key (callers look the key up first, as HASH_UNIQUE users do)."""
        h = hash_sort_bin(key.to_bytes(4, "little"))
        links = self._links
        records = len(links)
        links.append(_Link(NO_RECORD, 0, None))
        empty = self._split(records)
        idx = _mask(h, self._blength, records + 1)
        if idx == empty:
            links[idx].next = NO_RECORD
        else:
            moved = links[idx]
            links[empty] = _Link(moved.next, moved.hash_nr, moved.data)
            home = _mask(moved.hash_nr, self._blength, records + 1)
            if home == idx:
                links[idx].next = empty
            else:
                links[idx].next = NO_RECORD
                self._movelink(idx, home, empty)
        links[idx].data, links[idx].hash_nr = data, h
        self._index[key] = data
        if len(links) == self._blength:
            self._blength *= 2

    def _split(self, records: int) -> int:
        """Relink the bucket that the new last slot splits into a low and a high chain; return the free slot."""
        links, blength = self._links, self._blength
        empty = records
        halfbuff = blength >> 1
        idx = first_index = records - halfbuff
        flag = 0
        gpos = gpos2 = 0
        rec: tuple[T | None, int] = (None, 0)
        rec2: tuple[T | None, int] = (None, 0)
        if idx != records:
            while True:
                pos = idx
                hash_nr = links[pos].hash_nr
                if flag == 0 and _mask(hash_nr, blength, records) != first_index:
                    break
                if not hash_nr & halfbuff:  # stays in the low bucket
                    if not flag & _LOWFIND:
                        if flag & _HIGHFIND:
                            flag = _LOWFIND | _HIGHFIND
                            gpos, empty = empty, pos
                        else:
                            flag = _LOWFIND | _LOWUSED
                            gpos = pos
                        rec = (links[pos].data, hash_nr)
                    else:
                        if not flag & _LOWUSED:
                            links[gpos].data, links[gpos].hash_nr = rec
                            links[gpos].next = pos
                            flag = (flag & _HIGHFIND) | _LOWFIND | _LOWUSED
                        gpos = pos
                        rec = (links[pos].data, hash_nr)
                elif not flag & _HIGHFIND:  # moves to the high bucket
                    flag = (flag & _LOWFIND) | _HIGHFIND
                    gpos2, empty = empty, pos
                    rec2 = (links[pos].data, hash_nr)
                else:
                    if not flag & _HIGHUSED:
                        links[gpos2].data, links[gpos2].hash_nr = rec2
                        links[gpos2].next = pos
                        flag = (flag & _LOWFIND) | _HIGHFIND | _HIGHUSED
                    gpos2 = pos
                    rec2 = (links[pos].data, hash_nr)
                idx = links[pos].next
                if idx == NO_RECORD:
                    break
            if flag & (_LOWFIND | _LOWUSED) == _LOWFIND:
                links[gpos].data, links[gpos].hash_nr = rec
                links[gpos].next = NO_RECORD
            if flag & (_HIGHFIND | _HIGHUSED) == _HIGHFIND:
                links[gpos2].data, links[gpos2].hash_nr = rec2
                links[gpos2].next = NO_RECORD
        return empty

    def _movelink(self, find: int, next_link: int, newlink: int) -> None:
        links = self._links
        while True:
            old = next_link
            next_link = links[old].next
            if next_link == find:
                break
        links[old].next = newlink


class HashedBinlogState:
    """A `rpl_binlog_state` as MariaDB fills it while a dump reads (until_binlog_state): last seq_no per
    (domain, server), each domain's latest GTID, listed in HASH order like `get_gtid_list`."""

    def __init__(self) -> None:
        self._domains: MariaHash[MariaHash[list[Gtid]]] = MariaHash()
        self._last: dict[int, Gtid] = {}

    def update(self, g: Gtid) -> None:
        servers = self._domains.get(g.domain)
        if servers is None:
            servers = MariaHash()
            self._domains.insert(g.domain, servers)
        slot = servers.get(g.server)
        if slot is None:
            servers.insert(g.server, [g])
        else:
            slot[0] = g
        self._last[g.domain] = g

    def as_list(self) -> list[Gtid]:
        """Per domain in HASH order: its other servers' GTIDs in HASH order, then the domain's latest GTID."""
        out: list[Gtid] = []
        for servers in self._domains:
            entries = [slot[0] for slot in servers]
            last = self._last[entries[0].domain]
            out += [g for g in entries if g.server != last.server]
            out.append(last)
        return out
