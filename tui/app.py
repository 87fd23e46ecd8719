"""The sckpt console: a Textual app over the facade, safe to keep open all day over SSH.

The app owns the refresh pipeline (``refresh.RefreshPipeline``: scheduling, back-off, the
outage probe, the watchdog, the job data) and the action workers; the screens own their
widgets.  What the pipeline and the workers learn reaches the screens as Messages
(``tui/messages.py``) that the app posts to every screen on its stack (``broadcast``); the
screens read the job data through the small interface they import (``context.Console``),
never through this module, so app and screens do not import each other in a cycle.

Actions run in thread workers; their outcome is a notification (with Slurm's error name,
code and message when refused) and an immediate refresh so the row updates.

``build_app`` is the factory the tests reuse; ``run_console`` is what ``sckpt`` calls.
"""

from __future__ import annotations

import gc
import os
import sys
import termios
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from importlib.resources import files

from rich.text import Text
from sckpt.backend import history, operations, progress
from sckpt.backend.config import Settings
from sckpt.backend.config_edit import config_path_to_write, set_top_level_string
from sckpt.backend.errors import ControllerUnreachable, NeedsForce, SckptError, SlurmError
from sckpt.backend.facade import Facade
from sckpt.backend.model import (
    ActionResult,
    ClusterInfo,
    JobView,
    StepId,
    StepView,
    job_step_id,
)
from textual import work
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.theme import Theme
from textual.worker import Worker, WorkerState

from sckpt.exit_codes import EXIT_HANGUP, EXIT_INTERRUPTED

