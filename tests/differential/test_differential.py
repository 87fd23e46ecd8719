"""The same scripted sequences against three clusters, answer by answer (issue 12, part 3).

* the simulated controller in its ompi setting must answer exactly as the real Slurm 19.05.8
  controller (``checkpoint/ompi``, OMPI.md) does: exit code, error name and code, stdout and
  stderr, for every operation of every scenario (scenarios.py);
* the cooperative engine on the real 22.05 cluster must answer as 19.05 does except at the
  steps of intended.py's one table (and the explanations sckpt appends after '; ').

A failure shows the first differing step with both answers; ``python -m
tests.differential.drift`` lists them all.
"""

from __future__ import annotations

import pytest

from .clusters import Run, first_difference, is_operation
from .conftest import Player
from .intended import HINTS, INTENDED, TABLE
from .scenarios import OPERATIONS, SCENARIOS, UNKNOWN

NAMES = sorted(SCENARIOS)


@pytest.mark.slurm
@pytest.mark.parametrize("name", NAMES)
def test_simulated_ompi_answers_as_1905(name: str, on_1905: Player, on_simulated: Player) -> None:
    real = on_1905(name)
    simulated = on_simulated(name)
    difference = first_difference(real, simulated)
    assert difference is None, "\n" + difference


@pytest.mark.slurm
@pytest.mark.parametrize("name", NAMES)
def test_cooperative_answers_as_1905_but_where_intended(
    name: str, on_1905: Player, on_cooperative: Player
) -> None:
    real, coop = _without_hints(on_1905(name)), _without_hints(on_cooperative(name))
    difference = first_difference(real, coop, skip=lambda index: (name, index) in INTENDED)
    assert difference is None, "\n" + difference
    stale = [
        f"#{index} {real.answers[index].step}"
        for (scenario, index) in INTENDED
        if scenario == name and real.answers[index].same(coop.answers[index])
    ]
    assert not stale, f"intended.py lists steps of {name!r} that no longer differ: {stale}"


def _without_hints(run: Run) -> Run:
    return Run(run.cluster, run.scenario, [a.without_hint() for a in run.answers])


# ---------------------------------------------------------------- the data itself


@pytest.mark.parametrize("name", NAMES)
def test_scenario_is_well_formed(name: str) -> None:
    labels: set[str] = set()
    users = {"root"}
    for step in SCENARIOS[name]:
        kind = str(step[0])
        if kind == "as":
            assert step[1] in ("root", "alice", "bob"), step
            users.add(str(step[1]))
        elif kind == "submit":
            assert step[2] in ("root", "alice", "bob") and step[3] in ("running", "pending")
            labels.add(str(step[1]))
        elif kind in ("suspend", "resume", "finish", "cancel"):
            assert step[1] in labels, f"{step}: no such job yet"
        else:
            assert is_operation(step), f"unknown step {step!r}"
            words = [str(step[1])]
            if len(step) > 2 and isinstance(step[2], dict):
                words += [str(v) for v in step[2].values()]
            for word in words:
                for label in _labels(word):
                    assert label in labels, f"{step}: {{{label}}} is not submitted before"


def test_the_scenarios_cover_the_brief() -> None:
    """Nine operations, every target kind, counters, states, users, restart refusals."""
    ops = [step for steps in SCENARIOS.values() for step in steps if is_operation(step)]
    assert {str(s[0]) for s in ops} >= set(OPERATIONS)
    targets = {str(s[1]) for s in ops}
    for kind in ("{run}", "{run}.0", "{run}.batch", "{run}.7", UNKNOWN, f"{UNKNOWN}.0"):
        assert kind in targets, kind
    for label in ("pend", "susp", "done", "gone"):
        assert {f"{{{label}}}", f"{{{label}}}.0"} <= targets, label
    changes = {str(s[0]) for steps in SCENARIOS.values() for s in steps}
    assert {"suspend", "resume", "finish", "cancel"} <= changes
    users = {str(s[1]) for steps in SCENARIOS.values() for s in steps if s[0] == "as"}
    assert users == {"root", "alice", "bob"}


def test_the_table_of_intended_differences_is_well_formed() -> None:
    assert HINTS and "\n" not in HINTS
    seen: set[tuple[str, int]] = set()
    for row in TABLE:
        assert row.reason and "\n" not in row.reason and row.steps
        for scenario, index in row.steps:
            assert (scenario, index) not in seen, f"{scenario} #{index} listed twice"
            seen.add((scenario, index))
            ops = [s for s in SCENARIOS[scenario] if is_operation(s)]
            assert 0 <= index < len(ops), f"{scenario} has no operation #{index}"


def _labels(text: str) -> list[str]:
    import re

    return re.findall(r"\{(\w+)(?:@\w+)?\}", text)
