"""WriteHandler: what the network side needs from the standalone write path, as an interface.

In the manner of go-mysql's ReplicationHandler: the connection (server/connection.py) and the Primary hold a
`WriteHandler`, not a `StandaloneSource`, so the wiring is typed without `Any` and the write path's internals
(classify, logger, files) stay behind these five members. A leaf module: it imports nothing at run time, so
primary.py can name the type without loading the write path (and sqlglot) in the read-only modes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .sql_surface import Ok, ResultSet, SessionState
    from .standalone.schema import Catalogue
    from .standalone.session import WriteSession


class WriteHandler(Protocol):
    """The standalone primary's write path (implemented by `standalone.source.StandaloneSource`)."""

    @property
    def schema(self) -> Catalogue:
        """The schema catalogue the SQL surface reads (SHOW TABLES, DESCRIBE, information_schema)."""
        ...

    def session(self, thread_id: int, handshake_collation: int = 45) -> WriteSession:
        """A new connection's write state."""
        ...

    def end_session(self, ws: WriteSession) -> None:
        """A connection ended: its open transaction is rolled back."""
        ...

    async def execute(self, sql: str, st: SessionState, ws: WriteSession) -> ResultSet | Ok:
        """One COM_QUERY: writes become binlog events (OK once durable), the rest goes to the SQL surface."""
        ...

    def use_database(self, st: SessionState, name: str) -> None:
        """USE / COM_INIT_DB against the schema catalogue (1049 for an unknown database)."""
        ...
