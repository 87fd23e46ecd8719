"""The step detail shows the job's ``sbatch --comment``, and its times relative and absolute
with the zone (simulated cluster).

Sites put the project, a ticket or "ask me before cancelling" in the comment: the operator
reads it where the actions are.  Hostile comments on a real job are in
tests/reliability/test_security_display.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from sckpt.backend.model import (
    CheckpointKind,
    CheckpointState,
    JobState,
    Step,
    StepId,
    StepView,
)
from sckpt.tui.screens.step import StepScreen
from sckpt.tui.widgets.step_detail import StepDetail

from .conftest import ME, Console, screen_text, settle, submit_mine


def _comment_lines(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines()]
    return [line.split(None, 1)[1] for line in lines if line.startswith("Comment ")]


async def test_step_detail_shows_the_job_comment_or_none(console: Callable[..., Console]) -> None:
    c = console(n_jobs=0)
    noted = c.cluster.control.submit(
        ME, name="noted", state=JobState.RUNNING, comment="ticket #42 [b]x[/b]"
    ).job_id
    plain = c.cluster.control.submit(ME, name="plain", state=JobState.RUNNING).job_id
    async with c.app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        shown = []
        for job_id in (noted, plain):
            c.app.open_step(StepId(job_id, 0))
            await settle(pilot)
            assert isinstance(c.app.screen, StepScreen)
            shown.append(_comment_lines(screen_text(c.app)))
            await pilot.press("escape")
            await settle(pilot)
    assert shown == [["ticket #42 [b]x[/b]"], ["(none)"]]


def test_one_demo_job_in_three_has_a_comment(console: Callable[..., Console]) -> None:
    c = console(n_jobs=48, seed=42)
    comments = [view.job.comment for view in c.facade.snapshot().jobs]
    assert 10 <= sum(1 for text in comments if text) <= 20


async def test_detail_times_are_relative_and_absolute_with_the_zone(
    console: Callable[..., Console],
) -> None:
    c = console()
    job_id = submit_mine(c.cluster, name="timed")
    step = next(
        v.step.step_id
        for j in c.cluster.snapshot().jobs
        if j.job.job_id == job_id
        for v in j.steps
        if v.step.step_id.step_text.isdigit()
    )
    c.cluster.control.script_checkpoint(step, duration=5)
    c.clock.advance(12 * 60)
    async with c.app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        c.app.open_step(step)
        await settle(pilot)
        view = c.app.job(job_id)
        assert view is not None
        start = next(v.step.start_time for v in view.steps if v.step.step_id == step)
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(start))
        minutes = int(c.clock() - start) // 60
        assert _line(c, "Started") == f"{minutes} min ago ({started} UTC)"
        await pilot.press("c", "enter")
        await settle(pilot)
        began = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(c.clock()))
        assert _line(c, "Checkpoint") == f"in progress, began 0 s ago ({began} UTC)"
        # The relative part moves with the clock, with no refresh in between.
        c.clock.advance(3)
        pilot.app.screen.tick_headers()  # type: ignore[attr-defined]
        await pilot.pause()
        assert _line(c, "Checkpoint") == f"in progress, began 3 s ago ({began} UTC)"
        c.cluster.control.advance(10)
        c.app.refresh_now()
        await settle(pilot)
        assert _line(c, "Requested here").startswith("create: completed, seen 0 s ago (")
        assert _line(c, "Requested here").endswith(" UTC)")


def _line(c: Console, label: str) -> str:
    """The detail's line for ``label``, without the label."""
    for line in screen_text(c.app).splitlines():
        if line.strip().startswith(label + " "):
            return line.strip().removeprefix(label).strip()
    raise AssertionError(f"no {label!r} line:\n{screen_text(c.app)}")


def _listed(detail: StepDetail, label: str) -> list[str]:
    """The values of a many-line detail entry: its first line's, then those under it."""
    lines = [line.rstrip() for line in detail.render_detail(time.time()).plain.splitlines()]
    first = next(i for i, line in enumerate(lines) if line.startswith(f"{label:<18}"))
    values = [lines[first][18:]]
    for line in lines[first + 1 :]:
        if not line.startswith(" " * 18):
            break
        values.append(line[18:])
    return values


