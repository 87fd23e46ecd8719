"""The sckpt console: a Textual app over the facade, safe to keep open all day over SSH.

The app owns the refresh pipeline (``refresh.RefreshPipeline``: scheduling, back-off, the
outage probe, the watchdog, the job data) and the action runner (``actions.ActionRunner``:
the facade's calls in thread workers); the screens own their widgets.  What the pipeline
and the workers learn reaches the screens as Messages (``tui/messages.py``) that the app
posts to every screen on its stack (``broadcast``); the screens read the job data through
the small interface they import (``context.ScreenContext``), never through this module, so app
and screens do not import each other in a cycle.

An action's answer comes back to the app as a Message (``ActionDone``); what it came to
is a notification (``reports.py``: Slurm's error name, code and message when refused) and
an immediate refresh so the row updates.  The terminal and process around the console
are ``terminal.py``'s, the saved theme ``theme.py``'s, the help's assembly the key
table's (``dialogs/help.py``).

``build_app`` is the factory the tests reuse; ``run_console`` is what ``sckpt`` calls.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial
from importlib.resources import files

from sckpt.backend import give_way, operations
from sckpt.backend.config import Settings
from sckpt.backend.errors import NeedsForce, SckptError, SlurmError
from sckpt.backend.facade import Facade
from sckpt.backend.model import ClusterInfo, JobView, StepId, StepView
from textual import events
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import Worker, WorkerState

from sckpt.exit_codes import EXIT_HANGUP, EXIT_INTERRUPTED

from . import reports, terminal
from .actions import ActionRunner
from .commands import ActionsProvider
from .console_text import printable
from .dialogs.confirm import Confirm
from .dialogs.help import plain_help, screen_help
from .keys import GLOBAL_KEYS, bindings, keymap
from .messages import (
    ActionDone,
    CheckAnswered,
    CheckDone,
    DataReady,
    Freshness,
    FreshnessChanged,
    OutputRequest,
)
from .multi_target import summary
from .outcomes import Outcomes, Shown
from .params import ActionParams
from .refresh import JobKey, Planner, RefreshPipeline, Timers, target_key
from .screens.base import TargetScreen, in_mode
from .screens.console import ConsoleScreen
from .screens.output import OutputScreen
from .screens.step import StepScreen
from .theme import ThemeKeeper

DEMO_REFRESH_PER_JOB = 12e-6
"""Seconds a changed refresh of the demo takes per job, snapshot and plan (~1.2 s at
100,000 jobs on the project VM, bench/README issue 34)."""


def _stylesheet() -> str:
    """The console's CSS, found inside the installed package (works from the wheel)."""
    return str(files("sckpt.styles").joinpath("app.tcss"))


