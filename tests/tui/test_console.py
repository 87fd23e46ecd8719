"""Pilot tests of the console on the simulated cluster: listing, refresh and outages,
filter, sort, toggles, the step detail, single-step mode, help, palette, keys, quitting and
read-only mode (its actions are in ``test_console_actions.py``).

Each test asserts on what the screen shows (the simulated cluster is the backend the
console drives).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from sckpt.backend.errors import SlurmError
from sckpt.backend.model import JobState, StepId
from sckpt.tui.app import build_app
from sckpt.tui.commands import ActionsProvider
from sckpt.tui.dialogs.help import HelpScreen
from sckpt.tui.screens.console import ConsoleScreen
from sckpt.tui.screens.step import StepScreen
from sckpt.tui.widgets.header import StatusHeader
from textual.widgets import Input

from tests.helpers import replace_engine_calls

from .conftest import ME, notifications, run_test, screen_text, settle, submit_mine, wait_until
from .console_keys import (
    SIZE,
    at_my_step,
    console_of,
    first_numbered,
    go_to_job,
    go_to_step,
    type_text,
)

# ------------------------------------------------------------------ listing


async def test_lists_the_clusters_jobs_and_steps(console: Any) -> None:
    c = console()
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        jobs = [j for j in c.facade.snapshot().jobs]
        active = {str(j.job.job_id) for j in jobs if not j.job.state.is_finished}
        shown = set(con.jobs_table.row_keys_in_order)
        assert active <= shown
        # Finished jobs hidden unless recent: every shown finished job ended < 300 s ago.
        now = c.clock()
        for j in jobs:
            if str(j.job.job_id) in shown and j.job.state.is_finished:
                assert now - j.job.end_time < 300
        text = screen_text(c.app)
        assert "demo" in text and "simulated" in text and "user alice" in text
        assert "updated every 1h00m" in text  # on schedule: the interval, no ticking counter
        # The steps table shows the steps of the job under the cursor.
        top = con.jobs_table.selected_key
        assert top is not None
        view = c.app.job(int(top))
        assert view is not None
        assert con.steps_table.row_keys_in_order == [str(s.step.step_id) for s in view.steps]


async def test_values_from_slurm_are_shown_literally(console: Any) -> None:
    c = console()
    c.cluster.control.submit(ME, name="[red]evil\x1b]0;x", state=JobState.RUNNING, n_steps=1)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_job(pilot, "evil")
        text = screen_text(c.app)
        assert "[red]evil\\x1b]0;" in text
        assert "\x1b" not in text


async def test_refresh_keeps_cursor_and_updates_changed_rows_only(console: Any) -> None:
    c = console(n_jobs=30)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        for _ in range(4):
            await pilot.press("down")
        selected = con.jobs_table.selected_key
        row = con.jobs_table.cursor_row
        table = con.jobs_table
        calls: list[tuple[list[str], list[str]]] = []
        apply = table.apply

        def spy(upserts: Any, removals: Any = ()) -> Any:
            upserts, removals = list(upserts), list(removals)
            calls.append(([key for key, _, _ in upserts], removals))
            return apply(upserts, removals)

        table.apply = spy  # type: ignore[method-assign]
        before = table.row_keys_in_order
        new = c.cluster.control.submit(
            "bob", name="late-arrival", state=JobState.PENDING, n_steps=0
        )
        c.clock.advance(5)
        c.app.refresh_now()
        await settle(pilot)
        assert con.jobs_table.selected_key == selected
        assert con.jobs_table.cursor_row == row
        # Only what changed reached the table: the new job, and the jobs whose views the
        # engine rebuilt (their state moved in those 5 s); never the whole queue.
        assert len(calls) == 1
        upserted, removed = calls[0]
        assert str(new.job_id) in upserted and len(upserted) < len(before) // 2
        assert table.row_keys_in_order == sorted(
            set(before) - set(removed) | {str(new.job_id)}, key=int
        )
        # "No change" answers cost no table work: no call at all.
        calls.clear()
        count = c.app.pipeline.refresh_count
        c.app.refresh_now()
        await settle(pilot)
        assert c.app.pipeline.refresh_count == count + 1
        assert calls == []


async def test_header_counts_only_when_a_refresh_is_late(console: Any) -> None:
    # On schedule the header names the interval (no counter repainting every second);
    # data older than one interval and a half counts up, and the next refresh ends that.
    c = console()  # interval 3600 s: no refresh happens unless asked for
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        header = console_of(pilot).query_one(StatusHeader)
        c.clock.advance(5399)
        c.app.screen.tick_headers()
        await pilot.pause()
        assert "updated every 1h00m" in screen_text(c.app)
        c.clock.advance(2)
        c.app.screen.tick_headers()
        await pilot.pause()
        assert "updated 1h30m ago" in screen_text(c.app)
        assert header.overdue(5401)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert "updated every 1h00m" in screen_text(c.app)


async def test_outage_marks_data_stale_and_recovers_without_a_key(console: Any) -> None:
    c = console(interval=0.5, manual_timers=True)
    timers = c.timers  # the refresh's time: moved on below, not waited for
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        rows = console_of(pilot).jobs_table.row_count
        pipeline = c.app.pipeline
        calls: list[tuple[str, float]] = []

        def down() -> Any:
            calls.append(("snapshot", timers.monotonic()))
            raise SlurmError(1001, "Unable to contact slurm controller (connect failure)")

        def no_ping() -> float:
            calls.append(("ping", timers.monotonic()))
            raise SlurmError(1001, "Unable to contact slurm controller (connect failure)")

        outage = replace_engine_calls(c.facade, snapshot=down, ping=no_ping)
        c.clock.advance(7)
        for _ in range(100):  # the scheduled refreshes find the outage by themselves
            await timers.advance(pilot, 0.05)
            if pipeline.stale:
                break
        text = screen_text(c.app)
        assert "STALE since 20:26:40 (7 s ago)" in text
        header = console_of(pilot).query_one(StatusHeader)
        assert "connect failure" in header.stale_error
        assert console_of(pilot).jobs_table.row_count == rows  # last data kept
        # While stale: one small request (a ping) per interval, full listings only at the
        # back-off (0.5 -> 1 -> 2 -> 4 s after the failed attempts).
        await timers.advance(pilot, 4.0)
        starts = [t for _, t in calls]
        assert all(b - a >= 0.5 * 0.9 for a, b in itertools.pairwise(starts))
        assert [name for name, _ in calls].count("snapshot") <= 3
        assert [name for name, _ in calls].count("ping") >= 4
        # The controller answers again: the next ping sees it and the listing follows at
        # once (fresh within two intervals), not at the back-off (4 s by now).
        snapshot, ping = outage.inner.snapshot, outage.inner.ping
        calls.clear()

        def answering_snapshot() -> Any:
            calls.append(("snapshot", timers.monotonic()))
            return snapshot()

        def answering_ping() -> float:
            calls.append(("ping", timers.monotonic()))
            return ping()

        outage.calls.update(snapshot=answering_snapshot, ping=answering_ping)
        for _ in range(200):  # no key pressed
            await timers.advance(pilot, 0.05)
            if not pipeline.stale:
                break
        assert [name for name, _ in calls][:2] in (["ping", "snapshot"], ["snapshot"])
        for _ in range(40):  # the header hears of it through a message: let it repaint
            text = screen_text(c.app)
            if "STALE" not in text:
                break
            await pilot.pause(0.05)
        assert "STALE" not in text and "updated every 0.5 s" in text
        assert pipeline.next_delay == c.app.interval


async def test_pings_answer_but_listings_fail_back_off(console: Any) -> None:
    # A controller that answers pings but not job listings is not listed every interval:
    # one listing after a good ping, then the back-off decides.
    c = console(interval=0.5, manual_timers=True)
    timers = c.timers  # the refresh's time: moved on below, not waited for
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        listings: list[float] = []

        def down() -> Any:
            listings.append(timers.monotonic())
            raise SlurmError(1001, "Unable to contact slurm controller (connect failure)")

        replace_engine_calls(c.facade, snapshot=down)
        c.app.refresh_now()
        await timers.advance(pilot, 6.0)
        # Back-off from each failed attempt: 1, 2, 4 s (a ping-started one at 0.5 s first).
        assert 3 <= len(listings) <= 5
        assert c.app.pipeline.stale


# ------------------------------------------------------------------ filter, sort, toggles


async def test_filter_by_field_and_text(console: Any) -> None:
    c = console(n_jobs=30)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        await pilot.press("slash")
        assert isinstance(pilot.app.focused, Input)
        await type_text(pilot, "user:bob state:R")
        await pilot.press("enter")
        keys = con.jobs_table.row_keys_in_order
        assert keys
        for key in keys:
            job = c.app.job(int(key))
            assert job is not None
            assert job.job.user == "bob" and job.job.state is JobState.RUNNING
        assert "filter: user:bob state:R" in screen_text(c.app)
        # Free text matches any column; Escape in the box clears it.
        await pilot.press("slash", "ctrl+a", "ctrl+k")
        await type_text(pilot, "carol")
        assert all(c.app.job(int(k)).job.user == "carol" for k in con.jobs_table.row_keys_in_order)  # type: ignore[union-attr]
        await pilot.press("escape")
        assert con.filter_text == ""
        await pilot.press("escape")
        assert pilot.app.focused is con.jobs_table
        # An unknown field is explained, not ignored silently.
        await pilot.press("slash")
        await type_text(pilot, "colour:blue")
        await pilot.press("enter")
        assert any("unknown field 'colour'" in m for m in notifications(c.app))
        # So is a checkpoint word that names no state (it showed an empty table).
        await pilot.press("slash", "ctrl+a", "ctrl+k")
        await type_text(pilot, "ckpt:bogus")
        await pilot.press("enter")
        assert any("invalid checkpoint state 'bogus'" in m for m in notifications(c.app))


async def test_sort_by_column_key_and_header_click(console: Any) -> None:
    c = console(n_jobs=30)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        ids = [int(k) for k in con.jobs_table.row_keys_in_order]
        assert ids == sorted(ids)
        selected = con.jobs_table.selected_key
        await pilot.press("s")  # next column: user
        users = [c.app.job(int(k)).job.user for k in con.jobs_table.row_keys_in_order]  # type: ignore[union-attr]
        assert users == sorted(users)
        assert con.jobs_table.selected_key == selected  # the cursor follows its job
        await pilot.press("S")
        users = [c.app.job(int(k)).job.user for k in con.jobs_table.row_keys_in_order]  # type: ignore[union-attr]
        assert users == sorted(users, reverse=True)
        assert "sort user↓" in screen_text(c.app)
        await pilot.click("#jobs", offset=(56, 0))  # the "Elapsed" header
        assert con.sort_column == "elapsed"


async def test_mine_only_and_show_finished_toggles(console: Any) -> None:
    c = console(n_jobs=40)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        everyone = set(con.jobs_table.row_keys_in_order)
        await pilot.press("m")
        mine = con.jobs_table.row_keys_in_order
        assert mine and all(c.app.job(int(k)).job.user == ME for k in mine)  # type: ignore[union-attr]
        assert set(mine) < everyone
        await pilot.press("m")
        assert set(con.jobs_table.row_keys_in_order) == everyone
        finished = {str(j.job.job_id) for j in c.facade.snapshot().jobs if j.job.state.is_finished}
        assert finished - everyone  # some old finished jobs are hidden
        await pilot.press("f")
        assert finished <= set(con.jobs_table.row_keys_in_order)
        assert "+finished" in screen_text(c.app)


async def test_finished_jobs_linger_before_vanishing(console: Any) -> None:
    c = console()
    job_id = submit_mine(c.cluster, "short-lived")
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        assert str(job_id) in con.jobs_table.row_keys_in_order
        c.cluster.control.set_job_state(job_id, JobState.COMPLETED)
        c.clock.advance(10)
        c.app.refresh_now()
        await settle(pilot)
        assert str(job_id) in con.jobs_table.row_keys_in_order  # still there, now CD
        assert con.jobs_table.cells_of(str(job_id))["state"].plain == "CD"  # type: ignore[index]
        c.clock.advance(400)
        c.app.refresh_now()
        await settle(pilot)
        assert str(job_id) not in con.jobs_table.row_keys_in_order


# ------------------------------------------------------------------ detail, single-step


async def test_enter_opens_step_detail_with_processes_and_escape_returns(console: Any) -> None:
    async with at_my_step(console) as (c, pilot, step):
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, StepScreen)
        text = screen_text(c.app)
        procs = c.facade.step_processes(step)
        net = c.facade.interconnect(step)
        assert f"Step              {step}" in text
        for node in procs.nodes:
            assert node.node in text and str(node.pids[0]) in text
        assert net.switch_type in text
        # Actions work from the detail too.
        await pilot.press("d")
        await settle(pilot)
        assert c.cluster.step_state(step).disable_count == 1
        assert f"{'Checkpoint':<18}disabled" in screen_text(c.app)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ConsoleScreen)
        assert console_of(pilot).selected_target() == step


async def test_single_step_mode_opens_on_the_step_and_escape_leads_to_console(
    console: Any,
) -> None:
    c = console()
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    # The step exists only once the cluster does: build the app for it with the factory.
    app = build_app(c.facade, c.app.settings, focus=step, clock=c.clock)
    async with run_test(app, size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, StepScreen)
        text = screen_text(app)  # type: ignore[arg-type]
        assert f"Step              {step}" in text and "ui-test" in text
        await pilot.press("e")  # enable at 0 stays 0 (and is allowed)
        await settle(pilot)
        assert c.cluster.step_state(step).disable_count == 0
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ConsoleScreen)
        assert app.screen.selected_target() == step


async def test_opened_on_a_job_the_cursor_starts_on_it(console: Any) -> None:
    """``sckpt JOB``: the first data shown puts the jobs cursor on JOB, not the first row."""
    c = console()
    job_id = submit_mine(c.cluster)  # the newest job: the last row, not the first
    app = build_app(c.facade, c.app.settings, focus=StepId(job_id), clock=c.clock)
    async with run_test(app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.pause()
        assert isinstance(app.screen, ConsoleScreen)
        assert app.screen.jobs_table.row_count > 1
        assert app.screen.selected_target() == StepId(job_id)


# ------------------------------------------------------------------ help, palette, keys, quit


async def test_help_lists_every_key(console: Any) -> None:
    c = console()
    async with run_test(c.app, size=(120, 50)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)
        text = screen_text(c.app)
        for words in (
            "checkpoint the selected step",
            "checkpoint, end the job; r restarts it",
            "restart the selected job",
            "enable checkpoints",
            "disable checkpoints",
            "ask Slurm again",
            "filter jobs",
            "sort by the next column",
            "change automatic checkpoints",
            "only my jobs",
            "finished jobs, from accounting too",
            "quit the console",
            "search every action",
        ):
            assert words in text, words
        await pilot.press("escape")
        assert isinstance(pilot.app.screen, ConsoleScreen)


async def test_keys_are_remappable_from_settings(console: Any) -> None:
    c = console(keys={"disable": "k"})
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_step(pilot, "ui-test", step)
        await pilot.press("d")  # no longer bound
        await settle(pilot)
        assert c.cluster.step_state(step).disable_count == 0
        await pilot.press("k")
        await settle(pilot)
        assert c.cluster.step_state(step).disable_count == 1
        assert "k Disable" in screen_text(c.app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert re.search(r"\bk\s+disable\s+disable checkpoints", screen_text(c.app))


async def test_every_action_is_in_the_command_palette(console: Any) -> None:
    async with at_my_step(console) as (c, pilot, step):
        await pilot.press("ctrl+p")
        await pilot.pause()
        await type_text(pilot, "disable")
        await wait_until(pilot, lambda: "Disable" in screen_text(c.app))  # the palette's worker
        text = screen_text(c.app)
        assert "Disable" in text
        await pilot.press("enter")
        await settle(pilot)
        assert c.cluster.step_state(step).disable_count == 1

        provider = ActionsProvider(c.app.screen)
        names = [hit.text async for hit in provider.discover()]
        for name in ("Create", "Vacate", "Restart", "Enable", "Disable", "Check", "Filter", "Sort"):
            assert name in names


async def test_q_quits_cleanly(console: Any) -> None:
    c = console()
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
    assert c.app.return_code == 0
    assert not any(w.is_running for w in c.app.workers)


async def test_ctrl_c_quits_with_status_130(console: Any) -> None:
    c = console()
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert c.app.return_code == 130
    assert not any(w.is_running for w in c.app.workers)


# ------------------------------------------------------------------ read-only


async def test_read_only_hides_actions_and_says_so(console: Any) -> None:
    c = console(read_only=True)
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    async with run_test(c.app, size=(160, 40)) as pilot:
        await settle(pilot)
        text = screen_text(c.app)
        assert "READ-ONLY" in text
        footer = " ".join(screen_text(c.app).splitlines()[-1:])
        for word in ("Create", "Vacate", "Restart", "Enable", "Disable"):
            assert word not in footer
        assert "Check" in footer and "Filter" in footer
        await go_to_step(pilot, "ui-test", step)
        for key in ("c", "v", "r", "e", "d"):
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(pilot.app.screen, ConsoleScreen)  # no form opened
        assert sum("read-only" in m for m in notifications(c.app)) >= 1
        assert c.cluster.step_state(step).disable_count == 0
        # The check key still works (able/error are not mutating).
        await pilot.press("x")
        await settle(pilot)
        assert any(f"{step}: able: yes" in m for m in notifications(c.app))
        # Help and palette leave the mutating actions out.
        await pilot.press("question_mark")
        await pilot.pause()
        help_text = screen_text(c.app)
        assert "disable checkpoints" not in help_text and "READ-ONLY" in help_text
        await pilot.press("escape")
        provider = ActionsProvider(c.app.screen)
        names = [hit.text async for hit in provider.discover()]
        assert "Check" in names
        assert not {"Create", "Vacate", "Restart", "Enable", "Disable"} & set(names)


async def test_elapsed_column_moves_with_the_clock(console: Any) -> None:
    c = console()
    job_id = submit_mine(c.cluster, "ticking")
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        before = con.jobs_table.cells_of(str(job_id))
        assert before is not None and before["elapsed"].plain == "0s"
        c.clock.advance(125)
        c.app.refresh_now()
        await settle(pilot)
        after = con.jobs_table.cells_of(str(job_id))
        assert after is not None and after["elapsed"].plain == "2m"


async def test_p_in_the_step_screen_says_what_it_reloaded(console: Any) -> None:
    """``p`` reloaded the processes without a word: the same pids came back, so it looked
    as if nothing happened."""
    c = console()
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    app = build_app(c.facade, c.app.settings, focus=step, clock=c.clock)
    async with run_test(app, size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, StepScreen)
        before = list(notifications(app))
        await pilot.press("p")
        await settle(pilot)
        said = [m for m in notifications(app) if m not in before]
        procs = c.facade.step_processes(step)
        count = sum(len(node.pids) for node in procs.nodes)
        assert f"step {step}: loading its processes…" in said
        assert any(
            m.startswith(f"step {step}: {count} process") and m.endswith("reloaded") for m in said
        ), said


async def test_after_a_sort_the_cursors_row_is_on_screen(console: Any) -> None:
    """The cursor followed its job to its new place, off-screen, while the steps pane
    showed that job's steps: nothing on screen said which row they belonged to."""
    c = console(n_jobs=60)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        table = con.jobs_table
        table.focus()
        await pilot.press("home")
        order = table.row_keys_in_order
        # the job sorted last by user reverse (the first row now): it moves far down
        chosen = min(order, key=lambda k: (c.app.job(int(k)).job.user, int(k)))  # type: ignore[union-attr]
        table.select_key(chosen)
        await pilot.pause()
        for _ in range(3):
            await pilot.press("S")  # sort by the next column, reversed
            await pilot.pause()
            assert table.selected_key == chosen
            rows = [line.split() for line in screen_text(c.app).splitlines()]
            assert any(row[:1] == [chosen] for row in rows), table.row_keys_in_order.index(chosen)
