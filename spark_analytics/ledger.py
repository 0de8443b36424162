"""Reading binlogd's audit ledger (docs/ledger.md): JSON Lines with an explicit schema, torn tail detection.

Spark parses the records (PERMISSIVE mode: an unparsable line becomes a `_corrupt_record`); which of those is a
torn *last* record (a crash while writing: tolerated and reported) and which is damage in the middle is decided
from the files themselves, which is cheap: only each file's last bytes are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_LEDGER_FILE = re.compile(r"^ledger\.(\d{6,})\.jsonl$")

# The schema of every record kind in one struct (a key a record does not have is null).
SCHEMA_DDL = ", ".join([
    "r STRING", "seq BIGINT", "conn BIGINT", "ts_us BIGINT",
    # conn
    "thread_id BIGINT", "peer STRING", "user STRING", "server_id BIGINT", "capability INT",
    "capability_set BOOLEAN", "skip_replication BOOLEAN", "dump_flags INT", "checksum BOOLEAN",
    "start_file STRING", "start_pos BIGINT", "req_file STRING", "req_pos BIGINT", "start_gtid STRING",
    "heartbeat_ms BIGINT", "compat STRING", "source_server_id BIGINT", "binlog_dir STRING",
    "send_tables_info BOOLEAN", "transcode STRING", "table_filters STRING",
    # ev
    "file STRING", "start BIGINT", "end BIGINT", "count BIGINT", "length BIGINT", "action STRING",
    "why STRING", "type INT", "flags INT", "gtid STRING", "sent_length BIGINT", "policy BIGINT", "code INT",
    "message STRING",
    # close
    "pos BIGINT", "reason STRING", "error_code INT", "error STRING", "events BIGINT", "heartbeats BIGINT",
    "bytes BIGINT",
    "_corrupt_record STRING",
])


class LedgerError(ValueError):
    """No ledger to read (missing directory, no ledger files)."""


@dataclass
class LedgerFiles:
    directory: Path
    files: list[Path]
    torn: list[tuple[str, int, int]] = field(default_factory=list)  # (file, offset, bytes) of a torn last line


def ledger_files(directory: str | Path) -> LedgerFiles:
    """The ledger files in numeric order and, per file, a torn last line (no trailing newline)."""
    d = Path(directory)
    if not d.is_dir():
        raise LedgerError(f"ledger directory {d} does not exist")
    found = sorted((int(m.group(1)), p) for p in d.iterdir() if (m := _LEDGER_FILE.match(p.name)) and p.is_file())
    if not found:
        raise LedgerError(f"no ledger files (ledger.000001.jsonl ...) in {d}")
    out = LedgerFiles(d, [p for _, p in found])
    for p in out.files:
        size = p.stat().st_size
        if size == 0:
            continue
        with p.open("rb") as fh:
            back = min(size, 1 << 16)
            fh.seek(size - back)
            tail = fh.read(back)
        if not tail.endswith(b"\n"):
            nl = tail.rfind(b"\n")
            offset = size - back + nl + 1 if nl >= 0 else size - back
            out.torn.append((p.name, offset, size - offset))
    return out


def read_ledger(spark: Any, files: LedgerFiles) -> Any:
    """All records as one DataFrame (schema above + `ledger_file`), cached: Spark needs that to query
    `_corrupt_record` on its own."""
    from pyspark.sql import functions as F

    df = (spark.read.schema(SCHEMA_DDL)
          .option("mode", "PERMISSIVE")
          .option("columnNameOfCorruptRecord", "_corrupt_record")
          .json([str(p) for p in files.files])
          .withColumn("ledger_file", F.element_at(F.split(F.input_file_name(), "/"), -1)))
    return df.cache()
