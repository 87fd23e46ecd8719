"""The layers keep to their imports: checked in the source and in a live interpreter.

* the backend never imports Textual (nor rich, nor the UI);
* engines never import the facade that chooses them (their factories are in
  ``engines/registry.py``);
* the rules module (``backend/rules.py``) imports only ``model`` and ``errors`` (and the
  standard library), the operations table (``backend/operations.py``) only the standard
  library: both are pure data and decisions, read by every other layer;
* the command line (``sckpt.cli``) never imports Textual or rich: only its console
  command imports the app, inside the function, when the console is opened;
* the console (``sckpt.tui``) never imports the command line, so the two are no import loop.
* ``sckpt run`` (``backend/checkpointing/wrapper.py`` and everything it imports, even inside
  functions) imports neither the console nor libslurm: it runs on compute nodes, where
  neither should be needed; and the checkpoint mechanism's modules import each other
  without a loop;
* the rooms ARCHITECTURE.md orders (``ROOMS``): every module is in one, and no import
  climbs to a room above its own, not even inside a function or for typing;
* no function of the package is over 80 lines, and no test file over 900;
* no class of the simulator inherits from another of its own more than one level, and its
  hooks, client and the tests reach no private simulator name;
* ``Facade.act`` resolves an action's target by one call, and nothing after it resolves it
  again.

The operations table's rules (no name compared with a literal, no forwarder listing an
operation) are in ``test_layering_operations.py``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BACKEND = ROOT / "backend"
CLI = ROOT / "cli"
TUI = ROOT / "tui"
RULES = BACKEND / "rules.py"
_PACKAGES = {
    "sckpt": "sckpt",
    "backend": "sckpt.backend",
    "tui": "sckpt.tui",
    "cli": "sckpt.cli",
    "styles": "sckpt.styles",
}


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def _module_name(path: Path) -> str:
    """``backend/engines/live.py`` -> ``sckpt.backend.engines.live`` (its installed name)."""
    top, *rest = path.relative_to(ROOT).with_suffix("").parts
    parts = [_PACKAGES[top], *rest]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    """Every module ``path`` imports, by absolute name, relative imports resolved.

    ``from a import b`` counts as importing ``a`` and ``a.b`` (``b`` may be a module).
    Imports inside ``if TYPE_CHECKING:`` count too; with ``top_level_only`` those inside
    functions do not.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    nodes: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        nodes.append(node)
        if top_level_only and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        todo.extend(ast.iter_child_nodes(node))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _source(node, package)
            found.add(source)
            found.update(f"{source}.{alias.name}" for alias in node.names)
    return found


def _source(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module ``from ... import`` reads."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


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


def test_engines_never_import_the_facade() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in _imports(path) if name.startswith("sckpt.backend.facade")
        )
        for path in sorted((BACKEND / "engines").rglob("*.py"))
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_rules_module_imports_only_model_and_errors() -> None:
    if not RULES.exists():
        pytest.skip("backend/rules.py does not exist in this tree yet")
    imported = _imports(RULES)
    ours = {name for name in imported if name.split(".")[0] == "sckpt"}
    others = {name.split(".")[0] for name in imported - ours}
    allowed = ("sckpt.backend.model", "sckpt.backend.errors")
    # "sckpt.backend" itself is what "from . import model" names first.
    assert {
        name
        for name in ours - {"sckpt.backend"}
        if not any(name == ok or name.startswith(f"{ok}.") for ok in allowed)
    } == set()
    assert others - set(sys.stdlib_module_names) - {"__future__"} == set()


def test_the_operations_table_imports_only_the_standard_library() -> None:
    roots = {name.split(".")[0] for name in _imports(BACKEND / "operations.py")}
    assert roots - set(sys.stdlib_module_names) - {"__future__"} == set()


def test_the_command_line_never_imports_textual_or_rich() -> None:
    offenders: dict[str, list[str]] = {}
    for path in sorted(CLI.rglob("*.py")):
        everywhere = _imports(path)
        at_top = _imports(path, top_level_only=True)
        bad = {name for name in everywhere if name.split(".")[0] in ("textual", "rich")}
        # The console is the one door out, opened inside the command that runs it.
        bad |= {name for name in at_top if _in_package(name, "sckpt.tui")}
        bad |= {
            name
            for name in everywhere - at_top
            if _in_package(name, "sckpt.tui") and not _in_package(name, "sckpt.tui.app")
        }
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}


