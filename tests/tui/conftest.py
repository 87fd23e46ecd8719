"""Fixtures for the console tests: the real simulated cluster on a frozen clock, no user config.

Every test builds the app with ``build_app`` (the factory ``sckpt`` uses) around a facade on
the simulated engine, acting as ``alice``.  ``SCKPT_CONFIG`` points at an empty temporary
file so a developer's own config never leaks in, and ``TZ=UTC`` keeps clock times stable.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend.config import Settings
from sckpt.backend.facade import Facade, open_facade
from sckpt.backend.model import JobState, StepId
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for
from sckpt.tui.app import SckptApp, build_app
from textual.pilot import Pilot

from tests.app_screen import notifications, run_test, screen_text

__all__ = ["notifications", "run_test", "screen_text"]

ME = "alice"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No user config (an empty ``SCKPT_CONFIG``), UTC times, no animations; public so
    that other directories' console tests can take it in (``isolated = tui.isolated``)."""
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("SCKPT_CONFIG", str(config))
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    time.tzset()
    yield
    time.tzset()


@dataclass
class _Timer:
    due: float
    callback: Callable[[], object]
    stopped: bool = False

    def stop(self) -> None:
        self.stopped = True


class ManualTimers:
    """The refresh pipeline's time (``refresh.Timers``), moved on by the test.

    ``advance`` fires each timer that falls due, in order, with the clock set to its due
    time, and lets the refresh it starts finish (its worker, and what the app does with the
    answer) before the next: a back-off of seconds is checked in no time, and exactly.
    """

    def __init__(self) -> None:
        self.now = 1000.0
        self.timers: list[_Timer] = []

    def monotonic(self) -> float:
        return self.now

    def after(self, delay: float, callback: Callable[[], object]) -> _Timer:
        timer = _Timer(self.now + delay, callback)
        self.timers.append(timer)
        return timer

    async def advance(self, pilot: Pilot[Any], seconds: float) -> None:
        end = self.now + seconds
        while True:
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            pending = [t for t in self.timers if not t.stopped and t.due <= end]
            if not pending:
                break
            timer = min(pending, key=lambda t: t.due)
            self.timers.remove(timer)
            self.now = max(self.now, timer.due)
            timer.callback()
        self.now = end


@dataclass
class Console:
    """One console under test: the app, its facade and the simulated cluster behind it."""

    app: SckptApp
    facade: Facade
    cluster: SimulatedCluster
    clock: ManualClock
    audit: Path
    timers: ManualTimers | None = None
    """The refresh's own time, when the test moves it (``console(manual_timers=True)``)."""


@pytest.fixture
def console(tmp_path: Path) -> Callable[..., Console]:
    """Build a console; keyword arguments choose read-only, keys, focus, size of the cluster
    (and the demo's ``first_part``), and whether the test moves the refresh's time itself
    (``manual_timers``)."""

    def make(
        *,
        read_only: bool = False,
        keys: dict[str, str] | None = None,
        focus: StepId | None = None,
        n_jobs: int = 12,
        seed: int = 7,
        demo_touches: bool = False,
        interval: float = 3600.0,
        arrays: bool = False,
        manual_timers: bool = False,
        first_part: int | None = None,
    ) -> Console:
        clock = ManualClock()
        cluster = SimulatedCluster(
            seed=seed,
            n_jobs=n_jobs,
            clock=clock,
            users=demo_users_for(ME),
            arrivals=False,
            demo_touches=demo_touches,
            arrays=arrays,
            first_part=first_part,
        )
        audit = tmp_path / "audit.log"
        settings = Settings(
            refresh_interval=interval,
            read_only=read_only,
            audit_log=audit,
            keys=keys or {},
            max_wait=30,
        )
        facade = open_facade(settings, as_user=ME, cluster=cluster)
        timers = ManualTimers() if manual_timers else None
        app = build_app(facade, settings, focus=focus, clock=clock, timers=timers)
        return Console(app, facade, cluster, clock, audit, timers)

    return make


def submit_mine(cluster: SimulatedCluster, name: str = "ui-test", n_steps: int = 2) -> int:
    """A running job of the acting user with ``n_steps`` numbered steps; returns its id."""
    job = cluster.control.submit(
        ME, name=name, state=JobState.RUNNING, n_steps=n_steps, duration=36000
    )
    return job.job_id


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until the first refresh answered and every worker (actions, refresh) finished.

    The first refresh has answered when the app's freshness (``SckptApp.freshness``, what
    every header shows) says the data is loaded, or stale: the controller did not answer,
    and the headers say why (a console started during an outage has no snapshot to wait
    for).  A worker counts until it is finished: one still PENDING (its thread not started
    yet, which happens on a loaded machine) is not ``is_running`` but will report later.
    """
    app = pilot.app

    def busy() -> bool:
        return any(not w.is_finished for w in app.workers)

    def answered() -> bool:
        freshness = app.freshness if isinstance(app, SckptApp) else None
        return freshness is None or freshness.loaded or freshness.stale

    for _ in range(200):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if answered() and not busy():
            await pilot.pause()
            if not busy():
                return
    raise AssertionError("the console did not settle")


async def wait_until(
    pilot: Pilot[Any], condition: Callable[[], bool], timeout: float = 10.0
) -> bool:
    """Let the app run until ``condition()`` holds (True), or ``timeout`` seconds passed
    (False: the test's own assertion then says what is missing).  For what arrives from a
    worker's thread or a timer, where a fixed pause would be a guess."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await pilot.pause(0.02)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests here with asyncio (no pytest-asyncio dependency needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = inspect.signature(pyfuncitem.obj).parameters
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(pyfuncitem.obj(**kwargs))
    return True
