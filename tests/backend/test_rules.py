"""``backend/rules.py`` against shared/reference/checkpoint-semantics.md, one case per line.

Each case quotes the line of the reference it checks.  The rules are pure, so these run
on plain records: no cluster, no clock.
"""

from __future__ import annotations

import errno
from dataclasses import replace

import pytest
from sckpt.backend import rules
from sckpt.backend.errors import (
    EALREADY,
    ESLURM_ACCESS_DENIED,
    ESLURM_ALREADY_DONE,
    ESLURM_DISABLED,
    ESLURM_INVALID_JOB_ID,
    ESLURM_JOB_NOT_FINISHED,
    ESLURM_JOB_PENDING,
    ESLURM_JOB_SUSPENDED,
    ESLURM_NOT_SUPPORTED,
    SlurmError,
)
from sckpt.backend.model import (
    STEP_BATCH,
    STEP_EXTERN,
    STEP_INTERACTIVE,
    CheckpointError,
    CheckpointKind,
    Job,
    JobState,
    Step,
    StepId,
)

ALICE = rules.Caller(1001, "alice")
BOB = rules.Caller(1002, "bob")
ROOT = rules.Caller(0, "root")
SLURM = rules.Caller(64030, "slurm", is_slurm_user=True)
JOB, STEP, BATCH = StepId(7), StepId(7, 0), StepId(7, STEP_BATCH)


def job(state: JobState = JobState.RUNNING) -> Job:
    return Job(job_id=7, name="md", user="alice", uid=1001, partition="batch", state=state)


def step(number: int, state: str = "RUNNING") -> Step:
    return Step(StepId(7, number), "md", "alice", 1001, "batch", state)


def code_of(call: object, *args: object) -> int:
    try:
        call(*args)  # type: ignore[operator]
    except SlurmError as exc:
        return exc.code
    return 0


# Controller-side rules: "Checks for one step, in this order" -------------------------------
CHECKS = [
    ("1. no such job -> ESLURM_INVALID_JOB_ID", STEP, None, BOB, ESLURM_INVALID_JOB_ID),
    ("2. neither owner nor root -> ESLURM_ACCESS_DENIED", STEP, job(), BOB, ESLURM_ACCESS_DENIED),
    ("2. ... before pending", STEP, job(JobState.PENDING), BOB, ESLURM_ACCESS_DENIED),
    ("2. root may", STEP, job(), ROOT, 0),
    ("2. the owner may", STEP, job(), ALICE, 0),
    ("2. whole-job requests: SlurmUser is also allowed", JOB, job(), SLURM, 0),
    ("2. ... and the batch script is job-level", BATCH, job(), SLURM, 0),
    ("2. ... but not for one step", STEP, job(), SLURM, ESLURM_ACCESS_DENIED),
    ("3. job pending -> ESLURM_JOB_PENDING", STEP, job(JobState.PENDING), ALICE, 2024),
    ("4. job suspended -> ESLURM_DISABLED", STEP, job(JobState.SUSPENDED), ALICE, 2037),
    ("4. whole-job request: ESLURM_JOB_SUSPENDED", JOB, job(JobState.SUSPENDED), ALICE, 2077),
    ("5. completed -> ESLURM_ALREADY_DONE", STEP, job(JobState.COMPLETED), ALICE, 2021),
    ("5. cancelled -> ESLURM_ALREADY_DONE", JOB, job(JobState.CANCELLED), ALICE, 2021),
    ("5. failed -> ESLURM_ALREADY_DONE", STEP, job(JobState.FAILED), ROOT, 2021),
    ("6. no such step -> ESLURM_INVALID_JOB_ID", StepId(7, 9), job(), ALICE, 2017),
]


@pytest.mark.parametrize(("line", "target", "record", "caller", "code"), CHECKS)
def test_checks_for_one_step_in_this_order(
    line: str, target: StepId, record: Job | None, caller: rules.Caller, code: int
) -> None:
    steps = [step(STEP_BATCH), step(0)]
    assert code_of(rules.check_target, target, record, steps, caller) == code, line


def test_codes_are_the_references_numbers() -> None:
    assert (ESLURM_JOB_PENDING, ESLURM_DISABLED, ESLURM_JOB_SUSPENDED) == (2024, 2037, 2077)
    assert (ESLURM_ALREADY_DONE, ESLURM_INVALID_JOB_ID) == (2021, 2017)


def test_whole_job_runs_on_every_running_step_in_squeues_order() -> None:
    steps = [step(1), step(0, "COMPLETING"), step(STEP_EXTERN), step(STEP_BATCH), step(2)]
    _job, chosen = rules.check_target(JOB, job(), steps, ALICE)
    assert [s.step_id.step for s in chosen] == [STEP_BATCH, STEP_EXTERN, 1, 2]


def test_step_order_is_batch_extern_interactive_then_numbers() -> None:
    numbers = [3, STEP_INTERACTIVE, 0, STEP_EXTERN, STEP_BATCH]
    assert sorted(numbers, key=rules.step_order) == [
        STEP_BATCH,
        STEP_EXTERN,
        STEP_INTERACTIVE,
        0,
        3,
    ]


def test_the_highest_return_code_is_reported() -> None:
    codes = [(StepId(7, 0), 0), (StepId(7, 1), ESLURM_DISABLED), (StepId(7, 2), EALREADY)]
    with pytest.raises(SlurmError) as exc:
        rules.aggregate(JOB, "create", codes)
    assert exc.value.code == ESLURM_DISABLED
    assert "2 of 3 running steps refused" in str(exc.value)
    done = rules.aggregate(JOB, "create", [(StepId(7, 0), 0)], "max_wait 10s")
    assert done.per_step == ((StepId(7, 0), 0),)


