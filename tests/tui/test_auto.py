"""The console and automatic checkpoints (issue 32, items 5 and 6): the step detail shows a
step's policy, when its next checkpoint is due (moving with the clock), its last image's
size and duration, the job's restarts and each history line's cause; ``a`` opens the policy
form and changes it through the facade (audited; refused in read-only mode); the checkpoint
column marks such a step with one character.  On the demo's cluster, whose steps under
``sckpt run`` have policies."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

from sckpt.backend.model import (
    AutoCheckpoints,
    CheckpointEvent,
    CheckpointKind,
    CheckpointState,
    Job,
    JobState,
    JobView,
    Step,
    StepId,
    StepView,
)
from sckpt.tui.console_text import checkpoint_text
from sckpt.tui.dialogs.policy_form import PolicyForm
from sckpt.tui.screens.step import StepScreen
from sckpt.tui.widgets.step_detail import StepDetail
from textual.widgets import Checkbox, Input, Static

from .conftest import ME, Console, notifications, run_test, screen_text, settle
from .console_keys import console_of, go_to_job


def _policy_step(c: Console) -> StepId:
    """One of the acting user's demo steps under a policy with an interval."""
    for job in c.facade.snapshot().jobs:
        for view in job.steps:
            auto = view.checkpoint.auto
            if view.step.user == ME and auto is not None and auto.every:
                return view.step.step_id
    raise AssertionError("no step of alice's runs under an interval policy in the demo")


def _line(c: Console, label: str) -> str:
    for line in screen_text(c.app).splitlines():
        if line.strip().startswith(label + " "):
            return line.strip().removeprefix(label).strip()
    raise AssertionError(f"no {label!r} line:\n{screen_text(c.app)}")


def _auto(c: Console, sid: StepId) -> AutoCheckpoints | None:
    job = c.facade.snapshot().jobs
    return next(v.checkpoint.auto for j in job for v in j.steps if v.step.step_id == sid)


async def test_a_opens_the_policy_form_and_changes_the_policy(
    console: Callable[..., Console],
) -> None:
    c = console(n_jobs=40, demo_touches=True)
    sid = _policy_step(c)
    async with run_test(c.app, size=(100, 40)) as pilot:
        await settle(pilot)
        c.app.open_step(sid)
        await settle(pilot)
        assert isinstance(c.app.screen, StepScreen)
        assert _line(c, "Automatic").startswith("every ")
        await pilot.press("a")
        await settle(pilot)
        form = c.app.screen
        assert isinstance(form, PolicyForm)
        assert str(form.query_one("#policy-now", Static).render()).startswith("Now: every ")
        # A mistake is said in the form, which stays open.
        form.query_one("#every", Input).value = "5s"
        await pilot.press("enter")
        await settle(pilot)
        assert c.app.screen is form
        assert "at least 10s" in str(form.query_one("#form-error", Static).render())
        form.query_one("#every", Input).value = "20m"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(c.app.screen, StepScreen)
        now = int(c.clock())
        auto = _auto(c, sid)
        assert auto is not None and (auto.every, auto.next_due, auto.set_by) == (
            1200,
            now + 1200,
            ME,
        )
        assert any(n.startswith(f"auto {sid}: requested: every 20m") for n in notifications(c.app))
        c.app.refresh_now()
        await settle(pilot)
        assert _line(c, "Automatic").startswith("every 20m")
        assert _line(c, "Automatic").endswith(f"(set by {ME})")
        assert _line(c, "Next checkpoint").startswith("in 20 min (")
        # Off, with the checkbox alone.
        await pilot.press("a")
        await settle(pilot)
        c.app.screen.query_one("#off", Checkbox).value = True
        await pilot.click("#ok")
        await settle(pilot)
    assert _auto(c, sid) is None
    lines = [json.loads(x) for x in c.audit.read_text().splitlines()]
    assert [(x["operation"], x["target"]) for x in lines] == [("auto", str(sid))] * 2
    assert lines[0]["arguments"] == {"every": 1200, "before_end": None, "off": False}
    assert lines[1]["arguments"] == {"every": None, "before_end": None, "off": True}


async def test_read_only_a_says_so_and_opens_no_form(console: Callable[..., Console]) -> None:
    c = console(n_jobs=40, demo_touches=True, read_only=True)
    sid = _policy_step(c)
    async with run_test(c.app, size=(100, 40)) as pilot:
        await settle(pilot)
        c.app.open_step(sid)
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(c.app.screen, StepScreen)
        assert any("read-only: auto is not allowed" in n for n in notifications(c.app))
    assert not c.audit.exists() or not c.audit.read_text()


