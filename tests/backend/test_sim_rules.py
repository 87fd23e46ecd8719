"""The simulated cluster reproduces the reference's controller and plugin rules, one per test.

Each test names the line of ``shared/reference/checkpoint-semantics.md`` it checks.  Jobs
are submitted by the tests themselves on an empty cluster with a frozen clock, so every
code asserted here comes from a rule, not from chance.
"""

from __future__ import annotations

import errno

import pytest
from sckpt.backend import errors as E
from sckpt.backend.config import Settings
from sckpt.backend.engines.base import Engine
from sckpt.backend.facade import Facade, simulated_engine
from sckpt.backend.model import (
    STEP_BATCH,
    STEP_EXTERN,
    WHOLE_JOB,
    CheckpointKind,
    JobState,
    StepId,
)
from sckpt.backend.simulator import (
    ManualClock,
    SavedRecord,
    SimulatedCluster,
)


def running(
    sim: SimulatedCluster, user: str = "alice", n_steps: int = 2, batch: bool = True
) -> int:
    return sim.control.submit(user, state=JobState.RUNNING, n_steps=n_steps, batch=batch).job_id


def code_of(exc: pytest.ExceptionInfo[E.SlurmError]) -> int:
    return exc.value.code


# ---------------------------------------------------------------- order of checks


def test_check1_no_such_job_is_invalid_job_id(alice: Engine) -> None:
    with pytest.raises(E.InvalidJobId) as exc:
        alice.able(StepId(999_999, 0))
    assert code_of(exc) == E.ESLURM_INVALID_JOB_ID == 2017


def test_check2_non_owner_is_access_denied(sim: SimulatedCluster, bob: Engine) -> None:
    job = running(sim, "alice")
    for call in (bob.able, bob.enable, bob.disable):
        with pytest.raises(E.AccessDenied) as exc:
            call(StepId(job, 0))
        assert code_of(exc) == 2002


def test_check2_root_may_act_on_any_job(sim: SimulatedCluster, root: Engine) -> None:
    job = running(sim, "alice")
    root.disable(StepId(job, 0))
    assert sim.step_state(StepId(job, 0)).disable_count == 1


def test_check2_slurm_user_allowed_for_whole_job_only(
    sim: SimulatedCluster, slurm_user: Engine
) -> None:
    job = running(sim, "alice")
    slurm_user.disable(StepId(job))  # whole job: allowed
    assert sim.step_state(StepId(job, 0)).disable_count == 1
    with pytest.raises(E.AccessDenied):
        slurm_user.disable(StepId(job, 0))  # one step: owner or root only


def test_check2_access_comes_before_job_state(sim: SimulatedCluster, bob: Engine) -> None:
    pending = sim.control.submit("alice", state=JobState.PENDING).job_id
    done = sim.control.submit("alice", state=JobState.COMPLETED).job_id
    with pytest.raises(E.AccessDenied):
        bob.able(StepId(pending, 0))
    with pytest.raises(E.AccessDenied):
        bob.able(StepId(done, 0))


def test_check3_pending_job(sim: SimulatedCluster, alice: Engine) -> None:
    job = sim.control.submit("alice", state=JobState.PENDING).job_id
    with pytest.raises(E.JobPending) as exc:
        alice.create(StepId(job, 0), 10, None)
    assert code_of(exc) == 2024


def test_check4_suspended_step_request_is_disabled(sim: SimulatedCluster, alice: Engine) -> None:
    job = sim.control.submit("alice", state=JobState.SUSPENDED).job_id
    with pytest.raises(E.Disabled) as exc:
        alice.able(StepId(job, 0))
    assert code_of(exc) == 2037


def test_check4_suspended_whole_job_request_is_job_suspended(
    sim: SimulatedCluster, alice: Engine
) -> None:
    job = sim.control.submit("alice", state=JobState.SUSPENDED).job_id
    with pytest.raises(E.JobSuspended) as exc:
        alice.create(StepId(job), 10, None)
    assert code_of(exc) == 2077


@pytest.mark.parametrize("state", [JobState.COMPLETED, JobState.CANCELLED, JobState.FAILED])
def test_check5_finished_job_is_already_done(
    sim: SimulatedCluster, alice: Engine, state: JobState
) -> None:
    job = sim.control.submit("alice", state=state).job_id
    with pytest.raises(E.AlreadyDone) as exc:
        alice.create(StepId(job, 0), 10, None)
    assert code_of(exc) == 2021


