"""The simulator's rooms keep to their order: no import loop among its modules, none of them
imports an engine, the facade or the front end (it stands where libslurm stands), and each
module stays small enough to read."""

from __future__ import annotations

import ast
from pathlib import Path

SIMULATOR = Path(__file__).resolve().parents[2] / "backend" / "simulator"
MAX_LINES = 900


def _local_imports(path: Path) -> tuple[set[str], set[str]]:
    """(sibling modules ``path`` imports, backend modules it imports from ``..``)."""
    siblings: set[str] = set()
    above: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 1:
            siblings.add(node.module or "__init__")
        elif node.level == 2 and node.module:
            above.add(node.module.split(".")[0])
        elif node.level == 2:
            above.update(alias.name for alias in node.names)
        elif node.module and node.module.startswith("sckpt."):
            above.add(node.module.split(".")[2] if node.module.count(".") > 1 else node.module)
    return siblings, above


def _graph() -> dict[str, set[str]]:
    return {path.stem: _local_imports(path)[0] for path in SIMULATOR.glob("*.py")}


def test_no_import_loop_among_the_simulators_modules() -> None:
    graph = _graph()
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import loop: {' -> '.join((*path, module))}"
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, (*path, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())
    assert "cluster" in graph["__init__"]
    assert "__init__" not in set().union(*(graph[m] for m in graph if m != "__init__"))


def test_the_simulator_imports_no_engine_facade_or_front_end() -> None:
    for path in SIMULATOR.glob("*.py"):
        above = _local_imports(path)[1]
        assert not above & {"engines", "facade", "tui"}, path.name


def test_every_module_is_under_the_limit() -> None:
    for path in SIMULATOR.glob("*.py"):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= MAX_LINES, f"{path.name}: {lines} lines"
