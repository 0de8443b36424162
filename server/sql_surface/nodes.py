"""The expression tree the parser builds and the evaluator walks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class _Node:
    __slots__ = ("end", "start")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end


class _Lit(_Node):
    __slots__ = ("is_string", "value")

    def __init__(self, start: int, end: int, value: Any, is_string: bool = False) -> None:
        super().__init__(start, end)
        self.value = value
        self.is_string = is_string


class _UVar(_Node):
    __slots__ = ("name",)

    def __init__(self, start: int, end: int, name: str) -> None:
        super().__init__(start, end)
        self.name = name


class _SVar(_Node):
    __slots__ = ("component", "name", "scope")

    def __init__(self, start: int, end: int, scope: str | None, name: str, component: str | None) -> None:
        super().__init__(start, end)
        self.scope, self.name, self.component = scope, name, component


class _Col(_Node):
    __slots__ = ("name", "qual")

    def __init__(self, start: int, end: int, name: str, qual: str | None) -> None:
        super().__init__(start, end)
        self.name, self.qual = name, qual


class _Func(_Node):
    __slots__ = ("args", "name", "parens", "qual")

    def __init__(self, start: int, end: int, name: str, args: list[_Node], qual: str | None = None,
                 parens: bool = True) -> None:
        super().__init__(start, end)
        self.name, self.args, self.qual, self.parens = name, args, qual, parens


class _Op(_Node):
    """Unary (right is None) or binary operator; also IS/LIKE/IN/BETWEEN via `op` and `extra`."""

    __slots__ = ("extra", "left", "neg", "op", "right")

    def __init__(self, start: int, end: int, op: str, left: _Node, right: _Node | None = None,
                 extra: Any = None, neg: bool = False) -> None:
        super().__init__(start, end)
        self.op, self.left, self.right, self.extra, self.neg = op, left, right, extra, neg


class _Case(_Node):
    __slots__ = ("base", "default", "whens")

    def __init__(self, start: int, end: int, base: _Node | None, whens: list[tuple[_Node, _Node]],
                 default: _Node | None) -> None:
        super().__init__(start, end)
        self.base, self.whens, self.default = base, whens, default


class _Assign(_Node):
    __slots__ = ("expr", "name")

    def __init__(self, start: int, end: int, name: str, expr: _Node) -> None:
        super().__init__(start, end)
        self.name, self.expr = name, expr


class _Row(_Node):
    __slots__ = ("items",)

    def __init__(self, start: int, end: int, items: list[_Node]) -> None:
        super().__init__(start, end)
        self.items = items


class _Subq(_Node):
    __slots__ = ("select",)

    def __init__(self, start: int, end: int, select: _Select) -> None:
        super().__init__(start, end)
        self.select = select


@dataclass
class _Item:
    expr: _Node | None  # None: '*'
    alias: str | None
    start: int
    end: int
    star_qual: str | None = None


@dataclass
class _Select:
    items: list[_Item]
    table: tuple[str | None, str, str | None] | None = None  # (db, table, alias); None = no table / DUAL
    where: _Node | None = None
    order: list[tuple[_Node, bool]] = field(default_factory=list)
    limit: tuple[int, int] | None = None  # (offset, count)
    into: list[str] | None = None
    unsupported: str | None = None  # a clause we parse past but do not do (reported after table checks)
