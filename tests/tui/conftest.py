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

from tests.app_screen import notifications, screen_text

__all__ = ["notifications", "screen_text"]

ME = "alice"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("SCKPT_CONFIG", str(config))
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    time.tzset()
    yield
    time.tzset()


@dataclass
class Console:
    """One console under test: the app, its facade and the simulated cluster behind it."""

    app: SckptApp
    facade: Facade
    cluster: SimulatedCluster
    clock: ManualClock
    audit: Path


@pytest.fixture
def console(tmp_path: Path) -> Callable[..., Console]:
    """Build a console; keyword arguments choose read-only, keys, focus, size of the cluster."""

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
        app = build_app(facade, settings, focus=focus, clock=clock)
        return Console(app, facade, cluster, clock, audit)

    return make


def submit_mine(cluster: SimulatedCluster, name: str = "ui-test", n_steps: int = 2) -> int:
    """A running job of the acting user with ``n_steps`` numbered steps; returns its id."""
    job = cluster.control.submit(
        ME, name=name, state=JobState.RUNNING, n_steps=n_steps, duration=36000
    )
    return job.job_id


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until the first snapshot arrived and every worker (actions, refresh) finished.

    A worker counts until it is finished: one still PENDING (its thread not started yet, which
    happens on a loaded machine) is not ``is_running`` but will report later.
    """
    app = pilot.app

    def busy() -> bool:
        return any(not w.is_finished for w in app.workers)

    for _ in range(200):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if getattr(app, "loaded", True) and not busy():
            await pilot.pause()
            if not busy():
                return
    raise AssertionError("the console did not settle")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests here with asyncio (no pytest-asyncio dependency needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = inspect.signature(pyfuncitem.obj).parameters
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(pyfuncitem.obj(**kwargs))
    return True
