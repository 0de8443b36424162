"""Standalone mode: a primary whose only product is its binlog (like a BLACKHOLE relay).

Clients write SQL; every data or schema change becomes statement-format events written through the shared
`server.binlog.writer.BinlogWriter`. Modules: `classify` (what a statement is, what is refused), `session`
(per-connection write state), `logger` (statement + session -> event bodies, MariaDB 10.11's shapes),
`files` (file headers, rotation, FLUSH / PURGE BINARY LOGS), `source` (the writer thread, group commit, wiring),
`schema` (the catalogue the logged DDL built: what is refused before logging, its snapshot beside the binlog),
`views` (that schema as SHOW / DESCRIBE / information_schema show it on a BLACKHOLE primary).
"""
