"""The console's checkpoint words are ``backend/progress.py``'s, as the command line's are.

"busy" (the job summary) and "done" (a finished job or step) read as checkpoint outcomes
next to the command line's ``in progress`` and ``completed``; they are now ``in progress``
and ``ended``.
"""

from __future__ import annotations

from sckpt.backend import progress
from sckpt.backend.model import (
    CheckpointError,
    CheckpointKind,
    CheckpointState,
    Job,
    JobState,
    JobView,
    Step,
    StepId,
    StepView,
)
from sckpt.tui.console_text import checkpoint_text, job_summary, step_cells


def _job(state: JobState = JobState.RUNNING) -> Job:
    return Job(7, "n", "alice", 1000, "debug", state, nodes="node1", num_nodes=1, start_time=100)


def _step(number: int, kind: CheckpointKind, since: int = 0) -> StepView:
    step = Step(StepId(7, number), "s", "alice", 1000, "debug", "RUNNING", nodes="node1")
    return StepView(step, CheckpointState(kind, in_progress_since=since))


def test_the_job_summary_counts_steps_in_progress_in_progress_words() -> None:
    view = JobView(
        _job(), (_step(0, CheckpointKind.IN_PROGRESS, 150), _step(1, CheckpointKind.ABLE))
    )
    assert job_summary(view).plain == f"1 {progress.IN_PROGRESS} 1 able"


def test_a_finished_job_and_step_are_ended_not_done() -> None:
    assert job_summary(JobView(_job(JobState.COMPLETED))).plain == "ended"
    assert checkpoint_text(CheckpointState(CheckpointKind.ENDED), now=200).plain == "ended"


def test_the_checkpoint_column_says_in_progress_counting_up_then_since() -> None:
    # The count first: at 80 columns the column is 26 wide and the clock time is cut.
    state = CheckpointState(CheckpointKind.IN_PROGRESS, in_progress_since=100)
    assert checkpoint_text(state, 160).plain == f"{progress.IN_PROGRESS} 1m00s since 00:01:40"
    assert checkpoint_text(state, 161).plain.startswith(f"{progress.IN_PROGRESS} 1m01s ")
    assert checkpoint_text(state, 145).plain[:26].startswith(f"{progress.IN_PROGRESS} 45s ")


def test_requested_and_outcomes_are_progress_words() -> None:
    view = _step(0, CheckpointKind.ABLE)
    for word in (progress.REQUESTED, progress.COMPLETED, progress.failed(28)):
        assert step_cells(view, 0, word)["checkpoint"].plain == word
    assert step_cells(view, 0)["checkpoint"].plain == "able"


def test_the_job_summary_says_a_steps_last_checkpoint_failed() -> None:
    # Job 184241 read "able" (with a bare "!") although its step's last checkpoint had
    # failed with 28 (ENOSPC): the summary names it in words, as ls's CKPT does.
    failed = StepView(
        _step(0, CheckpointKind.ABLE).step,
        CheckpointState(CheckpointKind.ABLE, last_error=CheckpointError(28, "ENOSPC", "full")),
    )
    view = JobView(_job(), (failed, _step(1, CheckpointKind.ABLE)))
    assert job_summary(view).plain == "2 able 1 failed"


def test_not_supported_says_it_once() -> None:
    """The column read ``not supported: not suppor…``: Slurm's message for the code."""
    for reason in ("Requested operation not supported on this system", "not supported"):
        state = CheckpointState(CheckpointKind.NOT_SUPPORTED, reason=reason)
        shown = checkpoint_text(state, now=0).plain
        assert shown.count("not supported") == 1, shown
    plugin = CheckpointState(CheckpointKind.NOT_SUPPORTED, reason="CheckpointType is none")
    assert checkpoint_text(plugin, now=0).plain == "not supported: CheckpointType is none"


def test_the_toast_of_a_checkpoint_the_engine_waited_for_says_completed() -> None:
    """It read "create 7.0: requested: checkpoint completed after 2.0s; ..."."""
    from sckpt.backend.each_target import Answer
    from sckpt.backend.model import ActionResult, StepId
    from sckpt.tui import reports

    waited = ActionResult(StepId(7, 0), "create", detail="checkpoint completed after 2.0s")
    assert reports.requested("create", Answer(StepId(7, 0), waited)) == (
        "create 7.0: completed after 2.0s"
    )


def test_a_foreseen_refusal_names_whose_job_before_its_state() -> None:
    """Another user's running job: r is refused for not being theirs (ESLURM_ACCESS_DENIED),
    as the controller checks ownership first, not as "still running"."""
    from sckpt.backend.model import Job, JobState, JobView, StepId
    from sckpt.tui import reports

    job = Job(42, "md", "alice", 1001, "batch", JobState.RUNNING, start_time=1)
    view = JobView(job, ())
    theirs = reports.foreseen_refusal("restart", StepId(42, 0), view, "bob")
    assert theirs is not None and "ESLURM_ACCESS_DENIED" in theirs and "restart 42 " in theirs
    mine = reports.foreseen_refusal("restart", StepId(42, 0), view, "alice")
    assert mine is not None and "ESLURM_JOB_NOT_FINISHED" in mine
    assert reports.foreseen_refusal("create", StepId(42, 0), view, "root") is None
