"""--ledger-retention-seconds (server/ledger_retention.py): old ledger files go, oldest first, except the file being
written, those naming a binlog file still present and those whose connections go on in a file that stays; and a
real binlogd removes them while it runs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from binlogd.server.ledger_retention import LedgerRetention

from binlogd.testing import wait_until


def _segment(d: Path, n: int, records: list[tuple[int, str]], age: float) -> Path:
    p = d / f"ledger.{n:06d}.jsonl"
    p.write_text("".join(json.dumps({"r": "ev", "seq": i, "conn": c, "file": f}, separators=(",", ":")) + "\n"
                         for i, (c, f) in enumerate(records)))
    t = time.time() - age
    os.utime(p, (t, t))
    return p


def test_retention_rules(tmp_path: Path) -> None:
    _segment(tmp_path, 1, [(1, "mysql-bin.000001")], 1000)  # old, names a purged file: goes
    _segment(tmp_path, 2, [(2, "mysql-bin.000001"), (3, "mysql-bin.000001")], 1000)  # conn 3 goes on in 3: stays
    _segment(tmp_path, 3, [(3, "mysql-bin.000003")], 1000)  # names a present binlog file: stays
    _segment(tmp_path, 4, [(4, "mysql-bin.000003")], 0)  # the current file
    present = ["mysql-bin.000003"]
    r = LedgerRetention(tmp_path, 100, lambda: present, lambda: tmp_path / "ledger.000004.jsonl")
    assert r.run(time.time()) == ["ledger.000001.jsonl"]
    assert r.run(time.time()) == []
    present.clear()  # every binlog file purged: 2 and 3 go together (conn 3 entirely), never the current one
    assert r.run(time.time()) == ["ledger.000002.jsonl", "ledger.000003.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.000004.jsonl"]
    young = LedgerRetention(tmp_path, 10**6, lambda: [], lambda: tmp_path / "ledger.000009.jsonl")
    _segment(tmp_path, 5, [(5, "mysql-bin.000001")], 1000)
    assert young.run(time.time()) == []  # not older than the retention


def test_a_running_binlogd_removes_old_ledger_files(binlogd: Any) -> None:
    server = binlogd.standalone(["--ledger-retention-seconds", "2", "--binlog-expire-logs-seconds", "1",
                                 "--ledger-max-size", "1024"])
    ledger = server.ledger_dir
    for _ in range(6):  # dumps that read to the end: each fills ledger files naming the binlog files
        server.query("FLUSH BINARY LOGS")
        subprocess.run(["mariadb-binlog", "--read-from-remote-server", f"-h{server.host}", f"-P{server.port}",
                        "-uroot", "--to-last-log", "mysql-bin.000001"], capture_output=True, timeout=30)
    made = sorted(p.name for p in ledger.glob("ledger.*.jsonl"))
    assert len(made) > 2

    def left() -> list[str]:
        return sorted(p.name for p in ledger.glob("ledger.*.jsonl"))

    wait_until(lambda: made[0] not in left(), 20, 0.2, lambda: f"ledger files {left()}")
    kept = left()
    nums = [int(n.split(".")[1]) for n in kept]
    assert nums == list(range(nums[0], nums[0] + len(nums)))  # the newest, contiguous part stays
    present = [str(r[0]) for r in server.query("SHOW BINARY LOGS")]
    texts = {}
    for n in kept:  # retention goes on: a file listed above may be gone by now, unless a present binlog needs it
        try:
            texts[n] = (ledger / n).read_text()
        except FileNotFoundError:
            continue
    needed = [n for n, t in texts.items() if any(f'"file":"{b}"' in t for b in present)]
    assert needed  # the records about the binlog files still present stay (the active file is never purged)
    assert "ledger retention (2 s): removed ledger.000001.jsonl" in server.log_text()
