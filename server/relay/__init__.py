"""Relay mode: binlogd as a replica of a real upstream primary that stores the upstream's binlog files
under the same names and positions and serves them to its own replicas (docs/relay.md)."""