from .commands import ActionsProvider
from .console_text import clock_time, error_text, literal, printable
from .dialogs.confirm import Confirm
from .dialogs.form import ActionParams
from .dialogs.help import ACTIONS, HelpScreen
from .keys import (
    ACTION_KEYS,
    CONSOLE_KEYS,
    GLOBAL_KEYS,
    OUTPUT_KEYS,
    STEP_KEYS,
    KeySpec,
    bindings,
    keymap,
)
from .messages import (
    CheckDone,
    DataReady,
    ExtrasLoaded,
    FinishedLoaded,
    Freshness,
    HistoryLoaded,
)
from .multi_target import Outcome, summary
from .outcomes import Outcomes, Shown
from .refresh import JobKey, Planner, RefreshPipeline, target_key
from .screens.base import TargetScreen, in_mode
from .screens.console import ConsoleScreen
from .screens.output import OutputScreen
from .screens.step import StepScreen


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
    ) -> None:
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
            planner=self._planner,
        )
        self.set_keymap(keymap(settings.keys))
        if "TEXTUAL_ANIMATIONS" not in os.environ:
            # No animations by default: cheaper over SSH, and nothing moves on its own.
            self.animation_level = "none"

    # ------------------------------------------------------------------ lifecycle

    def on_mount(self) -> None:
        self._apply_saved_theme()
        if self.terminal_fd is not None:
            self.set_interval(TERMINAL_CHECK, self._check_terminal)
        self.push_screen(in_mode(ConsoleScreen, read_only=self.read_only)())
        focus = self.focus_target
        if focus is not None and not focus.is_whole_job:
            self.push_screen(in_mode(StepScreen, read_only=self.read_only)(focus))
        self.refresh_now()

    def _apply_saved_theme(self) -> None:
        """Start with the config's theme, then save every theme the operator picks.

        Subscribed after the config's theme is applied, so starting writes nothing.
        """
        wanted = self.settings.theme
        if wanted:
            if wanted in self.available_themes:
                self.theme = wanted
            else:
                self.notify(
                    f"theme {wanted!r} from the config is not known: using the default "
                    f"({', '.join(sorted(self.available_themes)[:6])}, ...; ctrl+p, theme)",
                    severity="warning",
                    markup=False,
                )
        self.theme_changed_signal.subscribe(self, self._theme_chosen)

    def _theme_chosen(self, theme: Theme) -> None:
        if theme.name != self.settings.theme:
            self.save_theme(theme.name)

    @work(thread=True, exit_on_error=False, group="theme")
    def save_theme(self, name: str) -> None:
        """Write the chosen theme into the config file (off the UI thread: a home on NFS
        may be slow), and say where, or why not."""
        try:
            path = config_path_to_write(self.settings.source)
            set_top_level_string(path, "theme", name)
        except SckptError as exc:
            self.call_from_thread(
                self.notify,
                f"theme {name} is used now but not saved: {exc}",
                severity="warning",
                markup=False,
            )
            return
        self.settings = replace(self.settings, theme=name, source=path)
        self.call_from_thread(self.notify, f"theme {name} saved in {path}", markup=False)

    def _check_terminal(self) -> None:
        """Leave when the terminal has hung up (exit 129).

        A console whose terminal went away without a SIGHUP reaching it (an SSH session
        dropped while a ``su`` or a wrapper was the session leader) kept running: Textual's
        input thread reads end-of-file from the hung-up terminal in a loop, 30 % of a core
        each, and the refreshes went on asking the controller for nobody.  A hung-up
        terminal answers ``tcgetattr`` with EIO.
        """
        assert self.terminal_fd is not None
        try:
            termios.tcgetattr(self.terminal_fd)
        except (termios.error, OSError):
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
            own = [(_key_label(s.key, s), s) for s in OUTPUT_KEYS]
            everywhere = [(_key_label(s.key, s), s) for s in GLOBAL_KEYS]
            self.push_screen(HelpScreen([("Output", own), ("Everywhere", everywhere)], False))
            return
        if not isinstance(screen, TargetScreen):
            return
        active = {b.binding.id: key for key, b in screen.active_bindings.items() if b.binding.id}

        def entries(specs: tuple[KeySpec, ...]) -> list[tuple[str, KeySpec]]:
            out = []
            for spec in specs:
                if (self.read_only and spec.mutating) or not screen.offers(spec.id):
                    continue
                key = active.get(spec.id, spec.key) if spec.bound else spec.key
                out.append((_key_label(key, spec), spec))
            return out

        sections = [(ACTIONS, entries(ACTION_KEYS))]
        if isinstance(screen, ConsoleScreen):
            sections.append(("Console", entries(CONSOLE_KEYS)))
        if isinstance(screen, StepScreen):
            sections.append(("Step", entries(STEP_KEYS)))
        self.push_screen(HelpScreen(sections, self.read_only, entries(GLOBAL_KEYS)))

    # ------------------------------------------------------------------ data access
    # What screens read (``context.Console``): the pipeline's latest data.

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
        job = self.job(target)
        name = f" ({job.job.name})" if job is not None else ""
        if job is not None and target.array_task_id is None:  # an array task: 7_3, 7_3.0
            target = job_step_id(job.job, target.step, target.cluster)
        if target.cluster and self.many_clusters:
            name = f"{name} on cluster {target.cluster}"
        if target.is_whole_job:
            return (
                f"job {target}{name}, every running step" if every_step else f"job {target}{name}"
            )
        return f"step {target}{name}"

    # ------------------------------------------------------------------ refresh

    def refresh_now(self) -> None:
        """Refresh as soon as possible: now, or right after the request in flight."""
        self.pipeline.refresh_now()

    def _planner(self) -> Planner | None:
        """On the UI thread as a refresh starts: the console's plan maker for the data
        the refresh will bring (None before the console is mounted)."""
        console = self.console_screen()
        if console is None or not console.is_mounted:
            return None
        return console.planner()

    def broadcast(self, make: Callable[[], Message]) -> None:
        """Post a message made by ``make`` to every screen on the stack (one each: a
        message is handled once), a screen under a dialog too: it must show the new data
        when the dialog closes."""
        message = make()
        if isinstance(message, DataReady):
            self._report_outcomes()
        if isinstance(message, DataReady) and message.first:
            if self.focus_target is not None:
                self.call_after_refresh(self._select, self.focus_target)
            self.call_after_refresh(_freeze_heap)
        for screen in self.screen_stack:
            if isinstance(screen, TargetScreen):
                screen.post_message(message)
                message = make()

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

    @work(thread=True, exit_on_error=False, group="actions")
    def run_operation(self, operation: str, target: StepId, params: ActionParams | None) -> None:
        """Call the facade for one action, off the UI thread; report and refresh.

        The facade's method is the operation's name and takes the operation's ``arguments``
        (``backend/operations.py``), which the form's ``params`` hold.
        """
        values = params.values_for(operations.operation(operation)) if params is not None else {}
        try:
            result: ActionResult = getattr(self.facade, operation)(target, **values)
        except NeedsForce as exc:
            assert params is not None
            self.call_from_thread(self._report_refusal, operation, target, exc)
            self.call_from_thread(self._offer_force, operation, target, params, exc)
        except SckptError as exc:
            self.call_from_thread(self._report_refusal, operation, target, exc)
        else:
            detail = f": {printable(result.detail)}" if result.detail else ""
            self.call_from_thread(
                self.notify,
                f"{operation} {target}: {progress.REQUESTED}{detail}",
                title=operation,
                markup=False,
            )
            if operations.operation(operation).starts_checkpoint:
                self.call_from_thread(self._watch, operation, target)
        self.call_from_thread(self.refresh_now)

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
        restart = operation == "restart"
        question = Text()
        question.append(f"{operation.capitalize()} ", style="bold")
        question.append_text(literal(self.describe_target(target), style="bold"))
        if restart:
            question.append(" anyway?\n\nNo image to resume from, it stays as it is for now:\n")
        else:
            question.append(" anyway?\n\nNot saved, it keeps running for now:\n")
        for loss in exc.losses[:6] or (f"{exc.name} ({exc.code}): {exc.message}",):
            question.append(f"- {printable(loss)}\n")
        if restart:
            question.append("\nYes restarts it anyway: these tasks start from the beginning.")
        else:
            question.append("\nYes ends it anyway: restart then starts these without an image.")
        kept = "it stays as it is" if restart else "it keeps running"

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_operation(operation, target, replace(params, force=True))
            else:
                self.notify(f"{operation} {target} cancelled: {kept}", markup=False)

        self.push_screen(Confirm(question), confirmed)

    def _report_refusal(self, operation: str, target: StepId, exc: SckptError) -> None:
        verb, message = refusal_message(operation, target, exc)
        self.notify(printable(message), title=verb, severity="error", markup=False, timeout=8)

    @work(thread=True, exit_on_error=False, group="actions")
    def run_operation_many(
        self, operation: str, targets: list[StepId], params: ActionParams | None
    ) -> None:
        """One operation on several marked targets, one facade call each (each refused
        or audited on its own); one notification lists every target's outcome."""
        op = operations.operation(operation)
        values = params.values_for(op) if params is not None else {}
        outcomes: list[Outcome] = []
        for target in targets:
            try:
                result: ActionResult = getattr(self.facade, operation)(target, **values)
            except SckptError as exc:
                outcomes.append(Outcome(target, False, refusal_message(operation, target, exc)[1]))
            else:
                detail = f": {result.detail}" if result.detail else ""
                outcomes.append(Outcome(target, True, f"{progress.REQUESTED}{detail}"))
                if op.starts_checkpoint:
                    self.call_from_thread(self._watch, operation, target)
        text, failed = summary(operation, outcomes)
        self.call_from_thread(
            self.notify,
            text,
            title=operation,
            severity="error" if failed else "information",
            markup=False,
            timeout=12 if failed else 6,
        )
        self.call_from_thread(self.refresh_now)

    @work(thread=True, exit_on_error=False, group="actions")
    def run_check(self, target: StepId) -> None:
        """``x``: ask able and error again for one row, and show the answers on it."""
        facade = self.facade
        able: Text
        try:
            result = facade.able(target)
        except SlurmError as exc:
            able = Text(f"{exc.name}", style="yellow")
            able_msg = f"able: no, {exc.name} ({exc.code}): {exc.message}"
        except SckptError as exc:
            self.call_from_thread(self._report_refusal, "able", target, exc)
            return
        else:
            if result.in_progress_since:
                able_msg = (
                    f"able: yes, a checkpoint began at {clock_time(result.in_progress_since)}"
                )
            else:
                able_msg = "able: yes"
            able = Text("able", style="green")
        try:
            err = facade.error(target)
        except SckptError as exc:
            err_msg = f"error: {exc}"
            err_text = None
        else:
            err_msg = f"error({err.code}): {err.message}" if err.code else "no error"
            err_text = error_text(err)
        self.call_from_thread(self._show_check, target, able, err_text, f"{able_msg}; {err_msg}")

    def _show_check(self, target: StepId, able: Text, err: Text | None, message: str) -> None:
        self.notify(printable(f"{target}: {message}"), title="check", markup=False)
        self.broadcast(partial(CheckDone, target, able, err))
        self.refresh_now()

    @work(thread=True, exit_on_error=False, group="extras")
    def load_step_extras(self, target: StepId) -> None:
        """The step's processes and interconnect, loaded on demand."""
        processes: object
        interconnect: object
        try:
            processes = self.facade.step_processes(target)
        except SckptError as exc:
            processes = str(exc)
        try:
            interconnect = self.facade.interconnect(target)
        except SckptError as exc:
            interconnect = str(exc)
        self.call_from_thread(
            self.broadcast, partial(ExtrasLoaded, target, processes, interconnect)
        )

    @work(thread=True, exit_on_error=False, group="accounting", exclusive=True)
    def load_finished(self) -> None:
        """Finished jobs from accounting (``f``): asked once per press, never by a refresh."""
        try:
            found = self.facade.finished_jobs()
        except SckptError as exc:
            self.call_from_thread(self.broadcast, partial(FinishedLoaded, (), str(exc)))
            return
        views = tuple(v for r in found.records if (v := history.finished_view(r)) is not None)
        self.call_from_thread(self.broadcast, partial(FinishedLoaded, views))

    @work(thread=True, exit_on_error=False, group="history")
    def load_job_history(self, job_id: int) -> None:
        """A job's records from accounting, for the step detail (asked when it opens)."""
        try:
            found = self.facade.history(str(job_id))
        except SckptError as exc:
            self.call_from_thread(self.broadcast, partial(HistoryLoaded, job_id, None, str(exc)))
            return
        self.call_from_thread(self.broadcast, partial(HistoryLoaded, job_id, found))