def test_check6_no_such_step_is_invalid_job_id(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim, n_steps=1)
    with pytest.raises(E.InvalidJobId):
        alice.able(StepId(job, 7))
    nobatch = running(sim, batch=False)
    with pytest.raises(E.InvalidJobId):
        alice.able(StepId(nobatch, STEP_BATCH))


def test_check6_comes_after_job_state(sim: SimulatedCluster, alice: Engine) -> None:
    pending = sim.control.submit("alice", state=JobState.PENDING).job_id
    with pytest.raises(E.JobPending):
        alice.able(StepId(pending, 42))


def test_check7_checkpoint_none_is_not_supported_after_state_checks(clock: object) -> None:
    sim = SimulatedCluster(
        n_jobs=0,
        clock=clock,
        arrivals=False,
        demo_touches=False,  # type: ignore[arg-type]
        checkpoint_type="checkpoint/none",
    )
    alice = simulated_engine(sim, "alice")
    job = running(sim)
    pending = sim.control.submit("alice", state=JobState.PENDING).job_id
    for call in (alice.able, alice.error, alice.enable, alice.disable):
        with pytest.raises(E.NotSupported) as exc:
            call(StepId(job, 0))
        assert code_of(exc) == 2036
    with pytest.raises(E.NotSupported):
        alice.create(StepId(job), 10, None)
    # State errors win over "not supported".
    with pytest.raises(E.JobPending):
        alice.create(StepId(pending, 0), 10, None)
    with pytest.raises(E.InvalidJobId):
        alice.able(StepId(job, 9))
    assert sim.step_state(StepId(job, 0)).kind is CheckpointKind.NOT_SUPPORTED


# ---------------------------------------------------------------- whole job


def test_whole_job_acts_on_every_running_step(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim, n_steps=3)
    result = alice.disable(StepId(job))
    stepped = {sid.step for sid, _code in result.per_step}
    assert stepped == {STEP_BATCH, STEP_EXTERN, 0, 1, 2}
    for step in (STEP_BATCH, STEP_EXTERN, 0, 1, 2):
        assert sim.step_state(StepId(job, step)).disable_count == 1


def test_whole_job_reports_the_highest_code(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim, n_steps=2)
    sim.control.script_checkpoint(StepId(job, 0), duration=100)
    alice.create(StepId(job, 0), 0, None)  # step 0 busy: EALREADY (114)
    sim.control.advance(1)  # the engine tells an earlier checkpoint from its own by the second
    alice.disable(StepId(job, 1))  # step 1 disabled: ESLURM_DISABLED (2037)
    with pytest.raises(E.Disabled) as exc:
        alice.create(StepId(job), 10, None)
    assert code_of(exc) == 2037  # max(0, 114, 2037)
    assert "2 of 4 running steps refused" in str(exc.value)
    # The other steps were still checkpointed.
    assert sim.step_state(StepId(job, STEP_BATCH)).kind is CheckpointKind.IN_PROGRESS


# ---------------------------------------------------------------- plugin: disable counter


