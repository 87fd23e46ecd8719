"""The operations table (``backend/operations.py``) is the single source of the nine checkpoint
operations and the four job-control verbs.

Every place that offers or dispatches an operation must say what the table says: the facade's
and the engines' methods and their keyword arguments, the binding's symbols, the command
line's subcommands, options and historical names, the console's keys.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import pytest
from sckpt.backend.engines.base import Engine
from sckpt.backend.errors import UsageError
from sckpt.backend.facade import Facade
from sckpt.backend.libslurm import CHECKPOINT_SYMBOLS
from sckpt.backend.operations import (
    ARGUMENTS,
    CHECKPOINT_NAMES,
    JOB_CONTROL_NAMES,
    MUTATING,
    NAMES,
    OPERATIONS,
    ForceWords,
    Operation,
    operation,
)
from sckpt.backend.readonly import ReadOnlyEngine


def _keywords(method: Callable[..., Any]) -> tuple[str, ...]:
    """A method's parameters after ``self`` and ``target``."""
    names = tuple(inspect.signature(method).parameters)
    assert names[:2] == ("self", "target"), names
    return names[2:]


def test_the_table_holds_the_nine_operations_auto_and_the_four_verbs_once() -> None:
    assert CHECKPOINT_NAMES == (
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
    assert JOB_CONTROL_NAMES == ("cancel", "hold", "release", "requeue")
    assert (*CHECKPOINT_NAMES, "auto", *JOB_CONTROL_NAMES) == NAMES
    assert operation("auto").kind == "policy" and operation("auto").on_every_step
    assert frozenset(NAMES) - {"able", "error"} == MUTATING
    assert all(operation(op.name) is op for op in OPERATIONS)
    assert all(set(op.arguments) <= set(ARGUMENTS) for op in OPERATIONS)
    with pytest.raises(ValueError, match="checkpoint"):
        operation("checkpoint")


def test_job_control_verbs_have_no_checkpoint_symbol_and_ask_first() -> None:
    for name in JOB_CONTROL_NAMES:
        op = operation(name)
        with pytest.raises(ValueError, match="no slurm_checkpoint_ symbol"):
            _ = op.symbol
        assert op.scontrol is None and op.confirm and op.key, name
    assert [n for n in NAMES if operation(n).whole_job] == ["hold", "release", "requeue"]


def test_auto_is_no_checkpoint_call_and_no_scontrol_operation() -> None:
    auto = operation("auto")
    with pytest.raises(ValueError, match="no slurm_checkpoint_ symbol"):
        _ = auto.symbol
    assert auto.scontrol is None and auto.mutating and auto.key == "a"
    assert auto.arguments == ("every", "before_end", "off")


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
@pytest.mark.parametrize("interface", [Facade, Engine, ReadOnlyEngine])
def test_facade_and_engines_take_exactly_the_tables_arguments(
    op: Operation, interface: type[Any]
) -> None:
    assert _keywords(getattr(interface, op.name)) == op.arguments


def test_binding_checks_the_tables_symbols() -> None:
    assert sorted(CHECKPOINT_SYMBOLS) == sorted(CHECKPOINT_NAMES)
    assert [operation(name).symbol for name in CHECKPOINT_SYMBOLS] == [
        f"slurm_checkpoint_{name}" for name in sorted(CHECKPOINT_NAMES)
    ]


def test_command_line_offers_one_command_per_operation_with_its_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sckpt.cli.parser import COMMANDS, build_parser

    assert COMMANDS[: len(NAMES)] == NAMES
    monkeypatch.setenv("COLUMNS", "500")  # one line per command in the help
    parser = build_parser()
    shown = parser.format_help()
    for op in OPERATIONS:
        assert f"    {op.name}  " in shown and op.summary in shown, op.name
        required = ["--nodelist", "n1"] if "nodelist" in op.arguments else []
        parsed = vars(parser.parse_args([op.name, "1", *required]))
        assert set(parsed) & set(ARGUMENTS) == set(op.arguments), op.name


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.scontrol], ids=lambda op: op.name)
def test_historical_form_matches_the_tables_scontrol_names(op: Operation) -> None:
    from sckpt.cli.historical import match_operation

    assert op.scontrol is not None
    shortest = op.name[: op.scontrol.prefix]
    # "re" is requeue (scontrol tried it first), so restart needs "res"
    expected = "requeue" if shortest == "re" and op.name != "requeue" else op.name
    assert match_operation(shortest.upper()) == expected
    assert match_operation(op.name[: op.scontrol.prefix + 1]) == op.name
    if op.scontrol.prefix > 1:
        with pytest.raises(UsageError):
            match_operation(op.name[: op.scontrol.prefix - 1])


