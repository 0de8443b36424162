"""Prometheus metrics shared by `binlogd serve` and `binlogd-apply`: the registry other modules feed
(`registry`) and the small asyncio HTTP endpoint that serves it (`http`)."""
