"""The sckpt console: a Textual app over the facade, safe to keep open all day over SSH.

Data flow: a worker runs ``facade.snapshot()`` (which may block on libslurm) on a daemon
thread (``in_daemon_thread``: a quit never waits for a hung refresh); when
it finishes, the app keeps the jobs, updates the header's freshness and asks the screens
to sync their tables.  The next refresh is scheduled with ``set_timer`` only once the last
one has finished (dolphie-style), so two refreshes never overlap and a slow controller is
never asked twice at once.  The interval comes from the settings; it grows after failures
(exponential back-off up to a minute) and when the controller is slow, and returns to the
configured value as soon as a refresh succeeds quickly: recovery needs no key press.
"No change" answers (``Snapshot.changed`` False) cost no table work at all.  A changed
answer is turned into the app's next job data and the console's rows on the worker's thread
too (``_prepare``): the UI thread then only installs them and syncs the tables, so a key
pressed during a refresh at 10,000 jobs is not queued behind building 10,000 rows.

A controller that is down or paused does not fail fast: libslurm retries a refused connection,
or waits for an answer, for Slurm's MessageTimeout (often 10-20 s) before it reports an error,
and every call waits on the binding's single libslurm thread.  So the app never waits for a
refresh itself: a watchdog timer marks the data stale ("not answering") once a refresh is
overdue (``overdue_after``, under one interval on a healthy controller), while the worker keeps
waiting; no second refresh is started meanwhile (it would only queue behind the first on the
libslurm thread).  When the call finally fails, the next attempt follows the back-off, counted
from the start of the failed attempt (an attempt that itself waited 20 s has already spaced
the requests out), so an attempt is in flight when the controller comes back and the console
recovers as soon as it answers.  Nothing on the UI thread calls into the backend's Slurm side:
the header's cluster facts (``info``) come from the refresh worker, too.

Actions run in thread workers too; their outcome is a notification (with Slurm's error
name, code and message when refused) and an immediate refresh so the row updates.

``build_app`` is the factory the tests reuse; ``run_console`` is what ``sckpt`` calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from importlib.resources import files
from typing import Any, TypeVar

from rich.text import Text
from sckpt.backend import operations
from sckpt.backend.config import Settings
from sckpt.backend.errors import ControllerUnreachable, SckptError, SlurmError, UnsafeVacate
from sckpt.backend.facade import Facade
from sckpt.backend.model import ActionResult, ClusterInfo, JobView, Snapshot, StepId
from textual import work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from .commands import ActionsProvider
from .console_text import checkpoint_text, clock_time, error_text, literal, printable
from .dialogs.confirm import Confirm
from .dialogs.form import ActionParams
from .dialogs.help import HelpScreen
from .keys import ACTION_KEYS, CONSOLE_KEYS, GLOBAL_KEYS, STEP_KEYS, KeySpec, bindings, keymap
from .rows import RowPlan, ViewState
from .screens.base import TargetScreen, in_mode
from .screens.console import ConsoleScreen
from .screens.step import StepScreen
from .widgets.header import StatusHeader

T = TypeVar("T")

LINGER = 300.0
"""Seconds a finished (or vanished) job stays visible with "show finished" off."""
MAX_BACKOFF = 60.0
"""Longest wait between two refreshes while the controller is unreachable."""
SLOW_FACTOR = 0.5
"""A refresh taking more than this share of the interval counts as a slow controller."""
OVERDUE_SHARE = 0.5
"""A refresh still running after this share of the interval is overdue: the data is marked
stale at once, so an outage shows within two intervals of its start (the refresh that
finds it starts at most one interval after the last good one; half an interval is left
for a loaded machine's late timers)."""
OVERDUE_TYPICAL = 4.0
"""...or after this many times a typical refresh's duration, when that is longer (a big
cluster's slow but healthy answers must not flash the outage marker)."""


@dataclass(frozen=True, slots=True)
class JobData:
    """The app's job data after one snapshot (replaced as a whole, never changed in place,
    so a refresh worker can build the next one from it)."""

    jobs: dict[int, JobView]
    gone: dict[int, tuple[JobView, float]]
    """Jobs the controller stopped reporting, with when: kept for ``LINGER`` seconds."""
    finished_seen: dict[int, float]
    """When each finished job was first seen finished (or ended)."""

    def all_jobs(self) -> list[JobView]:
        return [*self.jobs.values(), *self.gone_jobs()]

    def gone_jobs(self) -> list[JobView]:
        return [v for v, _ in self.gone.values()]

    def recently_finished(self, now: float) -> frozenset[int]:
        recent = {i for i, t in self.finished_seen.items() if now - t < LINGER}
        recent.update(i for i, (_, t) in self.gone.items() if now - t < LINGER)
        return frozenset(recent)

    def expired(self, now: float) -> bool:
        """Whether a vanished job's linger is over (it must leave the table)."""
        return any(now - t >= LINGER for _, t in self.gone.values())

    def after(self, snap: Snapshot, now: float) -> JobData:
        """The data once ``snap`` is taken (pure: ``self`` is left as it is)."""
        new = {v.job.job_id: v for v in snap.jobs}
        gone = {i: (v, t) for i, (v, t) in self.gone.items() if now - t < LINGER and i not in new}
        finished_seen = dict(self.finished_seen)
        for job_id, view in self.jobs.items():
            if job_id not in new:
                gone[job_id] = (view, now)
                # Its linger now counts from when it vanished; keeping the finish time
                # too grew this dict by one entry per job for as long as the console ran.
                finished_seen.pop(job_id, None)
        for job_id, view in new.items():
            if view.job.state.is_finished:
                if job_id not in finished_seen:
                    end = view.job.end_time
                    finished_seen[job_id] = float(end) if end else now
            else:
                finished_seen.pop(job_id, None)
        return JobData(new, gone, finished_seen)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A changed snapshot made ready off the UI thread: the data and the console's rows."""

    data: JobData
    base: JobData
    """The data it was built from: if that is no longer the app's, it is built again."""
    now: float
    rows: RowPlan | None


def _stylesheet() -> str:
    """The console's CSS, found inside the installed package (works from the wheel)."""
    return str(files("sckpt.styles").joinpath("app.tcss"))


class SckptApp(App[int]):
    """Jobs, steps and their checkpoint state, with one-key actions."""

    CSS_PATH = _stylesheet()
    TITLE = "sckpt"
    COMMANDS = App.COMMANDS | {ActionsProvider}
    BINDINGS = [*bindings(GLOBAL_KEYS), Binding("ctrl+c", "quit", show=False, priority=True)]

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
        self.now: Callable[[], float] = clock if clock is not None else time.time
        """The app's clock: ``time.time``, or a fixed one in tests and screenshots."""
        self.interval = settings.refresh_interval
        self.info = facade.known_info()
        """Cluster facts for the headers, without asking the controller on the UI thread
        (the refresh worker fills in what the controller says once it answers)."""
        self.loaded = False
        """True once the first snapshot has arrived."""
        self.stale = False
        self.failures = 0
        """Consecutive failed refreshes (drives the back-off)."""
        self.next_delay = self.interval
        self.refresh_count = 0
        self.last_duration = 0.0
        self.typical_duration = 0.0
        """Smoothed duration of successful refreshes (sets when one is overdue)."""
        self.overdue = False
        """True while a refresh has been waiting longer than ``overdue_after()``."""
        self._refresh_started = 0.0
        self._watchdog: Any = None
        self._data = JobData({}, {}, {})
        self._refreshing = False
        self._again = False
        self._quitting = False
        self._timer: Any = None
        self._last_view_sync = 0.0
        self.set_keymap(keymap(settings.keys))
        if "TEXTUAL_ANIMATIONS" not in os.environ:
            # No animations by default: cheaper over SSH, and nothing moves on its own.
            self.animation_level = "none"

    # ------------------------------------------------------------------ lifecycle

    def on_mount(self) -> None:
        self.push_screen(in_mode(ConsoleScreen, read_only=self.read_only)())
        focus = self.focus_target
        if focus is not None and not focus.is_whole_job:
            self.push_screen(in_mode(StepScreen, read_only=self.read_only)(focus))
        self.set_interval(1.0, self._tick_headers)
        self.refresh_now()

    async def action_quit(self) -> None:
        """``q``: stop scheduling refreshes and leave.

        The pending refresh timer is left to Textual, which stops every timer on exit
        (stopping it here, inside a key handler, left the app unable to close).
        """
        self._quitting = True
        self.exit(0)

    def action_help(self) -> None:
        """``?``: the keys of the current screen (without the read-only-hidden ones)."""
        screen = self.screen
        if not isinstance(screen, TargetScreen):
            return
        active = {b.binding.id: key for key, b in screen.active_bindings.items() if b.binding.id}

        def entries(specs: tuple[KeySpec, ...]) -> list[tuple[str, KeySpec]]:
            out = []
            for spec in specs:
                if self.read_only and spec.mutating:
                    continue
                key = active.get(spec.id, spec.key) if spec.bound else spec.key
                out.append((_key_label(key, spec), spec))
            return out

        sections = [("Actions", entries(ACTION_KEYS))]
        if isinstance(screen, ConsoleScreen):
            sections.append(("Console", entries(CONSOLE_KEYS)))
        if isinstance(screen, StepScreen):
            sections.append(("Step", entries(STEP_KEYS)))
        sections.append(("Everywhere", entries(GLOBAL_KEYS)))
        self.push_screen(HelpScreen(sections, self.read_only))

    # ------------------------------------------------------------------ data access

    def job(self, job_id: int) -> JobView | None:
        """The latest view of a job (also a recently vanished one)."""
        data = self._data
        found = data.jobs.get(job_id)
        if found is None and job_id in data.gone:
            return data.gone[job_id][0]
        return found

    def all_jobs(self) -> list[JobView]:
        """Every job known: the controller's, then the vanished ones still lingering."""
        return self._data.all_jobs()

    def jobs(self) -> Iterable[JobView]:
        """The jobs the controller reports."""
        return self._data.jobs.values()

    def gone_jobs(self) -> list[JobView]:
        """The jobs the controller stopped reporting, still lingering."""
        return self._data.gone_jobs()

    def gone_ids(self) -> frozenset[int]:
        """Jobs the controller no longer reports."""
        return frozenset(self._data.gone)

    def recently_finished(self) -> frozenset[int]:
        """Finished or vanished jobs still within ``LINGER`` seconds of their end."""
        return self._data.recently_finished(self.now())

    def describe_target(self, target: StepId) -> str:
        """``step 123.4 (name)`` or ``job 123 (name, every running step)``."""
        job = self.job(target.job_id)
        name = f" ({job.job.name})" if job is not None else ""
        if target.is_whole_job:
            return f"job {target}{name}, every running step"
        return f"step {target}{name}"

    # ------------------------------------------------------------------ refresh loop

    def refresh_now(self) -> None:
        """Refresh as soon as possible: now, or right after the refresh that is running."""
        if self._quitting:
            return
        if self._refreshing:
            self._again = True
            return
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._refreshing = True
        self._refresh_started = time.monotonic()
        self._watchdog = self.set_timer(self.overdue_after(), self._refresh_overdue)
        console = self.console_screen()
        view = console.view_state() if console is not None and console.is_mounted else None
        self._refresh_worker(console if view is not None else None, view)

    def overdue_after(self) -> float:
        """Seconds after which a running refresh counts as "controller not answering"."""
        return max(self.interval * OVERDUE_SHARE, self.typical_duration * OVERDUE_TYPICAL)

    def _refresh_overdue(self) -> None:
        """The watchdog: the refresh has not answered in time; say so, keep waiting."""
        self._watchdog = None
        if not self._refreshing or self._quitting:
            return
        self.overdue = True
        if self.stale and self._stale_error:
            return  # a retry during an outage: the failure's own message says more
        sent = clock_time(self.now() - (time.monotonic() - self._refresh_started))
        self._mark_stale(
            f"slurmctld is not answering (request sent at {sent}, still waiting; "
            "Slurm gives up after its MessageTimeout)"
        )

    @work(exclusive=True, exit_on_error=False, group="refresh")
    async def _refresh_worker(
        self, console: ConsoleScreen | None, view: ViewState | None
    ) -> tuple[Snapshot, float, ClusterInfo | None, Prepared | None]:
        """Take one snapshot off the UI thread (the facade may block on libslurm)."""
        return await in_daemon_thread(lambda: self._take_snapshot(console, view))

    def _take_snapshot(
        self, console: ConsoleScreen | None, view: ViewState | None
    ) -> tuple[Snapshot, float, ClusterInfo | None, Prepared | None]:
        """The refresh's blocking part; the cluster facts are asked once the controller
        first answered.  A snapshot the tables must show is prepared here as well."""
        started = time.monotonic()
        snap = self.facade.snapshot()
        duration = time.monotonic() - started
        info = None
        if not snap.stale and not self.info.cluster_name:
            try:
                info = self.facade.info
            except SckptError:
                info = None
        prepared = None
        if not snap.stale:
            now = self.now()
            if self._needs_take(snap, now):
                prepared = self._prepare(snap, now, console, view)
        return snap, duration, info, prepared

    def _needs_take(self, snap: Snapshot, now: float) -> bool:
        """Whether a fresh snapshot must reach the tables (else it costs no table work)."""
        return (
            snap.changed
            or not self.loaded
            or self._data.expired(now)
            or now - self._last_view_sync >= 30
        )

    def _prepare(
        self,
        snap: Snapshot,
        now: float,
        console: ConsoleScreen | None,
        view: ViewState | None,
    ) -> Prepared:
        """The next job data and the console's rows for it (on any thread: reads the
        current data, changes nothing)."""
        base = self._data
        data = base.after(snap, now)
        rows = None
        if console is not None and view is not None:
            rows = console.plan_rows(
                view, data.jobs.values(), data.gone_jobs(), data.recently_finished(now), now
            )
        return Prepared(data, base, now, rows)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group == "refresh":
            if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
                return
            self._refreshing = False
            self.overdue = False
            if self._watchdog is not None:
                self._watchdog.stop()
                self._watchdog = None
            if event.state is WorkerState.SUCCESS and worker.result is not None:
                snap, duration, info, prepared = worker.result
                if info is not None and info != self.info:
                    self._set_info(info)
                self.apply_snapshot(snap, duration, prepared)
            elif event.state is WorkerState.ERROR:
                # The facade never raises on an outage; anything else is shown, then retried.
                self.failures += 1
                self._mark_stale(f"refresh failed: {worker.error}")
                self.next_delay = self._backoff(time.monotonic() - self._refresh_started)
            self._schedule()
        elif event.state is WorkerState.ERROR:
            self.notify(
                f"internal error in {worker.name}: {worker.error}",
                severity="error",
                markup=False,
            )

    def _backoff(self, spent: float) -> float:
        """The wait before the next attempt after ``failures`` failed ones in a row.

        Exponential from the interval up to ``MAX_BACKOFF``, counted from the start of the
        failed attempt: ``spent`` (its own duration) is deducted, never below one interval.
        """
        factor = float(2 ** min(self.failures, 10))
        full = min(self.interval * factor, max(MAX_BACKOFF, self.interval))
        return max(self.interval, full - spent)

    def _set_info(self, info: ClusterInfo) -> None:
        """New cluster facts (the controller answered): every header shows them."""
        self.info = info
        now = self.now()
        for header in self._headers():
            header.info = info
            header.tick(now)

    def _schedule(self) -> None:
        if self._quitting:
            return
        delay = 0.0 if self._again else self.next_delay
        self._again = False
        if delay <= 0:
            self.refresh_now()
        else:
            self._timer = self.set_timer(delay, self.refresh_now)

    def apply_snapshot(
        self, snap: Snapshot, duration: float, prepared: Prepared | None = None
    ) -> None:
        """Keep the snapshot's jobs and update the screens (nothing when nothing changed).

        ``prepared`` is what the refresh worker already built from ``snap``; without it
        (or when it no longer fits) the same is built here.
        """
        self.refresh_count += 1
        self.last_duration = duration
        now = self.now()
        if snap.stale:
            self.failures += 1
            self.stale = True
            self.next_delay = self._backoff(duration)
            since = snap.stale_since or (self._last_fresh if self.loaded else now)
            self._stale_error = snap.error
            for header in self._headers():
                header.show_stale(since, snap.error, now)
            if not self.loaded and snap.jobs:
                self._take(self._prepare(snap, now, None, None))
            return
        self.failures = 0
        self.stale = False
        self.next_delay = self.interval
        typical = self.typical_duration
        self.typical_duration = duration if not typical else 0.8 * typical + 0.2 * duration
        if duration > self.interval * SLOW_FACTOR:
            # A slow controller: give it several times what the last answer cost.
            self.next_delay = max(self.interval, duration * 4)
        self._last_fresh = snap.taken_at or now
        for header in self._headers():
            header.show_fresh(self._last_fresh, now)
        if prepared is not None and prepared.base is self._data:
            self._take(prepared)
        elif self._needs_take(snap, now):
            self._take(self._prepare(snap, now, None, None))

    _last_fresh = 0.0
    _stale_error = ""

    def _take(self, prepared: Prepared) -> None:
        self._data = prepared.data
        first = not self.loaded
        self.loaded = True
        self._last_view_sync = prepared.now
        for screen in self.screen_stack:
            if isinstance(screen, TargetScreen) and screen.is_mounted:
                if isinstance(screen, ConsoleScreen):
                    screen.refresh_view(prepared.rows)
                else:
                    screen.refresh_view()
        if first and self.focus_target is not None:
            self._select(self.focus_target)
        if first:
            self.call_after_refresh(_freeze_heap)

    def _mark_stale(self, error: str) -> None:
        now = self.now()
        self.stale = True
        self._stale_error = error
        for header in self._headers():
            header.show_stale(self._last_fresh or now, error, now)

    def sync_header(self, header: StatusHeader) -> None:
        """Give a newly mounted header the freshness state the app already knows."""
        now = self.now()
        if self.stale:
            header.show_stale(self._last_fresh or now, self._stale_error, now)
        elif self.loaded:
            header.show_fresh(self._last_fresh, now)

    def _headers(self) -> list[StatusHeader]:
        found: list[StatusHeader] = []
        for screen in self.screen_stack:
            found.extend(screen.query(StatusHeader))
        return found

    def _tick_headers(self) -> None:
        now = self.now()
        for header in self._headers():
            header.tick(now)

    # ------------------------------------------------------------------ navigation

    def console_screen(self) -> ConsoleScreen | None:
        """The console screen (always at the bottom of the stack)."""
        for screen in self.screen_stack:
            if isinstance(screen, ConsoleScreen):
                return screen
        return None

    def _select(self, target: StepId) -> None:
        console = self.console_screen()
        if console is None:
            return
        if console.jobs_table.select_key(str(target.job_id)):
            console.refresh_steps()
            if not target.is_whole_job and console.steps_table.select_key(str(target)):
                console.steps_table.focus()

    def open_step(self, target: StepId) -> None:
        """Open the step detail screen (Enter on a step)."""
        self.push_screen(in_mode(StepScreen, read_only=self.read_only)(target))

    def close_step(self, screen: StepScreen) -> None:
        """Escape on the step screen: back to the console, with that step selected."""
        if self.screen is screen:
            self.pop_screen()
        self._select(screen.target)

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
        except UnsafeVacate as exc:
            assert params is not None
            self.call_from_thread(self._report_refusal, operation, target, exc)
            self.call_from_thread(self._offer_force, target, params, exc)
        except SckptError as exc:
            self.call_from_thread(self._report_refusal, operation, target, exc)
        else:
            detail = f": {printable(result.detail)}" if result.detail else ""
            self.call_from_thread(
                self.notify, f"{operation} {target}: done{detail}", title=operation, markup=False
            )
        self.call_from_thread(self.refresh_now)

    def _offer_force(self, target: StepId, params: ActionParams, exc: UnsafeVacate) -> None:
        """A vacate refused for lack of images: say what would be lost, ask once more.

        The default answer is No; Yes vacates with ``force``, and its toast says again
        which tasks restart will start without an image.
        """
        question = Text()
        question.append("Vacate ", style="bold")
        question.append_text(literal(self.describe_target(target), style="bold"))
        question.append(" anyway?\n\nNot saved, it keeps running for now:\n")
        for loss in exc.losses[:6] or (f"{exc.name} ({exc.code}): {exc.message}",):
            question.append(f"- {printable(loss)}\n")
        question.append("\nYes ends it anyway: restart then starts these without an image.")

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.run_operation("vacate", target, replace(params, force=True))
            else:
                self.notify(f"vacate {target} cancelled: it keeps running", markup=False)

        self.push_screen(Confirm(question), confirmed)

    def _report_refusal(self, operation: str, target: StepId, exc: SckptError) -> None:
        # A controller that did not answer refused nothing: the action failed (perhaps
        # half-way; the error's hint then says what was done), so it is not called refused.
        verb = "failed" if isinstance(exc, ControllerUnreachable) else "refused"
        if isinstance(exc, SlurmError):
            message = f"{operation} {target} {verb}: {exc.name} ({exc.code}): {exc.message}"
            if exc.hint:
                message += f"; {exc.hint}"
        elif str(exc).startswith(f"{operation} {target} "):  # already says what and which
            message = str(exc)
        else:
            message = f"{operation} {target} {verb}: {exc}"
        self.notify(printable(message), title=verb, severity="error", markup=False, timeout=8)

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
        console = self.console_screen()
        if console is not None and not target.is_whole_job:
            view = None
            job = self.job(target.job_id)
            if job is not None:
                view = next((s for s in job.steps if s.step.step_id == target), None)
            shown = checkpoint_text(view.checkpoint, self.now()) if view is not None else able
            if able.plain != "able" or shown.plain == "able":
                shown = able if able.plain != "able" else shown
            console.steps_table.set_cell(str(target), "checkpoint", shown)
            if err is not None:
                console.steps_table.set_cell(str(target), "error", err)
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
        self.call_from_thread(self._show_extras, target, processes, interconnect)

    def _show_extras(self, target: StepId, processes: object, interconnect: object) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, StepScreen) and screen.target == target and screen.is_mounted:
                screen.show_extras(processes, interconnect)