def _in_package(name: str, package: str) -> bool:
    return name == package or name.startswith(f"{package}.")


def test_the_console_never_imports_the_command_line() -> None:
    # The command line opens the console; the console needs nothing of the command line
    # (what both need, such as the exit codes, is in the sckpt package itself).
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            n for n in _imports(path) if _in_package(n, "sckpt.cli")
        )
        for path in sorted(TUI.rglob("*.py"))
    }
    assert {path: names for path, names in offenders.items() if names} == {}
    code = "import sys, sckpt.tui.app\nprint(sorted(m for m in sys.modules if 'cli' in m))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "sckpt.cli" not in out.stdout, out.stdout


def _module_edges(path: Path, modules: set[str]) -> set[str]:
    """The modules among ``modules`` that ``path`` imports, inside functions too.

    ``from pkg import mod`` is an edge to ``pkg.mod`` only: the package is initialised
    first, but nothing is read from it, so it closes no loop.
    """
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    edges: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            edges.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _source(node, package)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                edges.add(sub if sub in modules else source)
    return (edges & modules) - {module}


def _import_loops(paths: list[Path]) -> list[list[str]]:
    """The import loops among ``paths`` (imports inside functions included): each strongly
    connected component of more than one module, by Tarjan's algorithm."""
    modules = {_module_name(path): path for path in paths}
    return _loops(
        {name: sorted(_module_edges(path, set(modules))) for name, path in modules.items()}
    )


def _loops(graph: dict[str, list[str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module, by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return loops


def _package_files(*suffixes: str) -> list[Path]:
    """Every file of the installed package (sckpt/, backend/, tui/, cli/, styles/) whose
    name ends with one of ``suffixes`` (default: its modules)."""
    wanted = suffixes or (".py",)
    return [
        path
        for top in _PACKAGES
        for path in sorted((ROOT / top).rglob("*"))
        if path.suffix in wanted and path.is_file()
    ]


def test_no_import_loop_anywhere_in_the_package() -> None:
    # Imports inside functions and under TYPE_CHECKING count: a loop there is still two
    # modules that cannot be read, or changed, one without the other.
    assert _import_loops(_package_files()) == []


def test_the_loop_finder_finds_a_loop() -> None:
    # It must be able to fail: a loop through three modules, and one module beside it.
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert _loops(graph) == [["a", "b", "c"]]


def test_no_file_of_the_package_is_over_900_lines() -> None:
    sources = _package_files(".py", ".c", ".h", ".tcss")
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sources
    }
    assert "backend/libslurm/shim.c" in sizes and "tui/app.py" in sizes
    assert {path: n for path, n in sizes.items() if n > 900} == {}


def test_the_binding_runtime_imports_none_of_the_call_modules() -> None:
    # The runtime is the floor: the call modules are built on it, never the other way.
    libslurm = "sckpt.backend.libslurm"
    siblings = {
        name.removeprefix(f"{libslurm}.").split(".")[0]
        for name in _imports(BACKEND / "libslurm" / "runtime.py")
        if name.startswith(f"{libslurm}.")
    }
    assert siblings <= {"shim_build", "config_source"}


def test_the_simulator_imports_no_engine_facade_or_front_end() -> None:
    # It stands where libslurm and slurmctld stand: below the engines that talk to it.
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name
            for name in _imports(path)
            if _in_package(name, "sckpt.backend.engines")
            or _in_package(name, "sckpt.backend.facade")
            or _in_package(name, "sckpt.tui")
            or _in_package(name, "sckpt.cli")
        )
        for path in sorted((BACKEND / "simulator").rglob("*.py"))
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_importing_the_command_line_loads_no_textual() -> None:
    modules = sorted({_module_name(path) for path in CLI.rglob("*.py")})
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "from sckpt.cli.parser import build_parser, completion_script\n"
        "build_parser().format_help(); completion_script('bash')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "sckpt.cli" in modules
    assert out.stdout.strip() == ""


def _textual_private_names() -> set[str]:
    """Private names (``_x``) of the Textual classes the console, its tests and its benches
    build on (and of pytest's test items, which the tests' own runner hook receives)."""
    from textual.app import App
    from textual.dom import DOMNode
    from textual.driver import Driver
    from textual.drivers.headless_driver import HeadlessDriver
    from textual.pilot import Pilot
    from textual.screen import Screen
    from textual.scroll_view import ScrollView
    from textual.widget import Widget
    from textual.widgets import DataTable, Input, Static

    names: set[str] = set()
    for cls in (App, ScrollView, DataTable, Input, Static, Pilot, HeadlessDriver, pytest.Function):
        names.update(n for n in dir(cls) if n.startswith("_") and not n.startswith("__"))
    for cls in (App, DOMNode, Widget, Screen, DataTable, Input, Driver, Pilot, pytest.Function):
        names.update(
            n
            for n in cls.__init__.__code__.co_names
            if n.startswith("_") and not n.startswith("__")
        )
    return names


def _own_private_names(paths: list[Path]) -> set[str]:
    """Private names the package defines itself (methods, ``self._x = ...``)."""
    own: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
    return own


def _dependency_private_uses(paths: list[Path], own_paths: list[Path]) -> list[str]:
    """Where ``paths`` import a dependency's private module or name, or read an attribute
    of Textual's private ones (``own_paths`` define the private names that are ours)."""
    textual_private = _textual_private_names() - _own_private_names(own_paths)
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                module = node.module
                if (
                    module != "__future__"
                    and not module.startswith(("sckpt", "tests"))
                    and (
                        any(part.startswith("_") for part in module.split("."))
                        or any(a.name.startswith("_") for a in node.names)
                    )
                ):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} from {module}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if any(p.startswith("_") for p in alias.name.split(".")[1:]):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}")
            elif (
                isinstance(node, ast.Attribute)
                and node.attr in textual_private
                and not (isinstance(node.value, ast.Name) and node.value.id == "os")  # os._exit
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    return found


def test_the_package_uses_no_private_name_of_a_dependency() -> None:
    # A private name (``textual._two_way_dict``, ``DataTable._data``, ``Screen._bindings``)
    # may change in any release; the console used several, and pinned Textual loosely.
    paths = _package_files()
    assert _dependency_private_uses(paths, paths) == []


def test_the_tests_and_benches_use_no_private_name_of_a_dependency() -> None:
    # The same for what checks the console: a test reading ``Screen._compositor`` breaks
    # with a Textual release as surely as the console would (tests/app_screen.py reads
    # the screen through the public API).  The package's own private names stay readable.
    paths = sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "bench").rglob("*.py"))
    assert _dependency_private_uses(paths, [*_package_files(), *paths]) == []


