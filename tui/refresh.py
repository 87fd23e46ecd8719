"""The refresh pipeline: when to ask the controller, what to keep, what to tell the screens.

A worker runs ``facade.snapshot()`` (which may block on libslurm) on a daemon thread
(``in_daemon_thread``: a quit never waits for a hung refresh).  The next refresh is
scheduled only once the last one has finished (dolphie-style), so two refreshes never
overlap and a slow controller is never asked twice at once; the interval comes from the
settings and grows when the controller is slow.  "No change" answers (``Snapshot.changed``
False) cost no table work at all.  A changed answer is turned into the next job data and
the console's plan on the worker's thread too (``Planner``): the UI thread then only
applies it, so a key pressed during a refresh is not queued behind the queue's size.  The
console hands its plan maker down whenever its view changes (``planner``); the pipeline
never asks the app or a screen for it.

A controller that is down or paused does not fail fast: libslurm retries a refused
connection, or waits for an answer, for Slurm's MessageTimeout (often 10-20 s), and every
call waits on the binding's single libslurm thread.  So nothing here waits for a refresh: a
watchdog timer marks the data stale ("not answering") once a refresh is overdue
(``overdue_after``, under one interval on a healthy controller), while the worker keeps
waiting; no second request is started meanwhile (it would only queue behind the first).

While the data is stale the pipeline asks at most one small request per interval:
``facade.ping()`` (a configuration load), never the job list.  When a ping answers, a full
refresh follows at once, so a controller that comes back shows fresh data within two
intervals of answering.  Full listings during an outage still follow the exponential
back-off (up to ``MAX_BACKOFF``), counted from the start of the failed attempt, and a
ping's success is trusted for one listing only: a controller that answers pings but fails
listings is asked for listings no more often than the back-off allows.

Everything the screens must know leaves as Messages (``tui/messages.py``), through the
``post`` callable the app gives (it posts one to every screen, made by the factory).

Time comes from ``Timers``: the scheduling, the back-off and the watchdog read its
monotonic clock and set its one-shot timers.  The app's are real time (``AppTimers``:
``time.monotonic`` and Textual's timers); a test gives its own and moves time on itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import compress, filterfalse
from operator import attrgetter
from typing import Any, Protocol, TypeVar

from sckpt.backend import early_snapshot, give_way
from sckpt.backend.errors import SckptError
from sckpt.backend.facade import Facade
from sckpt.backend.give_way import paced
from sckpt.backend.model import FINISHED_STATES, ClusterInfo, JobView, Snapshot, StepId
from textual.app import App
from textual.message import Message

from .console_text import clock_time
from .messages import DataReady, Freshness, FreshnessChanged, InfoChanged

T = TypeVar("T")

LINGER = 300.0
"""Seconds a finished (or vanished) job stays visible with "show finished" off."""
NOT_WATCHED = float("-inf")
"""``finished_seen``'s time for a job first listed already finished: never within its
linger, so the console's default set is ``sckpt ls``'s (pending, running, suspended) plus
the jobs it watched finish."""
MAX_BACKOFF = 60.0
"""Longest wait between two full listings while the controller is unreachable."""
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
VIEW_SYNC = 30.0
"""Seconds after which a "no change" answer still reaches the screens (lingering jobs
leave, elapsed times turn over)."""


class Stoppable(Protocol):
    """A timer set with ``Timers.after``: it can be called off."""

    def stop(self) -> None: ...


class Timers(Protocol):
    """The pipeline's time: a monotonic clock and one-shot timers on the UI thread."""

    def monotonic(self) -> float:
        """Seconds on a clock that only moves forward (intervals, back-off, overdue)."""
        ...

    def after(self, delay: float, callback: Callable[[], object]) -> Stoppable:
        """Call ``callback`` on the UI thread ``delay`` seconds from now."""
        ...


class AppTimers:
    """Real time: ``time.monotonic`` and the app's Textual timers."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app

    def monotonic(self) -> float:
        return time.monotonic()

    def after(self, delay: float, callback: Callable[[], object]) -> Stoppable:
        return self.app.set_timer(delay, callback)


JobKey = tuple[str, int]
"""A job in the console's data: (cluster, job id).  The cluster is "" without ``-M``; with it,
two clusters' jobs may share an id."""


job_key: Callable[[JobView], JobKey] = attrgetter("cluster", "job.job_id")
"""A job view's ``JobKey`` (an ``attrgetter``: mapped over a whole listing, it runs in C)."""

_STATE_OF = attrgetter("job.state")


def target_key(target: StepId) -> JobKey:
    """The key of the job ``target`` names (its cluster is the job's)."""
    return (target.cluster, target.job_id)


