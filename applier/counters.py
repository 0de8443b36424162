"""The channel counters of SHOW ALL SLAVES STATUS, counted where and as MariaDB 10.11 counts them.

* Slave_DDL_Groups / Slave_Non_Transactional_Groups / Slave_Transactional_Groups (Master_info::total_*_groups):
  one per GTID event the SQL side applies, classed by its flags2 like `Gtid_log_event::do_apply_event`:
  FL_TRANSACTIONAL alone -> transactional, FL_DDL alone -> DDL, anything else -> non-transactional. A GTID
  event that is not applied (flagged and dropped by FILTER_ON_SLAVE, withheld by FILTER_ON_MASTER, skipped
  by sql_slave_skip_counter) is not counted; a group whose statements the replicate-* rules drop is.
* Executed_log_entries (Relay_log_info::executed_entries): every relay-log event the SQL thread took, applied
  or skipped. The applier has no relay log: it counts every event read from the source except heartbeats
  (an IO thread does not write those to the relay log) when the SQL side has taken the group it belongs to.
  A replica's relay log also holds events of its own (each relay log file's FDE and ROTATE), so the totals
  differ by those; the count per applied workload is the same.
* Slave_received_heartbeats (Master_info::received_heartbeats): heartbeat events the IO side received.
* Slave_heartbeat_period: MASTER_HEARTBEAT_PERIOD in seconds, a DOUBLE (0: none asked for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from binlogd.protocol.constants import FL_DDL, FL_TRANSACTIONAL

from .apply import Group


def group_kind(flags2: int) -> str:
    """The counter a GTID event with these flags2 goes to (`Gtid_log_event::do_apply_event`'s switch)."""
    both = flags2 & (FL_DDL | FL_TRANSACTIONAL)
    if both == FL_TRANSACTIONAL:
        return "trans"
    if both == FL_DDL:
        return "ddl"
    return "non_trans"


def heartbeat_period(seconds: float | None) -> float:
    """A DOUBLE of milliseconds precision, as 10.11 shows it."""
    return round(seconds or 0.0, 3)


@dataclass
class Counters:
    """One channel's counters, since the applier started (MariaDB: since the server started)."""

    ddl_groups: int = 0
    non_trans_groups: int = 0
    trans_groups: int = 0
    executed_entries: int = 0
    received_heartbeats: int = 0

    def applied(self, g: Group) -> None:
        """The SQL side took `g` (applied it, or skipped it with sql_slave_skip_counter)."""
        self.executed_entries += g.events_read
        if g.kind == "ddl":
            self.ddl_groups += 1
        elif g.kind == "trans":
            self.trans_groups += 1
        elif g.kind == "non_trans":
            self.non_trans_groups += 1

    def columns(self) -> dict[str, Any]:
        return {
            "Slave_DDL_Groups": self.ddl_groups,
            "Slave_Non_Transactional_Groups": self.non_trans_groups,
            "Slave_Transactional_Groups": self.trans_groups,
            "Executed_log_entries": self.executed_entries,
            "Slave_received_heartbeats": self.received_heartbeats,
        }