def _own_private_uses(paths: list[Path]) -> list[str]:
    """Where ``paths`` reach a private name (``_x``) of sckpt: an attribute read or set on
    anything but the file's own ``self``/``cls``, a name patched by string, a private
    module or name imported."""
    private = {
        name
        for name in _own_private_names(_package_files())
        if name.startswith("_") and not name.startswith("__") and name.strip("_")
    }
    found = []
    for path in paths:
        where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in private
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                found.append(f"{where}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                parts = node.value.split(".")
                if node.value in private or (
                    parts[0] == "sckpt" and any(p.startswith("_") for p in parts)
                ):
                    found.append(f"{where}:{node.lineno} {node.value!r}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sckpt"):
                names = [*(node.module or "").split("."), *(a.name for a in node.names)]
                if any(n.startswith("_") and not n.startswith("__") for n in names):
                    found.append(f"{where}:{node.lineno} from {node.module}")
    return found


def test_the_tests_and_benches_use_no_private_name_of_sckpt() -> None:
    # A test that patches or reads ``facade._engine`` tests the inside, and breaks with
    # every change of it: tests inject (``main(argv, facade_factory=...)``,
    # ``Facade.wrap_engine``, ``cluster.control``) and read public names.
    paths = sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "bench").rglob("*.py"))
    assert _own_private_uses(paths) == []


def test_the_private_name_finder_finds_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(facade):\n    return facade._engine\n", encoding="utf-8")
    assert _own_private_uses([sample]) == ["sample.py:2 ._engine"]


def test_screens_widgets_and_dialogs_never_import_the_app() -> None:
    # The app owns the screens; screens see it through ``context.Console`` and hear from
    # it through ``messages`` (an import back up, even for typing, was a cycle).
    below = [ROOT / "tui" / name for name in ("screens", "widgets", "dialogs")]
    paths = [p for folder in below for p in sorted(folder.rglob("*.py"))]
    paths += [ROOT / "tui" / name for name in ("context.py", "messages.py", "rows.py")]
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name
            for name in _imports(path)
            if name == "sckpt.tui.app" or name.startswith("sckpt.tui.app.")
        )
        for path in paths
    }
    assert {path: names for path, names in offenders.items() if names} == {}
    messages = _imports(ROOT / "tui" / "messages.py")
    assert not any(
        n.startswith(("sckpt.tui.screens", "sckpt.tui.app", "sckpt.tui.refresh")) for n in messages
    )


