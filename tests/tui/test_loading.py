"""A long wait in the console shows Textual's own LoadingIndicator.

The console's first listing may take seconds (a slow controller, a first-use shim build
before it): the jobs table sat empty under a header saying "loading…" in dim text.  It now
carries Textual's LoadingIndicator (``Widget.loading``) until the first data arrives.
"""

from __future__ import annotations

import threading
from typing import Any

from sckpt.tui.screens.console import ConsoleScreen

from tests.helpers import replace_engine_calls

from .conftest import screen_text, settle, wait_until

DOTS = "● ● ● ● ●"
"""What Textual's LoadingIndicator draws (its dots; without animation, all of them)."""


async def test_the_jobs_table_shows_a_loading_indicator_until_the_first_listing(
    console: Any,
) -> None:
    c = console()
    answer = c.facade.engine.snapshot
    release = threading.Event()

    def slow_snapshot(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)
        return answer(*args, **kwargs)

    replace_engine_calls(c.facade, snapshot=slow_snapshot)
    async with c.app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(c.app.screen, ConsoleScreen))
        screen = c.app.screen
        assert isinstance(screen, ConsoleScreen)
        await wait_until(pilot, lambda: DOTS in screen_text(c.app))
        assert screen.jobs_table.loading
        # LoadingIndicator's dots over the table (Textual covers the widget with it).
        assert DOTS in screen_text(c.app)
        release.set()
        await settle(pilot)
        assert not screen.jobs_table.loading
        assert DOTS not in screen_text(c.app)
        assert screen.jobs_table.row_keys_in_order
        # A loading widget cannot hold the focus: the table has it back, and keys act on it.
        assert c.app.focused is screen.jobs_table


async def test_keys_pressed_while_loading_act_and_never_fill_the_filter(
    console: Any,
) -> None:
    # Textual moves the focus off the loading table; it went to the hidden filter box, and
    # 'q' (on a real cluster during an outage) was typed into the filter instead of quitting.
    c = console()
    release = threading.Event()
    answer = c.facade.engine.snapshot

    def slow_snapshot(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)
        return answer(*args, **kwargs)

    replace_engine_calls(c.facade, snapshot=slow_snapshot)
    try:
        async with c.app.run_test(size=(80, 24)) as pilot:
            await wait_until(
                pilot,
                lambda: isinstance(c.app.screen, ConsoleScreen) and c.app.screen.jobs_table.loading,
            )
            screen = c.app.screen
            assert isinstance(screen, ConsoleScreen) and screen.jobs_table.loading
            await pilot.press("o", "q")
            await wait_until(pilot, lambda: not c.app.is_running)
            assert screen.filter_text == ""
            assert not c.app.is_running  # q quit
    finally:
        release.set()


async def test_a_first_listing_that_fails_ends_the_indicator(
    console: Any,
) -> None:
    from sckpt.backend.errors import SlurmError

    c = console()

    def down(*args: Any, **kwargs: Any) -> Any:
        raise SlurmError(1001, "Unable to contact slurm controller (connect failure)")

    replace_engine_calls(c.facade, snapshot=down)
    async with c.app.run_test(size=(80, 24)) as pilot:

        def ended() -> bool:
            text, screen = screen_text(c.app), c.app.screen
            return (
                "NO DATA YET" in text
                and DOTS not in text
                and isinstance(screen, ConsoleScreen)
                and c.app.focused is screen.jobs_table
            )

        await wait_until(pilot, ended)
        text = screen_text(c.app)
        assert "NO DATA YET" in text and DOTS not in text
        screen = c.app.screen
        assert isinstance(screen, ConsoleScreen) and c.app.focused is screen.jobs_table
