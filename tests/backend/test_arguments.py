"""Each operation argument's rule is one rule: the facade and the command line refuse the
same values with the same sentence, and ``Facade.act`` is what the named methods run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sckpt.backend.arguments import RULES
from sckpt.backend.audit import read_records
from sckpt.backend.config import Settings
from sckpt.backend.engines.base import Engine
from sckpt.backend.errors import ReadOnlyError, UsageError
from sckpt.backend.facade import Facade
from sckpt.backend.model import StepId
from sckpt.backend.operations import ARGUMENTS, MUTATING, NAMES, operation
from sckpt.backend.readonly import ReadOnlyEngine
from sckpt.cli import arguments as cli_arguments

from .spy import SpyEngine


def _refusal(call: Callable[[], Any]) -> str:
    with pytest.raises(UsageError) as exc:
        call()
    return exc.value.message


@pytest.mark.parametrize(
    ("facade_call", "cli_type", "text", "expected"),
    [
        # The facade took node lists of up to 65,536 characters, the command line 4,095.
        ("nodelist", cli_arguments.nodelist, "n" * 4096, "expected a Slurm host list"),
        ("nodelist", cli_arguments.nodelist, "n[3-1]", "backwards"),
        ("nodelist", cli_arguments.nodelist, "n1;rm", "expected a Slurm host list"),
        ("error_code", cli_arguments.error_code, "4294967296", "from 0 to 4294967295"),
        ("begin_time", cli_arguments.begin_time, str(2**47), "out of range"),
        ("error_msg", cli_arguments.error_msg, "x" * 1025, "at most 1024 allowed"),
    ],
)
def test_facade_and_command_line_refuse_the_same_values(
    settings: Settings,
    facade_call: str,
    cli_type: Callable[[str], object],
    text: str,
    expected: str,
) -> None:
    spy = SpyEngine()
    f = Facade(spy, settings)
    op = "tasks" if facade_call == "nodelist" else "complete"
    from_cli = _refusal(lambda: cli_type(text))
    from_facade = _refusal(lambda: f.act(op, "12.0", **{facade_call: text}))
    assert expected in from_cli and expected in from_facade, (from_cli, from_facade)
    assert spy.calls == []
    (line,) = read_records(settings.audit_log)  # the facade's refusal is audited
    assert line["operation"] == op and line["result"]["name"] == "USAGE"


def test_both_accept_the_largest_values_and_pass_them_on(settings: Settings) -> None:
    spy = SpyEngine()
    f = Facade(spy, settings)
    nodes = "n" * 4095
    assert cli_arguments.nodelist(nodes) == nodes
    f.act("tasks", "12.0", nodelist=nodes, begin_time=str(2**47 - 1))
    f.act("complete", "12.0", error_code="4294967295", error_msg="x" * 1024)
    assert spy.calls == [
        ("tasks", StepId(12, 0), 2**47 - 1, "", settings.max_wait, nodes),
        ("complete", StepId(12, 0), 0, 4294967295, "x" * 1024),
    ]


def test_the_command_line_also_refuses_control_characters_the_facade_passes_on(
    settings: Settings,
) -> None:
    spy = SpyEngine()
    f = Facade(spy, settings)
    assert "control characters" in _refusal(lambda: cli_arguments.error_msg("two\nlines"))
    assert "NUL" in _refusal(lambda: f.act("complete", "12.0", error_msg="a\0b"))
    f.act("complete", "12.0", error_code=1, error_msg="two\nlines")
    assert spy.calls[-1] == ("complete", StepId(12, 0), 0, 1, "two\nlines")


def test_named_methods_are_act(settings: Settings) -> None:
    named, generic = SpyEngine(), SpyEngine()
    for name in sorted(MUTATING):
        row = operation(name)
        target = "12" if row.whole_job or row.job_level else "12.0"
        # complete: an error, so no able first; auto: something to change
        given: dict[str, object] = {
            "complete": {"error_code": 1},
            "auto": {"every": "30m"},
        }.get(name, {})
        getattr(Facade(named, settings), name)(target, **given)
        Facade(generic, settings).act(name, target, **given)
    assert named.calls == generic.calls and len(named.calls) >= len(MUTATING)
    lines = read_records(settings.audit_log)
    assert [line["operation"] for line in lines] == [n for n in sorted(MUTATING) for _ in "ab"]


def test_act_is_for_actions_with_the_tables_arguments(settings: Settings) -> None:
    f = Facade(SpyEngine(), settings)
    with pytest.raises(ValueError, match="only reads"):
        f.act("able", "12.0")
    with pytest.raises(TypeError, match="stick"):
        f.act("create", "12.0", stick=True)
    assert not settings.audit_log.exists()


def test_read_only_engine_refuses_exactly_the_mutating_operations() -> None:
    spy = SpyEngine()
    guarded = ReadOnlyEngine(spy)
    for name in NAMES:
        args = [None] * len(operation(name).arguments)
        if name in MUTATING:
            with pytest.raises(ReadOnlyError, match=f"{name} 12.0 refused"):
                getattr(guarded, name)(StepId(12, 0), *args)
        else:
            getattr(guarded, name)(StepId(12, 0))
    guarded.snapshot()
    assert spy.calls == [("able", StepId(12, 0)), ("error", StepId(12, 0)), ("snapshot",)]
    assert spy.writes_allowed is False


def test_every_argument_has_one_rule_and_every_engine_method_is_guarded() -> None:
    assert tuple(RULES) == ARGUMENTS
    interface = {n for n, m in vars(Engine).items() if callable(m) and not n.startswith("_")}
    assert interface - set(vars(ReadOnlyEngine)) == set()
