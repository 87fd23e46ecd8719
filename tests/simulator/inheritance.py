"""How deep the simulator's classes inherit from each other (``tests/test_layering.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

MAX_OWN_INHERITANCE = 1
"""How deep a simulator class may inherit from the simulator's own classes: one level (a
plugin that is another with one answer changed); the controller is parts it holds."""


def own_inheritance_depths(paths: list[Path]) -> dict[str, int]:
    """Each class defined in ``paths`` -> how many of those classes stand above it in its
    longest chain of bases (0: it inherits from none of them; other bases do not count)."""
    bases: dict[str, list[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [
                    b.id if isinstance(b, ast.Name) else b.attr
                    for b in node.bases
                    if isinstance(b, ast.Name | ast.Attribute)
                ]

    def depth(name: str, seen: frozenset[str]) -> int:
        above = [b for b in bases.get(name, ()) if b in bases and b not in seen]
        return max((1 + depth(b, seen | {b}) for b in above), default=0)

    return {name: depth(name, frozenset({name})) for name in bases}
