"""The replica-side applier `binlogd-apply` (issue 6): channels, skip modes, replication filters, admin port.

See docs/applier.md. Core: config, channel, rows, apply, position, runner, cli; filters, admin, status (part B).
"""
