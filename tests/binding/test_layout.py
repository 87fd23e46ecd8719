"""The binding's rooms keep their shape: no import loop among them, no file over 900 lines,
and the one ``Binding`` class still offers every call of ``SlurmAPI``.

No cluster needed: the sources and the classes are read, nothing is loaded.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from sckpt.backend.libslurm import Binding
from sckpt.backend.slurm_api import SlurmAPI

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "libslurm"
MAX_LINES = 900


def _sibling_imports(path: Path) -> set[str]:
    """The modules of this package ``path`` imports (``from . import x``, ``from .x import``),
    inside functions and ``if TYPE_CHECKING:`` too."""
    siblings = {p.stem for p in PACKAGE.glob("*.py")}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found & siblings


def test_the_binding_modules_import_each_other_without_a_loop() -> None:
    graph = {
        p.stem: _sibling_imports(p) - {p.stem} for p in PACKAGE.glob("*.py") if p.stem != "__init__"
    }
    assert "runtime" in graph and "binding" in graph
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import loop: {' -> '.join((*path, module))}"
        if module in done:
            return
        for imported in sorted(graph[module]):
            visit(imported, (*path, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())
    # The runtime is the floor: it knows nothing of the calls made through it.
    assert graph["runtime"] <= {"shim_build", "config_source"}


def test_no_file_of_the_binding_is_over_900_lines() -> None:
    sizes = {
        p.name: len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted(PACKAGE.iterdir())
        if p.suffix in (".py", ".c", ".h")
    }
    assert "shim.c" in sizes and "binding.py" in sizes
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_binding_has_every_call_of_the_slurm_api_protocol_with_its_parameters() -> None:
    members = [
        name
        for name, value in vars(SlurmAPI).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    ]
    assert "load_jobs" in members and "caller_uid" in members
    for name in members:
        wanted, offered = getattr(SlurmAPI, name), getattr(Binding, name, None)
        assert offered is not None, f"Binding has no {name}"
        assert isinstance(offered, property) == isinstance(wanted, property), name
        if callable(wanted):
            assert list(inspect.signature(offered).parameters) == list(
                inspect.signature(wanted).parameters
            ), name
