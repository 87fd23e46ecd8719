"""When a wait for a checkpoint ends because its job or step went away (``wait_end.py``).

The real cluster's cancel and requeue are in tests/cooperative/test_no_freeze.py; here
each case of the rule, from two listings, and the record it leaves.
"""

from __future__ import annotations

import dataclasses
import errno

import pytest
from sckpt.backend.checkpointing import wait_end
from sckpt.backend.checkpointing.protocol import StepRecord
from sckpt.backend.errors import JobCancelled, JobRequeued, WaitEnded
from sckpt.backend.model import Job, JobState, Step, StepId

RUNNING = Job(7, "app", "alice", 1001, "debug", JobState.RUNNING, restart_count=0)
STEP0 = StepId(7, 0)


def _steps(*numbers: int) -> list[Step]:
    return [Step(StepId(7, n), "app", "alice", 1001, "debug", "RUNNING") for n in numbers]


def _now(**changes: object) -> Job:
    return dataclasses.replace(RUNNING, **changes)  # type: ignore[arg-type]


def test_a_running_job_and_step_go_on() -> None:
    assert wait_end.why_over(RUNNING, RUNNING, _steps(0), [STEP0]) is None
    suspended = _now(state=JobState.SUSPENDED)
    assert wait_end.why_over(RUNNING, suspended, _steps(0), [STEP0]) is None


@pytest.mark.parametrize(
    ("now", "kind", "exit_code", "words"),
    [
        (None, WaitEnded, 4, "job 7 ended (Slurm no longer lists it)"),
        (_now(state=JobState.CANCELLED), JobCancelled, 5, "job 7 was cancelled"),
        (_now(state=JobState.FAILED), WaitEnded, 4, "job 7 ended (FAILED)"),
        (_now(state=JobState.TIMEOUT), WaitEnded, 4, "job 7 ended (TIMEOUT)"),
        (
            _now(state=JobState.PENDING, state_reason="BeginTime"),
            JobRequeued,
            6,
            "job 7 was requeued (PENDING, BeginTime)",
        ),
        (_now(restart_count=1), JobRequeued, 6, "job 7 was requeued (RUNNING)"),
    ],
)
def test_the_job_going_away_ends_the_wait_saying_which(
    now: Job | None, kind: type[WaitEnded], exit_code: int, words: str
) -> None:
    ended = wait_end.why_over(RUNNING, now, _steps(0), [STEP0])
    assert type(ended) is kind and ended is not None
    assert (ended.exit_code, ended.message, ended.name) == (exit_code, words, "ESLURM_ALREADY_DONE")
    assert ended.hint == wait_end.STOPPED


def test_a_step_that_ended_ends_the_wait_while_the_job_runs() -> None:
    ended = wait_end.why_over(RUNNING, RUNNING, _steps(1), [STEP0, StepId(7, 1)])
    assert ended is not None and (ended.exit_code, ended.message) == (4, "step 7.0 ended")


def test_the_request_left_unanswered_is_closed_with_ecanceled() -> None:
    rec = StepRecord(job_id=7, step="0")
    req = rec.begin_request("root", "", 0, "create", 100)
    req.pending = [0, 1]
    rec.report(0, 0, "", req.request_id)  # task 0 answered before the cancel
    wait_end.close_request(rec, req.request_id, JobCancelled(message="job 7 was cancelled"))
    assert rec.in_progress is None
    err = rec.checkpoint_error()
    assert err.code == errno.ECANCELED
    assert "no outcome: job 7 was cancelled during the checkpoint" in err.message
    # Another request's id changes nothing.
    other = rec.begin_request("root", "", 0, "create", 200)
    wait_end.close_request(rec, "not-" + other.request_id, WaitEnded(message="x"))
    assert rec.in_progress is other
