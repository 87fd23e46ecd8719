"""The checkpoints requested from this console, from the request to their outcome.

A toast alone would be missed by an operator who looked away: the step's row goes back to
``able`` and nothing says whether the checkpoint completed.  So the console keeps, per
step, the words of ``backend/progress.py`` the way the command line's ``--wait`` says
them: ``requested`` from Slurm's acceptance until the data shows the checkpoint, then
``in progress`` (the data's own state), then ``completed`` or ``failed (<code>)`` -- kept
on the row until the step's checkpoint state changes again (another request, a disable,
the step ending), and toasted once.

All from the refreshes the console makes anyway (no request of its own).  Data taken
before the request could still show the state from before it, so a checkpoint counts as
ended only once it was seen running or the data is newer than the request.

No Textual here: the app feeds it the data and the clock, the screens ask it for a word.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sckpt.backend import progress
from sckpt.backend.model import CheckpointKind, CheckpointState, JobView, StepId, StepView

ENDED = CheckpointKind.ENDED.value


@dataclass
class Watch:
    """A checkpoint requested here whose outcome is not known yet."""

    operation: str
    requested_at: float
    """The app's clock when Slurm accepted it: data older than that cannot tell."""
    seen_running: bool = False


@dataclass(frozen=True, slots=True)
class Shown:
    """What a step's row says of a checkpoint requested here, and since when."""

    operation: str
    word: str
    """``requested``, ``completed``, ``failed (<code>)``."""
    at: float
    """When it was requested (``requested``) or when its outcome was seen."""


@dataclass(frozen=True, slots=True)
class _Ended:
    shown: Shown
    state: CheckpointState
    """The step's checkpoint state when the outcome was seen: shown while it is the same."""


@dataclass(frozen=True, slots=True)
class Finished:
    """A watched checkpoint that has ended: the toast to show."""

    target: StepId
    operation: str
    word: str

    @property
    def failed(self) -> bool:
        return self.word not in (progress.COMPLETED, ENDED)


class Outcomes:
    """The watched checkpoints and the outcomes still shown on their rows."""

    def __init__(self) -> None:
        self.watched: dict[StepId, Watch] = {}
        self._ended: dict[StepId, _Ended] = {}
        self.enables: dict[StepId, float] = {}
        """Enables Slurm accepted, with when: the next fresh data says whether the step is
        still disabled (its counter was above 1), which the toast "requested" cannot."""

    def watch_enable(self, target: StepId, now: float) -> None:
        """Slurm accepted ``enable`` on ``target``: look at it once fresh data comes."""
        self.enables[target] = now

    def still_disabled(
        self, job: Callable[[int], JobView | None], fresh: float
    ) -> list[tuple[StepId, tuple[int, ...]]]:
        """The enabled targets the data taken after the enable still shows disabled, each
        with its disabled steps' counters (0: the engine cannot read it); each once."""
        found = []
        for target, at in list(self.enables.items()):
            if fresh < at:  # taken before the enable (a still test clock: the same time)
                continue
            del self.enables[target]
            steps = _steps_of(job(target.job_id), target)
            counts = tuple(
                s.checkpoint.disable_count
                for s in steps
                if s.checkpoint.kind is CheckpointKind.DISABLED
            )
            if counts:
                found.append((target, counts))
        return found

    def watch(self, operation: str, target: StepId, now: float) -> None:
        """Slurm accepted ``operation`` (a checkpoint) on ``target``: ``requested``."""
        self.watched[target] = Watch(operation, now)
        for step in [s for s in self._ended if _covers(target, s)]:
            del self._ended[step]

    def update(
        self, job: Callable[[int], JobView | None], fresh: float, now: float
    ) -> list[Finished]:
        """Look at the latest data (``job`` by id, refreshed at ``fresh``): the watched
        checkpoints that have ended, their outcome now kept for their steps' rows."""
        finished = []
        for target, watch in list(self.watched.items()):
            view = job(target.job_id)
            steps = _steps_of(view, target)
            word = _word(view, steps)
            if word == progress.IN_PROGRESS:
                watch.seen_running = True
                continue
            if not watch.seen_running and fresh <= watch.requested_at:
                continue
            del self.watched[target]
            finished.append(Finished(target, watch.operation, word))
            for step in steps:
                step_word = _word(view, [step])
                shown = Shown(watch.operation, step_word, now)
                self._ended[step.step.step_id] = _Ended(shown, step.checkpoint)
        for step_id, ended in list(self._ended.items()):
            steps = _steps_of(job(step_id.job_id), step_id)
            if not steps or steps[0].checkpoint != ended.state:
                del self._ended[step_id]  # changed since: the row shows its state again
        return finished

    def shown(self, view: StepView) -> Shown | None:
        """What the row of ``view`` says instead of its state: ``requested`` while the
        data does not show the checkpoint yet, the outcome while its state is unchanged."""
        step = view.step.step_id
        for target in (step, StepId(step.job_id)):
            watch = self.watched.get(target)
            if (
                watch is not None
                and not watch.seen_running
                and view.checkpoint.kind is not CheckpointKind.IN_PROGRESS
            ):
                return Shown(watch.operation, progress.REQUESTED, watch.requested_at)
        ended = self._ended.get(step)
        if ended is not None and ended.state == view.checkpoint:
            return ended.shown
        return None


def _covers(target: StepId, step: StepId) -> bool:
    return step == target or (target.is_whole_job and step.job_id == target.job_id)


def _steps_of(view: JobView | None, target: StepId) -> list[StepView]:
    if view is None:
        return []
    return [s for s in view.steps if _covers(target, s.step.step_id)]


def _word(view: JobView | None, steps: Iterable[StepView]) -> str:
    """What the data says of a checkpoint of ``steps``, in ``progress.py``'s words
    (``in progress`` also while a step was not asked yet: it cannot tell).  Slurm resets
    a step's error when a checkpoint starts, so the error it holds now is this one's."""
    states = [s.checkpoint for s in steps]
    if view is None or view.job.state.is_finished or not states:
        return ENDED
    if any(s.kind in (CheckpointKind.IN_PROGRESS, CheckpointKind.UNKNOWN) for s in states):
        return progress.IN_PROGRESS
    code = max((s.last_error.code for s in states if s.last_error is not None), default=0)
    return progress.failed(code) if code else progress.COMPLETED
