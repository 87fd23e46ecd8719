"""Runs the console headless (Textual's Pilot) against a private cluster while its controller fails.

Why a separate process: libslurm reads one slurm.conf per process (``slurm_init``), and the
test process has usually loaded it for the shared cluster already; a paused controller also
blocks the binding's libslurm thread for up to MessageTimeout, which must not stall the other
tests.  ``tests/reliability/test_controller_outage.py`` starts this module with
``python -m tests.reliability.console_driver SCENARIO CLUSTER_JSON JOB_IDS INTERVAL`` and
``SLURM_CONF`` pointing at the private cluster; it prints one ``REPORT {json}`` line with what
it saw and measured, and the test asserts on that.

Scenarios (the driver injects the fault itself, so its timings share one clock):

``kill``   SIGKILL slurmctld, keep it down ``DOWN_FOR`` seconds, restart it with
           ``scripts/slurm-cluster up`` (which starts only the missing daemon and keeps the
           saved state), wait for the console to recover.
``pause``  SIGSTOP slurmctld (its RPCs hang), measure key-press-to-repaint latencies while
           the refresh hangs, stay paused until a refresh timed out and another was started,
           then SIGCONT and wait for the console to recover.
``quit-paused``  SIGSTOP slurmctld, then ``q`` while the refresh hangs; the test measures
           how long the process takes to end, and resumes the controller.
``start-paused``  SIGSTOP slurmctld before the console starts: it must paint, show the
           outage and answer keys (filter box open/close) with nothing loaded yet; after SIGCONT
           the rows and the cluster's name arrive.
``vacate-half``  the console opened on ``JOB.0`` (the first job id) vacates it with the keys
           an operator uses (``v``, Enter in the form, ``y``); as soon as the file named by
           ``$SCKPT_DRIVER_WATCH`` exists (the program is inside its checkpoint), SIGKILL
           slurmctld; record every notification until the action's report, then restart the
           controller and capture the step detail once the console has recovered
           (tests/reliability/test_half_failed_action.py).

Everything is bounded: a wait that runs out records ``None`` and the scenario goes on, so the
test gets a report (and fails on it) instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.tui.app import SckptApp, build_app
from sckpt.tui.screens.console import ConsoleScreen
from textual.pilot import Pilot

from tests.app_screen import notification_log, notifications, run_test, screen_text
from tests.conftest import PrivateCluster

DOWN_FOR = 30.0
"""How long the killed controller stays down (the issue's 30 s)."""
POLL = 0.05
"""How often the driver looks at the screen while waiting for a change."""
KEY_PRESSES = 8
"""Key presses measured while the controller is paused (and as many before, for reference)."""
FILTER_PLACEHOLDER = "field:value (user:alice"
"""Part of the filter box's placeholder: on screen while the box is open."""
PAUSE_LIMIT = 75.0
"""Longest pause: MessageTimeout (20 s in the test cluster) three times, plus room."""


def header_line(app: SckptApp) -> str:
    """The screen's first line: the status header."""
    return screen_text(app).splitlines()[0]


def stale_shown(app: SckptApp) -> bool:
    """The header shows the outage: STALE (old data kept) or NO DATA YET (none loaded)."""
    line = header_line(app)
    return "STALE" in line or "NO DATA YET" in line


async def wait_until(pilot: Pilot[Any], predicate: Any, limit: float) -> float | None:
    """Seconds until ``predicate()`` held (polled every POLL s), or None after ``limit``."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if predicate():
            return time.monotonic() - start
        await pilot.pause(POLL)
    return None


class Watch:
    """What the driver samples while it waits: refresh workers, errors in the header."""

    def __init__(self, app: SckptApp) -> None:
        self.app = app
        self.max_refresh_workers = 0
        self.max_workers = 0
        self.errors: list[str] = []
        self.refresh_starts: set[float] = set()

    def sample(self) -> None:
        app = self.app
        running = [w for w in app.workers if w.is_running]
        refresh = [w for w in running if w.group == "refresh"]
        self.max_refresh_workers = max(self.max_refresh_workers, len(refresh))
        self.max_workers = max(self.max_workers, len(running))
        if app.pipeline.running:
            self.refresh_starts.add(app.pipeline.started)
        console = app.console_screen()
        if console is not None:
            from sckpt.tui.widgets.header import StatusHeader

            error = console.query_one(StatusHeader).stale_error
            if error and error not in self.errors:
                self.errors.append(error)


async def sampled_wait(
    pilot: Pilot[Any], watch: Watch, predicate: Any, limit: float
) -> float | None:
    def check() -> bool:
        watch.sample()
        return bool(predicate())

    return await wait_until(pilot, check, limit)


async def key_latencies(pilot: Pilot[Any], app: SckptApp, count: int) -> list[float]:
    """Milliseconds from a key press to a rendered screen that shows its effect.

    Down and up alternate on the jobs table; the effect is the steps title naming the newly
    selected job.  The Pilot delivers the key (``pilot.press`` as a task); meanwhile this
    renders the whole screen with the compositor every few milliseconds (``screen_text``,
    what Textual would turn into terminal output) until the new title is in it.  So the time
    covers the key's delivery, the app handling it (cursor move, steps table and title) and
    the render, but not ``pilot.press``'s own idle detection, which sleeps until the whole
    process (every thread) looks idle and so measures the machine's load, not the console.
    A press whose effect does not show within a second counts as infinite.
    """
    console = app.console_screen()
    assert isinstance(console, ConsoleScreen)
    table = console.jobs_table
    table.focus()
    await pilot.pause()
    out = []
    for i in range(count):
        keys = table.row_keys_in_order
        row = table.cursor_row
        key = "down" if row < len(keys) - 1 and (i % 2 == 0 or row == 0) else "up"
        want = f"Steps of {keys[row + 1 if key == 'down' else row - 1]} "
        out.append(await _timed_press(pilot, key, lambda want=want: want in screen_text(app)))
    return out


async def _timed_press(pilot: Pilot[Any], key: str, shown: Callable[[], bool]) -> float:
    """Milliseconds from pressing ``key`` (as a task) to ``shown()`` on a rendered screen,
    polled every 2 ms; infinite after a second.  Then a 0.1 s pause before the next."""
    start = time.perf_counter()
    press = asyncio.create_task(pilot.press(key))
    elapsed = float("inf")
    while time.perf_counter() - start < 1.0:
        if shown():
            elapsed = (time.perf_counter() - start) * 1000
            break
        await asyncio.sleep(0.002)
    await press
    await pilot.pause(0.1)
    return round(elapsed, 1)


async def filter_latencies(pilot: Pilot[Any], app: SckptApp, count: int) -> list[float]:
    """Milliseconds from ``/`` to the filter box on screen, and from Escape to it gone.

    For a console without rows (nothing to move between); measured as ``key_latencies``.
    """
    out = []
    for i in range(2 * count):
        key, shown = ("slash", True) if i % 2 == 0 else ("escape", False)
        out.append(
            await _timed_press(
                pilot, key, lambda shown=shown: (FILTER_PLACEHOLDER in screen_text(app)) == shown
            )
        )
    return out


async def run_started_paused(
    cluster: PrivateCluster, jobs: list[int], interval: float
) -> dict[str, Any]:
    """The console started while slurmctld is paused: it must paint and answer keys at once.

    Nothing is known yet (no rows, no cluster name), and the first refresh hangs; the
    screens must not ask the controller for the header's facts on the UI thread.
    """
    report: dict[str, Any] = {"scenario": "start-paused", "interval": interval}
    audit = Path(os.environ.get("SCKPT_DRIVER_AUDIT", "/tmp/sckpt-driver-audit.log"))
    settings = Settings(refresh_interval=interval, audit_log=audit)
    pid = cluster.pid("slurmctld")
    os.kill(pid, signal.SIGSTOP)
    paused = time.monotonic()
    try:
        facade = open_facade(settings, engine="cooperative")
        app = build_app(facade, settings)
        watch = Watch(app)
        try:
            started = time.monotonic()  # before run_test, which waits for the first compose
            async with run_test(app, size=(160, 40)) as pilot:
                painted = await wait_until(pilot, lambda: "sckpt" in header_line(app), 30)
                report["painted_after"] = (
                    None if painted is None else round(time.monotonic() - started, 2)
                )
                report["banner_after"] = await sampled_wait(
                    pilot, watch, lambda: stale_shown(app), 30
                )
                report["header_at_banner"] = header_line(app)
                report["latency_paused_ms"] = await filter_latencies(pilot, app, KEY_PRESSES // 2)
                report["refresh_overdue_at_keys"] = app.pipeline.overdue
                os.kill(pid, signal.SIGCONT)
                report["down_for"] = round(time.monotonic() - paused, 1)
                loaded = await sampled_wait(
                    pilot,
                    watch,
                    lambda: not stale_shown(app) and all(str(j) in screen_text(app) for j in jobs),
                    60,
                )
                report["recovered_after"] = None if loaded is None else round(loaded, 2)
                report["header_after"] = header_line(app)
                report["cluster_in_header"] = "sckpt-test" in header_line(app)
                report["max_refresh_workers"] = watch.max_refresh_workers
                report["max_workers"] = watch.max_workers
                await pilot.pause(3 * interval)
                report["still_fresh"] = not stale_shown(app)
                report["running_after"] = [
                    f"{w.group}:{w.name}" for w in app.workers if w.is_running
                ]
                report["internal_errors"] = [m for m in notifications(app) if "internal error" in m]
                await pilot.press("q")
                await pilot.pause()
            report["return_code"] = app.return_code
        finally:
            facade.close()
    finally:
        os.kill(pid, signal.SIGCONT)  # never leave the controller paused
    return report


async def run_quit_paused(
    cluster: PrivateCluster, jobs: list[int], interval: float
) -> dict[str, Any]:
    """``q`` while a refresh hangs on the paused controller: the app ends at once.

    The controller is left paused: the test resumes it once this process has exited, so the
    time from ``q`` to the exit shows whether anything waited for the hung call.
    """
    report: dict[str, Any] = {"scenario": "quit-paused", "interval": interval}
    audit = Path(os.environ.get("SCKPT_DRIVER_AUDIT", "/tmp/sckpt-driver-audit.log"))
    settings = Settings(refresh_interval=interval, audit_log=audit)
    facade = open_facade(settings, engine="cooperative")
    app = build_app(facade, settings)
    async with run_test(app, size=(160, 40)) as pilot:
        loaded = await wait_until(pilot, lambda: all(str(j) in screen_text(app) for j in jobs), 60)
        report["loaded"] = loaded is not None
        os.kill(cluster.pid("slurmctld"), signal.SIGSTOP)
        report["banner_after"] = await wait_until(pilot, lambda: stale_shown(app), 30)
        report["refreshing_at_quit"] = app.pipeline.running
        report["quit_at"] = time.time()
        await pilot.press("q")
        await pilot.pause()
    report["return_code"] = app.return_code
    facade.close()
    return report


async def run_vacate_half(
    cluster: PrivateCluster, jobs: list[int], interval: float
) -> dict[str, Any]:
    """A vacate from the console whose controller is killed half-way: what the operator saw.

    Every notification shown from the key press on is recorded (title, severity, message),
    so the test can check that none claimed a success that did not happen.
    """
    from sckpt.backend.model import StepId
    from sckpt.tui.dialogs.confirm import Confirm
    from sckpt.tui.dialogs.form import ActionForm
    from sckpt.tui.screens.step import StepScreen

    report: dict[str, Any] = {"scenario": "vacate-half", "interval": interval}
    job = jobs[0]
    inside_file = Path(os.environ["SCKPT_DRIVER_WATCH"])
    audit = Path(os.environ.get("SCKPT_DRIVER_AUDIT", "/tmp/sckpt-driver-audit.log"))
    settings = Settings(refresh_interval=interval, audit_log=audit, max_wait=120)
    facade = open_facade(settings, engine="cooperative")
    app = build_app(facade, settings, focus=StepId(job, 0))
    log = notification_log(app)

    def action_reported() -> bool:
        return any(f"vacate {job}.0" in n["message"] for n in log.entries)

    try:
        async with run_test(app, size=(200, 50)) as pilot:
            loaded = await wait_until(
                pilot,
                lambda: isinstance(app.screen, StepScreen) and "RUNNING" in screen_text(app),
                60,
            )
            report["loaded"] = loaded is not None
            await pilot.press("v")
            await pilot.pause()
            report["form_shown"] = isinstance(app.screen, ActionForm)
            await pilot.press("enter")
            await pilot.pause()
            report["confirm_shown"] = isinstance(app.screen, Confirm)
            await pilot.press("y")
            inside = await wait_until(pilot, inside_file.exists, 90)
            report["inside_after"] = inside
            if inside is not None:
                os.kill(cluster.pid("slurmctld"), signal.SIGKILL)
                killed = time.monotonic()
                reported = await wait_until(pilot, action_reported, 240)
                report["reported_after_kill"] = (
                    None if reported is None else round(time.monotonic() - killed, 1)
                )
                report["screen_at_report"] = screen_text(app)
                # The action's worker ends right after its report: nothing else may follow.
                await wait_until(
                    pilot,
                    lambda: (
                        not any(w.group == "actions" and not w.is_finished for w in app.workers)
                    ),
                    30,
                )
                await pilot.pause(2)
                report["restart_error"] = await asyncio.to_thread(restart_controller, cluster)
                recovered = await wait_until(pilot, lambda: not stale_shown(app), 90)
                report["recovered"] = recovered is not None
                # The first listing after the restart may still lack the step (slurmctld
                # learns it again from slurmd): wait for the step's row, not a fixed time.
                await wait_until(pilot, lambda: "RUNNING" in screen_text(app), 60)
                report["screen_after"] = screen_text(app)
            report["notifications"] = [
                entry for i, entry in enumerate(log.entries) if entry not in log.entries[:i]
            ]
            await pilot.press("q")
            await pilot.pause()
        report["return_code"] = app.return_code
    finally:
        facade.close()
    return report


def restart_controller(cluster: PrivateCluster) -> str:
    """``scripts/slurm-cluster up``: starts the missing slurmctld on the saved state."""
    up = cluster.script("up", timeout=300)
    return "" if up.returncode == 0 else up.stderr[-2000:]


async def run(
    scenario: str, cluster: PrivateCluster, jobs: list[int], interval: float
) -> dict[str, Any]:
    report: dict[str, Any] = {"scenario": scenario, "interval": interval}
    audit = Path(os.environ.get("SCKPT_DRIVER_AUDIT", "/tmp/sckpt-driver-audit.log"))
    settings = Settings(refresh_interval=interval, audit_log=audit)
    facade = open_facade(settings, engine="cooperative")
    app = build_app(facade, settings)
    watch = Watch(app)
    try:
        async with run_test(app, size=(160, 40)) as pilot:
            loaded = await wait_until(
                pilot, lambda: all(str(j) in screen_text(app) for j in jobs), 60
            )
            report["loaded"] = loaded is not None
            await pilot.pause(interval)
            report["cluster_in_header"] = "sckpt-test" in header_line(app)
            if scenario == "pause":
                report["latency_before_ms"] = await key_latencies(pilot, app, KEY_PRESSES)
            pid = cluster.pid("slurmctld")
            fault = signal.SIGKILL if scenario == "kill" else signal.SIGSTOP
            os.kill(pid, fault)
            faulted = time.monotonic()
            report["banner_after"] = await sampled_wait(pilot, watch, lambda: stale_shown(app), 30)
            text = screen_text(app)
            report["rows_kept"] = [j for j in jobs if str(j) in text]
            report["header_at_banner"] = header_line(app)
            if scenario == "kill":
                await sampled_wait(
                    pilot, watch, lambda: False, DOWN_FOR - (time.monotonic() - faulted)
                )
                report["stale_throughout"] = stale_shown(app)
                report["restart_error"] = await asyncio.to_thread(restart_controller, cluster)
                resumed = time.monotonic()
                report["down_for"] = round(resumed - faulted, 1)
            else:
                report["latency_paused_ms"] = await key_latencies(pilot, app, KEY_PRESSES)
                report["refresh_overdue_at_keys"] = app.pipeline.overdue

                def timed_out_and_retried() -> bool:
                    # One refresh came back with libslurm's timeout, and another one started.
                    return app.pipeline.failures >= 1 and app.pipeline.running

                retried = await sampled_wait(pilot, watch, timed_out_and_retried, PAUSE_LIMIT)
                report["timed_out_and_retried_after"] = (
                    None if retried is None else round(time.monotonic() - faulted, 1)
                )
                report["failures_while_paused"] = app.pipeline.failures
                report["stale_throughout"] = stale_shown(app)
                os.kill(pid, signal.SIGCONT)
                resumed = time.monotonic()
                report["down_for"] = round(resumed - faulted, 1)
            recovered = await sampled_wait(pilot, watch, lambda: not stale_shown(app), 60)
            report["recovered_after"] = None if recovered is None else round(recovered, 2)
            report["header_after"] = header_line(app)
            report["rows_after"] = [j for j in jobs if str(j) in screen_text(app)]
            report["errors_seen"] = watch.errors
            report["refresh_attempts_during_fault"] = len(watch.refresh_starts)
            report["max_refresh_workers"] = watch.max_refresh_workers
            report["max_workers"] = watch.max_workers
            # A few more intervals: still fresh, and nothing left running but one refresh.
            await pilot.pause(3 * interval)
            report["still_fresh"] = not stale_shown(app)
            running = [w for w in app.workers if w.is_running]
            report["running_after"] = [f"{w.group}:{w.name}" for w in running]
            report["internal_errors"] = [m for m in notifications(app) if "internal error" in m]
            report["screen_after"] = screen_text(app)
            await pilot.press("q")
            await pilot.pause()
        report["return_code"] = app.return_code
    finally:
        facade.close()
    return report


def main() -> int:
    scenario, cluster_json, job_ids, interval = sys.argv[1:5]
    fields = json.loads(cluster_json)
    cluster = PrivateCluster(
        conf=Path(fields["conf"]),
        directory=Path(fields["directory"]),
        node=fields["node"],
        ctld_port=int(fields["ctld_port"]),
        slurmd_port=int(fields["slurmd_port"]),
    )
    jobs = [int(j) for j in job_ids.split(",")]
    if scenario == "start-paused":
        report = asyncio.run(run_started_paused(cluster, jobs, float(interval)))
    elif scenario == "quit-paused":
        report = asyncio.run(run_quit_paused(cluster, jobs, float(interval)))
    elif scenario == "vacate-half":
        report = asyncio.run(run_vacate_half(cluster, jobs, float(interval)))
    else:
        report = asyncio.run(run(scenario, cluster, jobs, float(interval)))
    for key in ("latency_before_ms", "latency_paused_ms"):
        if report.get(key):
            report[key.replace("_ms", "_median_ms")] = statistics.median(report[key])
    print("REPORT " + json.dumps(report, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
