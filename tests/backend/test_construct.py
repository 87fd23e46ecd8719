"""The simulator's cheap record builders make the records their classes' ``__init__`` makes.

The demo's 100,000 jobs and 300,000 steps are built through ``construct.fast_init``
(issue 34): an instance that differed from the dataclass's own in any field, in its class,
its equality or its hash would change what the console and the tests' oracle see.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields

import pytest
from sckpt.backend.model import Job, JobState, Step, StepId
from sckpt.backend.simulator.construct import fast_init
from sckpt.backend.simulator.records import make_job, make_step, make_step_id


def _values(cls: type) -> list[object]:
    """A distinct value of the right kind for every field of ``cls``, in order."""
    out: list[object] = []
    for n, f in enumerate(fields(cls)):
        kind = type(f.default) if f.default is not dataclasses.MISSING else None
        if f.name == "state" and cls is Job:
            out.append(JobState.SUSPENDED)
        elif f.name == "step_id":
            out.append(StepId(7, 3))
        elif kind is bool:
            out.append(not f.default)
        elif kind is str or f.name in ("name", "user", "partition", "state"):
            out.append(f"{f.name}-{n}")
        else:
            out.append(1000 + n)
    return out


@pytest.mark.parametrize(
    ("cls", "make"), [(Job, make_job), (Step, make_step), (StepId, make_step_id)]
)
def test_every_field_given_makes_the_same_record(cls: type, make: object) -> None:
    values = _values(cls)
    built = make(*values)  # type: ignore[operator]
    expected = cls(*values)
    assert type(built) is cls
    assert [getattr(built, f.name) for f in fields(cls)] == values
    assert built == expected and hash(built) == hash(expected)
    assert repr(built) == repr(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, fields(cls)[0].name, values[1])


def test_defaults_stay_the_class_defaults() -> None:
    assert make_step_id(5, 1) == StepId(5, 1)
    assert repr(make_step_id(5)) == repr(StepId(5))
    step = make_step(StepId(5, 0), "a.out", "alice", 1001, "batch", "RUNNING")
    assert repr(step) == repr(Step(StepId(5, 0), "a.out", "alice", 1001, "batch", "RUNNING"))
    job = make_job(9, "n", "bob", 1002, "debug", JobState.PENDING)
    assert repr(job) == repr(Job(9, "n", "bob", 1002, "debug", JobState.PENDING))
    with pytest.raises(TypeError):
        make_job(9, "n", "bob")  # a field without a default is still required


def test_classes_it_cannot_build_the_same_are_refused() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class WithFactory:
        a: list[int] = field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("negative")

    for cls in (NoSlots, WithFactory, Checked):
        with pytest.raises(TypeError, match=cls.__name__):
            fast_init(cls)
