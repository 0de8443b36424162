"""The crash-safe per-channel position, stored in the target like MariaDB's mysql.gtid_slave_pos.

`binlogd_apply.channel_position` holds one row per channel: the source binlog coordinates just after the last
applied group and the GTID state (one `domain-server-seq` per domain, `gtid_slave_pos` syntax). The applier
writes the row inside the same target transaction as the group's changes, so after a crash (kill -9 of the
applier or of the target) the row and the data agree and the channel resumes exactly where the data stops.
DDL is not transactional in MariaDB: its row is written in an autocommit statement right after it (the same
window MariaDB's own replica has). A target that logs the source's GTIDs closes it: on start, a first DDL group
whose GTID the target's @@gtid_binlog_pos already holds only has its position stored
(`TargetSession.already_applied_ddl`); a target without a binlog keeps MariaDB's window.

Names: `Position`, `PositionStore` (`schema_exists`, `ensure_schema`, `load`, `save`, `delete`), `SCHEMA`, `TABLE`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from binlogd.protocol.events import Gtid

SCHEMA: Final = "binlogd_apply"
TABLE: Final = f"`{SCHEMA}`.`channel_position`"
_DDL: Final = (
    f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`",
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    " channel VARCHAR(64) NOT NULL PRIMARY KEY,"
    " log_file VARCHAR(512) NOT NULL,"
    " log_pos BIGINT UNSIGNED NOT NULL,"
    " gtid_pos TEXT NOT NULL,"
    " updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)"
    ") ENGINE=InnoDB",
)
SAVE_SQL: Final = (f"INSERT INTO {TABLE} (channel, log_file, log_pos, gtid_pos) VALUES (%s, %s, %s, %s) "
                   "ON DUPLICATE KEY UPDATE log_file=VALUES(log_file), log_pos=VALUES(log_pos), "
                   "gtid_pos=VALUES(gtid_pos)")


@dataclass
class Position:
    """Where a channel stands in its source: file/pos after the last whole group, and the per-domain GTIDs."""

    file: str = ""
    pos: int = 4
    gtids: dict[int, Gtid] = field(default_factory=dict)

    def gtid_text(self) -> str:
        if len(self.gtids) == 1:  # the usual case, once per applied group: no sort, no generator
            for g in self.gtids.values():
                return f"{g.domain_id}-{g.server_id}-{g.seq_no}"
        return ",".join(str(g) for _, g in sorted(self.gtids.items()))

    def describe(self, gtid: bool) -> str:
        """Where a dump from here starts, for the log (empty coordinates mean the source's first binlog)."""
        if gtid:
            return f"GTID position '{self.gtid_text()}'" + ("" if self.gtids else " (from the source's first binlog)")
        return f"{self.file or '(the first binlog)'}:{self.pos}"

    def copy(self) -> Position:
        return Position(self.file, self.pos, dict(self.gtids))

    @staticmethod
    def parse_gtids(text: str) -> dict[int, Gtid]:
        out: dict[int, Gtid] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            d, s, n = (int(x) for x in part.split("-"))
            out[d] = Gtid(d, s, n)
        return out


class PositionStore:
    """SQL for the position table; every method runs on a pymysql connection in a worker thread."""

    @staticmethod
    def schema_exists(conn: Any) -> bool:
        """Checked first so that a start-up writes nothing (not even a binlogged `IF NOT EXISTS` no-op)."""
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s",
                        (SCHEMA, "channel_position"))
            return cur.fetchone() is not None

    @staticmethod
    def ensure_schema(conn: Any) -> None:
        with conn.cursor() as cur:
            for sql in _DDL:
                cur.execute(sql)

    @staticmethod
    def load(conn: Any, channel: str) -> Position | None:
        with conn.cursor() as cur:
            cur.execute(f"SELECT log_file, log_pos, gtid_pos FROM {TABLE} WHERE channel = %s", (channel,))
            row = cur.fetchone()
        if row is None:
            return None
        return Position(str(row[0]), int(row[1]), Position.parse_gtids(str(row[2])))

    @staticmethod
    def save_sql(conn: Any, channel: str, pos: Position) -> str:
        """The statement that stores `pos`, quoted by `conn` (it is queued with the group's COMMIT)."""
        return SAVE_SQL % tuple(conn.escape(v) for v in (channel, pos.file, pos.pos, pos.gtid_text()))

    @staticmethod
    def delete(conn: Any, channel: str) -> None:
        with conn.cursor() as cur:
            cur.execute(f"DELETE FROM {TABLE} WHERE channel = %s", (channel,))
