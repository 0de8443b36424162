"""The 33 session settings the oracle records a MariaDB 10.11 primary's COM_BINLOG_DUMP stream for.

Each variant is what one kind of client does before and in COM_BINLOG_DUMP: the session SETs (checksum
handshake, @mariadb_slave_capability, skip_replication, GTID connect state, heartbeat), the dump flags,
the start file/position and the server_id. The names are the file names of the captures
(dump/<name>.raw|.json) and the tests select captures by them, so they never change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from binlogd.protocol.commands import build_binlog_dump, build_register_slave
from binlogd.protocol.constants import BINLOG_DUMP_NON_BLOCK, BINLOG_SEND_ANNOTATE_ROWS_EVENT

FILE1 = "mysql-bin.000001"
FILE2 = "mysql-bin.000002"
FILE3 = "mysql-bin.000003"
REPLICA_SERVER_ID = 101
NON_BLOCK = BINLOG_DUMP_NON_BLOCK
ANNOTATE = BINLOG_DUMP_NON_BLOCK | BINLOG_SEND_ANNOTATE_ROWS_EVENT
# the one variant whose name depends on the binlog: a dump started at the GTID event of the 'multi-row' group
POSITION_NAME = re.compile(r"pos\d+_cap4")


@dataclass(frozen=True, slots=True)
class Variant:
    """One capture's client settings; field names and values are the .json "settings" of the capture.

    ``capability`` is a string because "unset" (no SET at all) is one of its values; ``checksum`` is
    "global" (SET @master_binlog_checksum= @@global.binlog_checksum, what a replica does), "unset",
    or a literal algorithm name.
    """

    name: str
    capability: str = "4"
    skip: int = 0
    flags: int = NON_BLOCK
    checksum: str = "global"
    file: str = FILE1
    pos: int = 4
    gtid: str | None = None
    server_id: int = REPLICA_SERVER_ID
    heartbeat_ns: int | None = None
    idle_timeout: float = 5.0
    max_seconds: float = 0

    @property
    def on_file3(self) -> bool:
        """Recorded after the workload wrote mysql-bin.000003 without checksums."""
        return self.file == FILE3

    def session_statements(self) -> list[str]:
        """The SETs before the dump, in the order a MariaDB replica sends them."""
        out = []
        if self.heartbeat_ns is not None:
            out.append(f"SET @master_heartbeat_period= {self.heartbeat_ns}")
        if self.checksum == "global":
            out.append("SET @master_binlog_checksum= @@global.binlog_checksum")
        elif self.checksum != "unset":
            out.append(f"SET @master_binlog_checksum='{self.checksum}'")
        if self.skip:
            out.append("SET skip_replication=1")
        if self.capability != "unset":
            out.append(f"SET @mariadb_slave_capability={int(self.capability)}")
        if self.gtid is not None:
            out += [f"SET @slave_connect_state='{self.gtid}'", "SET @slave_gtid_strict_mode=0",
                    "SET @slave_gtid_ignore_duplicates=0"]
        return out

    def register_command(self) -> bytes:
        return build_register_slave(self.server_id)

    def dump_command(self) -> bytes:
        """COM_BINLOG_DUMP; a GTID connect sends an empty file name (the start comes from @slave_connect_state)."""
        return build_binlog_dump(self.pos, self.flags, self.server_id, "" if self.gtid is not None else self.file)

    def settings(self, host: str, port: int) -> dict[str, Any]:
        """The capture's "settings" object, keys in the stored order."""
        return {"host": host, "port": port, "user": "root", "server_id": self.server_id, "report_host": "",
                "report_port": 0, "checksum": self.checksum, "capability": self.capability, "skip": self.skip,
                "flags": self.flags, "file": self.file, "pos": self.pos, "gtid": self.gtid,
                "heartbeat_ns": self.heartbeat_ns, "idle_timeout": self.idle_timeout, "max_events": 0,
                "max_seconds": self.max_seconds, "sql": None}


def variants(multi_row_pos: int) -> list[Variant]:
    """All variants in recording order; ``multi_row_pos`` is where the 'multi-row' group's GTID starts in file 1."""
    out = [Variant(f"cap{c}_skip{s}", capability=c, skip=s)
           for c in ("unset", "0", "1", "2", "3", "4") for s in (0, 1)]
    out += [Variant(f"cap{c}_skip0_annot", capability=c, flags=ANNOTATE) for c in ("0", "1", "2", "4")]
    out.append(Variant("cap4_skip1_annot", skip=1, flags=ANNOTATE))
    out += [Variant(f"cap4_cksum_{c}", checksum=c) for c in ("unset", "NONE", "CRC32")]
    out += [Variant("gtid_0-1-4_cap4", gtid="0-1-4"),  # starts after 0-1-4: before the first row group
            Variant("gtid_0-1-4_cap4_skip1", gtid="0-1-4", skip=1),
            Variant("gtid_empty_cap4", gtid="")]
    out += [Variant(f"pos{multi_row_pos}_cap4", pos=multi_row_pos),
            Variant("file2_cap4", file=FILE2),
            # blocking, server_id 0 (what mariadb-binlog sends): does the primary end the stream itself?
            Variant("cap4_sid0_block", flags=0, server_id=0, idle_timeout=3),
            # blocking with a 1 s heartbeat: 2.5 s of waiting at the end of the binlog
            Variant("cap4_block_hb1s", flags=0, heartbeat_ns=1_000_000_000, max_seconds=3.5),
            Variant("err_badpos", pos=5),
            Variant("err_nofile", file="mysql-bin.000099")]
    out += [Variant("file3_nocrc_cksum_global", file=FILE3),
            Variant("file3_nocrc_cksum_unset", checksum="unset", file=FILE3),
            Variant("file3_nocrc_cksum_CRC32", checksum="CRC32", file=FILE3),
            Variant("file3_nocrc_cap0", capability="0", file=FILE3)]
    return out


def unknown_names(names: list[str]) -> list[str]:
    """Names that are no variant (checked before any server starts, the position variant by its pattern)."""
    fixed = {v.name for v in variants(0)} - {"pos0_cap4"}
    return [n for n in names if n not in fixed and not POSITION_NAME.fullmatch(n)]
