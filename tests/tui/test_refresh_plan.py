"""The console hands its plan maker down to the refresh (issue 35, item 6).

The refresh pipeline plans the console's rows on its worker's thread with the plan maker
the console last set (``RefreshPipeline.planner``), never by asking the app or the screen
for one.  A view that changed (here: a filter) reaches the next refresh's worker, so the UI
thread only applies the plan and does not make it again.
"""

from __future__ import annotations

import threading
from typing import Any

from sckpt.backend.model import JobState

from .conftest import run_test, settle
from .console_keys import SIZE, console_of, type_text


async def test_after_a_filter_the_refresh_plans_the_new_view_off_the_ui_thread(
    console: Any,
) -> None:
    c = console(n_jobs=30)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        await pilot.press("slash")
        await type_text(pilot, "user:bob")
        await pilot.press("enter")
        await settle(pilot)
        view = con.view_state()
        assert view.filter is con.filter and con.filter_text == "user:bob"
        plans: list[tuple[bool, object]] = []
        plan_rows = con.plan_rows

        def spy(view: Any, *args: Any, **kwargs: Any) -> Any:
            plans.append((threading.current_thread() is threading.main_thread(), view))
            return plan_rows(view, *args, **kwargs)

        con.plan_rows = spy  # type: ignore[method-assign]
        new = c.cluster.control.submit("bob", name="late-bob", state=JobState.PENDING)
        c.clock.advance(5)
        c.app.refresh_now()
        await settle(pilot)
        assert str(new.job_id) in con.jobs_table.row_keys_in_order
        # One plan, on the refresh worker's thread, for the filtered view: none on the UI's.
        assert plans == [(False, view)]
