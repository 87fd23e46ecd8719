"""The backend never imports Textual: checked in the source and in a live interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

BACKEND = Path(__file__).resolve().parent.parent / "backend"


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_backend_module_imports_textual_or_the_ui() -> None:
    offenders = [
        str(path.relative_to(BACKEND.parent))
        for path in sorted(BACKEND.rglob("*.py"))
        if _imported_roots(path) & {"textual", "rich"}
        or "sckpt.tui" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_importing_every_backend_module_loads_no_textual() -> None:
    modules = [
        "sckpt.backend." + ".".join(path.relative_to(BACKEND).with_suffix("").parts)
        for path in sorted(BACKEND.rglob("*.py"))
        if path.name != "__init__.py" and "build" not in path.stem
    ]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
