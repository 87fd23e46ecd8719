"""The job-control verbs in the backend: the simulated controller's answers (slurmctld's
``job_signal`` and ``update_job`` rules), the facade's guard and its audit lines."""

from __future__ import annotations

import signal

import pytest
from sckpt.backend import errors as E
from sckpt.backend.audit import read_records
from sckpt.backend.config import Settings
from sckpt.backend.facade import Facade, open_facade
from sckpt.backend.model import JobState, StepId
from sckpt.backend.simulator import ManualClock, SimulatedCluster

from .spy import SpyEngine


@pytest.fixture
def cluster() -> SimulatedCluster:
    return SimulatedCluster(seed=3, n_jobs=0, clock=ManualClock(), users=("alice", "bob"))


def facade(settings: Settings, cluster: SimulatedCluster, user: str = "alice") -> Facade:
    return open_facade(settings, as_user=user, cluster=cluster)


@pytest.mark.parametrize("state", [JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED])
def test_cancel_ends_a_pending_running_or_suspended_job(
    settings: Settings, cluster: SimulatedCluster, state: JobState
) -> None:
    job = cluster.control.submit("alice", state=state).job_id
    if state is JobState.SUSPENDED:
        cluster.control.set_job_state(job, JobState.SUSPENDED)
    facade(settings, cluster).cancel(str(job))
    assert cluster.job(job).state is JobState.CANCELLED


def test_a_deadly_signal_ends_the_steps_and_a_harmless_one_nothing(
    settings: Settings, cluster: SimulatedCluster
) -> None:
    f = facade(settings, cluster)
    job = cluster.control.submit("alice", n_steps=2).job_id
    result = f.cancel(str(job), "USR1")
    assert result.detail == "signal SIGUSR1 sent"
    assert cluster.job(job).state is JobState.RUNNING
    f.cancel(f"{job}.0", int(signal.SIGTERM))
    assert cluster.job(job).state is JobState.RUNNING  # one step of two
    f.cancel(str(job), "TERM")  # every step, the batch step too: the job ends
    assert cluster.job(job).state is JobState.CANCELLED


def test_hold_of_a_running_job_keeps_it_running_release_of_an_unheld_one_is_a_no_op(
    settings: Settings, cluster: SimulatedCluster
) -> None:
    f = facade(settings, cluster)
    job = cluster.control.submit("alice").job_id
    f.release(str(job))
    assert not cluster.job(job).held
    f.hold(str(job))
    assert cluster.job(job).state is JobState.RUNNING and cluster.job(job).held
    f.release(str(job))
    assert not cluster.job(job).held


def test_another_users_job_is_refused_with_slurms_code(
    settings: Settings, cluster: SimulatedCluster
) -> None:
    f = facade(settings, cluster, user="bob")
    job = cluster.control.submit("alice", state=JobState.PENDING).job_id
    # hold and release go through update_job, which answers ESLURM_USER_ID_MISSING (as the
    # real controller does, and scontrol prints); scancel and requeue ESLURM_ACCESS_DENIED.
    # Every one names whose job it is, as a checkpoint refusal does.
    owner = f"job {job} belongs to alice; only its owner or an operator may do this"
    expected = {
        "cancel": (2002, "ESLURM_ACCESS_DENIED", owner),
        "hold": (2010, "ESLURM_USER_ID_MISSING", owner),
        "release": (2010, "ESLURM_USER_ID_MISSING", owner),
        "requeue": (2002, "ESLURM_ACCESS_DENIED", owner),
    }
    for verb, (code, name, hint) in expected.items():
        with pytest.raises(E.AccessDenied) as refused:
            getattr(f, verb)(str(job))
        assert (refused.value.code, refused.value.name) == (code, name)
        assert refused.value.hint == hint
    assert cluster.job(job).state is JobState.PENDING and not cluster.job(job).held
    names = [(r["operation"], r["result"]["name"]) for r in read_records(settings.audit_log)]
    assert names == [(verb, name) for verb, (_code, name, _hint) in expected.items()]


def test_unknown_job_is_slurms_invalid_job_id(
    settings: Settings, cluster: SimulatedCluster
) -> None:
    f = facade(settings, cluster)
    for verb in ("cancel", "hold", "release", "requeue"):
        with pytest.raises(E.InvalidJobId):
            getattr(f, verb)("424242")


@pytest.mark.parametrize("verb", ["hold", "release", "requeue"])
def test_whole_job_verbs_refuse_a_step_before_the_engine(settings: Settings, verb: str) -> None:
    spy = SpyEngine()
    f = Facade(spy, settings)
    with pytest.raises(E.UsageError, match=f"{verb} acts on a whole job: give JOB \\(12\\)"):
        getattr(f, verb)("12.0")
    getattr(f, verb)(StepId(12))
    assert spy.calls == [(verb, StepId(12))]
    (usage, done) = read_records(settings.audit_log)
    assert (usage["result"]["name"], done["result"]["name"]) == ("USAGE", "SLURM_SUCCESS")


def test_read_only_engine_refuses_the_verbs_on_its_own(settings: Settings) -> None:
    spy = SpyEngine()
    f = Facade(spy, settings, read_only=True)
    for call in (
        lambda: f.engine.cancel(StepId(1), None),
        lambda: f.engine.hold(StepId(1)),
        lambda: f.engine.release(StepId(1)),
        lambda: f.engine.requeue(StepId(1)),
    ):
        with pytest.raises(E.ReadOnlyError):
            call()
    assert spy.calls == []