CHECKPOINTING = BACKEND / "checkpointing"
WRAPPER = "sckpt.backend.checkpointing.wrapper"
NOT_ON_COMPUTE_NODES = (
    "textual",
    "rich",
    "sckpt.tui",
    "sckpt.cli",
    "sckpt.backend.facade",
    "sckpt.backend.engines",
    "sckpt.backend.libslurm",
    "cffi",
    "_cffi_backend",
)
"""The console (Textual, the app, the command line), what it drives Slurm with (the facade
and its engines) and libslurm's binding (cffi)."""


def _source_of(module: str) -> Path | None:
    """``sckpt.backend.checkpointing.store`` -> its file in the checkout; None for a name
    that is not one of sckpt's modules (another package's, or a name inside a module)."""
    for top, installed in _PACKAGES.items():
        if module == installed or module.startswith(f"{installed}."):
            base = ROOT.joinpath(top, *module.split(".")[2:])
            for path in (base / "__init__.py", base.with_suffix(".py")):
                if path.is_file():
                    return path
    return None


def _loaded_with(module: str) -> set[str]:
    """Every name ``module`` imports, and what those import in turn: its parent packages
    too, imports inside functions too (``sckpt run --transparent`` imports its checkpointer
    there), non-sckpt ones by their full name."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        path = _source_of(name)
        if path is not None:
            todo += sorted(_imports(path))
    return seen


def _console_side(names: set[str]) -> list[str]:
    return sorted(
        name
        for name in names
        if any(name == bad or name.startswith(f"{bad}.") for bad in NOT_ON_COMPUTE_NODES)
    )


def test_the_wrapper_imports_neither_the_console_nor_libslurm() -> None:
    loaded = _loaded_with(WRAPPER)
    # Both checkpointers are followed, the one imported only for --transparent included.
    assert {
        "sckpt.backend.checkpointing.signal_checkpointer",
        "sckpt.backend.checkpointing.transparent",
        "sckpt.backend.checkpointing.dmtcp_coordinator",
    } <= loaded
    assert _console_side(loaded) == []


def test_running_the_wrapper_loads_neither_the_console_nor_libslurm() -> None:
    # Outside a job both runs stop with one line on stderr, after the config is read (and,
    # with --transparent, its checkpointer imported and DMTCP looked for).
    code = (
        "import sys\n"
        f"from {WRAPPER} import main\n"
        "codes = [main(['--', 'true']), main(['--transparent', '--', 'true'])]\n"
        "import sckpt.backend.checkpointing.transparent\n"
        f"bad = {NOT_ON_COMPUTE_NODES!r}\n"
        "print(codes, sorted(m for m in sys.modules\n"
        "    if any(m == b or m.startswith(b + '.') for b in bad)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SCKPT_"))}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    codes, _, loaded = out.stdout.strip().partition("] ")
    assert codes.startswith("[2, ") and loaded == "[]"
    assert "must run inside a Slurm job" in out.stderr


ROOMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "the words",
        (
            "sckpt",
            "sckpt.exit_codes",
            "sckpt.backend",
            *(
                f"sckpt.backend.{name}"
                for name in (
                    "model",
                    "errors",
                    "operations",
                    "arguments",
                    "targets",
                    "rules",
                    "config",
                    "config_file",
                    "config_edit",
                    "keymap",
                    "progress",
                    "filters",
                    "columns",
                    "arrays",
                    "hostlist",
                    "history",
                    "audit",
                    "gc_pause",
                    "give_way",
                    "control_chars",
                )
            ),
        ),
    ),
    ("the checkpoint mechanism's job side", ("sckpt.backend.checkpointing.*",)),
    (
        "a Slurm",
        ("sckpt.backend.slurm_api", "sckpt.backend.libslurm.*", "sckpt.backend.simulator.*"),
    ),
    (
        "the engines",
        (
            "sckpt.backend.engines.*",
            "sckpt.backend.checkpointing.engine",
            "sckpt.backend.checkpointing.records",
            "sckpt.backend.checkpointing.restart",
        ),
    ),
    (
        "the door",
        (
            "sckpt.backend.facade",
            "sckpt.backend.acting",
            "sckpt.backend.accounting",
            "sckpt.backend.readonly",
            "sckpt.backend.job_output",
            "sckpt.backend.doctor",
            "sckpt.backend.each_target",
            "sckpt.backend.early_snapshot",
        ),
    ),
    (
        "the front ends",
        # python -m sckpt's module, named by its file (the private-name check reads any
        # "sckpt._x" string as reaching inside sckpt).
        (
            "sckpt.cli.*",
            "sckpt.tui.*",
            "sckpt.styles.*",
            _module_name(ROOT / "sckpt" / "__main__.py"),
        ),
    ),
)
"""ARCHITECTURE.md's rooms, from the bottom up (its "The order of the rooms" lists them in
this order): a module may import its own room and those below, never one above.  A name is
one module; ``pkg.*`` is the package and every module under it; the longest match wins, so
``checkpointing.engine`` is an engine although the rest of its folder is below the engines."""


def _room_of(module: str) -> int | None:
    """The index in ``ROOMS`` of the room ``module`` is in (None: it is in none)."""
    best: tuple[int, int] | None = None
    for index, (_title, names) in enumerate(ROOMS):
        for name in names:
            package = name.removesuffix(".*")
            fits = module == package or (name.endswith(".*") and module.startswith(f"{package}."))
            if fits and (best is None or len(package) > best[0]):
                best = (len(package), index)
    return None if best is None else best[1]


def _climbs(graph: dict[str, list[str]]) -> list[str]:
    """Each import in ``graph`` (module -> the modules it imports) that runs upwards: to a
    room above the importer's, as ``importer (room) -> imported (room)``."""
    found = []
    for module, imported in sorted(graph.items()):
        here = _room_of(module)
        for other in imported:
            there = _room_of(other)
            if here is not None and there is not None and there > here:
                found.append(f"{module} ({ROOMS[here][0]}) -> {other} ({ROOMS[there][0]})")
    return found


