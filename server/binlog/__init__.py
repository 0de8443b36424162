"""binlogd's own binlog: one owner for writing it, one for reading it.

`writer` (`BinlogWriter`: append / commit / discard / start_file / purge / recover, and the crash rules, stated once
in its docstring), `store` (`BinlogStore`: the files dumps read, the published end, the GTID state, wake-ups for
waiting dumps, the shared block cache) and `index` (file names and the `.index` file). The standalone primary and
the relay write through the writer; dump streams and SHOW statements read through the store.
"""
