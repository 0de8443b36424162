"""WL40 table filters for `binlogd show` (placeholder until the filter rules land)."""

from __future__ import annotations

import argparse

from .reader import Item


class FilterError(Exception):
    """A filter option MariaDB would refuse; the message is the one line printed."""


class TableFilter:
    def keep(self, item: Item) -> bool:
        return True


def add_filter_options(p: argparse.ArgumentParser) -> None:
    return None


def table_filter_of(args: argparse.Namespace) -> TableFilter | None:
    return None
