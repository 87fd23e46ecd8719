"""A key holds the refresh worker's long passes until the screen shows it (``give_way``).

What is observable: the way is held from the moment a key is posted to the app, and let
go by the app itself (not by the hold's time limit, made longer than the test here) once
the key has been handled: the cursor is then on the next row.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sckpt.backend import give_way
from textual import events

from .conftest import Console, run_test, settle, wait_until


async def test_a_key_holds_the_worker_until_it_is_handled(
    console: Callable[..., Console], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(give_way, "MAX_HOLD", 600.0)  # only the app's release ends it
    c = console(n_jobs=12)
    async with run_test(c.app, size=(120, 40)) as pilot:
        await settle(pilot)
        screen = c.app.console_screen()
        assert screen is not None
        table = screen.jobs_table
        assert table.row_count > 2 and table.cursor_row == 0
        rows_when_free: list[int] = []

        def free() -> bool:
            if give_way.held():
                return False
            rows_when_free.append(table.cursor_row)
            return True

        c.app.post_message(events.Key("down", None))
        assert give_way.held()
        assert await wait_until(pilot, free)
        assert rows_when_free == [1]
