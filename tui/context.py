"""What a screen may ask of the app: the job data, the clock, and a few requests.

Screens and the palette's provider (``commands.py``) ask the app through this protocol
rather than import the app, which imports them: no cycle, and no reaching into each
other.  This protocol is the whole interface they need; the app implements it, and
``TargetScreen.sckpt`` returns the app typed as it.  What flows the other way (new data,
freshness, answers) arrives as Messages (``tui/messages.py``).  It is not called
``Console``: ``app.console`` is Rich's console, a different thing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from sckpt.backend.config import Settings
from sckpt.backend.facade import Facade
from sckpt.backend.model import ClusterInfo, JobView, StepId, StepView
from textual.message_pump import MessagePump

from .messages import Freshness, OutputRequest
from .outcomes import Shown
from .params import ActionParams
from .refresh import Planner


class ScreenContext(Protocol):
    """The app as its screens see it."""

    settings: Settings
    facade: Facade
    interval: float
    read_only: bool
    demo_part: int
    """Not 0 while the data is the first part of a demo cluster still being built."""

    @property
    def many_clusters(self) -> bool: ...

    now: Callable[[], float]

    @property
    def info(self) -> ClusterInfo: ...

    @property
    def freshness(self) -> Freshness: ...

    def job(self, target: StepId | int) -> JobView | None: ...

    def jobs(self) -> Iterable[JobView]: ...

    def gone_jobs(self) -> list[JobView]: ...

    def recently_finished(self) -> frozenset[tuple[str, int]]: ...

    def checkpoint_shown(self, view: StepView) -> Shown | None: ...

    def describe_target(self, target: StepId, *, every_step: bool = True) -> str: ...

    def refresh_now(self) -> None: ...

    def plan_with(self, planner: Planner) -> None:
        """The console's plan maker for its view now: refreshes plan with it."""

    def open_step(self, target: StepId) -> None: ...

    def close_step(self, target: StepId) -> None: ...

    def open_output(self, target: StepId) -> None: ...

    def run_operation(
        self, operation: str, target: StepId | Sequence[StepId], params: ActionParams | None
    ) -> object:
        """Run ``operation`` on the selected target, or on each of several marked ones (a
        sequence); answered by a notification and a refresh."""

    def run_check(self, target: StepId) -> object: ...

    def load_step_extras(self, target: StepId) -> object: ...

    def load_finished(self) -> object:
        """Ask accounting for the finished jobs (``f``); answered by ``FinishedLoaded``."""

    def load_job_history(self, job_id: int) -> object:
        """Ask accounting for a job's records; answered by ``HistoryLoaded``."""

    def load_output(self, request: OutputRequest, reply_to: MessagePump) -> object:
        """Read a job's output file; answered to ``reply_to`` by ``OutputLoaded``."""