async def test_the_demos_next_checkpoint_moves_and_its_interval_lines_say_so(
    console: Callable[..., Console],
) -> None:
    c = console(n_jobs=40, demo_touches=True)
    sid = _policy_step(c)
    auto = _auto(c, sid)
    assert auto is not None
    async with run_test(c.app, size=(100, 40)) as pilot:
        await settle(pilot)
        c.app.open_step(sid)
        await settle(pilot)
        first = _line(c, "Next checkpoint")
        assert first.startswith("in ")
        c.cluster.control.advance(auto.next_due - c.clock() + 60)
        c.app.refresh_now()
        await settle(pilot)
        moved = _line(c, "Next checkpoint")
        assert moved != first and moved.startswith("in ")
        # The interval checkpoint was taken by itself (the demo's history is `sckpt history`'s)
        assert re.match(r"[0-9]+ s ago \(", _line(c, "Last checkpoint"))


def test_the_detail_shows_the_policy_the_restarts_and_the_chains_end() -> None:
    now = float(int(time.time()))
    auto = AutoCheckpoints(
        every=1800,
        before_end=600,
        max_restarts=10,
        next_due=int(now) + 300,
        end_time=int(now) + 3600,
        chain_end="3 restarts reached (--max-restarts 3)",
        set_by="sckpt run",
    )
    state = CheckpointState(
        CheckpointKind.ABLE,
        image_bytes=300_000_000,
        checkpoint_seconds=4.5,
        auto=auto,
        history=(CheckpointEvent(int(now) - 60, "create", "sckpt run", 0, cause="before end"),),
    )
    step = Step(StepId(7, 0), "sim", "alice", 1001, "debug", "RUNNING", num_tasks=1)
    job = Job(7, "sim", "alice", 1001, "debug", JobState.RUNNING, restart_count=2)
    detail = StepDetail()
    detail.job = JobView(job, (StepView(step, state),))
    detail.view = StepView(step, state)
    lines = [line.rstrip() for line in detail.render_detail(now).plain.splitlines()]
    words = "every 30m, before end 10m (at most 10 restarts)"  # sckpt run's own: no "set by"
    assert f"{'Automatic':<18}{words}" in lines
    assert any(line.startswith(f"{'Next checkpoint':<18}in 5 min (") for line in lines)
    assert any(line.startswith(f"{'Job ends':<18}in 1 h 00 min (") for line in lines)
    assert f"{'Restarts':<18}2" in lines
    assert f"{'Chain ended':<18}3 restarts reached (--max-restarts 3)" in lines
    assert f"{'Last image':<18}300.0 MB, took 4.5 s" in lines
    assert any("create   (before end) by sckpt run" in line for line in lines)
    later = detail.render_detail(now + 120).plain
    assert f"{'Next checkpoint':<18}in 3 min (" in later


def test_the_column_marks_a_step_under_a_policy_with_one_character() -> None:
    plain = CheckpointState(CheckpointKind.ABLE, checkpointer="transparent (DMTCP 4.2.0)")
    policed = CheckpointState(
        CheckpointKind.ABLE,
        checkpointer="transparent (DMTCP 4.2.0)",
        auto=AutoCheckpoints(every=1800),
    )
    off = CheckpointState(CheckpointKind.ABLE, auto=AutoCheckpoints(chain_end="done"))
    assert checkpoint_text(plain, 0).plain == "able, transparent (DMTCP 4.2.0)"
    assert checkpoint_text(policed, 0).plain == "able ⟳, transparent (DMTCP 4.2.0)"
    assert checkpoint_text(off, 0).plain == "able"


async def test_a_on_a_job_row_changes_each_of_its_steps_policies(
    console: Callable[..., Console],
) -> None:
    """The jobs table's row is the whole job: ``a`` changes each of its steps under ``sckpt
    run``, as ``sckpt auto JOB`` does."""
    c = console(n_jobs=40, demo_touches=True)
    job = next(
        j
        for j in c.facade.snapshot().jobs
        if j.job.user == ME and any(v.checkpoint.auto is not None for v in j.steps)
    )
    steps = [v.step.step_id for v in job.steps if v.checkpoint.auto is not None]
    async with run_test(c.app, size=(100, 40)) as pilot:
        await settle(pilot)
        await go_to_job(pilot, job.job.name)
        console_of(pilot).jobs_table.select_key(str(job.job.job_id))  # names repeat
        await pilot.pause()
        assert console_of(pilot).selected_target() == StepId(job.job.job_id)
        await pilot.press("a")
        await settle(pilot)
        form = c.app.screen
        assert isinstance(form, PolicyForm) and form.target == str(job.job.job_id)
        assert form.now  # the policy its steps share, or that they differ
        form.query_one("#before-end", Input).value = "20m"
        await pilot.press("enter")
        await settle(pilot)
    for sid in steps:
        auto = _auto(c, sid)
        assert auto is not None and auto.before_end == 1200 and auto.set_by == ME