def test_disable_enable_is_a_counter(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    step = StepId(job, 0)
    alice.disable(step)
    alice.disable(step)
    alice.enable(step)
    with pytest.raises(E.Disabled):
        alice.able(step)
    assert sim.step_state(step).disable_count == 1
    alice.enable(step)
    assert alice.able(step).in_progress_since == 0


def test_enable_at_zero_stays_zero(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    step = StepId(job, 0)
    alice.enable(step)  # BLCR would wrap to 65535 = disabled forever
    assert sim.step_state(step).disable_count == 0
    alice.able(step)
    alice.disable(step)
    alice.enable(step)
    alice.able(step)


def test_able_while_disabled_is_disabled(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    alice.disable(StepId(job, 0))
    with pytest.raises(E.Disabled) as exc:
        alice.able(StepId(job, 0))
    assert code_of(exc) == 2037
    assert sim.step_state(StepId(job, 0)).kind is CheckpointKind.DISABLED


def test_create_and_vacate_while_disabled(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    alice.disable(StepId(job, 0))
    with pytest.raises(E.Disabled):
        alice.create(StepId(job, 0), 10, None)
    with pytest.raises(E.Disabled):
        alice.vacate(StepId(job, 0), 10, None)


# ---------------------------------------------------------------- plugin: create/vacate


def test_able_reports_the_start_of_a_checkpoint_in_progress(
    sim: SimulatedCluster, alice: Engine
) -> None:
    job = running(sim)
    step = StepId(job, 0)
    sim.control.script_checkpoint(step, duration=5)
    began = int(sim.now())
    alice.create(step, 10, None)
    sim.control.advance(2)
    assert alice.able(step).in_progress_since == began
    sim.control.advance(4)
    assert alice.able(step).in_progress_since == 0


def test_create_while_in_progress_is_ealready(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    step = StepId(job, 0)
    sim.control.script_checkpoint(step, duration=5)
    alice.create(step, 10, None)
    with pytest.raises(E.AlreadyInProgress) as exc:
        alice.create(step, 10, None)
    assert code_of(exc) == errno.EALREADY == 114
    with pytest.raises(E.AlreadyInProgress):
        alice.vacate(step, 10, None)


def test_create_resets_the_error_then_records_the_result(
    sim: SimulatedCluster, alice: Engine
) -> None:
    job = running(sim)
    step = StepId(job, 0)
    sim.control.script_checkpoint(step, duration=3, code=errno.ENOSPC)
    alice.create(step, 10, None)
    sim.control.advance(3)
    err = alice.error(step)
    assert (err.code, err.name, err.message) == (28, "ENOSPC", "No space left on device")
    sim.control.script_checkpoint(step, duration=3, code=0)
    alice.create(step, 10, None)
    assert alice.error(step).code == 0  # reset at the start
    sim.control.advance(3)
    assert alice.error(step).code == 0
    assert sim.step_state(step).last_checkpoint_time == int(sim.now())


def test_max_wait_bounds_the_checkpoint(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    step = StepId(job, 0)
    sim.control.script_checkpoint(step, duration=30)
    alice.create(step, 10, None)
    sim.control.advance(10)
    assert alice.able(step).in_progress_since == 0
    assert alice.error(step).code == errno.ETIME


def test_image_dir_rule(sim: SimulatedCluster, alice: Engine) -> None:
    job = sim.control.submit("alice", state=JobState.RUNNING, n_steps=1, work_dir="/home/alice/run")
    alice.create(StepId(job.job_id, 0), 10, None)
    assert sim.step_state(StepId(job.job_id, 0)).image_dir == f"/home/alice/run/{job.job_id}.0"
    alice.create(StepId(job.job_id, STEP_BATCH), 10, "/scratch/ck")
    assert sim.step_state(StepId(job.job_id, STEP_BATCH)).image_dir == f"/scratch/ck/{job.job_id}"


def test_vacate_terminates_the_step_after_the_checkpoint(
    sim: SimulatedCluster, alice: Engine
) -> None:
    job = running(sim, n_steps=2)
    step = StepId(job, 1)
    sim.control.script_checkpoint(step, duration=4)
    alice.vacate(step, 10, None)
    sim.control.advance(2)
    assert sim.step_state(step).kind is CheckpointKind.IN_PROGRESS
    sim.control.advance(2)
    with pytest.raises(E.InvalidJobId):
        alice.able(step)
    assert sim.job(job).state is JobState.RUNNING  # other steps keep the job alive


def test_vacate_of_the_batch_step_ends_the_job(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim, n_steps=1)
    sim.control.script_checkpoint(StepId(job, STEP_BATCH), duration=1)
    alice.vacate(StepId(job, STEP_BATCH), 10, None)
    sim.control.advance(1)
    assert sim.job(job).state.is_finished


def test_requeue_puts_the_job_back_to_pending_with_restart_count(
    sim: SimulatedCluster, alice: Engine
) -> None:
    job = running(sim, n_steps=1)
    sim.requeue(sim.user("alice"), StepId(job), 5)
    sim.control.advance(5)
    record = sim.job(job)
    assert record.state is JobState.PENDING
    assert record.restart_count == 1
    sim.control.advance(60)
    assert sim.job(job).state is JobState.RUNNING


def test_requeue_is_for_batch_jobs_only(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim, batch=False)
    with pytest.raises(E.NotSupported):
        sim.requeue(sim.user("alice"), StepId(job), 5)


# ---------------------------------------------------------------- completion reports


def test_complete_keeps_only_the_highest_error(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    step = StepId(job, 0)
    alice.complete(step, 0, errno.EIO, "disk hiccup")
    alice.complete(step, 0, errno.EPERM, "lower code, ignored")
    err = alice.error(step)
    assert (err.code, err.message) == (errno.EIO, "disk hiccup")
    alice.complete(step, 0, errno.ENOSPC, "scratch full")
    assert alice.error(step).message == "scratch full"


def test_complete_ends_the_checkpoint_it_reports(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    step = StepId(job, 0)
    sim.control.script_checkpoint(step, duration=100)
    began = int(sim.now())
    alice.create(step, 0, None)
    sim.control.advance(1)
    alice.complete(step, began, 0, "")
    assert alice.able(step).in_progress_since == 0


# ---------------------------------------------------------------- batch job record


def test_batch_create_saves_the_job_record(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    alice.create(StepId(job), 10, None)
    assert f"/var/slurm/checkpoint/{job}.ckpt" in sim.records()
    sim.control.advance(60)
    alice.vacate(StepId(job, STEP_BATCH), 10, "/scratch/ck")
    assert f"/scratch/ck/{job}.ckpt" in sim.records()


def test_batch_create_without_any_image_dir_is_disabled(clock: object) -> None:
    sim = SimulatedCluster(
        n_jobs=0,
        clock=clock,
        arrivals=False,
        demo_touches=False,  # type: ignore[arg-type]
        job_checkpoint_dir="",
    )
    alice = simulated_engine(sim, "alice")
    job = running(sim)
    with pytest.raises(E.Disabled):
        alice.create(StepId(job), 10, None)
    assert sim.step_state(StepId(job, 0)).kind is CheckpointKind.ABLE  # nothing started
    alice.create(StepId(job), 10, "/scratch/ck")  # an explicit dir is enough


# ---------------------------------------------------------------- restart


def _vacated(sim: SimulatedCluster, alice: Engine, image_dir: str | None = None) -> int:
    job = running(sim, n_steps=1)
    alice.vacate(StepId(job), 5, image_dir)
    sim.control.advance(5)
    assert sim.job(job).state.is_finished
    return job


def test_restart_only_for_the_whole_job(
    sim: SimulatedCluster, alice: Engine, settings: Settings
) -> None:
    """The facade refuses it before the engine is asked (the row's ``job_level``)."""
    job = _vacated(sim, alice)
    with pytest.raises(E.NotSupported, match="whole job"):
        Facade(alice, settings).restart(f"{job}.0")
    assert sim.job(job).state.is_finished  # not restarted


def test_restart_of_a_job_not_finished(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    alice.create(StepId(job), 10, None)
    with pytest.raises(E.JobNotFinished) as exc:
        alice.restart(StepId(job), False, None)
    assert code_of(exc) == 2088


def test_restart_without_a_saved_record_is_enoent(sim: SimulatedCluster, alice: Engine) -> None:
    job = _vacated(sim, alice)
    with pytest.raises(E.NoSuchImage) as exc:
        alice.restart(StepId(job), False, "/elsewhere")
    assert code_of(exc) == errno.ENOENT


def test_restart_with_a_mismatching_record_is_einval(sim: SimulatedCluster, alice: Engine) -> None:
    job = _vacated(sim, alice)
    path = f"/var/slurm/checkpoint/{job}.ckpt"
    other = sim.records()[path]
    sim.control.put_record(path, SavedRecord(path, job + 1000, other.uid, other.user, other.job))
    with pytest.raises(E.InvalidArgument) as exc:
        alice.restart(StepId(job), False, None)
    assert code_of(exc) == errno.EINVAL


def test_restart_by_a_non_owner_is_eperm(
    sim: SimulatedCluster, alice: Engine, bob: Engine, slurm_user: Engine
) -> None:
    job = _vacated(sim, alice)
    with pytest.raises(E.PermissionRefused) as exc:
        bob.restart(StepId(job), False, None)
    assert code_of(exc) == errno.EPERM
    slurm_user.restart(StepId(job), False, None)  # SlurmUser may


def test_restart_resubmits_under_the_same_id_with_restart_dir(
    sim: SimulatedCluster, alice: Engine
) -> None:
    job = _vacated(sim, alice, "/scratch/ck")
    alice.restart(StepId(job), False, "/scratch/ck")
    assert sim.job(job).state is JobState.PENDING
    sim.control.advance(10)
    restarted = sim.job(job)
    assert restarted.job_id == job and restarted.state is JobState.RUNNING
    assert sim.job_environment(job)["SLURM_RESTART_DIR"] == "/scratch/ck"


def test_restart_with_stick_pins_the_old_nodes(sim: SimulatedCluster, alice: Engine) -> None:
    job = _vacated(sim, alice)
    old_nodes = sim.job(job).nodes
    alice.restart(StepId(job), True, None)
    assert sim.job(job).required_nodes == old_nodes
    sim.control.advance(10)
    assert sim.job(job).nodes == old_nodes


# ---------------------------------------------------------------- misc


def test_tasks_refuses_nodes_outside_the_step(sim: SimulatedCluster, alice: Engine) -> None:
    job = running(sim)
    nodes = sim.job(job).nodes
    alice.tasks(StepId(job, 0), int(sim.now()), "/scratch/ck", 60, nodes)
    with pytest.raises(E.InvalidJobId):
        alice.tasks(StepId(job, 0), int(sim.now()), "/scratch/ck", 60, "nowhere01")


def test_whole_job_constant_is_no_val() -> None:
    assert WHOLE_JOB == 0xFFFFFFFE


def test_finished_jobs_are_forgotten_after_min_job_age(
    sim: SimulatedCluster, alice: Engine
) -> None:
    job = _vacated(sim, alice)
    sim.control.advance(sim.min_job_age)
    with pytest.raises(E.InvalidJobId):
        alice.able(StepId(job, 0))
    assert job not in {v.job.job_id for v in sim.snapshot().jobs}
    sim.control.submit("bob")  # a newer job, so the restarted one must be re-inserted in order
    # Restart recreates a forgotten job from its saved record, under the same id.
    alice.restart(StepId(job), False, None)
    assert sim.job(job).state is JobState.PENDING and sim.job(job).restart_count == 1
    ids = [v.job.job_id for v in sim.snapshot().jobs]
    assert job in ids and ids == sorted(ids)


def test_numbered_steps_fixes_the_steps_of_running_batch_jobs_only() -> None:
    """The benchmark knob: every running batch job gets that many numbered steps, and
    everything else the seed generates stays as it was."""
    plain = SimulatedCluster(seed=3, n_jobs=200, clock=ManualClock()).snapshot().jobs
    many = (
        SimulatedCluster(seed=3, n_jobs=200, clock=ManualClock(), numbered_steps=7).snapshot().jobs
    )
    assert [v.job for v in plain] == [v.job for v in many]
    running_batch = [v for v in many if v.job.state is JobState.RUNNING and v.job.batch]
    assert running_batch
    for view in running_batch:
        numbered = [s for s in view.steps if s.step.step_id.step_text.isdigit()]
        assert len(numbered) == 7


def test_ompi_refused_create_stamps_a_checkpoint_that_able_and_the_view_show(
    clock: ManualClock,
) -> None:
    # checkpoint/ompi (tests/differential/OMPI.md): a create refused while disabled still
    # resets the step and starts the clock; once enabled, able says "Began at" that time,
    # and the controller's own view of the step says in progress too.
    sim = SimulatedCluster(
        seed=1,
        n_jobs=0,
        clock=clock,
        arrivals=False,
        demo_touches=False,  # type: ignore[arg-type]
        checkpoint_type="checkpoint/ompi",
    )
    alice = simulated_engine(sim, "alice")
    step = StepId(running(sim), 0)
    alice.disable(step)
    with pytest.raises(E.Disabled):
        alice.create(step, 10, None)
    began = int(clock())
    clock.advance(5)
    alice.enable(step)
    assert alice.able(step).in_progress_since == began
    state = sim.step_state(step)
    assert (state.kind, state.in_progress_since) == (CheckpointKind.IN_PROGRESS, began)
