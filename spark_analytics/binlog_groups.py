"""protocol/groups.py's group state machine over a chunk of events given as integer codes, two ways.

`walk_groups` is the state machine itself, one Python step per event: the reference, and what a chunk without GTID
events (or with a malformed one) gets. `vector_groups` gives the same answer with numpy for the usual MariaDB
chunk, where every group from the first GTID event on starts at a GTID event: a group then runs from its GTID to
its first ending event (XID / COMMIT for a transaction, the first event that is not part of a standalone group),
and every event after that and before the next GTID is a group of its own. Only the events before the chunk's first
GTID (a few, carried from the chunk before) go through the loop. `tests/test_audit_source.py` compares the two.

Codes per event (`RangeDecoder._groups` computes them from the headers and the QUERY statements' first words):
CODE_OTHER, CODE_GTID (opens a transaction), CODE_GTID_STANDALONE, CODE_BEGIN, CODE_END (XID, XA PREPARE, COMMIT,
ROLLBACK, XA COMMIT/ROLLBACK), CODE_BAD_GTID (too short to read: it ends its group, groups.py raises on it).
`cont`: the event stays inside a standalone group (groups.PART_OF_GROUP or flag LOG_EVENT_IGNORABLE_F).

Answer per event: the index of its group's first event (-1: a group carried from the chunk before, -2: none) and
`group_end`; plus the state after the chunk (0 outside a group, 1 standalone group, 2 transaction).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

CODE_OTHER, CODE_GTID, CODE_GTID_STANDALONE, CODE_BEGIN, CODE_END, CODE_BAD_GTID = 0, 1, 2, 3, 4, 6
OUTSIDE, STANDALONE, TRANSACTION = 0, 1, 2

Groups = tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], int]


def walk_groups(code: npt.NDArray[np.int8], cont: npt.NDArray[np.bool_], state: int, carried: bool) -> Groups:
    """The state machine, event by event (`carried`: a group is open from the chunk before)."""
    n = len(code)
    gid = [0] * n
    gend = [False] * n
    cont_l = cont.tolist()
    cur = -1 if carried else -2
    for i, c in enumerate(code.tolist()):
        if c in (CODE_GTID, CODE_GTID_STANDALONE):
            cur = i
            gid[i] = i
            state = TRANSACTION if c == CODE_GTID else STANDALONE
            continue
        if state == OUTSIDE:
            gid[i] = i
            if c == CODE_BEGIN:
                cur = i
                state = TRANSACTION
            else:
                gend[i] = True
                cur = -2
            continue
        gid[i] = cur
        if c == CODE_BAD_GTID or (state == STANDALONE and not cont_l[i]) or (state == TRANSACTION and c == CODE_END):
            gend[i] = True
            cur = -2
            if c != CODE_BAD_GTID:
                state = OUTSIDE
    return np.array(gid, dtype=np.int64), np.array(gend, dtype=bool), state


def vector_groups(code: npt.NDArray[np.int8], cont: npt.NDArray[np.bool_], state: int, carried: bool) -> Groups:
    """The same answer as `walk_groups`; numpy from the first GTID event on when the chunk has the usual shape
    (no malformed GTID, no BEGIN outside a GTID group), else the loop."""
    n = len(code)
    is_start = (code == CODE_GTID) | (code == CODE_GTID_STANDALONE)
    starts = np.flatnonzero(is_start)
    if not len(starts) or (code == CODE_BAD_GTID).any():
        return walk_groups(code, cont, state, carried)
    f = int(starts[0])
    gid = np.empty(n, dtype=np.int64)
    gend = np.zeros(n, dtype=bool)
    if f:
        gid[:f], gend[:f], _ = walk_groups(code[:f], cont[:f], state, carried)
    idx = np.arange(n, dtype=np.int64)
    seg = np.searchsorted(starts, idx[f:], side="right") - 1  # the GTID group each event follows
    g = starts[seg]
    trx = code[g] == CODE_GTID
    c = code[f:]
    ends = np.where(trx, c == CODE_END, ~cont[f:]) & ~is_start[f:]
    end_at = np.flatnonzero(ends) + f
    # each group's first ending event (n: none before the next GTID or the chunk's end)
    k = np.searchsorted(end_at, starts)
    first_end = np.append(end_at, n)[k]
    nxt = np.append(starts[1:], n)
    first_end = np.where(first_end < nxt, first_end, n)
    fe = first_end[seg]
    inside = idx[f:] <= fe
    outside = ~inside
    if (c[outside] == CODE_BEGIN).any():  # a BEGIN opens a transaction without a GTID: the loop's case
        return walk_groups(code, cont, state, carried)
    gid[f:] = np.where(inside, g, idx[f:])
    gend[f:] = outside | (idx[f:] == fe)
    last_seg = len(starts) - 1
    state = OUTSIDE if first_end[last_seg] < n else TRANSACTION if code[starts[last_seg]] == CODE_GTID else STANDALONE
    return gid, gend, state
