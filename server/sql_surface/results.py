"""What a statement answers: a result set or an OK."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class ResultSet:
    """Rows to send; values are None | int | str | float | bytes (decimals and datetimes as MariaDB's text)."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    warnings: int = 0
    # per column, its SQL type as SHOW CREATE TABLE prints it (int(11), varchar(10)...) when known: the column
    # metadata of a result set without rows (SELECT from a standalone table); None: inferred from the values
    types: list[str | None] | None = None


@dataclass
class Ok:
    affected_rows: int = 0
    info: str = ""
    warnings: int = 0