def refusal_message(operation: str, target: StepId, exc: SckptError) -> tuple[str, str]:
    """``("refused" | "failed", the sentence)`` for an action Slurm or sckpt did not do.

    A controller that did not answer refused nothing: the action failed (perhaps half-way;
    the error's hint then says what was done), so it is not called refused.
    """
    verb = "failed" if isinstance(exc, ControllerUnreachable) else "refused"
    if isinstance(exc, SlurmError):
        message = f"{operation} {target} {verb}: {exc.name} ({exc.code}): {exc.message}"
        if exc.hint:
            message += f"; {exc.hint}"
    elif str(exc).startswith(f"{operation} {target} "):  # already says what and which
        message = str(exc)
    else:
        message = f"{operation} {target} {verb}: {exc}"
    return verb, message


GC_THRESHOLDS = (10_000, 20, 50)
"""The cyclic GC's thresholds once the console runs (Python's defaults: 700, 10, 10)."""


def _freeze_heap() -> None:
    """Once the first screen is painted: collect, hide what exists from the cyclic GC, and
    make full collections rare.

    At 10,000 jobs the console holds ~300,000 GC-tracked objects (the views, their steps
    and checkpoint states), and each full collection walked them all: a 100-300 ms stall of
    the UI thread every few dozen refreshes, the largest key-press delays measured.  These
    objects hold no reference cycles; those replaced later are still freed by reference
    counting, and full collections then walk only what was made since.  The collection
    first makes sure no cyclic garbage is frozen with them (it would never be freed).

    Freezing once is not enough: the native engine rebuilds each job's view as its
    checkpoint answers age, so within minutes the whole queue is new, unfrozen objects,
    and Python's default thresholds ran a full collection about every 0.6 s under a
    stream of changed refreshes (49 ms each at 33,000 jobs: the p95 of a key press went
    from 35 to 75 ms, bench/README).  With ``GC_THRESHOLDS`` a young collection waits for
    10,000 new objects and a full one for 1,000 young ones, so full collections come
    minutes apart (hours on an idle console) and cyclic garbage is still collected; the
    soak tests hold the RSS flat with them.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def _key_label(key: str, spec: KeySpec) -> str:
    """How a key is written in the help: ``/`` and ``?`` rather than their names."""
    if key == spec.key and spec.key_display:
        return spec.key_display
    return {
        "slash": "/",
        "question_mark": "?",
        "escape": "Esc",
        "enter": "Enter",
        "tab": "Tab",
    }.get(key, key)


TERMINAL_CHECK = 2.0
"""Seconds between two looks at whether the console's terminal is still there."""


