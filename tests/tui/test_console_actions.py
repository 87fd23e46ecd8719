"""Pilot tests of the console's actions on the simulated cluster: enable and disable,
create's form and its outcome, vacate's confirmation, restart, refusals with Slurm's error,
whole-job actions and the check key.

Each test asserts on what the screen shows and on the cluster's state after the action.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sckpt.backend.errors import describe
from sckpt.backend.model import CheckpointKind, JobState, StepId
from sckpt.tui import reports
from sckpt.tui.app import build_app
from sckpt.tui.dialogs.confirm import Confirm
from sckpt.tui.dialogs.form import ActionForm
from sckpt.tui.screens.console import ConsoleScreen
from sckpt.tui.screens.step import StepScreen
from textual.widgets import Input

from .conftest import ME, notifications, run_test, screen_text, settle, submit_mine
from .console_keys import SIZE, at_my_step, console_of, first_numbered, go_to_job, go_to_step

# ------------------------------------------------------------------ actions


async def test_disable_then_enable_a_step(console: Any) -> None:
    async with at_my_step(console) as (c, pilot, step):
        await pilot.press("d")
        await settle(pilot)
        assert c.cluster.step_state(step).kind is CheckpointKind.DISABLED
        assert c.cluster.step_state(step).disable_count == 1
        con = console_of(pilot)
        assert con.steps_table.cells_of(str(step))["checkpoint"].plain == "disabled"  # type: ignore[index]
        assert any(f"disable {step}: requested" in m for m in notifications(c.app))
        await pilot.press("d")
        await settle(pilot)
        assert c.cluster.step_state(step).disable_count == 2
        await pilot.press("e", "e")
        await settle(pilot)
        assert c.cluster.step_state(step).kind is CheckpointKind.ABLE
        assert con.steps_table.cells_of(str(step))["checkpoint"].plain == "able"  # type: ignore[index]
        assert con.selected_target() == step  # the cursor stayed on the step
        lines = [json.loads(line) for line in c.audit.read_text().splitlines()]
        assert [line.get("operation", line.get("op")) for line in lines][-4:] == [
            "disable",
            "disable",
            "enable",
            "enable",
        ]


async def test_create_opens_a_prefilled_form_then_checkpoints(console: Any) -> None:
    c = console()
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_step(pilot, "ui-test", step)
        await pilot.press("c")
        await pilot.pause()
        form = pilot.app.screen
        assert isinstance(form, ActionForm)
        assert form.query_one("#max-wait", Input).value == "30"  # from the settings
        text = screen_text(c.app)
        assert f"Create {step}" in text
        # Bad input is explained in the form and nothing reaches the cluster.
        image = form.query_one("#image-dir", Input)
        image.value = "relative/dir"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ActionForm)
        assert "relative" in screen_text(c.app)
        image.value = "/scratch/ckpt"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ConsoleScreen)
        state = c.cluster.step_state(step)
        assert state.kind is CheckpointKind.IN_PROGRESS
        assert state.in_progress_since == int(c.clock())
        con = console_of(pilot)
        assert con.steps_table.cells_of(str(step))["checkpoint"].plain.startswith(
            "in progress 0s since"
        )  # type: ignore[index]
        # progress.py's words: the toast says what is known (requested), the job's
        # summary counts the step as in progress.
        assert any(f"create {step}: requested" in m for m in notifications(c.app))
        summary = con.jobs_table.cells_of(str(job_id))["checkpoint"].plain  # type: ignore[index]
        assert "1 in progress" in summary and "busy" not in summary
        # A second create while one runs: EALREADY, shown as a notification.
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert any("EALREADY (114)" in m and "refused" in m for m in notifications(c.app))


@pytest.mark.parametrize(("code", "word"), [(0, "completed"), (28, "failed (28)")])
async def test_the_outcome_of_a_requested_checkpoint_is_toasted(
    console: Any, code: int, word: str
) -> None:
    c = console()
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    c.cluster.control.script_checkpoint(step, duration=5, code=code)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_step(pilot, "ui-test", step)
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert any(f"create {step}: requested" in m for m in notifications(c.app))
        assert not any(f"create {step}: {word}" in m for m in notifications(c.app))
        c.cluster.control.advance(6)
        c.app.refresh_now()
        await settle(pilot)
        assert any(m == f"create {step}: {word}" for m in notifications(c.app))
        # Said once: the next refreshes do not repeat it.
        c.cluster.control.advance(1)
        c.app.refresh_now()
        await settle(pilot)
        assert sum(m == f"create {step}: {word}" for m in notifications(c.app)) == 1
        # The row keeps saying it (not only the toast), until the step's state changes.
        con = console_of(pilot)
        assert con.steps_table.cells_of(str(step))["checkpoint"].plain == word  # type: ignore[index]
        await pilot.press("d")  # disable: a change
        await settle(pilot)
        cell = con.steps_table.cells_of(str(step))["checkpoint"].plain  # type: ignore[index]
        assert cell.startswith("disabled"), cell


async def test_the_rows_checkpoint_time_counts_up_while_in_progress(console: Any) -> None:
    c = console()
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    c.cluster.control.script_checkpoint(step, duration=600)
    async with run_test(c.app, size=(80, 24)) as pilot:
        await settle(pilot)
        await go_to_step(pilot, "ui-test", step)
        await pilot.press("c", "enter")
        await settle(pilot)
        con = console_of(pilot)

        def row() -> str:
            line = next(x for x in screen_text(c.app).splitlines() if f" {step} " in x)
            return line

        assert "in progress 0s" in row()
        # No refresh between (an hour's interval): the console's own second tick.
        for seconds, shown in ((5, "5s"), (70, "1m15s")):
            c.clock.advance(seconds)
            con.tick_headers()
            await pilot.pause()
            assert f"in progress {shown}" in row(), row()


async def test_create_form_escape_cancels(console: Any) -> None:
    async with at_my_step(console) as (c, pilot, step):
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ConsoleScreen)
        assert c.cluster.step_state(step).kind is CheckpointKind.ABLE


async def test_vacate_asks_for_confirmation_naming_the_target(console: Any) -> None:
    c = console()
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_step(pilot, "ui-test", step)
        await pilot.press("v")
        await pilot.pause()
        await pilot.press("enter")  # form accepted as prefilled
        await pilot.pause()
        assert isinstance(pilot.app.screen, Confirm)
        text = screen_text(c.app)
        assert f"Vacate step {step} (ui-test)" in text and "until r restarts it" in text
        await pilot.press("n")
        await settle(pilot)
        assert c.cluster.step_state(step).kind is CheckpointKind.ABLE
        assert any("not done (answered No)" in m for m in notifications(c.app))
        await pilot.press("v")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert c.cluster.step_state(step).kind is CheckpointKind.IN_PROGRESS
        # When the checkpoint ends, vacate terminates the step: it leaves the table.
        c.clock.advance(60)
        c.app.refresh_now()
        await settle(pilot)
        view = c.app.job(job_id)
        assert view is not None
        assert all(s.step.step_id != step for s in view.steps)
        assert str(step) not in console_of(pilot).steps_table.row_keys_in_order


async def test_restart_of_a_running_job_is_refused_at_once_with_slurms_error(
    console: Any,
) -> None:
    """``r`` on a running job took a form and a confirmation before Slurm's refusal: the
    data already says it is running, so the refusal comes at once, in Slurm's words."""
    c = console()
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_step(pilot, "ui-test", step)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ConsoleScreen)  # no form, no confirmation
        message = describe(2088)[1]
        assert any(
            m.startswith(f"restart {job_id} refused: ESLURM_JOB_NOT_FINISHED (2088)")
            and message in m
            and f"job {job_id} is running" in m
            for m in notifications(c.app)
        ), notifications(c.app)
        assert c.cluster.job(job_id).state is JobState.RUNNING
        assert not c.audit.exists() or "restart" not in c.audit.read_text()


