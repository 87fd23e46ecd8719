"""One operation on several targets (``each_target.OneByOne``), as both front ends run it:
one facade call per target, a refusal as that target's answer, and once Slurm does not
answer, no call for the targets after it.

On the simulated cluster as alice, through the real facade (audit log included); the one
fault is an engine whose controller "does not answer" a hold of one chosen job.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from sckpt.backend import errors as E
from sckpt.backend.audit import read_records
from sckpt.backend.config import Settings
from sckpt.backend.each_target import NotAttempted, OneByOne
from sckpt.backend.engines.base import Engine
from sckpt.backend.facade import Facade, open_facade
from sckpt.backend.model import AbleResult, ActionResult, JobState, StepId
from sckpt.backend.operations import operation
from sckpt.backend.simulator import ManualClock, SimulatedCluster


class SilentOnHold:
    """The engine, except that its controller does not answer a hold of job ``silent``;
    every hold asked of it is recorded."""

    def __init__(self, inner: Engine, silent: int) -> None:
        self.inner = inner
        self.silent = silent
        self.holds: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def hold(self, target: StepId) -> ActionResult:
        self.holds.append(target.job_id)
        if target.job_id == self.silent:
            raise E.ControllerUnreachable(hint="slurmctld did not answer (test)")
        return self.inner.hold(target)


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster(seed=3, n_jobs=0, clock=ManualClock(), users=("alice", "bob"))


def _facade(settings: Settings, cluster: SimulatedCluster) -> Facade:
    return open_facade(settings, as_user="alice", cluster=cluster)


def test_a_refusal_is_its_targets_answer_and_the_others_still_act(
    settings: Settings, cluster: SimulatedCluster
) -> None:
    mine = cluster.control.submit("alice", state=JobState.RUNNING).job_id
    bobs = cluster.control.submit("bob", state=JobState.RUNNING).job_id
    also_mine = cluster.control.submit("alice", state=JobState.RUNNING).job_id
    facade = _facade(settings, cluster)
    answers = OneByOne(facade, operation("hold"), {}).each(
        [StepId(mine), StepId(bobs), StepId(also_mine)]
    )
    assert [a.target.job_id for a in answers] == [mine, bobs, also_mine]
    assert isinstance(answers[0].result, ActionResult) and answers[0].error is None
    assert isinstance(answers[1].error, E.SlurmError) and answers[1].result is None
    assert answers[1].error.name == "ESLURM_USER_ID_MISSING"
    assert isinstance(answers[2].result, ActionResult)
    assert cluster.job(mine).held and not cluster.job(bobs).held and cluster.job(also_mine).held
    audited = [(r["target"], r["result"]["name"]) for r in read_records(settings.audit_log)]
    assert audited == [
        (str(mine), "SLURM_SUCCESS"),
        (str(bobs), "ESLURM_USER_ID_MISSING"),
        (str(also_mine), "SLURM_SUCCESS"),
    ]


def test_once_slurm_does_not_answer_the_later_targets_are_not_asked(
    settings: Settings, cluster: SimulatedCluster
) -> None:
    jobs = [cluster.control.submit("alice", state=JobState.RUNNING).job_id for _ in range(4)]
    facade = _facade(settings, cluster)
    engines: list[SilentOnHold] = []

    def wrap(inner: Engine) -> Engine:
        engines.append(SilentOnHold(inner, silent=jobs[1]))
        return cast(Engine, engines[0])

    facade.wrap_engine(wrap)
    answers = OneByOne(facade, operation("hold"), {}).each([StepId(j) for j in jobs])
    assert engines[0].holds == jobs[:2]  # no timeout waited out per later target
    assert isinstance(answers[1].error, E.ControllerUnreachable)
    for later in answers[2:]:
        assert isinstance(later.error, NotAttempted) and later.error.exit_code == 3
        assert str(later.error).startswith("not attempted: Slurm did not answer")
    assert cluster.job(jobs[0]).held
    assert not any(cluster.job(j).held for j in jobs[1:])


def test_a_reading_operation_is_asked_not_acted(
    settings: Settings, cluster: SimulatedCluster
) -> None:
    job = cluster.control.submit("alice", state=JobState.RUNNING, n_steps=1).job_id
    facade = _facade(settings, cluster)
    (answer,) = OneByOne(facade, operation("able"), {}).each([StepId(job, 0)])
    assert isinstance(answer.result, AbleResult) and answer.error is None
    assert not settings.audit_log.exists() or read_records(settings.audit_log) == []
