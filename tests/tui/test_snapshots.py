"""SVG snapshots of the console at 80x24 and 160x50 (pytest-textual-snapshot).

Deterministic: the demo cluster with a fixed seed on a ``ManualClock``, no user config
(``SCKPT_CONFIG`` is an empty file), ``TZ=UTC``, no animations and no cursor blink, and a
refresh interval of an hour so no refresh happens while the picture is taken.
Update with ``pytest tests/tui/test_snapshots.py --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sckpt.backend.model import StepId
from sckpt.tui.app import SckptApp
from textual.pilot import Pilot

from .conftest import Console, settle

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 50), id="160x50")]


def demo(console: Callable[..., Console], **kwargs: Any) -> Console:
    """The demo cluster (seed 42, 48 jobs, every checkpoint state present)."""
    return console(n_jobs=48, seed=42, demo_touches=True, **kwargs)


def first_step_of_mine(c: Console, numbered: bool = True) -> StepId:
    for job in c.facade.snapshot().jobs:
        if job.job.user == "alice" and job.steps:
            for view in job.steps:
                if view.step.step_id.step_text.isdigit() or not numbered:
                    return view.step.step_id  # type: ignore[no-any-return]
    raise AssertionError("the demo has no running job of alice")


@pytest.mark.parametrize("size", SIZES)
def test_console(snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]) -> None:
    c = demo(console)
    assert snap_compare(c.app, terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES)
def test_console_read_only_filtered(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    c = demo(console, read_only=True)
    press = ["slash", *"user:alice", "enter", "enter"]
    assert snap_compare(c.app, terminal_size=size, run_before=settle, press=press)


@pytest.mark.parametrize("size", SIZES)
def test_step_detail(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    c = demo(console)
    step = first_step_of_mine(c)

    async def open_detail(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, SckptApp)
        app.open_step(step)
        await settle(pilot)

    assert snap_compare(c.app, terminal_size=size, run_before=open_detail)


@pytest.mark.parametrize("size", SIZES)
def test_vacate_form_and_confirmation(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    c = demo(console)
    step = first_step_of_mine(c)

    async def select(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, SckptApp)
        app.open_step(step)
        await settle(pilot)

    assert snap_compare(c.app, terminal_size=size, run_before=select, press=["v", "enter"])


@pytest.mark.parametrize("size", SIZES)
def test_help(snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]) -> None:
    c = demo(console)
    assert snap_compare(c.app, terminal_size=size, run_before=settle, press=["question_mark"])


@pytest.mark.parametrize("size", SIZES)
def test_missing_step(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    """``sckpt 999999.0``: the step is named as not found, no action is offered."""
    c = demo(console, focus=StepId(999999, 0))
    assert snap_compare(c.app, terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES)
def test_console_steps_focused(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    """The steps table focused, its cursor moved with End then Home (defect 10)."""
    c = demo(console)
    assert snap_compare(
        c.app, terminal_size=size, run_before=settle, press=["enter", "end", "home", "down"]
    )


def test_create_form(snap_compare: Any, console: Callable[..., Console]) -> None:
    c = demo(console)
    step = first_step_of_mine(c)

    async def select(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, SckptApp)
        app.open_step(step)
        await settle(pilot)

    assert snap_compare(c.app, terminal_size=(80, 24), run_before=select, press=["c"])


@pytest.mark.parametrize("size", SIZES)
def test_step_under_a_policy_and_its_form(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    """A demo step that checkpoints by itself (issue 32): at 80x24 the column keeps one
    character for it; ``a`` opens the policy form over the detail."""
    c = demo(console)
    step = next(
        v.step.step_id
        for j in c.facade.snapshot().jobs
        for v in j.steps
        if v.checkpoint.auto is not None and v.step.user == "alice"
    )

    async def select(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, SckptApp)
        app.open_step(step)
        await settle(pilot)

    assert snap_compare(c.app, terminal_size=size, run_before=select, press=["a"])


def test_step_detail_job_history(snap_compare: Any, console: Callable[..., Console]) -> None:
    """A job the demo requeued once and that then lost a node: three records, 80x24."""
    c = demo(console)
    job = next(j for j in c.facade.snapshot().jobs if j.job.restart_count == 2 and j.steps)
    step = next(v.step.step_id for v in job.steps if v.step.step_id.step_text.isdigit())

    async def open_detail(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, SckptApp)
        app.open_step(step)
        await settle(pilot)
        await pilot.press("end")  # the history is at the bottom of the detail

    assert snap_compare(c.app, terminal_size=(80, 24), run_before=open_detail)


def test_console_finished_from_accounting(
    snap_compare: Any, console: Callable[..., Console]
) -> None:
    """``f``: the finished jobs only accounting knows join the table (sorted by id: first)."""
    c = demo(console)
    assert snap_compare(c.app, terminal_size=(80, 24), run_before=settle, press=["f"])


OUTPUT_DIR = "/tmp/sckpt-snapshot-output"
"""A fixed path: it is on screen, so it cannot be a per-run temporary directory."""


def _alice_job_writing(c: Console) -> int:
    """Alice's first running job, writing 60 numbered lines (and a terminal escape) to a
    file under ``OUTPUT_DIR``."""
    import shutil
    from pathlib import Path

    job = next(v.job for v in c.facade.snapshot().jobs if v.job.user == "alice" and v.steps)
    directory = Path(OUTPUT_DIR)
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    out = directory / f"slurm-{job.job_id}.out"
    lines = [f"step {i:3d}: residual {1.0 / (i * i):.6f}" for i in range(1, 61)]
    out.write_text("\n".join(lines) + "\n\x1b[31mdone\x1b[0m\n")
    out.chmod(0o644)
    c.cluster.control.set_output_paths(job.job_id, str(out))
    return job.job_id


@pytest.mark.parametrize("size", SIZES)
def test_job_output(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    c = demo(console)
    job_id = _alice_job_writing(c)

    async def open_output(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, SckptApp)
        app.open_output(StepId(job_id))
        await settle(pilot)

    assert snap_compare(c.app, terminal_size=size, run_before=open_output)


@pytest.mark.parametrize("size", SIZES)
def test_marked_rows_and_their_confirmation(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    """Three rows marked (``*``), then hold's confirmation listing the three jobs."""
    c = demo(console)
    assert snap_compare(
        c.app,
        terminal_size=size,
        run_before=settle,
        press=["space", "down", "down", "space", "down", "space", "H"],
    )