async def test_refusal_on_someone_elses_job_names_the_slurm_error(console: Any) -> None:
    c = console()
    other = c.cluster.control.submit("bob", name="bobs-job", state=JobState.RUNNING, n_steps=1)
    step = first_numbered(c.cluster, other.job_id)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_step(pilot, "bobs-job", step)
        await pilot.press("d")
        await settle(pilot)
        assert any("ESLURM_ACCESS_DENIED (2002)" in m for m in notifications(c.app))
        assert c.cluster.step_state(step).disable_count == 0
        # v would have taken a form and a confirmation first: refused at once, saying whose.
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ConsoleScreen)
        assert any(
            m.startswith(f"vacate {step} refused: ESLURM_ACCESS_DENIED (2002)")
            and "belongs to bob" in m
            for m in notifications(c.app)
        )


async def test_whole_job_action_from_the_jobs_table(console: Any) -> None:
    c = console()
    job_id = submit_mine(c.cluster, n_steps=2)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_job(pilot, "ui-test")
        con = console_of(pilot)
        assert con.selected_target() == StepId(job_id)
        await pilot.press("d")
        await settle(pilot)
        view = c.app.job(job_id)
        assert view is not None
        running = [s for s in view.steps if s.step.state == "RUNNING"]
        assert running and all(s.checkpoint.kind is CheckpointKind.DISABLED for s in running)


