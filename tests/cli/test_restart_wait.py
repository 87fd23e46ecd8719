"""``sckpt restart TARGET... --wait``: every restart first, then the jobs watched together.

A fake facade stands for the cooperative engine here: each job runs again a few looks after
its restart, and its task registers a few looks later.  The real-cluster counterpart (an
array's tasks restarted together) is ``tests/cooperative/test_arrays.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from sckpt.backend.errors import InvalidJobId
from sckpt.backend.model import ActionResult, JobState, ResumeState, StepId
from sckpt.backend.operations import operation
from sckpt.cli import WaitTiming
from sckpt.cli.actions import run_actions

RESUMES_AFTER = 5
"""Looks at one job before its task says it resumed (about five seconds each)."""


@dataclass
class Clock:
    """The watching's clock: moves only when it sleeps."""

    now: float = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class FakeFacade:
    """Restarts jobs and answers ``resume_state`` as a job coming back would."""

    clock: Clock
    engine_name: str = "cooperative"
    read_only: bool = False
    restarted_at: dict[int, float] = field(default_factory=dict)
    acted: list[str] = field(default_factory=list)

    def expand_targets(self, targets: Sequence[StepId]) -> list[StepId]:
        return list(targets)

    def act(self, name: str, target: StepId, **values: object) -> ActionResult:
        self.acted.append(f"{name} {target}")
        self.restarted_at[target.job_id] = self.clock.now
        return ActionResult(target, name, f"job {target.job_id} released")

    def resume_state(self, target: StepId) -> ResumeState:
        if target.job_id not in self.restarted_at:
            raise InvalidJobId()
        since = self.clock.now - self.restarted_at[target.job_id]
        if since < 2:
            return ResumeState(target, JobState.PENDING)
        if since < RESUMES_AFTER:
            return ResumeState(target, JobState.RUNNING)
        return ResumeState(
            target, JobState.RUNNING, (f"{target.job_id}.0 task 0: resumed from generation 1",)
        )


def test_restarts_are_watched_together_not_one_after_another(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock()
    facade = FakeFacade(clock)
    targets = [StepId(job) for job in (11, 12, 13)]
    code = run_actions(
        facade,  # type: ignore[arg-type]
        operation("restart"),
        targets,
        {"stick": False},
        as_json=True,
        historical=False,
        debug=False,
        wait=True,
        timing=WaitTiming(poll_seconds=1.0, sleep=clock.sleep, monotonic=lambda: clock.now),
    )
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["exit_code"] == 0
    assert facade.acted == ["restart 11", "restart 12", "restart 13"]
    assert [(r["target"], r["outcome"], r["ok"]) for r in document["results"]] == [
        ("11", "running", True),
        ("12", "running", True),
        ("13", "running", True),
    ]
    assert document["results"][2]["notes"] == ["13.0 task 0: resumed from generation 1"]
    # The time of one job's resume (and the look that confirms it), not three added up.
    assert RESUMES_AFTER <= clock.now <= RESUMES_AFTER + 2, clock.now


def test_a_restart_that_fails_is_reported_and_the_others_still_watched(
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock()
    facade = FakeFacade(clock)
    original = facade.act

    def act(name: str, target: StepId, **values: object) -> ActionResult:
        if target.job_id == 12:
            raise InvalidJobId(hint="job 12 is not in the queue")
        return original(name, target, **values)

    facade.act = act  # type: ignore[method-assign]
    code = run_actions(
        facade,  # type: ignore[arg-type]
        operation("restart"),
        [StepId(11), StepId(12)],
        {"stick": False},
        as_json=False,
        historical=False,
        debug=False,
        wait=True,
        timing=WaitTiming(poll_seconds=1.0, sleep=clock.sleep, monotonic=lambda: clock.now),
    )
    out, err = capsys.readouterr()
    assert code == 1
    assert out.splitlines() == ["11: restart running: job 11 released"]
    assert "sckpt: restart 12: ESLURM_INVALID_JOB_ID" in err
    assert "sckpt: restart 11: 11.0 task 0: resumed from generation 1" in err


@dataclass
class EndingFacade(FakeFacade):
    """A job that ends some other way while it is watched: ``state`` from the third look
    on (restart --wait), or once a create's checkpoint is watched (an engine that does not
    wait itself, such as the native one: its step is then gone, ``ended``)."""

    state: JobState | None = JobState.CANCELLED
    looks: int = 0

    def resume_state(self, target: StepId) -> ResumeState:
        self.looks += 1
        if self.looks < 3 and self.acted[-1].startswith("restart"):
            return ResumeState(target, JobState.RUNNING)
        if self.state is None:
            raise InvalidJobId()
        return ResumeState(target, self.state)

    def checkpoint_progress(self, target: StepId) -> str:
        return "ended"


def _run(facade: FakeFacade, name: str, values: dict[str, object]) -> int:
    clock = facade.clock
    return run_actions(
        facade,  # type: ignore[arg-type]
        operation(name),
        [StepId(11, 0) if name == "create" else StepId(11)],
        values,
        as_json=False,
        historical=False,
        debug=False,
        wait=True,
        timing=WaitTiming(poll_seconds=1.0, sleep=clock.sleep, monotonic=lambda: clock.now),
    )


@pytest.mark.parametrize(
    ("state", "code", "words"),
    [
        (JobState.CANCELLED, 5, "job 11 was cancelled"),
        (JobState.PENDING, 6, "job 11 was requeued (PENDING)"),
        (JobState.FAILED, 4, "job 11 ended (FAILED)"),
        (None, 4, "job 11 ended (Slurm no longer lists it)"),
    ],
)
def test_a_wait_ends_when_the_job_ends_some_other_way_saying_which(
    capsys: pytest.CaptureFixture[str], state: JobState | None, code: int, words: str
) -> None:
    for name, values, target in (
        ("restart", {"stick": False}, "11"),
        ("create", {"max_wait": 0, "image_dir": None}, "11.0"),
    ):
        facade = EndingFacade(Clock(), state=state)
        assert _run(facade, name, values) == code
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"sckpt: {name} {target}: ESLURM_ALREADY_DONE (2021): {words}; ")
        assert len(err.splitlines()) == 1


def test_create_wait_on_a_step_that_ended_while_its_job_runs() -> None:
    facade = EndingFacade(Clock(), state=JobState.RUNNING)
    assert _run(facade, "create", {"max_wait": 0, "image_dir": None}) == 4
