"""Operations are declared once, in the table (``backend/operations.py``): no layer
compares an operation's name with a literal, and the forwarding layers list none by hand.

Why a file of its own: these rules read every module of the package, as the import rules
in ``test_layering.py`` do, but they are about the table, and that file has a size cap.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BACKEND = ROOT / "backend"
CLI = ROOT / "cli"
TUI = ROOT / "tui"


_OPERATION_WORDS = {"operation", "name"}
"""Variables that hold an operation's name where code used to compare it with a literal."""


def _operation_name_comparisons(tree: ast.AST, names: set[str]) -> list[str]:
    """``operation == "restart"``-style comparisons of an operation's name with a literal."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        words = {
            s.id if isinstance(s, ast.Name) else s.attr
            for s in sides
            if isinstance(s, ast.Name | ast.Attribute)
        }
        literals = {s.value for s in sides if isinstance(s, ast.Constant)}
        if words & _OPERATION_WORDS and literals & names:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_backend_asks_the_table_not_an_operations_name() -> None:
    """Each rule that concerns some operations is an attribute of their rows
    (``operations.py``): no ``operation == "restart"`` in the backend, the simulated
    controller included: it asks the same table (``operation(name).completes``)."""
    from sckpt.backend.operations import NAMES

    bad = {}
    for path in BACKEND.rglob("*.py"):
        if path.name == "operations.py":
            continue
        found = _operation_name_comparisons(ast.parse(path.read_text()), set(NAMES))
        if found:
            bad[str(path.relative_to(ROOT))] = found
    assert bad == {}


def test_the_layers_that_only_forward_list_no_operation() -> None:
    """The read-only guard and the ``-M`` router derive their methods from the table and
    the ``Engine`` interface: no ``guarded("create")`` or ``routed("create")`` by hand."""
    from sckpt.backend.operations import NAMES

    listed = []
    for path in (BACKEND / "readonly.py", BACKEND / "engines" / "clusters.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"guarded", "routed"}
                and any(isinstance(a, ast.Constant) and a.value in NAMES for a in node.args)
            ):
                listed.append(f"{path.name}:{node.lineno}")
    assert listed == []


def _front_end_name_comparisons(tree: ast.AST, names: set[str]) -> list[str]:
    """``_operation_name_comparisons``, and ``operation in ("restart", "vacate")`` too: a
    name compared with a tuple, list or set of literals."""
    found = _operation_name_comparisons(tree, names)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        held = {
            e.value
            for s in sides
            if isinstance(s, ast.Tuple | ast.List | ast.Set)
            for e in s.elts
            if isinstance(e, ast.Constant)
        }
        words = {s.id for s in sides if isinstance(s, ast.Name)}
        words |= {s.attr for s in sides if isinstance(s, ast.Attribute)}
        if words & _OPERATION_WORDS and held & names:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_front_ends_ask_the_table_not_an_operations_name() -> None:
    """The console and the command line read what an operation does from its row
    (``resumes``, ``job_level``, ``enables``, ``ends_step``, ``force_words``, its
    ``arguments`` and ``kind``), never ``operation == "restart"``: a new operation is
    offered, reported and asked about with no edit in ``tui/`` or ``cli/``.  The finder
    catches a planted comparison of either form."""
    from sckpt.backend.operations import NAMES

    planted = ast.parse('if operation == "restart" or op.name in ("vacate", "x"):\n    pass')
    assert len(_front_end_name_comparisons(planted, set(NAMES))) == 2
    bad = {}
    for path in [*TUI.rglob("*.py"), *CLI.rglob("*.py")]:
        found = _front_end_name_comparisons(ast.parse(path.read_text()), set(NAMES))
        if found:
            bad[str(path.relative_to(ROOT))] = found
    assert bad == {}


def _calls_of(tree: ast.AST, function: str) -> list[int]:
    """Lines that call ``function`` (``rules.check_job_level(...)`` or a bare name)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == function)
            or (isinstance(node.func, ast.Name) and node.func.id == function)
        )
    ]


def test_a_rows_job_level_rule_is_applied_in_one_place() -> None:
    """Restart's "the job or its batch step only" (the row's ``job_level``) is refused by
    ``acting.perform`` before any engine is asked: no engine, simulated controller or
    front end checks it again (issue 35: it was written in four engines)."""
    planted = ast.parse('rules.check_job_level("restart", target)\ncheck_job_level(op, t)')
    assert _calls_of(planted, "check_job_level") == [1, 2]
    callers = {
        str(path.relative_to(ROOT))
        for path in [*BACKEND.rglob("*.py"), *TUI.rglob("*.py"), *CLI.rglob("*.py")]
        if _calls_of(ast.parse(path.read_text()), "check_job_level")
    }
    assert callers == {"backend/acting.py"}


def test_each_checkpoint_row_is_one_binding_line_and_one_api_method() -> None:
    """The binding forwards each checkpoint row to its libslurm call: one ``ckpt_NAME =
    OnThread(checkpoint.NAME)`` line per row of the operations table, and the interface
    (``SlurmAPI``) names the same calls with the same parameters.  The lines are written,
    not generated from the table in a loop, so that mypy checks ``Binding`` against
    ``SlurmAPI``; this test keeps the two and the table in step (issue 35 item 2)."""
    import inspect

    from sckpt.backend.libslurm import checkpoint
    from sckpt.backend.libslurm.binding import Binding, OnThread
    from sckpt.backend.operations import CHECKPOINT_NAMES
    from sckpt.backend.slurm_api import SlurmAPI

    def ckpt_names(cls: type) -> set[str]:
        return {n.removeprefix("ckpt_") for n in vars(cls) if n.startswith("ckpt_")}

    assert ckpt_names(Binding) == set(CHECKPOINT_NAMES) == ckpt_names(SlurmAPI)
    for name in CHECKPOINT_NAMES:
        line = vars(Binding)[f"ckpt_{name}"]
        assert isinstance(line, OnThread) and line.fn is getattr(checkpoint, name)
        bound = inspect.signature(line).parameters
        api = inspect.signature(getattr(SlurmAPI, f"ckpt_{name}")).parameters
        assert [(p.name, p.default) for p in bound.values()] == [
            (p.name, p.default) for p in api.values()
        ], name