def _freeze_heap() -> None:
    """Once the first screen is painted: collect, then hide what exists from the cyclic GC.

    At 10,000 jobs the console holds ~300,000 GC-tracked objects (mostly the rows' Rich
    ``Text`` cells), and each full collection walked them all: a 100-300 ms stall of the UI
    thread every few dozen refreshes, the largest key-press delays measured.  These
    objects hold no reference cycles; those replaced later are still freed by reference
    counting, and full collections then walk only what was made since.  The collection
    first makes sure no cyclic garbage is frozen with them (it would never be freed).
    """
    gc.collect()
    gc.freeze()


async def in_daemon_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` on a new daemon thread and await its result.

    Why not a Textual thread worker: those run on asyncio's default executor, which
    ``asyncio.run`` joins when the app ends, so a quit during a refresh hung on a paused
    controller waited out Slurm's MessageTimeout after the terminal was restored.  A
    refresh's result is useless once the app has ended, so its thread is abandoned then
    (actions stay thread workers: the app waits for them, and their audit lines).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(value: T | None, error: BaseException | None) -> None:
        if future.done():  # the worker was cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)  # type: ignore[arg-type]

    def run() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = fn()
        except BaseException as exc:  # handed to the awaiting worker
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(deliver, value, error)

    threading.Thread(target=run, name="sckpt-refresh", daemon=True).start()
    return await future


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
    """Run the console until the operator quits; return the exit code (0 on ``q``)."""
    _trust_the_terminal()
    app = build_app(facade, settings, focus=focus)
    code = app.run()
    if app.return_code not in (None, 0):
        return int(app.return_code)
    return int(code or 0)
