"""What a step's row says of a checkpoint requested from the console (``tui/outcomes.py``).

``requested`` from Slurm's acceptance until the data shows the checkpoint, then the data's
own ``in progress``, then ``completed`` or ``failed (<code>)`` kept on the row until the
step's checkpoint state changes -- the command line's ``--wait`` words, on the row.
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
from sckpt.tui.outcomes import Outcomes

STEP = StepId(7, 0)


def _view(state: CheckpointState, job_state: JobState = JobState.RUNNING) -> JobView:
    job = Job(7, "n", "alice", 1000, "debug", job_state, nodes="node1", start_time=100)
    step = Step(STEP, "s", "alice", 1000, "debug", "RUNNING", nodes="node1")
    return JobView(job, (StepView(step, state),))


ABLE = CheckpointState(CheckpointKind.ABLE)
RUNNING = CheckpointState(CheckpointKind.IN_PROGRESS, in_progress_since=110)
FAILED = CheckpointState(CheckpointKind.ABLE, last_error=CheckpointError(28, "ENOSPC", "full"))


def _shown(outcomes: Outcomes, data: JobView) -> str | None:
    shown = outcomes.shown(data.steps[0])
    return shown.word if shown is not None else None


def test_requested_then_in_progress_then_completed_until_the_state_changes() -> None:
    outcomes = Outcomes()
    before = _view(ABLE)
    outcomes.watch("create", STEP, now=110)
    # Data from before the request cannot tell: the row says requested.
    assert outcomes.update(lambda _: before, fresh=105, now=111) == []
    assert _shown(outcomes, before) == progress.REQUESTED
    running = _view(RUNNING)
    assert outcomes.update(lambda _: running, fresh=112, now=112) == []
    assert _shown(outcomes, running) is None  # the data's own "in progress"
    after = _view(CheckpointState(CheckpointKind.ABLE, last_checkpoint_time=120))
    finished = outcomes.update(lambda _: after, fresh=121, now=121)
    assert [(f.target, f.word, f.failed) for f in finished] == [(STEP, "completed", False)]
    for _ in range(3):  # kept through refreshes that change nothing
        assert outcomes.update(lambda _: after, fresh=130, now=130) == []
        assert _shown(outcomes, after) == progress.COMPLETED
    disabled = _view(CheckpointState(CheckpointKind.DISABLED, disable_count=1))
    outcomes.update(lambda _: disabled, fresh=140, now=140)
    assert _shown(outcomes, disabled) is None
    assert _shown(outcomes, after) is None  # forgotten, not hidden


def test_a_failed_checkpoint_says_its_code() -> None:
    outcomes = Outcomes()
    outcomes.watch("create", STEP, now=110)
    failed = _view(FAILED)
    (done,) = outcomes.update(lambda _: failed, fresh=120, now=120)
    assert done.word == "failed (28)" and done.failed
    assert _shown(outcomes, failed) == "failed (28)"


def test_a_whole_job_request_covers_its_steps_and_a_new_one_clears_the_old_outcome() -> None:
    outcomes = Outcomes()
    outcomes.watch("create", StepId(7), now=110)
    able = _view(ABLE)
    assert _shown(outcomes, able) == progress.REQUESTED
    outcomes.update(lambda _: able, fresh=120, now=120)
    assert _shown(outcomes, able) == progress.COMPLETED
    outcomes.watch("create", STEP, now=130)
    assert _shown(outcomes, able) == progress.REQUESTED


def test_a_job_that_ended_is_ended() -> None:
    outcomes = Outcomes()
    outcomes.watch("vacate", STEP, now=110)
    (done,) = outcomes.update(lambda _: None, fresh=120, now=120)
    assert done.word == "ended" and not done.failed