async def test_check_key_asks_able_and_error_again(console: Any) -> None:
    async with at_my_step(console) as (c, pilot, step):
        c.cluster.disable(c.cluster.user(ME), step)  # changed behind the console's back
        await pilot.press("x")
        await settle(pilot)
        messages = notifications(c.app)
        assert any(f"{step}: able: no, ESLURM_DISABLED (2037)" in m for m in messages)
        cell = console_of(pilot).steps_table.cells_of(str(step))
        assert cell is not None and cell["checkpoint"].plain == "disabled"


async def test_restart_asks_about_the_job_not_every_running_step(console: Any) -> None:
    # A vacated job with 0 steps was asked "Restart job … every running step?": restart
    # resubmits the job itself.
    c = console()
    job_id = submit_mine(c.cluster)
    c.cluster.control.set_job_state(job_id, JobState.CANCELLED)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        console_of(pilot).select_target(StepId(job_id))
        await pilot.press("f")  # finished jobs too
        await settle(pilot)
        console_of(pilot).select_target(StepId(job_id))
        console_of(pilot).jobs_table.focus()
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ActionForm)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, Confirm)
        text = " ".join(screen_text(c.app).split())
        assert f"Restart job {job_id} (ui-test)?" in text
        assert "every running step" not in text
        await pilot.press("n")
        await settle(pilot)


async def test_help_says_enable_and_disable_act_at_once_and_undo_each_other(
    console: Any,
) -> None:
    # e and d act without a question while v, r and the job-control keys ask: by decision,
    # and the help says so.
    c = console()
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        text = " ".join(screen_text(c.app).split())
        assert "disable checkpoints (counter +1) at once; e undoes it" in text
        assert "enable checkpoints (counter -1) at once; d undoes it" in text


async def test_an_enable_that_leaves_the_step_disabled_says_so_and_why(console: Any) -> None:
    """``d d e`` left the row ``disabled`` and the toast said only "enable requested"."""
    c = console()
    job_id = submit_mine(c.cluster)
    step = first_numbered(c.cluster, job_id)
    app = build_app(c.facade, c.app.settings, focus=step, clock=c.clock)
    async with run_test(app, size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, StepScreen)
        for key in ("d", "d", "e"):
            await pilot.press(key)
            await settle(pilot)
        assert c.cluster.step_state(step).disable_count == 1
        said = [m for m in notifications(app) if "still disabled" in m]
        print(notifications(app))
        assert said == [
            f"enable {step}: still disabled: it was disabled more times than enabled "
            "(each d adds one to the counter, each e takes one off)"
        ]  # the native engine cannot read the counter; reports.still_disabled names it if so
        assert reports.still_disabled(step, (2,)).startswith(
            f"enable {step}: still disabled: its disable counter is 2; press e 2 more times"
        )
        await pilot.press("e")
        await settle(pilot)
        assert c.cluster.step_state(step).disable_count == 0
        assert len([m for m in notifications(app) if "still disabled" in m]) == 1
