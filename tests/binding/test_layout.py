"""The binding's rooms keep their shape: the runtime is the floor that knows nothing of the
calls made through it, and the one ``Binding`` class still offers every call of ``SlurmAPI``.
(No import loop and no file over 900 lines: tests/test_layering.py, for the whole package.)

No cluster needed: the sources and the classes are read, nothing is loaded.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from sckpt.backend.libslurm import Binding
from sckpt.backend.slurm_api import SlurmAPI

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "libslurm"


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


def test_the_runtime_imports_none_of_the_call_modules() -> None:
    # The runtime is the floor: the call modules are built on it, never the other way.
    assert _sibling_imports(PACKAGE / "runtime.py") <= {"shim_build", "config_source"}


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