NOTES = (
    "task 0: resumed from generation 3 (/w/7.sim/task0/g3)",
    "task 1: started fresh: its last image /w/7.sim/task1/g3 does not exist",
    *(f"task {n}: resumed from generation 3 (/w/7.sim/task{n}/g3)" for n in range(2, 6)),
)
NOT_RESTORED = tuple(
    f"task {n} pid {40 + n} (app): TCP 10.0.0.5:4001{n} -> 10.0.0.9:389" for n in range(6)
)


@pytest.mark.parametrize(
    ("label", "field", "items", "more"),
    [
        ("Tasks started", "start_notes", NOTES, "… 2 more tasks"),
        ("Not restored", "outside", NOT_RESTORED, "… 2 more"),
    ],
)
def test_many_line_entries_show_four_then_a_count(
    label: str, field: str, items: tuple[str, ...], more: str
) -> None:
    """Tasks started: which generation each task resumed from, or that it started from zero
    and why (issue 25).  Not restored: each task's connections DMTCP leaves dead at restart
    (``peers.py``).  Past four, a count of the rest; no line when there are none."""
    step = Step(StepId(7, 0), "sim", "alice", 1001, "debug", "RUNNING", num_tasks=6)
    detail = StepDetail()
    detail.view = StepView(step, CheckpointState(CheckpointKind.ABLE, **{field: items}))
    assert _listed(detail, label) == [*items[:4], more]
    detail.view = StepView(step, CheckpointState(CheckpointKind.ABLE))
    assert label not in detail.render_detail(time.time()).plain


async def test_the_detail_says_unknown_and_why_and_claims_no_never(
    console: Callable[..., Console],
) -> None:
    """Another user's step read "Last error none" beside a ``?`` nothing explained (the
    command line says ``unknown``), and "Last checkpoint never" followed a completed
    create on an engine that does not report the time."""
    c = console(n_jobs=0)
    theirs = c.cluster.control.submit("bob", name="bobs", state=JobState.RUNNING).job_id
    mine = submit_mine(c.cluster)
    c.cluster.control.script_checkpoint(StepId(mine, 0), 5.0)
    async with c.app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        c.app.open_step(StepId(theirs, 0))
        await settle(pilot)
        assert _line(c, "Checkpoint") == "unknown"
        assert _line(c, "Why unknown") == (
            "not asked: the controller answers only bob (the owner) or root"
        )
        assert _line(c, "Last error") == "unknown"
        assert _line(c, "Last checkpoint") == "unknown"
        await pilot.press("escape")
        await settle(pilot)
        c.app.open_step(StepId(mine, 0))
        await settle(pilot)
        assert _line(c, "Last checkpoint").startswith("not reported")
        await pilot.press("c", "enter")  # the form as prefilled
        await settle(pilot)
        c.clock.advance(30)
        c.app.refresh_now()
        await settle(pilot)
        last = _line(c, "Last checkpoint")
        assert last.startswith("create completed, seen "), last


async def test_the_detail_shows_the_jobs_time_left_and_scheduling(
    console: Callable[..., Console],
) -> None:
    """An operator looked for the job's record beside its steps: its time left before the
    limit (squeue's %L), priority, QOS, reason and working directory."""
    c = console(n_jobs=0)
    job_id = c.cluster.control.submit(ME, name="md", state=JobState.RUNNING, duration=3600).job_id
    c.clock.advance(1500)
    async with c.app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        c.app.open_step(StepId(job_id, 0))
        await settle(pilot)
        assert _line(c, "Job time") == "ran 25m of 1h00m, 35m left"
        job = c.cluster.job(job_id)
        assert _line(c, "Scheduling") == f"priority {job.priority}, QOS normal"
        assert _line(c, "Work dir") == job.work_dir