# Plugin behaviour -----------------------------------------------------------------------------
def test_disable_and_enable_are_a_counter_and_enable_at_0_stays_0() -> None:
    assert rules.disabled(rules.disabled(0)) == 2
    assert rules.enabled(2) == 1
    assert rules.enabled(0) == 0  # BLCR wrapped to 65535; we do not
    assert rules.disabled(rules.MAX_DISABLE) == rules.MAX_DISABLE


def test_able_is_disabled_while_the_counter_is_non_zero() -> None:
    assert (rules.able_code(0), rules.able_code(1)) == (0, ESLURM_DISABLED)


def test_create_vacate_while_disabled_then_already_in_progress() -> None:
    assert rules.checkpoint_code(1, True) == ESLURM_DISABLED
    assert rules.checkpoint_code(0, True) == EALREADY
    assert rules.checkpoint_code(0, False) == 0


def test_only_the_highest_error_code_is_preserved_with_its_message() -> None:
    kept = rules.kept_error(0, "", errno.EIO, "disk hiccup")
    assert kept == (errno.EIO, "disk hiccup")
    assert rules.kept_error(*kept, errno.EPERM, "smaller") == kept
    assert rules.kept_error(*kept, errno.ENOSPC, "") == (errno.ENOSPC, "No space left on device")
    assert rules.kept_error(errno.EIO, "", errno.EIO, "now with text") == (
        errno.EIO,
        "now with text",
    )


def test_error_over_steps_is_the_highest() -> None:
    errors = [CheckpointError(5, "EIO", "a"), CheckpointError(28, "ENOSPC", "b")]
    assert rules.worst_error(errors).code == 28
    assert rules.worst_error([]).code == 0


def test_image_directory_is_dir_slash_job_dot_step_or_job_for_batch() -> None:
    assert rules.image_path("/ck/", StepId(7, 2)) == "/ck/7.2"
    assert rules.image_path("/ck", BATCH) == "/ck/7"
    assert rules.saved_record_path("/var/slurm/checkpoint", 7) == "/var/slurm/checkpoint/7.ckpt"


# Restart ---------------------------------------------------------------------------------------
def test_restart_only_for_the_whole_job() -> None:
    assert code_of(rules.check_job_level, "restart", STEP) == ESLURM_NOT_SUPPORTED
    assert code_of(rules.check_job_level, "restart", BATCH) == 0
    assert code_of(rules.check_job_level, "restart", JOB) == 0
    # the job's own check is another: a step's record is no refusal there any more
    assert code_of(rules.check_restart, STEP, None) == 0


def test_restart_job_known_and_not_finished() -> None:
    assert code_of(rules.check_restart, JOB, job()) == ESLURM_JOB_NOT_FINISHED
    assert code_of(rules.check_restart, JOB, job(JobState.COMPLETED)) == 0
    assert code_of(rules.check_restart, JOB, None) == 0  # forgotten: the record decides
    held = job(JobState.PENDING)
    assert code_of(rules.check_restart, JOB, held, True) == 0  # an engine's wider "ended"


def test_only_a_job_with_a_batch_script_can_be_requeued() -> None:
    """Vacate ends a job by a requeue, and restart brings it back by one: a job started by
    srun or salloc has neither, and the reason is one sentence for every front end."""
    assert rules.requeue_refusal(replace(job(), batch=True)) == ""
    assert rules.requeue_refusal(job()) == (
        "job 7 has no batch script (started by srun or salloc), so Slurm cannot requeue it "
        "and restart cannot bring it back"
    )


RECORD = [
    ("missing -> ENOENT", None, ALICE, errno.ENOENT),
    ("mismatching record -> EINVAL", 8, ALICE, errno.EINVAL),
    ("a non-owner who is not root/SlurmUser -> EPERM", 7, BOB, errno.EPERM),
    ("root may", 7, ROOT, 0),
    ("SlurmUser may", 7, SLURM, 0),
    ("the owner may", 7, ALICE, 0),
]


@pytest.mark.parametrize(("line", "saved", "caller", "code"), RECORD)
def test_restart_reads_the_saved_job_record(
    line: str, saved: int | None, caller: rules.Caller, code: int
) -> None:
    assert code_of(rules.check_saved_record, JOB, "at /x", saved, 1001, "alice", caller) == code


def test_restart_record_checks_come_in_the_references_order() -> None:
    # another user, another job's record: EINVAL first
    assert code_of(rules.check_saved_record, JOB, "at /x", 8, 1001, "alice", BOB) == errno.EINVAL


# The console's column -----------------------------------------------------------------------
COLUMN = [
    (JobState.PENDING, CheckpointKind.PENDING),
    (JobState.SUSPENDED, CheckpointKind.DISABLED),
    (JobState.COMPLETED, CheckpointKind.ENDED),
    (JobState.CANCELLED, CheckpointKind.ENDED),
    (JobState.TIMEOUT, CheckpointKind.ENDED),
]


@pytest.mark.parametrize(("state", "kind"), COLUMN)
def test_column_by_job_state(state: JobState, kind: CheckpointKind) -> None:
    decided = rules.column_for_job(job(state))
    assert decided is not None and decided[0] is kind


def test_column_of_a_running_step_says_what_able_answers() -> None:
    assert rules.column_for_job(job()) is None
    assert rules.column_for_step(0, False) is CheckpointKind.ABLE
    assert rules.column_for_step(0, True) is CheckpointKind.IN_PROGRESS
    assert rules.column_for_step(2, True) is CheckpointKind.DISABLED  # able: ESLURM_DISABLED
    none = rules.Plugin.NONE
    assert rules.column_for_step(2, True, none) is CheckpointKind.NOT_SUPPORTED
