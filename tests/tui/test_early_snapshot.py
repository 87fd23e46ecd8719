"""The console's first listing, started by the command line before the console is imported.

``sckpt`` asks for the first snapshot while Textual loads (``backend/early_snapshot.py``);
the console's first refresh must take that answer, not ask the controller a second time,
and an outage in it must look exactly like an outage in the console's own first refresh.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sckpt.backend import early_snapshot
from sckpt.backend.errors import SlurmError
from sckpt.tui.screens.console import ConsoleScreen

from .conftest import screen_text, settle, wait_until
from .test_loading import DOTS


async def test_the_first_refresh_takes_the_listing_started_early(
    console: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = console()
    asked_on: list[str] = []
    release = threading.Event()
    answer = c.facade.engine.snapshot

    def counted(*args: Any, **kwargs: Any) -> Any:
        asked_on.append(threading.current_thread().name)
        release.wait(30)
        return answer(*args, **kwargs)

    monkeypatch.setattr(c.facade.engine, "snapshot", counted)
    early_snapshot.start(c.facade)
    async with c.app.run_test(size=(80, 24)) as pilot:
        # The console waits for the early answer under its loading indicator.
        await wait_until(pilot, lambda: DOTS in screen_text(c.app))
        assert asked_on == ["sckpt-first-snapshot"]
        release.set()
        await settle(pilot)
        screen = c.app.screen
        assert isinstance(screen, ConsoleScreen)
        assert DOTS not in screen_text(c.app)
        shown = screen.jobs_table.row_keys_in_order
        assert shown and set(shown) <= {str(v.job.job_id) for v in answer().jobs}
        assert shown[0] in screen_text(c.app)
    assert asked_on == ["sckpt-first-snapshot"]  # one listing: the console did not ask again
    assert early_snapshot.claim(c.facade) is None  # taken once


async def test_an_outage_in_the_early_listing_shows_as_no_data_yet(
    console: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = console()

    def down(*args: Any, **kwargs: Any) -> Any:
        raise SlurmError(1001, "Unable to contact slurm controller (connect failure)")

    monkeypatch.setattr(c.facade.engine, "snapshot", down)
    early_snapshot.start(c.facade)
    async with c.app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: "NO DATA YET" in screen_text(c.app))
        text = screen_text(c.app)
        assert "NO DATA YET" in text and DOTS not in text
        assert "Unable to contact slurm controller" in text