def test_every_module_of_the_package_is_in_one_room() -> None:
    # A module outside every room would escape the next test: a new module at the top of
    # backend/ is named in ROOMS (and ARCHITECTURE.md) by whoever adds it.
    modules = sorted(_module_name(path) for path in _package_files())
    assert "sckpt.backend.config" in modules and "sckpt.tui.app" in modules
    assert [name for name in modules if _room_of(name) is None] == []


def test_no_import_runs_upwards_between_the_rooms() -> None:
    # Imports inside functions and under TYPE_CHECKING count, as for the loops: a room that
    # reaches up, even late, cannot be read or changed without the one above it.
    paths = _package_files()
    modules = {_module_name(path): path for path in paths}
    graph = {name: sorted(_module_edges(path, set(modules))) for name, path in modules.items()}
    assert _climbs(graph) == []


def test_the_climb_finder_finds_a_climb() -> None:
    # It must be able to fail: the config (a word) importing the checkpoint mechanism is
    # the import issue 35 found; the mechanism importing the config is the right way round.
    graph = {
        "sckpt.backend.config": ["sckpt.backend.checkpointing.generations"],
        "sckpt.backend.checkpointing.wrapper": ["sckpt.backend.config"],
        "sckpt.backend.checkpointing.engine": ["sckpt.backend.engines.base"],
        "sckpt.backend.engines.base": ["sckpt.backend.checkpointing.engine"],
    }
    assert _climbs(graph) == [
        "sckpt.backend.config (the words) -> sckpt.backend.checkpointing.generations"
        " (the checkpoint mechanism's job side)"
    ]


def test_architecture_lists_the_rooms_in_the_same_order() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("\n## The order of the rooms\n", 1)[1].split("\n## ", 1)[0]
    listed = [
        line.split("**")[1]
        for line in section.splitlines()
        if line[:1].isdigit() and line.split(". ", 1)[1].startswith("**")
    ]
    assert listed == [title for title, _names in ROOMS]


MAX_FUNCTION_LINES = 80
"""The longest function (its ``def`` line to its last, docstring and nested functions
included) the package may have: past it, split it into the steps it is made of."""


