"""Driving the console with the keyboard, as the Pilot tests do: type, filter to a job,
walk to a step; shared by every console test module."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from sckpt.backend.model import StepId
from sckpt.tui.screens.console import ConsoleScreen
from textual.pilot import Pilot

from .conftest import run_test, settle, submit_mine

SIZE = (120, 36)
"""The terminal the console tests run in (columns, lines)."""


async def type_text(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*text)  # Pilot turns single characters into their keys


def console_of(pilot: Pilot[Any]) -> ConsoleScreen:
    screen = pilot.app.console_screen()  # type: ignore[attr-defined]
    assert isinstance(screen, ConsoleScreen)
    return screen


async def go_to_job(pilot: Pilot[Any], name: str) -> None:
    """Filter on the job's name with the keyboard; the jobs table gets the focus back."""
    await pilot.press("slash")
    await type_text(pilot, f"name:{name}")
    await pilot.press("enter")
    await pilot.pause()


async def go_to_step(pilot: Pilot[Any], name: str, step: StepId) -> None:
    """Filter to the job, Enter into its steps, arrow down to ``step``."""
    await go_to_job(pilot, name)
    await pilot.press("enter")
    con = console_of(pilot)
    assert pilot.app.focused is con.steps_table
    index = con.steps_table.row_keys_in_order.index(str(step))
    for _ in range(index):
        await pilot.press("down")
    assert con.selected_target() == step


def first_numbered(cluster: Any, job_id: int) -> StepId:
    for job in cluster.snapshot().jobs:
        if job.job.job_id == job_id:
            for view in job.steps:
                if not view.step.step_id.step_text.isalpha():
                    return view.step.step_id  # type: ignore[no-any-return]
    raise AssertionError("no numbered step")


@asynccontextmanager
async def at_my_step(console: Callable[[], Any]) -> AsyncIterator[tuple[Any, Pilot[Any], StepId]]:
    """The console on a job of the test's user (``ui-test``), the cursor on its first
    numbered step: the opening most action tests share.  Yields the console fixture's
    value, the pilot and the step."""
    c = console()
    step = first_numbered(c.cluster, submit_mine(c.cluster))
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_step(pilot, "ui-test", step)
        yield c, pilot, step
