"""One step's detail with the action keys: Enter on a step, or ``sckpt JOB.STEP``.

Opening it loads the step's processes and interconnect in a worker (they cost a slurmd
round trip each); ``p`` reloads them.  Escape goes back to the full console (in
single-step mode the console is already underneath, so Escape simply reveals it).
"""

from __future__ import annotations

from sckpt.backend.model import StepId
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer

from ..keys import STEP_KEYS, bindings
from ..messages import DataReady, ExtrasLoaded
from ..rows import step_target
from ..widgets.header import StatusHeader
from ..widgets.step_detail import StepDetail
from .base import TargetScreen


class StepScreen(TargetScreen):
    """The detail of ``target`` (a step, or a whole job shown through its first step)."""

    BINDINGS = bindings(STEP_KEYS)

    def __init__(self, target: StepId) -> None:
        super().__init__(id="step-screen")
        self.target = target

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.sckpt.info, interval=self.sckpt.interval, id="header")
        with VerticalScroll(id="detail-scroll"):
            yield StepDetail(id="detail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.refresh_view()
        self.action_pids()

    def on_data_ready(self, message: DataReady) -> None:
        self.refresh_view()

    def on_extras_loaded(self, message: ExtrasLoaded) -> None:
        if message.target == self.target:
            self.show_extras(message.processes, message.interconnect)

    def selected_target(self) -> StepId:
        return self.target

    def refresh_view(self) -> None:
        app = self.sckpt
        job = app.job(self.target)
        view = None
        if job is not None:
            view = next((s for s in job.steps if step_target(job, s) == self.target), None)
        self.query_one(StepDetail).show_step(job, view, app.now())
        self.query_one(StatusHeader).tick(app.now())

    def action_back(self) -> None:
        """Escape: the full console, with this step selected."""
        self.sckpt.close_step(self.target)

    def action_pids(self) -> None:
        """``p``: (re)load processes and interconnect."""
        detail = self.query_one(StepDetail)
        detail.processes = None
        detail.interconnect = None
        self.refresh_view()
        self.sckpt.load_step_extras(self.target)

    def show_extras(self, processes: object, interconnect: object) -> None:
        """The worker has the processes and interconnect."""
        detail = self.query_one(StepDetail)
        detail.processes = processes  # type: ignore[assignment]
        detail.interconnect = interconnect  # type: ignore[assignment]
        self.refresh_view()
