"""ServerView: what the SQL surface reads from the running server (a Protocol, implemented by Primary).

A leaf module: sysvars.py and the surface both import it, so neither imports the other through it."""

from __future__ import annotations

from typing import Protocol


class ServerView(Protocol):
    """What the SQL surface needs to know about the running server (implemented by `Primary`).

    Optional extras, read with getattr when present (value or zero-argument callable): `hostname`, `port`,
    `version_comment`, `binlog_format`, `binlog_row_metadata`, `read_only`, `gtid_strict_mode`,
    `gtid_current_pos`, `max_allowed_packet`, `max_binlog_size`, `uptime`, `threads_connected`,
    `threads_running`, `slaves_connected`, and `now()` (epoch seconds, for tests).
    """

    server_id: int
    version: str

    def binlog_checksum(self) -> str: ...
    def gtid_binlog_pos(self) -> str: ...
    def gtid_domain_id(self) -> int: ...
    def binary_logs(self) -> list[tuple[str, int]]: ...
    def master_status(self) -> tuple[str, int] | None: ...
    def slave_hosts(self) -> list[tuple[int, str, int, int]]: ...
    def processlist(self, viewer_id: int) -> list[tuple[object, ...]]: ...
    def binlog_events(self, file: str | None, pos: int | None, offset: int,
                      limit: int | None) -> list[tuple[str, int, str, int, int, str]]: ...
    def binlog_gtid_pos(self, file: str, pos: int) -> str | None: ...