def test_operations_without_a_scontrol_name_are_not_in_the_historical_form() -> None:
    from sckpt.cli.historical import match_operation, parse_historical

    for op in OPERATIONS:
        if op.scontrol is None and op.name != "requeue":
            with pytest.raises(UsageError, match="invalid checkpoint operation"):
                match_operation(op.name)
    # scontrol's own "checkpoint requeue" is still refused, though sckpt has a requeue verb
    with pytest.raises(UsageError, match="checkpoint requeue is not offered"):
        parse_historical(["requeue", "12"])


def test_console_binds_the_tables_keys_to_its_operations() -> None:
    from sckpt.tui.keys import ACTION_KEYS
    from sckpt.tui.params import ActionParams
    from sckpt.tui.screens.base import TargetScreen
    from textual.binding import Binding

    keyed = [op for op in OPERATIONS if op.key is not None]
    specs = {spec.id: spec for spec in ACTION_KEYS}
    assert set(specs) - set(NAMES) == {"check", "output"}  # the others are operations
    assert [spec.id for spec in ACTION_KEYS if spec.id in NAMES] == [op.name for op in keyed]
    form_fields = {field.name for field in dataclasses.fields(ActionParams)}
    for op in keyed:
        spec = specs[op.name]
        assert (spec.key, spec.help, spec.mutating) == (op.key, op.key_help, op.mutating)
        assert spec.runs == f"operation({op.name!r})"
        assert set(op.arguments) <= form_fields, op.name  # the form holds what it takes
    bound = {b.id: b.action for b in TargetScreen.BINDINGS if isinstance(b, Binding)}
    assert {name: bound[name] for name in specs} == {s.id: s.runs for s in ACTION_KEYS}


def test_each_operation_that_takes_force_has_its_own_force_words() -> None:
    """The console's question when ``force`` is needed is the row's (``force_words``):
    every row that takes ``force`` says its own, and no other row has any to say."""
    worded = {op.name for op in OPERATIONS if op.force_words != ForceWords()}
    assert worded == {op.name for op in OPERATIONS if "force" in op.arguments}
    assert worded == {"vacate", "restart"}


def test_the_binding_has_one_checkpoint_call_per_checkpoint_row() -> None:
    """``Binding.ckpt_NAME`` runs ``libslurm/checkpoint.NAME`` for each checkpoint row and
    nothing else (mypy checks each one's signature against ``SlurmAPI``; a copied line
    running another row's function would type-check, this catches it)."""
    from sckpt.backend.libslurm import checkpoint
    from sckpt.backend.libslurm.binding import Binding, OnThread
    from sckpt.backend.slurm_api import SlurmAPI

    calls = {n: v for n, v in vars(Binding).items() if isinstance(v, OnThread)}
    assert set(calls) == {f"ckpt_{name}" for name in CHECKPOINT_NAMES}
    assert {n for n in vars(SlurmAPI) if n.startswith("ckpt_")} == set(calls)
    assert {n: v.fn for n, v in calls.items()} == {
        f"ckpt_{name}": getattr(checkpoint, name) for name in CHECKPOINT_NAMES
    }
