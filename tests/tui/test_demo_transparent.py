"""The demo shows steps under ``sckpt run --transparent`` (issue 26): one running job in ten
runs its steps under DMTCP, and the console shows them as on a real cluster -- the column,
the step detail's checkpointer, last image (its size in humanize's words, how long it took)
and image directory -- and ``c`` on one records a new image generation.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import humanize
from sckpt.backend.model import StepId, StepView
from sckpt.tui.console_text import AUTO_MARK, checkpoint_text

from .conftest import ME, Console, screen_text, settle

LABEL = "transparent (DMTCP 4.2.0)"


def _transparent(c: Console) -> list[StepView]:
    return [
        view
        for job in c.facade.snapshot().jobs
        for view in job.steps
        if view.checkpoint.checkpointer
    ]


def _line(c: Console, label: str) -> str:
    """The detail's line for ``label``, without the label."""
    for line in screen_text(c.app).splitlines():
        if line.strip().startswith(label + " "):
            return line.strip().removeprefix(label).strip()
    raise AssertionError(f"no {label!r} line:\n{screen_text(c.app)}")


def _marked(c: Console) -> set[StepId]:
    """The steps the simulated controller launched under ``sckpt run --transparent``."""
    return {
        StepId(job.job.job_id, number)
        for job in c.cluster.snapshot().jobs
        for number in c.cluster.transparent_steps(job.job.job_id)
    }


def test_one_running_demo_job_in_ten_runs_transparent_steps(
    console: Callable[..., Console],
) -> None:
    c = console(n_jobs=200, seed=42, demo_touches=True)
    running = [j for j in c.cluster.snapshot().jobs if j.job.state.short == "R"]
    marked = _marked(c)
    assert 0.04 * len(running) <= len({s.job_id for s in marked}) <= 0.2 * len(running)
    assert all(s.step_text.isdigit() for s in marked)  # srun sckpt run --transparent
    # The same seed, the same choice.
    assert _marked(console(n_jobs=200, seed=42, demo_touches=True)) == marked
    # Without demo touches (the differential tests' cluster), no step is transparent.
    assert _marked(console(n_jobs=200, seed=42)) == set()
    # The console acts as ME: ME's transparent steps show as such, in the column's words
    # (the acting user has at least one such job); another user's steps, which the
    # controller does not answer for, show nothing more.
    c = console(n_jobs=48, seed=42, demo_touches=True)  # the default demo
    marked = _marked(c)
    shown = {v.step.step_id: v for v in _transparent(c)}
    mine = {
        v.step.step_id
        for j in c.facade.snapshot().jobs
        for v in j.steps
        if v.step.user == ME and v.step.step_id in marked
    }
    assert mine and set(shown) == mine
    for view in shown.values():
        assert view.checkpoint.checkpointer == LABEL
        # Every one of ME's runs under a policy in the demo (issue 32): the column marks it
        auto = view.checkpoint.auto
        assert auto is not None and auto.active
        assert checkpoint_text(view.checkpoint, c.clock()).plain == f"able{AUTO_MARK}, {LABEL}"


async def test_the_detail_of_a_transparent_demo_step_and_create_on_it(
    console: Callable[..., Console],
) -> None:
    c = console(n_jobs=48, seed=42, demo_touches=True)  # the default demo
    view = next(v for v in _transparent(c) if v.checkpoint.image_bytes and v.step.user == ME)
    step, ckpt = view.step.step_id, view.checkpoint
    gen = int(ckpt.image_dir.rsplit("/g", 1)[1])
    async with c.app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        c.app.open_step(step)
        await settle(pilot)
        assert _line(c, "Checkpoint") == f"able{AUTO_MARK}, {LABEL}"
        assert _line(c, "Checkpointer") == LABEL
        size = humanize.naturalsize(ckpt.image_bytes)
        assert _line(c, "Last image") == f"{size}, took {ckpt.checkpoint_seconds:.1f} s"
        assert re.fullmatch(rf".*/{step.job_id}\.[\w.-]+/task0/g{gen}", _line(c, "Image dir"))
        await pilot.press("c", "enter")
        await settle(pilot)
        assert _line(c, "Checkpoint").startswith("in progress")
        c.cluster.control.advance(60)  # every simulated checkpoint ends within 42 s
        c.app.refresh_now()
        await settle(pilot)
        assert _line(c, "Checkpoint") == f"able{AUTO_MARK}, {LABEL}"
        new_dir = ckpt.image_dir.removesuffix(f"g{gen}") + f"g{gen + 1}"
        assert _line(c, "Image dir") == new_dir
        after = next(v for v in _transparent(c) if v.step.step_id == step).checkpoint
        assert after.image_dir == new_dir
        assert after.last_checkpoint_time > ckpt.last_checkpoint_time
        assert after.image_bytes > 0 and after.checkpoint_seconds > 0
        took = f"{after.checkpoint_seconds:.1f} s"
        assert _line(c, "Last image") == f"{humanize.naturalsize(after.image_bytes)}, took {took}"
        # The controller's history (``sckpt history``) names the new generation too.
        events = c.cluster.checkpoint_events(step.job_id)
        assert [(e.event.operation, e.event.image_dir) for e in events if e.step_id == step][
            -2:
        ] == [("create", new_dir), ("done", new_dir)]