@dataclass(frozen=True, slots=True)
class JobData:
    """The job data after one snapshot (replaced as a whole, never changed in place, so a
    refresh worker can build the next one from it)."""

    jobs: dict[JobKey, JobView]
    gone: dict[JobKey, tuple[JobView, float]]
    """Jobs the controller stopped reporting, with when: kept for ``LINGER`` seconds."""
    finished_seen: dict[JobKey, float]
    """When each finished job was first seen finished (or ended)."""

    def all_jobs(self) -> list[JobView]:
        return [*self.jobs.values(), *self.gone_jobs()]

    def gone_jobs(self) -> list[JobView]:
        return [v for v, _ in self.gone.values()]

    def job(self, key: JobKey) -> JobView | None:
        """The latest view of a job (also a recently vanished one)."""
        found = self.jobs.get(key)
        if found is None and key in self.gone:
            return self.gone[key][0]
        return found

    def recently_finished(self, now: float) -> frozenset[JobKey]:
        recent = {i for i, t in self.finished_seen.items() if now - t < LINGER}
        recent.update(i for i, (_, t) in self.gone.items() if now - t < LINGER)
        return frozenset(recent)

    def expired(self, now: float) -> bool:
        """Whether a vanished job's linger is over (it must leave the table)."""
        return any(now - t >= LINGER for _, t in self.gone.values())

    def after(self, snap: Snapshot, now: float) -> JobData:
        """The data once ``snap`` is taken (pure: ``self`` is left as it is).

        Every changed listing passes here with the whole queue (the demo: every refresh),
        so its passes over all jobs run in C (``map``, ``compress``, ``filterfalse``);
        Python code runs only per vanished or newly finished job.  Each pass is ``paced``:
        a C pass over 100,000 jobs' scattered records holds the GIL for 20-90 ms in one
        piece, where a key waits (bench/README); paced, it can be interrupted every few
        hundred jobs, and gives way to a key (``give_way``).
        """
        jobs = snap.jobs
        keys = list(map(job_key, paced(jobs)))
        new = dict(zip(paced(keys), jobs, strict=True))
        old = self.jobs
        gone = {i: (v, t) for i, (v, t) in self.gone.items() if now - t < LINGER and i not in new}
        finished_seen = dict(self.finished_seen)
        for key in list(filterfalse(new.__contains__, paced(old))):
            # Its linger now counts from when it vanished; keeping the finish time
            # too grew this dict by one entry per job for as long as the console ran.
            if finished_seen.pop(key, None) == NOT_WATCHED:
                continue  # finished before the console saw it run: nothing to linger
            gone[key] = (old[key], now)
        states = map(_STATE_OF, paced(jobs))
        finished = set(compress(keys, map(FINISHED_STATES.__contains__, states)))
        for key in finished_seen.keys() - finished:  # running again (requeued)
            del finished_seen[key]
        for key in finished - finished_seen.keys():
            before = old.get(key)
            if before is None or before.job.state in FINISHED_STATES:
                # Already finished when first listed: hidden like ``ls`` hides it, until
                # ``f``.  Only a job the console saw unfinished lingers once it ends.
                finished_seen[key] = NOT_WATCHED
                continue
            end = new[key].job.end_time
            finished_seen[key] = float(end) if end else now
        return JobData(new, gone, finished_seen)


Planner = Callable[[JobData, float], object]
"""Made on the UI thread whenever the console's view changes (it captures the view state),
called on the worker's thread with the next data: the console's plan for it."""


@dataclass(frozen=True, slots=True)
class _Taken:
    """A changed snapshot made ready off the UI thread: the data and the console's plan."""

    data: JobData
    base: JobData
    """The data it was built from: if that is no longer current, it is built again."""
    now: float
    planned: object | None


