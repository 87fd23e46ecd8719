"""One step's detail with the action keys: Enter on a step, or ``sckpt JOB.STEP``.

Opening it loads the step's processes and interconnect in a worker (they cost a slurmd
round trip each); ``p`` reloads them.  Escape goes back to the full console (in
single-step mode the console is already underneath, so Escape simply reveals it).

A step the controller does not list (``sckpt 999999.0``, or a step that ended while
shown) is *missing*: the screen says so, naming it, and offers no action -- the keys
leave the footer and the help, and pressing one says why nothing is done.

It also asks Slurm's accounting, once, in a worker, for the job's records across requeues
and restarts (``Job history``).
"""

from __future__ import annotations

from sckpt.backend.model import StepId, StepProcesses
from textual.app import ComposeResult
from textual.containers import VerticalScroll

from ..keys import ACTION_KEYS, STEP_KEYS, bindings
from ..messages import DataReady, ExtrasLoaded, HistoryLoaded
from ..rows import step_target
from ..widgets.header import StatusHeader
from ..widgets.key_footer import KeyFooter
from ..widgets.step_detail import StepDetail
from .base import TargetScreen


class StepScreen(TargetScreen):
    """The detail of ``target`` (a step, or a whole job shown through its first step)."""

    BINDINGS = bindings(STEP_KEYS)
    HELP_SECTIONS = (*TargetScreen.HELP_SECTIONS, ("Step", STEP_KEYS))

    def __init__(self, target: StepId) -> None:
        super().__init__(id="step-screen")
        self.target = target
        self.reloading = False
        """``p`` asked for the processes again: say what came back (the first load, as
        the screen opens, shows in the detail alone)."""
        self.missing = False
        """The data is loaded and has no such step: nothing to act on."""
        self.seen = False
        """The step was in the data once (then missing means it ended)."""

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.sckpt.info, interval=self.sckpt.interval, id="header")
        with VerticalScroll(id="detail-scroll"):
            yield StepDetail(id="detail")
        yield KeyFooter(offered=self.offers)

    def on_mount(self) -> None:
        self.refresh_view()
        if not self.missing:
            self._load_extras()
            # The job's records from accounting: asked once, as the detail opens.
            self.sckpt.load_job_history(self.target.job_id)

    def on_data_ready(self, message: DataReady) -> None:
        self.refresh_view()

    def on_extras_loaded(self, message: ExtrasLoaded) -> None:
        if message.target == self.target:
            self.show_extras(message.processes, message.interconnect)
            if self.reloading:
                self.reloading = False
                self.notify(reloaded(self.target, message.processes), markup=False)

    def selected_target(self) -> StepId | None:
        return None if self.missing else self.target

    def no_target(self) -> str:
        if self.missing:
            return f"step {self.target} {'has ended' if self.seen else 'not found'}: no action"
        return super().no_target()

    def offers(self, binding_id: str) -> bool:
        """A missing step offers no action (nor its processes)."""
        return not (self.missing and binding_id in UNOFFERED_WHEN_MISSING)

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        if message.job_id == self.target.job_id:
            detail = self.query_one(StepDetail)
            detail.job_history = message.history if message.history else message.error
            self.refresh_view()

    def refresh_view(self) -> None:
        app = self.sckpt
        job = app.job(self.target)
        view = None
        if job is not None:
            view = next((s for s in job.steps if step_target(job, s) == self.target), None)
        self.seen = self.seen or view is not None
        missing = view is None and app.freshness.loaded
        if missing != self.missing:
            self.missing = missing
            self.query_one(KeyFooter).update_keys()
        detail = self.query_one(StepDetail)
        # Only the cooperative store records each checkpoint's time.
        detail.reports_last_checkpoint = app.info.engine == "cooperative"
        detail.show_step(
            job,
            view,
            app.now(),
            target=self.target,
            missing=missing,
            seen=self.seen,
            shown=app.checkpoint_shown(view) if view is not None else None,
        )
        self.query_one(StatusHeader).tick(app.now())

    def tick_headers(self) -> None:
        """The header and the detail's relative times move with the clock."""
        super().tick_headers()
        self.query_one(StepDetail).tick(self.sckpt.now())

    def action_back(self) -> None:
        """Escape: the full console, with this step selected."""
        self.sckpt.close_step(self.target)

    def action_pids(self) -> None:
        """``p``: (re)load processes and interconnect."""
        if self.missing:
            self.notify(self.no_target(), severity="warning", markup=False)
            return
        # The reload often brings the same pids back: without a word, p looked dead.
        self.notify(f"step {self.target}: loading its processes…", markup=False, timeout=2)
        self.reloading = True
        self._load_extras()

    def _load_extras(self) -> None:
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


UNOFFERED_WHEN_MISSING = frozenset({*(spec.id for spec in ACTION_KEYS), "pids"})
"""The keys a missing step does not offer: every action, and reloading its processes."""


def reloaded(target: StepId, processes: object) -> str:
    """``p``'s answer: how many processes on how many nodes, or why none could be read."""
    if isinstance(processes, StepProcesses):
        count = sum(len(node.pids) for node in processes.nodes)
        nodes = len(processes.nodes)
        return (
            f"step {target}: {count} process{'es' if count != 1 else ''} on "
            f"{nodes} node{'s' if nodes != 1 else ''}, reloaded"
        )
    return f"step {target}: processes not loaded: {processes}"