class SckptApp(App[int]):
    """Jobs, steps and their checkpoint state, with one-key actions."""

    CSS_PATH = _stylesheet()
    TITLE = "sckpt"
    COMMANDS = App.COMMANDS | {ActionsProvider}
    BINDINGS = [
        *bindings(GLOBAL_KEYS),
        Binding("ctrl+c", "interrupt", show=False, priority=True),
    ]

    def __init__(
        self,
        facade: Facade,
        settings: Settings,
        *,
        focus: StepId | None = None,
        clock: Callable[[], float] | None = None,
        timers: Timers | None = None,
    ) -> None:
        """``clock`` is the wall clock the screens show (``time.time``); ``timers`` the
        refresh pipeline's monotonic time and timers (real ones: ``refresh.AppTimers``)."""
        super().__init__()
        self.facade = facade
        self.settings = settings
        self.read_only = facade.read_only
        self.focus_target = focus
        self.terminal_fd: int | None = None
        """The terminal to watch for a hangup (``run_console`` sets it; tests do not)."""
        self.outcomes = Outcomes()
        """Checkpoints requested from this console: their progress and outcome."""
        self.now: Callable[[], float] = clock if clock is not None else time.time
        """The app's clock: ``time.time``, or a fixed one in tests and screenshots."""
        self.interval = settings.refresh_interval
        self.pipeline = RefreshPipeline(
            self,
            facade,
            interval=self.interval,
            clock=self.now,
            post=self.broadcast,
            timers=timers,
        )
        self.actions = ActionRunner(self, facade, self.broadcast)
        """Runs the facade's calls in workers; their answers come back as Messages."""
        self.demo_part = 0
        """While the data shown is the first part of a demo cluster whose rest is still
        being built (``show_demo_part``): how many jobs that part lists; else 0."""
        self.demo_thread: Callable[[Callable[[], None]], object] = _on_daemon_thread
        """Runs the build of the demo's rest (a test holds it back, then runs it)."""
        self.theme_keeper = ThemeKeeper(self, lambda: self.settings, self._saved_settings)
        self.set_keymap(keymap(settings.keys))
        if terminal.animations_off():
            self.animation_level = "none"

    # ------------------------------------------------------------------ lifecycle

    def on_mount(self) -> None:
        self.theme_keeper.start()
        if self.terminal_fd is not None:
            self.set_interval(terminal.TERMINAL_CHECK, self._check_terminal)
        self.set_timer(terminal.FIRST_SCREEN_GC_LIMIT, terminal.resume_gc)
        self.push_screen(in_mode(ConsoleScreen, read_only=self.read_only)())
        focus = self.focus_target
        if focus is not None and not focus.is_whole_job:
            self.push_screen(in_mode(StepScreen, read_only=self.read_only)(focus))
        self.refresh_now()

    def _saved_settings(self, settings: Settings) -> None:
        self.settings = settings

    def _check_terminal(self) -> None:
        """Leave when the terminal has hung up (exit 129; ``terminal.hung_up``)."""
        assert self.terminal_fd is not None
        if terminal.hung_up(self.terminal_fd):
            self.pipeline.stop()
            self.exit(return_code=EXIT_HANGUP)

    async def action_quit(self) -> None:
        """``q``: stop scheduling refreshes and leave.

        The pending refresh timer is left to Textual, which stops every timer on exit
        (stopping it here, inside a key handler, left the app unable to close).
        """
        self.pipeline.stop()
        self.exit(0)

    async def action_interrupt(self) -> None:
        """Ctrl-C: leave as ``q`` does, with exit status 130 (the shell's convention for
        SIGINT, as the README promises), so a wrapper script can tell an interrupted
        console from a finished one.  The terminal is in raw mode, so Ctrl-C arrives as
        this key, not as SIGINT."""
        self.pipeline.stop()
        self.exit(EXIT_INTERRUPTED, return_code=EXIT_INTERRUPTED)

    def action_help(self) -> None:
        """``?``: the keys of the current screen (without the read-only-hidden ones)."""
        screen = self.screen
        if isinstance(screen, OutputScreen):
            self.push_screen(plain_help(screen.HELP_SECTIONS))
        elif isinstance(screen, TargetScreen):
            self.push_screen(
                screen_help(
                    screen.HELP_SECTIONS,
                    read_only=self.read_only,
                    offers=screen.offers,
                    active_bindings=screen.active_bindings,
                )
            )

    # ------------------------------------------------------------------ keys first
    # A key holds the refresh worker's long passes until its screen update is written
    # (``backend/give_way.py``: they share one GIL with this thread).

    def post_message(self, message: Message) -> bool:
        """Queue ``message``; a key arriving also holds the refresh worker (any thread may
        post; a key bubbling back up from the focused widget is posted here again)."""
        if isinstance(message, events.Key) and not message.is_forwarded:
            give_way.hold()
        return super().post_message(message)

    def on_key(self, event: events.Key) -> None:
        """A key reached the app (its bindings have run): the worker may go on once the
        screen is written.  A key a widget kept (an input field's) ends by ``MAX_HOLD``."""
        self.call_after_refresh(give_way.release)

    # ------------------------------------------------------------------ data access
    # What screens read (``context.ScreenContext``): the pipeline's latest data.

    @property
    def info(self) -> ClusterInfo:
        """Cluster facts for the headers (what the controller said once it answered)."""
        return self.pipeline.info

    @property
    def freshness(self) -> Freshness:
        return self.pipeline.freshness

    @property
    def many_clusters(self) -> bool:
        """``-M`` chose more than one cluster: the jobs table shows a cluster column."""
        return len(self.facade.clusters) > 1

    def job(self, target: StepId | int) -> JobView | None:
        """The latest view of the job ``target`` names, on its cluster (a job id: on
        slurm.conf's own), also a recently vanished one."""
        key = ("", target) if isinstance(target, int) else target_key(target)
        return self.pipeline.data.job(key)

    def all_jobs(self) -> list[JobView]:
        """Every job known: the controller's, then the vanished ones still lingering."""
        return self.pipeline.data.all_jobs()

    def jobs(self) -> Iterable[JobView]:
        """The jobs the controller reports."""
        return self.pipeline.data.jobs.values()

    def gone_jobs(self) -> list[JobView]:
        """The jobs the controller stopped reporting, still lingering."""
        return self.pipeline.data.gone_jobs()

    def recently_finished(self) -> frozenset[JobKey]:
        """Finished or vanished jobs still within their linger."""
        return self.pipeline.data.recently_finished(self.now())

    def describe_target(self, target: StepId, *, every_step: bool = True) -> str:
        """``step 123.4 (name)`` or ``job 123 (name), every running step``; without
        ``every_step`` (a job-control verb acts on the job itself) ``job 123 (name)``."""
        return reports.describe_target(
            target, self.job(target), many_clusters=self.many_clusters, every_step=every_step
        )

    # ------------------------------------------------------------------ refresh

    def refresh_now(self) -> None:
        """Refresh as soon as possible: now, or right after the request in flight."""
        self.pipeline.refresh_now()

    def plan_with(self, planner: Planner) -> None:
        """The console's plan maker for its view now (it hands one down each time it shows
        its rows): the next refreshes plan the console's rows with it on their worker."""
        self.pipeline.planner = planner

    def broadcast(self, make: Callable[[], Message]) -> None:
        """Post a message made by ``make`` to every screen on the stack (one each: a
        message is handled once), a screen under a dialog too: it must show the new data
        when the dialog closes."""
        message = make()
        if isinstance(message, DataReady):
            self._report_outcomes()
        if isinstance(message, FreshnessChanged) and self.outcomes.enables:
            # Any fresh answer, changed or not (an enable that leaves the step disabled may
            # change nothing the native engine reads), looked at once the refresh has
            # taken its data: the freshness is posted before the data is.
            self.call_later(self._report_still_disabled)
        if isinstance(message, DataReady) and message.first:
            if self.focus_target is not None:
                self.call_after_refresh(self._select, self.focus_target)
            self.call_after_refresh(terminal.freeze_heap)
        if isinstance(message, DataReady) and self.demo_part:
            self._demo_progress(message.first)
        for screen in self.screen_stack:
            if isinstance(screen, TargetScreen):
                screen.post_message(message)
                message = make()

    # ------------------------------------------------------------------ the demo's start

    def show_demo_part(self) -> None:
        """``sckpt --demo`` with more jobs than its first part (``simulator/staging.py``):
        the first screen shows the first part, the top of the list by id, as soon as it
        is listed, with the job count saying it is still loading; the rest is built once
        that screen is painted, and arrives with the refresh after it.  A focused step
        may be past the first part: then the whole cluster is built first, as before."""
        cluster = self.facade.simulated_cluster
        if cluster is None or not cluster.building:
            return
        if self.focus_target is not None:
            cluster.finish_building()
            return
        cluster.allow_part()
        self.demo_part = cluster.first_part

    def _demo_progress(self, first: bool) -> None:
        """The first part's screen is up: build the rest.  The whole cluster's data is in:
        the count loses its "loading", and what was built is frozen as the first screen's
        was (``terminal.freeze_heap``)."""
        if first:
            self.call_after_refresh(self._build_demo_rest)
        elif len(self.pipeline.data.jobs) > self.demo_part:
            self.demo_part = 0
            self.call_after_refresh(_freeze_built)

    def _build_demo_rest(self) -> None:
        """The rest of the demo cluster, on a thread of its own (the console's reads are
        answered from the first part meanwhile), then a refresh at once.  The cyclic GC
        stays paused until its data is shown (``_demo_progress``; at most
        ``terminal.FIRST_SCREEN_GC_LIMIT`` s), as for the first screen (``pause_gc``)."""
        cluster = self.facade.simulated_cluster
        if cluster is None:
            return

        def build() -> None:
            terminal.pause_gc()
            cluster.finish_building()
            with contextlib.suppress(RuntimeError):  # the console has ended meanwhile
                self.call_from_thread(self._demo_built)

        self._expect_whole_listing()  # a refresh may find it built before _demo_built runs
        self.demo_thread(build)
        self.set_timer(terminal.FIRST_SCREEN_GC_LIMIT, terminal.resume_gc)

    def _demo_built(self) -> None:
        """The rest is built: refresh at once."""
        self._expect_whole_listing()
        self.refresh_now()

    def _expect_whole_listing(self) -> None:
        """The next refreshes may list the whole demo cluster (the engine's views and the
        plan of every row, ~1 s at 100,000 jobs) or wait for the end of its build: the
        watchdog is told to expect as much (``RefreshPipeline.typical_duration``), or it
        would call the in-process controller "not answering" while a refresh works."""
        pipeline = self.pipeline
        expected = DEMO_REFRESH_PER_JOB * self.settings.demo_jobs
        pipeline.typical_duration = max(pipeline.typical_duration, expected)

    def _report_outcomes(self) -> None:
        """Toast how each checkpoint requested here ended, once the data shows it (the
        row keeps saying it: ``outcomes.py``)."""
        for done in self.outcomes.update(self.job, self.freshness.last_fresh, self.now()):
            self.notify(
                f"{done.operation} {done.target}: {done.word}",
                title=done.operation,
                severity="error" if done.failed else "information",
                markup=False,
            )

    def _report_still_disabled(self) -> None:
        """Toast each enable that fresh data shows left its step disabled (``d d e``)."""
        fresh = self.freshness.last_fresh
        for target, counts in self.outcomes.still_disabled(self.job, fresh):
            self.notify(
                reports.still_disabled(target, counts),
                title="enable",
                severity="warning",
                markup=False,
            )

    def checkpoint_shown(self, view: StepView) -> Shown | None:
        """What ``view``'s row says of a checkpoint requested here (``requested``, then
        its outcome) instead of the step's state; None: its state."""
        return self.outcomes.shown(view)

    # ------------------------------------------------------------------ navigation

    def console_screen(self) -> ConsoleScreen | None:
        """The console screen (always at the bottom of the stack)."""
        for screen in self.screen_stack:
            if isinstance(screen, ConsoleScreen):
                return screen
        return None

    def _select(self, target: StepId) -> None:
        console = self.console_screen()
        if console is not None:
            console.select_target(target)

    def open_step(self, target: StepId) -> None:
        """Open the step detail screen (Enter on a step)."""
        self.push_screen(in_mode(StepScreen, read_only=self.read_only)(target))

    def open_output(self, target: StepId) -> None:
        """``o``: the job's output file, over the current screen (Escape comes back)."""
        self.push_screen(OutputScreen(target))

    def close_step(self, target: StepId) -> None:
        """Escape on the step screen: back to the console, with that step selected."""
        if isinstance(self.screen, StepScreen) and self.screen.target == target:
            self.pop_screen()
        self._select(target)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that raised (a bug, not a refusal: those are reported) is shown."""
        if event.state is WorkerState.ERROR:
            self.notify(
                f"internal error in {event.worker.name}: {event.worker.error}",
                severity="error",
                markup=False,
            )

    # ------------------------------------------------------------------ actions
    # The runner (``actions.py``) calls the facade in workers and posts its answers here;
    # what they come to is said here, in the words of ``reports.py``.

    def run_operation(
        self,
        operation: str,
        target: StepId | Sequence[StepId],
        params: ActionParams | None,
    ) -> object:
        """Run ``operation`` on ``target`` (the selected row), or on each of several
        marked targets (a sequence: one summary says how each went)."""
        if isinstance(target, StepId):
            return self.actions.act(operation, [target], params, several=False)
        return self.actions.act(operation, target, params, several=True)

    def run_check(self, target: StepId) -> object:
        """``x``: ask able and error again for one row, and show the answers on it."""
        return self.actions.check(target)

    def load_step_extras(self, target: StepId) -> object:
        """The step's processes and interconnect, loaded on demand."""
        return self.actions.load_step_extras(target)

    def load_finished(self) -> object:
        """Finished jobs from accounting (``f``); answered by ``FinishedLoaded``."""
        return self.actions.load_finished()

    def load_job_history(self, job_id: int) -> object:
        """A job's records from accounting; answered by ``HistoryLoaded``."""
        return self.actions.load_job_history(job_id)

    def load_output(self, request: OutputRequest, reply_to: MessagePump) -> object:
        """A read of a job's output file; answered to ``reply_to`` by ``OutputLoaded``."""
        return self.actions.load_output(request, reply_to)

    def on_action_done(self, done: ActionDone) -> None:
        """Say what an action came to (refused, or requested), follow the checkpoints it
        requested, and refresh so the rows update."""
        operation = done.operation
        starts_checkpoint = operations.operation(operation).starts_checkpoint
        if done.several:
            for answer in done.answers:
                if answer.error is None and starts_checkpoint:
                    self._watch(operation, answer.target)
            text, failed = summary(operation, [reports.outcome(operation, a) for a in done.answers])
            self.notify(
                text,
                title=operation,
                severity="error" if failed else "information",
                markup=False,
                timeout=12 if failed else 6,
            )
        else:
            for answer in done.answers:
                if answer.error is not None:
                    self._report_refusal(operation, answer.target, answer.error)
                    if isinstance(answer.error, NeedsForce):
                        assert done.params is not None
                        self._offer_force(operation, answer.target, done.params, answer.error)
                    continue
                self.notify(reports.requested(operation, answer), title=operation, markup=False)
                if starts_checkpoint:
                    self._watch(operation, answer.target)
                if operations.operation(operation).enables:
                    self.outcomes.watch_enable(answer.target, self.now())
        self.refresh_now()

    def on_check_answered(self, answered: CheckAnswered) -> None:
        """``x``'s answers: a toast, and the row shows them (``CheckDone``)."""
        target, able, error = answered.target, answered.able, answered.error
        if isinstance(able, SckptError) and not isinstance(able, SlurmError):
            self._report_refusal("able", target, able)
            return
        self.notify(reports.check_message(target, able, error), title="check", markup=False)
        self.broadcast(partial(CheckDone, target, able, error))
        self.refresh_now()

    def _watch(self, operation: str, target: StepId) -> None:
        """Remember a requested checkpoint: its rows say ``requested`` at once, and
        ``_report_outcomes`` follows it to its outcome."""
        self.outcomes.watch(operation, target, self.now())
        for screen in self.screen_stack:
            if isinstance(screen, TargetScreen) and screen.is_mounted:
                screen.refresh_outcomes()

    def _offer_force(
        self, operation: str, target: StepId, params: ActionParams, exc: NeedsForce
    ) -> None:
        """A vacate or restart refused because tasks would lose their work: say which, ask
        once more.

        The default answer is No; Yes acts with ``force``, and its toast says again which
        tasks start without an image.
        """
        question = reports.force_question(operation, self.describe_target(target), exc)

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_operation(operation, target, replace(params, force=True))
            else:
                self.notify(reports.force_declined(operation, target), markup=False)

        self.push_screen(Confirm(question), confirmed)

    def _report_refusal(self, operation: str, target: StepId, exc: SckptError) -> None:
        verb, message = reports.refusal_message(operation, target, exc)
        self.notify(printable(message), title=verb, severity="error", markup=False, timeout=8)


