"""The header during an outage: STALE since the last fresh data, or NO DATA YET without any.

A console started while the controller cannot be reached has nothing to call stale; the
header used to say "STALE since <now> (0 s ago)", which read as if data had just been fresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sckpt.backend.errors import SlurmError
from sckpt.backend.model import StepId
from sckpt.tui.screens.step import StepScreen
from textual.pilot import Pilot

from tests.helpers import replace_engine_calls

from .conftest import Console, screen_text, settle, submit_mine

SIZE = (160, 30)
CONNECT = "Unable to contact slurm controller (connect failure)"


def down() -> Any:
    raise SlurmError(1001, CONNECT)


def header(pilot: Pilot[Any]) -> str:
    return screen_text(pilot.app).splitlines()[0]  # type: ignore[arg-type]


async def wait_header(pilot: Pilot[Any], wanted: str) -> str:
    for _ in range(200):
        line = header(pilot)
        if wanted in line:
            return line
        await pilot.pause(0.05)
    raise AssertionError(f"{wanted!r} never in the header: {header(pilot)!r}")


async def test_started_during_an_outage_says_no_data_yet_and_why(
    console: Callable[..., Console],
) -> None:
    c = console(interval=0.5)
    outage = replace_engine_calls(c.facade, snapshot=down)
    async with c.app.run_test(size=SIZE) as pilot:
        line = await wait_header(pilot, "NO DATA YET")
        assert "STALE" not in line
        # the reason right after the marker: nothing else on the line is known yet
        assert line.index(CONNECT) < line.index(" user ")
        outage.calls.clear()
        line = await wait_header(pilot, "updated every 0.5 s")
        assert "NO DATA" not in line and "STALE" not in line


async def test_a_step_opened_during_a_later_outage_still_says_stale_since(
    console: Callable[..., Console],
) -> None:
    c = console(interval=0.5)
    job = submit_mine(c.cluster)
    async with c.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        replace_engine_calls(c.facade, snapshot=down)
        c.clock.advance(7)
        await wait_header(pilot, "STALE since")
        c.app.open_step(StepId(job, 0))
        await pilot.pause()
        assert isinstance(c.app.screen, StepScreen)
        line = await wait_header(pilot, "STALE since")
        assert "NO DATA" not in line and CONNECT in line
