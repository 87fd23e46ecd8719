"""Pilot tests of the job-control keys (K cancel, H hold, L release, Q requeue) on the
simulated cluster: each asks a confirmation naming the target, acts only on Yes, and the
job's state afterwards is the controller's; read-only hides the keys and refuses them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sckpt.backend.model import JobState, StepId
from sckpt.tui.commands import ActionsProvider
from sckpt.tui.dialogs.confirm import Confirm
from sckpt.tui.screens.console import ConsoleScreen

from .conftest import notifications, run_test, screen_text, settle, submit_mine
from .console_keys import SIZE, console_of, first_numbered, go_to_job, go_to_step


def audit_lines(c: Any) -> list[dict[str, Any]]:
    """The audit log the console wrote (the fixture's ``audit.log``)."""
    path = Path(c.audit)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_cancel_key_asks_naming_the_job_and_cancels_on_yes(console: Any) -> None:
    c = console()
    job_id = submit_mine(c.cluster, name="ui-cancel")
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_job(pilot, "ui-cancel")
        assert console_of(pilot).selected_target() == StepId(job_id)
        await pilot.press("K")
        await pilot.pause()
        assert isinstance(pilot.app.screen, Confirm)
        text = screen_text(c.app)
        assert f"Cancel job {job_id} (ui-cancel)?" in text and "scancel" in text
        await pilot.press("n")
        await settle(pilot)
        assert c.cluster.job(job_id).state is JobState.RUNNING
        assert any(f"cancel {job_id}: not done" in m for m in notifications(c.app))
        await pilot.press("K")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert c.cluster.job(job_id).state is JobState.CANCELLED
        assert any(f"cancel {job_id}: requested" in m for m in notifications(c.app))
    lines = [line for line in audit_lines(c) if line["operation"] == "cancel"]
    assert [(line["target"], line["result"]["name"]) for line in lines] == [
        (str(job_id), "SLURM_SUCCESS")
    ]


async def test_cancel_key_on_a_step_ends_only_that_step(console: Any) -> None:
    c = console()
    job_id = submit_mine(c.cluster, name="ui-step", n_steps=2)
    step = first_numbered(c.cluster, job_id)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_step(pilot, "ui-step", step)
        await pilot.press("K")
        await pilot.pause()
        assert f"Cancel step {step} (ui-step)?" in screen_text(c.app)
        await pilot.press("y")
        await settle(pilot)
    assert c.cluster.job(job_id).state is JobState.RUNNING
    steps = {
        s.step.step_id for v in c.cluster.snapshot().jobs if v.job.job_id == job_id for s in v.steps
    }
    assert step not in steps and steps


async def test_hold_release_requeue_keys_change_the_job_as_slurm_does(console: Any) -> None:
    c = console()
    job_id = submit_mine(c.cluster, name="ui-hold", n_steps=1)
    step = first_numbered(c.cluster, job_id)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        # From a step row, the verbs of a whole job act on its job, and say so.
        await go_to_step(pilot, "ui-hold", step)
        await pilot.press("Q")
        await pilot.pause()
        text = screen_text(c.app)
        assert f"Requeue job {job_id} (ui-hold)?" in text and "every running step" not in text
        await pilot.press("y")
        await settle(pilot)
        job = c.cluster.job(job_id)
        assert job.state is JobState.PENDING and not job.held
        await pilot.press("H")
        await pilot.pause()
        assert f"Hold job {job_id} (ui-hold)?" in screen_text(c.app)
        await pilot.press("y")
        await settle(pilot)
        job = c.cluster.job(job_id)
        # the acting user owns the job and is no operator: a user hold
        assert (job.state, job.held, job.state_reason) == (JobState.PENDING, True, "JobHeldUser")
        await pilot.press("L")
        await pilot.pause()
        assert f"Release job {job_id} (ui-hold)?" in screen_text(c.app)
        await pilot.press("y")
        await settle(pilot)
        assert not c.cluster.job(job_id).held
    done = [(x["operation"], x["target"], x["result"]["code"]) for x in audit_lines(c)]
    assert done == [(op, str(job_id), 0) for op in ("requeue", "hold", "release")]


async def test_refusal_names_the_slurm_error(console: Any) -> None:
    c = console()
    other = c.cluster.control.submit("bob", name="bobs-run", state=JobState.RUNNING, n_steps=1)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await go_to_job(pilot, "bobs-run")
        await pilot.press("K")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        shown = notifications(c.app)
        assert any(
            f"cancel {other.job_id} refused: ESLURM_ACCESS_DENIED (2002)" in m for m in shown
        ), shown
    assert c.cluster.job(other.job_id).state is JobState.RUNNING
    assert [x["result"]["name"] for x in audit_lines(c)] == ["ESLURM_ACCESS_DENIED"]


async def test_read_only_hides_the_job_keys_and_refuses_them(console: Any) -> None:
    c = console(read_only=True)
    job_id = submit_mine(c.cluster, name="ui-ro")
    async with run_test(c.app, size=(160, 40)) as pilot:
        await settle(pilot)
        footer = screen_text(c.app).splitlines()[-1]
        assert not {"Cancel", "Hold", "Release", "Requeue"} & set(footer.split())
        await go_to_job(pilot, "ui-ro")
        for key in ("K", "H", "L", "Q"):
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(pilot.app.screen, ConsoleScreen)  # no confirmation opened
        assert sum("read-only: " in m for m in notifications(c.app)) >= 1
        await pilot.press("question_mark")
        await pilot.pause()
        assert "K cancel" not in screen_text(c.app)
        await pilot.press("escape")
        names = [hit.text async for hit in ActionsProvider(c.app.screen).discover()]
        assert not {"Cancel", "Hold", "Release", "Requeue"} & set(names)
    assert c.cluster.job(job_id).state is JobState.RUNNING


async def test_help_and_palette_offer_the_job_keys(console: Any) -> None:
    c = console()
    async with run_test(c.app, size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        text = screen_text(c.app)
        # One line for the four (the help fits 80x24): each key by its verb's name.
        assert re.search(
            r"Job control, asks first:\s+K cancel\s+H hold\s+L release\s+Q requeue", text
        )
        await pilot.press("escape")
        names = [hit.text async for hit in ActionsProvider(c.app.screen).discover()]
        assert {"Cancel", "Hold", "Release", "Requeue"} <= set(names)