def _long_functions(path: Path, limit: int, root: Path = ROOT) -> dict[str, int]:
    """``path::Class.function`` (``path`` from ``root``) -> its length, for every function
    longer than ``limit`` lines (methods and nested functions by their qualified names)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if length > limit:
                        found[f"{path.relative_to(root)}::{name}"] = length
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def test_no_function_of_the_package_is_over_80_lines() -> None:
    long: dict[str, int] = {}
    for path in _package_files():
        long.update(_long_functions(path, MAX_FUNCTION_LINES))
    assert long == {}


def test_the_function_length_finder_finds_a_long_method(tmp_path: Path) -> None:
    # It must be able to fail: a method one line over the limit is named by its class,
    # and a function at the limit is not named.
    body = "".join(f"        x = {n}\n" for n in range(8))
    source = (
        "class A:\n    def long(self) -> None:\n" + body + "\n"
        "def short() -> None:\n" + body.replace("        ", "    ")[: -len("    x = 7\n")]
    )
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    assert _long_functions(path, 8, tmp_path) == {"probe.py::A.long": 9}


MAX_TEST_FILE_LINES = 900


def test_no_test_file_is_over_900_lines() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted((ROOT / "tests").rglob("*.py"))
    }
    assert "tests/conftest.py" in sizes and "tests/test_layering.py" in sizes
    assert {path: n for path, n in sizes.items() if n > MAX_TEST_FILE_LINES} == {}


# ------------------------------------------------------------- the simulator's parts (issue 35)


def test_no_simulator_class_inherits_from_its_own_classes_more_than_one_level() -> None:
    """The simulated controller was an eight-level chain of mixins, 76 methods on one
    ``self``; now it holds its parts (``cluster.py``), and no chain may grow back (the
    finder, and a planted chain it catches: ``tests/simulator/test_inheritance.py``)."""
    from tests.simulator.inheritance import MAX_OWN_INHERITANCE, own_inheritance_depths

    depths = own_inheritance_depths(sorted((BACKEND / "simulator").rglob("*.py")))
    assert "SimulatedCluster" in depths and "ClusterState" in depths
    assert {name: d for name, d in depths.items() if d > MAX_OWN_INHERITANCE} == {}


def test_the_simulator_hooks_and_the_tests_reach_no_private_simulator_name() -> None:
    """``SimulatorControl`` (the tests' hooks; it read the controller's private names 20
    times), the client library and the demo's engine call the parts' public methods."""
    simulator = BACKEND / "simulator"
    paths = [simulator / "control.py", simulator / "client.py", simulator / "cluster.py"]
    assert _own_private_uses([*paths, BACKEND / "engines" / "simulated.py"]) == []
    assert _own_private_uses(sorted((ROOT / "tests").rglob("*.py"))) == []


# ---------------------------------------------------------------------- one resolution (issue 35)


def test_an_actions_target_is_resolved_by_one_call_that_later_steps_only_read() -> None:
    """``Facade.act`` resolves its target by one call of ``targets.resolve`` (imported as
    ``resolve_target``); nothing after it parses, looks up, routes or checks the target
    again, and no engine has a resolution of its own (the ``-M`` router reads the cluster
    by the same rule, ``targets.on_cluster``)."""
    tree = ast.parse((BACKEND / "facade.py").read_text())
    act = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "act")
    called = [ast.unparse(n.func) for n in ast.walk(act) if isinstance(n, ast.Call)]
    assert called.count("resolve_target") == 1
    again = {"to_target", "self.resolve", "on_cluster", "require_whole_job", "complete_matching"}
    assert sorted(set(called) & again) == []
    assert [n for n in called if n.endswith(".resolve_target")] == []
    engines = sorted(
        p.name for p in (BACKEND / "engines").glob("*.py") if "resolve_target" in p.read_text()
    )
    assert engines == []


def test_parsing_a_command_line_imports_no_shtab() -> None:
    """shtab (with ``importlib.metadata``) is only for ``sckpt completion``: a start that
    parses its command line (the console's, ``ls``) does not import it (issue 34, first
    rows); the completion script still gets its file and directory completions."""
    code = (
        "import sys\n"
        "from sckpt.cli.parser import completion_script, parse\n"
        "parse([]); parse(['--config', 'c.toml', 'ls', '-t', 'R']); parse(['create', '1'])\n"
        "print('shtab' in sys.modules)\n"
        "script = completion_script('bash')\n"
        "print('shtab' in sys.modules, '_shtab_compgen_files' in script,"
        " '_shtab_compgen_dirs' in script)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True", "True"]
