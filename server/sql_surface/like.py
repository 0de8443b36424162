"""LIKE pattern matching with MariaDB's escape rules (SHOW ... LIKE, WHERE ... LIKE)."""

from __future__ import annotations


def like_match(s: str, pattern: str, escape: str = "\\") -> bool:
    """SQL LIKE, case-insensitive (MariaDB's default _ci collations).

    Matches the '%'-separated segments left to right (the leftmost fit of each segment is always the best), so
    it runs in about linear time and never backtracks exponentially, whatever a client sends.
    """
    s = s.casefold()
    p = pattern.casefold()
    segments: list[list[str | None]] = [[]]  # None is '_' (any one character)
    i = 0
    while i < len(p):
        ch = p[i]
        if ch == escape and i + 1 < len(p):
            segments[-1].append(p[i + 1])
            i += 2
            continue
        if ch == "%":
            segments.append([])
        else:
            segments[-1].append(None if ch == "_" else ch)
        i += 1
    if len(segments) == 1:
        return len(segments[0]) == len(s) and _seg_at(s, 0, segments[0])
    first, last = segments[0], segments[-1]
    if len(first) + len(last) > len(s) or not _seg_at(s, 0, first) or not _seg_at(s, len(s) - len(last), last):
        return False
    pos, end = len(first), len(s) - len(last)
    for seg in segments[1:-1]:
        found = _seg_find(s, seg, pos, end)
        if found < 0:
            return False
        pos = found + len(seg)
    return True


def _seg_at(s: str, at: int, seg: list[str | None]) -> bool:
    return all(c is None or s[at + k] == c for k, c in enumerate(seg))


def _seg_find(s: str, seg: list[str | None], start: int, end: int) -> int:
    """Leftmost index >= start where seg fits before end, or -1."""
    if not seg:
        return start
    if None not in seg:
        return s.find("".join(seg), start, end)  # type: ignore[arg-type]
    for at in range(start, end - len(seg) + 1):
        if _seg_at(s, at, seg):
            return at
    return -1
