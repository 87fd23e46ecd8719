"""The operations table (``backend/operations.py``) is the single source of the nine operations.

Every place that offers or dispatches an operation must say what the table says: the facade's
and the engines' methods and their keyword arguments, the binding's symbols, the command
line's subcommands, options and historical names, the console's keys.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from sckpt.backend.engines.base import Engine
from sckpt.backend.facade import Facade
from sckpt.backend.libslurm import CHECKPOINT_SYMBOLS
from sckpt.backend.operations import ARGUMENTS, MUTATING, NAMES, OPERATIONS, Operation, operation
from sckpt.backend.readonly import ReadOnlyEngine


def _keywords(method: Callable[..., Any]) -> tuple[str, ...]:
    """A method's parameters after ``self`` and ``target``."""
    names = tuple(inspect.signature(method).parameters)
    assert names[:2] == ("self", "target"), names
    return names[2:]


def test_the_table_holds_the_nine_operations_once() -> None:
    assert NAMES == (
        "able",
        "error",
        "create",
        "vacate",
        "restart",
        "enable",
        "disable",
        "complete",
        "tasks",
    )
    assert frozenset(NAMES) - {"able", "error"} == MUTATING
    assert all(operation(op.name) is op for op in OPERATIONS)
    assert all(set(op.arguments) <= set(ARGUMENTS) for op in OPERATIONS)
    with pytest.raises(ValueError, match="requeue"):
        operation("requeue")


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
@pytest.mark.parametrize("interface", [Facade, Engine, ReadOnlyEngine])
def test_facade_and_engines_take_exactly_the_tables_arguments(
    op: Operation, interface: type[Any]
) -> None:
    assert _keywords(getattr(interface, op.name)) == op.arguments


def test_binding_checks_the_tables_symbols() -> None:
    assert sorted(CHECKPOINT_SYMBOLS) == sorted(NAMES)
    assert [operation(name).symbol for name in CHECKPOINT_SYMBOLS] == [
        f"slurm_checkpoint_{name}" for name in sorted(NAMES)
    ]