def build_app(
    facade: Facade,
    settings: Settings,
    *,
    focus: StepId | None = None,
    clock: Callable[[], float] | None = None,
) -> SckptApp:
    """The console app for ``facade``; tests build it directly (with a fixed clock)."""
    return SckptApp(facade, settings, focus=focus, clock=clock)


def _trust_the_terminal() -> None:
    """Drop ``COLUMNS``/``LINES`` from the environment when a terminal answers for its size.

    Textual asks ``shutil.get_terminal_size()`` on start and on every SIGWINCH, and that
    prefers those two variables over the terminal.  Some shells export them, and a tmux
    server started from a test run inherits them: the console then kept its start size
    after every resize (old rows left on screen, no header).  sckpt's own children never
    need them.
    """
    try:
        os.get_terminal_size(sys.__stdout__.fileno() if sys.__stdout__ else 1)
    except (OSError, ValueError):
        return  # no terminal: leave the hint for whatever draws
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


def run_console(facade: Facade, settings: Settings, *, focus: StepId | None = None) -> int:
    """Run the console until the operator quits; return the exit code (0 on ``q``, 130 on
    Ctrl-C)."""
    _trust_the_terminal()
    app = build_app(facade, settings, focus=focus)
    stdin = sys.__stdin__
    if stdin is not None and stdin.isatty():
        app.terminal_fd = stdin.fileno()
    code = app.run()
    if app.return_code not in (None, 0):
        return int(app.return_code)
    return int(code or 0)