def build_app(
    facade: Facade,
    settings: Settings,
    *,
    focus: StepId | None = None,
    clock: Callable[[], float] | None = None,
    timers: Timers | None = None,
) -> SckptApp:
    """The console app for ``facade``; tests build it directly (with a fixed clock, and
    timers of their own where they move the refresh's time themselves)."""
    return SckptApp(facade, settings, focus=focus, clock=clock, timers=timers)


def run_console(facade: Facade, settings: Settings, *, focus: StepId | None = None) -> int:
    """Run the console until the operator quits; return the exit code (0 on ``q``, 130 on
    Ctrl-C)."""
    terminal.trust_the_terminal()
    app = build_app(facade, settings, focus=focus)
    app.terminal_fd = terminal.controlling_terminal()
    app.show_demo_part()
    terminal.pause_gc()
    code = app.run()
    if app.return_code not in (None, 0):
        return int(app.return_code)
    return int(code or 0)


def _freeze_built() -> None:
    """The demo's whole cluster and its first views are in: out of the cyclic GC's sight
    (as ``gc_pause.freeze_built`` and ``terminal.freeze_heap`` do for a cluster built whole
    and its first screen), and the collector back on."""
    gc.freeze()
    gc.enable()


def _on_daemon_thread(work: Callable[[], None]) -> None:
    """``work`` on a daemon thread of its own (a quit never waits for it)."""
    threading.Thread(target=work, name="sckpt-demo-build", daemon=True).start()
