"""The console's modules import each other without a loop, and each stays under 900 lines.

A loop among the console's modules (the app importing the screens while a screen imports
the app, even under ``TYPE_CHECKING``) is what ``context.Console`` and the Messages exist to
avoid; this reads every ``import`` of ``tui/`` (the command line, ``tui/cli``, aside) and
fails with the loop it finds.
"""

from __future__ import annotations

import ast
from pathlib import Path

TUI = Path(__file__).resolve().parents[2] / "tui"
MAX_LINES = 900


def _modules() -> dict[str, Path]:
    found = {}
    for path in TUI.rglob("*.py"):
        parts = path.relative_to(TUI.parent).with_suffix("").parts
        if "cli" in parts:
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = (node.module or "").removeprefix("sckpt.")
            wanted = [target, *(f"{target}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            wanted = [alias.name.removeprefix("sckpt.") for alias in node.names]
        else:
            continue
        out.update(w for w in wanted if w in modules and w != name)
    return out


def test_no_import_loop_among_the_console_modules() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "tui.app" in graph and "tui.screens.console" in graph["tui.app"]
    loops: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(name: str, stack: list[str]) -> None:
        state[name] = 1
        stack.append(name)
        for other in sorted(graph[name]):
            if state.get(other) == 1:
                loops.append([*stack[stack.index(other) :], other])
            elif other not in state:
                visit(other, stack)
        stack.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert loops == [], " ; ".join(" -> ".join(loop) for loop in loops)


def test_every_console_module_stays_under_900_lines() -> None:
    long = {
        str(path.relative_to(TUI.parent)): n
        for path in TUI.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