@pytest.mark.parametrize("size", SIZES)
def test_marked_rows(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    c = demo(console)
    assert snap_compare(
        c.app, terminal_size=size, run_before=settle, press=["space", "down", "down", "space"]
    )


@pytest.mark.parametrize("size", SIZES)
def test_theme_from_the_config(
    snap_compare: Any,
    console: Callable[..., Console],
    size: tuple[int, int],
) -> None:
    """A console started with ``theme = "nord"`` in its config file (as the palette
    writes it) is drawn in that theme."""
    from dataclasses import replace

    c = demo(console)
    c.app.settings = replace(c.app.settings, theme="nord")
    assert snap_compare(c.app, terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES)
def test_console_job_arrays(
    snap_compare: Any, console: Callable[..., Console], size: tuple[int, int]
) -> None:
    """The demo's arrays as squeue shows them: tasks ``N_1``..., pending ranges
    ``N_[3-20%2]`` with their count of tasks, the steps of a task named ``N_1.0``."""
    c = console(n_jobs=3, seed=42, arrays=True)
    first = min(v.job.array_job_id for v in c.facade.snapshot().jobs if v.job.array_job_id)

    async def select(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        screen = pilot.app.screen
        screen.select_target(StepId(first))  # type: ignore[attr-defined]
        await pilot.pause()

    assert snap_compare(c.app, terminal_size=size, run_before=select)
