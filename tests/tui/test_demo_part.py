"""``sckpt --demo`` at a size past its first part (``backend/simulator/staging.py``): the first
screen shows the first part, the top rows of the whole listing, with a job count that says it
is still loading; once the rest is built the table is the one a cluster built whole shows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sckpt.backend.model import StepId
from sckpt.backend.simulator import SimulatedCluster
from sckpt.tui.app import SckptApp
from sckpt.tui.screens.console import ConsoleScreen

from .conftest import Console, settle, wait_until

JOBS = 400
FIRST = 40


def _app(
    console: Callable[..., Console], first_part: int | None, focus: StepId | None = None
) -> tuple[SckptApp, SimulatedCluster]:
    built = console(n_jobs=JOBS, arrays=True, demo_touches=True, first_part=first_part, focus=focus)
    return built.app, built.cluster


def _console(app: SckptApp) -> ConsoleScreen:
    screen = app.screen
    assert isinstance(screen, ConsoleScreen)
    return screen


async def test_the_first_screen_is_the_first_part_and_says_it_is_loading(
    console: Callable[..., Console],
) -> None:
    whole, _ = _app(console, None)
    async with whole.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        expected = _console(whole).jobs_table.row_keys_in_order
        assert "loading" not in _console(whole).count_text

    app, cluster = _app(console, FIRST)
    held: list[Callable[[], None]] = []
    app.demo_thread = held.append
    app.show_demo_part()
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = _console(app)
        first = screen.jobs_table.row_keys_in_order
        # The top rows of the whole listing, and a count that does not pass for a total.
        assert first and first == expected[: len(first)]
        assert int(first[-1]) < 184_201 + FIRST < int(expected[-1])
        assert screen.count_text == f"{len(first)} jobs, loading…"
        assert cluster.building and len(held) == 1
        builder = threading.Thread(target=held[0])
        builder.start()
        assert await wait_until(pilot, lambda: not app.demo_part)
        builder.join()
        await settle(pilot)
        assert not cluster.building
        assert screen.jobs_table.row_keys_in_order == expected
        assert screen.count_text == f"{len(expected)} jobs"


async def test_a_focused_job_waits_for_the_whole_cluster(
    console: Callable[..., Console],
) -> None:
    """``sckpt --demo JOB``: the job may be past the first part."""
    app, cluster = _app(console, FIRST, StepId(184_201 + JOBS - 1))
    started: list[Callable[[], None]] = []
    app.demo_thread = started.append
    app.show_demo_part()
    assert not cluster.building and not app.demo_part
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert "loading" not in _console(app).count_text
    assert started == []
