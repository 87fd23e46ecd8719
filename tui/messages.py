"""What the refresh pipeline and the workers tell the app and the screens, as Messages.

The app owns the refresh pipeline (``refresh.RefreshPipeline``) and the action runner
(``actions.ActionRunner``); the screens own their widgets.  Between them travel these
messages.  The runner's workers post the facade's raw answers (``ActionDone``,
``CheckAnswered``) to the app, which says what came of them (``reports.py``); the data
messages the app posts to every screen on its stack (``SckptApp.broadcast``): a screen
updates its own tables and header from them, and nothing outside a screen edits its
widgets.  This module imports neither the app nor a screen, so both can import it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sckpt.backend.each_target import Answer
from sckpt.backend.errors import SckptError
from sckpt.backend.job_output import OutputRead
from sckpt.backend.model import (
    AbleResult,
    CheckpointError,
    ClusterFreshness,
    ClusterInfo,
    JobHistory,
    JobStdio,
    JobView,
    StepId,
)
from textual.message import Message

from .params import ActionParams


@dataclass(frozen=True, slots=True)
class Freshness:
    """How fresh the console's data is, as every header shows it."""

    loaded: bool = False
    """The first snapshot has arrived."""
    stale: bool = False
    last_fresh: float = 0.0
    """When the data last was fresh (the controller's answer time); 0: never."""
    error: str = ""
    """Why the data is stale."""
    clusters: tuple[ClusterFreshness, ...] = ()
    """With ``-M``: each cluster's freshness (one may be stale while the data is fresh)."""


class DataReady(Message):
    """The pipeline took a snapshot that the screens must show.

    ``planned`` is what the refresh worker already worked out for the console's jobs
    table (``rows.RowPlan``), or None; the console uses it when it still fits.
    """

    def __init__(self, planned: object | None, first: bool) -> None:
        super().__init__()
        self.planned = planned
        self.first = first


class FreshnessChanged(Message):
    """The data became fresh or stale (or was confirmed fresh by a new answer)."""

    def __init__(self, freshness: Freshness) -> None:
        super().__init__()
        self.freshness = freshness


class InfoChanged(Message):
    """The controller answered with its cluster facts (name, version, plugins)."""

    def __init__(self, info: ClusterInfo) -> None:
        super().__init__()
        self.info = info


class ActionDone(Message, bubble=False):
    """An operation ran (``ActionRunner.act``): each target's answer, in order.

    ``several``: it was asked for marked rows (one summary says how each went), not for
    the one selected target (its own toast, and a second question when it needs force).
    ``params`` are the form's values it ran with (None: no form), for that question.
    """

    def __init__(
        self,
        operation: str,
        answers: tuple[Answer, ...],
        params: ActionParams | None,
        several: bool,
    ) -> None:
        super().__init__()
        self.operation = operation
        self.answers = answers
        self.params = params
        self.several = several


class CheckAnswered(Message, bubble=False):
    """``x``: what the facade answered to able and error for one row (the app reports it
    and tells the screens with ``CheckDone``).  ``error`` is None when able was refused by
    sckpt itself (not by Slurm): error was then not asked."""

    def __init__(
        self,
        target: StepId,
        able: AbleResult | SckptError,
        error: CheckpointError | SckptError | None,
    ) -> None:
        super().__init__()
        self.target = target
        self.able = able
        self.error = error


class CheckDone(CheckAnswered, bubble=True):
    """``x`` asked able and error again for one row: the same answers, which the app
    passes on for the screens to show on it (Slurm's refusal of able, or ``able``; the
    step's last error).  Its own class, so that a screen's handler (``on_check_done``)
    never sees the app's message and the app's never sees this one."""


class ExtrasLoaded(Message):
    """A step's processes and interconnect (or why they could not be loaded)."""

    def __init__(self, target: StepId, processes: object, interconnect: object) -> None:
        super().__init__()
        self.target = target
        self.processes = processes
        self.interconnect = interconnect


class FinishedLoaded(Message):
    """Finished jobs from accounting (``f``), as job rows; or why there are none."""

    def __init__(self, views: tuple[JobView, ...], error: str = "") -> None:
        super().__init__()
        self.views = views
        self.error = error


class HistoryLoaded(Message):
    """A job's history from accounting (the step detail), or why it could not be had."""

    def __init__(self, job_id: int, history: JobHistory | None, error: str = "") -> None:
        super().__init__()
        self.job_id = job_id
        self.history = history
        self.error = error


@dataclass(frozen=True, slots=True)
class OutputRequest:
    """One read of a job's output file for the output screen (``o``)."""

    job: StepId
    stdio: JobStdio | None
    """Where the job's files are, as last asked; None: ask the controller first."""
    stream: str
    """``stdout`` or ``stderr``."""
    offset: int | None
    """Where the read starts; None: the file's tail."""
    fresh: bool
    """The view starts over with this read (the first one, or the other stream)."""
    ask_state: bool
    """Ask the controller for the job's state (and paths) again before reading."""


class OutputLoaded(Message, bubble=False):
    """What a read of ``request`` found (``ActionRunner.load_output``): the paths and the
    bytes, or why the controller could not say where the files are (``failure``)."""

    def __init__(
        self,
        request: OutputRequest,
        stdio: JobStdio | None,
        read: OutputRead | None,
        failure: str = "",
    ) -> None:
        super().__init__()
        self.request = request
        self.stdio = stdio
        self.read = read
        self.failure = failure