class RefreshPipeline:
    """Refresh scheduling, back-off, the outage probe, the watchdog and the job data."""

    def __init__(
        self,
        app: App[Any],
        facade: Facade,
        *,
        interval: float,
        clock: Callable[[], float],
        post: Callable[[Callable[[], Message]], None],
        timers: Timers | None = None,
    ) -> None:
        self.app = app
        self.timers: Timers = timers if timers is not None else AppTimers(app)
        """Where the pipeline's monotonic time and timers come from."""
        self.facade = facade
        self.interval = interval
        self.now = clock
        self._post = post
        self.planner: Planner | None = None
        """The console's plan maker for its current view, which the console sets (on the
        UI thread) each time it shows its rows; None before it first did.  A refresh takes
        the one set when it starts: a plan made for a view changed meanwhile is made again
        on the UI thread (``RowPlan.view``), never shown wrong."""
        self.info: ClusterInfo = facade.known_info()
        """Cluster facts for the headers, without asking the controller on the UI thread
        (the refresh worker fills in what the controller says once it answers)."""
        self.data = JobData({}, {}, {})
        self.freshness = Freshness()
        self.failures = 0
        """Consecutive failed refreshes (drives the back-off)."""
        self.next_delay = interval
        self.refresh_count = 0
        self.probe_count = 0
        """Pings sent while the data was stale."""
        self.last_duration = 0.0
        self.typical_duration = 0.0
        """Smoothed duration of successful refreshes (sets when one is overdue)."""
        self.overdue = False
        """True while a refresh has been waiting longer than ``overdue_after()``."""
        self.running = False
        """A listing or a ping is in flight (never two at once)."""
        self.started = 0.0
        """When the request in flight (or the last one) was sent (``timers.monotonic``)."""
        self._full_after = 0.0
        """Monotonic time before which the back-off allows no full listing."""
        self._trust_ping = True
        """False after a listing that a successful ping started has failed too."""
        self._from_ping = False
        """The listing in flight was started because a ping answered."""
        self._again = False
        self._stopped = False
        self._timer: Stoppable | None = None
        self._watchdog: Stoppable | None = None
        self._last_view_sync = 0.0
        self._delivered = False
        """Data has reached the screens once (the first ``DataReady`` says so)."""

    # ------------------------------------------------------------------ state

    @property
    def loaded(self) -> bool:
        return self.freshness.loaded

    @property
    def stale(self) -> bool:
        return self.freshness.stale

    def stop(self) -> None:
        """No more refreshes (the app is quitting); timers are left to Textual."""
        self._stopped = True

    # ------------------------------------------------------------------ scheduling

    def refresh_now(self) -> None:
        """Refresh as soon as possible: now, or right after the request in flight."""
        if self._stopped:
            return
        if self.running:
            self._again = True
            return
        self._start(probe=False)

    def _start(self, *, probe: bool, from_ping: bool = False) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.running = True
        self._again = False
        self._from_ping = from_ping
        self.started = self.timers.monotonic()
        if probe:
            self.probe_count += 1
            self.app.run_worker(self._probe(), group="refresh", exit_on_error=False)
            return
        self._watchdog = self.timers.after(self.overdue_after(), self._refresh_overdue)
        self.app.run_worker(self._refresh(self.planner), group="refresh", exit_on_error=False)

    def overdue_after(self) -> float:
        """Seconds after which a running refresh counts as "controller not answering"."""
        return max(self.interval * OVERDUE_SHARE, self.typical_duration * OVERDUE_TYPICAL)

    def _schedule(self, delay: float) -> None:
        if self._stopped:
            return
        if self._again:  # asked for meanwhile (a key, an action): a listing now
            self._start(probe=False)
            return
        self.next_delay = delay
        if delay <= 0:
            self._next()
        else:
            self._timer = self.timers.after(delay, self._next)

    def _next(self) -> None:
        """A timer fired: a listing when fresh (or when the back-off allows one), else
        one ping."""
        if self._stopped or self.running:
            return
        if self.stale and self.timers.monotonic() < self._full_after:
            self._start(probe=True)
        else:
            self._start(probe=False)

    def _backoff(self, spent: float) -> float:
        """The wait before the next listing after ``failures`` failed ones in a row.

        Exponential from the interval up to ``MAX_BACKOFF``, counted from the start of the
        failed attempt: ``spent`` (its own duration) is deducted, never below one interval.
        """
        factor = float(2 ** min(self.failures, 10))
        full = min(self.interval * factor, max(MAX_BACKOFF, self.interval))
        return max(self.interval, full - spent)

    # ------------------------------------------------------------------ the outage probe

    async def _probe(self) -> None:
        answered = await in_daemon_thread(self.facade.ping)
        self.running = False
        spent = self.timers.monotonic() - self.started
        if self._stopped:
            return
        if answered and self._trust_ping:
            self._start(probe=False, from_ping=True)  # back: list now, not at the back-off
            return
        self._schedule(max(0.0, self.interval - spent))

    # ------------------------------------------------------------------ the listing

    def _refresh_overdue(self) -> None:
        """The watchdog: the refresh has not answered in time; say so, keep waiting."""
        self._watchdog = None
        if not self.running or self._stopped:
            return
        self.overdue = True
        if self.stale and self.freshness.error:
            return  # a retry during an outage: the failure's own message says more
        sent = clock_time(self.now() - (self.timers.monotonic() - self.started))
        self._mark_stale(
            f"slurmctld is not answering (request sent at {sent}, still waiting; "
            "Slurm gives up after its MessageTimeout)"
        )

    async def _refresh(self, planner: Planner | None) -> None:
        try:
            snap, duration, info, taken = await in_daemon_thread(
                lambda: self._yielding_snapshot(planner)
            )
        except Exception as exc:  # the facade never raises on an outage; anything else
            self._finished()
            self.failures += 1
            self._mark_stale(f"refresh failed: {exc}")
            self._after_failure(self.timers.monotonic() - self.started)
            return
        self._finished()
        if info is not None and info != self.info:
            self.info = info
            self._post(partial(InfoChanged, info))
        self.apply_snapshot(snap, duration, taken)

    def _finished(self) -> None:
        self.running = False
        self.overdue = False
        if self._watchdog is not None:
            self._watchdog.stop()
            self._watchdog = None

    def _yielding_snapshot(
        self, planner: Planner | None
    ) -> tuple[Snapshot, float, ClusterInfo | None, _Taken | None]:
        """``_take_snapshot`` on a thread whose long passes give way to a key
        (``give_way``: the UI thread holds them while it handles one)."""
        with give_way.yielding():
            return self._take_snapshot(planner)

    def _take_snapshot(
        self, planner: Planner | None
    ) -> tuple[Snapshot, float, ClusterInfo | None, _Taken | None]:
        """The refresh's blocking part (on the worker's thread); the cluster facts are
        asked once the controller first answered, and a snapshot the screens must show
        is prepared here as well."""
        started = self.timers.monotonic()
        early = early_snapshot.claim(self.facade)  # the first one, when the command line
        if early is not None:  # started it before importing the console (sooner first rows)
            snap, duration = early.result(), early.duration
        else:
            snap = self.facade.snapshot()
            duration = self.timers.monotonic() - started
        info = None
        if not snap.stale and not self.info.cluster_name:
            try:
                info = self.facade.info
            except SckptError:
                info = None
        taken = None
        if not snap.stale:
            now = self.now()
            if self._needs_take(snap, now):
                taken = self._prepare(snap, now, planner)
        return snap, duration, info, taken

    def _needs_take(self, snap: Snapshot, now: float) -> bool:
        """Whether a fresh snapshot must reach the screens (else it costs no table work)."""
        return (
            snap.changed
            or not self.loaded
            or self.data.expired(now)
            or now - self._last_view_sync >= VIEW_SYNC
        )

    def _prepare(self, snap: Snapshot, now: float, planner: Planner | None) -> _Taken:
        """The next job data and the console's plan for it (on any thread: reads the
        current data, changes nothing)."""
        base = self.data
        data = base.after(snap, now)
        return _Taken(data, base, now, planner(data, now) if planner is not None else None)

    def apply_snapshot(self, snap: Snapshot, duration: float, taken: _Taken | None = None) -> None:
        """Keep the snapshot and tell the screens (nothing when nothing changed)."""
        self.refresh_count += 1
        self.last_duration = duration
        now = self.now()
        if snap.stale:
            self.failures += 1
            last = self.freshness.last_fresh if self.loaded else 0.0
            self._set_freshness(Freshness(self.loaded, True, snap.stale_since or last, snap.error))
            if not self.loaded and snap.jobs:
                self._take(self._prepare(snap, now, None))
            self._after_failure(duration)
            return
        self.failures = 0
        self._trust_ping = True
        delay = self.interval
        typical = self.typical_duration
        self.typical_duration = duration if not typical else 0.8 * typical + 0.2 * duration
        if duration > self.interval * SLOW_FACTOR:
            # A slow controller: give it several times what the last answer cost.
            delay = max(self.interval, duration * 4)
        self._set_freshness(Freshness(True, False, snap.taken_at or now, "", snap.clusters))
        if taken is not None and taken.base is self.data:
            self._take(taken)
        elif self._needs_take(snap, now):
            self._take(self._prepare(snap, now, None))
        self._schedule(delay)

    def _after_failure(self, spent: float) -> None:
        """A listing failed: no listing before the back-off, a ping every interval."""
        backoff = self._backoff(spent)
        self._full_after = self.started + backoff
        if self._from_ping:
            self._trust_ping = False  # pings answer but listings fail: back-off only
        self._schedule(min(backoff, max(0.0, self.interval - spent)) or self.interval)

    def _take(self, taken: _Taken) -> None:
        self.data = taken.data
        # Its own flag: a fresh answer marks the data loaded (``_set_freshness``) before
        # it is taken, so "not loaded yet" cannot tell the first data from later ones.
        first = not self._delivered
        self._delivered = True
        if not self.freshness.loaded:
            self.freshness = Freshness(
                True, self.freshness.stale, self.freshness.last_fresh, self.freshness.error
            )
        self._last_view_sync = taken.now
        self._post(partial(DataReady, taken.planned, first))

    def _mark_stale(self, error: str) -> None:
        # last_fresh stays 0 when nothing was ever loaded: the headers say NO DATA YET.
        self._set_freshness(Freshness(self.loaded, True, self.freshness.last_fresh, error))

    def _set_freshness(self, freshness: Freshness) -> None:
        self.freshness = freshness
        self._post(partial(FreshnessChanged, freshness))


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
