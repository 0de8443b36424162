"""``binlogd show``: a mariadb-binlog-compatible dump tool with the stateful skip flag (WL#234), ignorable events
shown (WL#4033) and table filters (WL40)."""
