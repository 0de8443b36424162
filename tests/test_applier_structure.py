"""The applier's modules import in one direction (issue 20: channel.py and runner.py imported each other)."""

from __future__ import annotations

import ast
from pathlib import Path

APPLIER = Path(__file__).resolve().parent.parent / "applier"


def _imported_siblings(module: str) -> set[str]:
    """The applier modules `module` imports, TYPE_CHECKING blocks included (a loop there is still a loop)."""
    tree = ast.parse((APPLIER / f"{module}.py").read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                out.add(node.module.split(".")[0])
            elif node.module and node.module.startswith("binlogd.applier."):
                out.add(node.module.split(".")[2])
    return out


def test_no_import_loops_between_applier_modules() -> None:
    graph = {p.stem: _imported_siblings(p.stem) for p in APPLIER.glob("*.py")}
    assert "channel" in graph["runner"]
    loops: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == path[0]:
                loops.append([*path, nxt])
            elif nxt not in path and nxt > path[0]:  # each loop reported once, from its smallest module
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert loops == []
