"""Pilot tests: job arrays, expected starts and column layouts in the console.

Arrays are the simulated cluster's (``SimulatedCluster(arrays=True)``: three running
tasks, a range waiting on its run limit, a held array of 50); actions are checked on the
cluster's records, the layouts on the columns the jobs table shows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import JobState, StepId
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for
from sckpt.tui.app import build_app
from sckpt.tui.console_text import job_start
from sckpt.tui.rows import view_of
from sckpt.tui.screens.console import ConsoleScreen
from textual.pilot import Pilot

from .conftest import ME, Console, screen_text, settle

SIZE = (140, 40)


def console_of(pilot: Pilot[Any]) -> ConsoleScreen:
    screen = pilot.app.console_screen()  # type: ignore[attr-defined]
    assert isinstance(screen, ConsoleScreen)
    return screen


def rows_view(con: ConsoleScreen, key: str) -> Any:
    """The job view a row of the jobs table shows."""
    return view_of(con.jobs_table.model.data_of(key))  # type: ignore[arg-type]


def arrays_of(c: Console) -> dict[str, int]:
    ids = sorted({v.job.array_job_id for v in c.facade.snapshot().jobs if v.job.array_job_id})
    return dict(zip(("run", "limited", "held"), ids, strict=True))


async def test_the_filter_finds_array_tasks_by_squeues_id(console: Any) -> None:
    c = console(n_jobs=4, arrays=True)
    run = arrays_of(c)["run"]
    async with c.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *f"id:{run}_", "enter")
        await pilot.pause()
        con = console_of(pilot)
        shown = [rows_view(con, k).job.label for k in con.jobs_table.row_keys_in_order]
        assert shown == [f"{run}_1", f"{run}_2", f"{run}_3"]


async def test_hold_on_a_task_row_holds_that_tasks_record_and_logs_its_name(
    console: Any,
) -> None:
    c = console(n_jobs=0, arrays=True)
    run = arrays_of(c)["run"]
    task = next(v.job for v in c.facade.snapshot().jobs if v.job.label == f"{run}_2")
    async with c.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        console_of(pilot).select_target(StepId(task.job_id))
        await pilot.pause()
        await pilot.press("H")
        await pilot.pause()
        assert f"Hold job {run}_2 (sweep)?" in screen_text(c.app)
        await pilot.press("y")
        await settle(pilot)
        held = {j.label: j.held for j in c.cluster.jobs_where(lambda j: j.array_job_id == run)}
        assert held == {f"{run}_1": False, f"{run}_2": True, f"{run}_3": False}
        assert f'"target": "{run}_2"' in c.audit.read_text()


async def test_a_pending_job_shows_when_slurm_expects_it_to_start(tmp_path: Any) -> None:
    clock = ManualClock()
    cluster = SimulatedCluster(
        seed=1, n_jobs=0, clock=clock, users=demo_users_for(ME), arrivals=False
    )
    job = cluster.control.submit(ME, name="waits", state=JobState.PENDING)
    cluster.requeue_job(cluster.user(ME), cluster.control.submit(ME, name="requeued").job_id, False)
    settings = Settings(refresh_interval=3600, audit_log=tmp_path / "a.log")
    facade = open_facade(settings, as_user=ME, cluster=cluster)
    app = build_app(facade, settings, clock=clock)
    requeued = next(j for j in cluster.jobs_where(lambda j: j.name == "requeued"))
    assert requeued.state is JobState.PENDING and requeued.expected_start > clock()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        con.select_target(StepId(requeued.job_id))
        await pilot.pause()
        text = screen_text(app)
        assert "expected start in 2m" in text  # REQUEUE_BEGIN_DELAY: 120 s
        await pilot.press("l")  # the queue layout: a Start column
        await pilot.pause()
        keys = [col.key for col in con.jobs_table.all_columns]
        assert keys[:6] == ["id", "user", "name", "partition", "state", "start"]
        assert str(job.job_id) in con.jobs_table.row_keys_in_order
        assert "columns queue" in screen_text(app)


async def test_columns_from_the_config_come_first_and_l_cycles_the_presets(
    tmp_path: Any,
) -> None:
    clock = ManualClock()
    cluster = SimulatedCluster(seed=2, n_jobs=6, clock=clock, users=demo_users_for(ME))
    settings = Settings(
        refresh_interval=3600,
        audit_log=tmp_path / "a.log",
        columns={"jobs": ("id", "tres", "state"), "steps": ("checkpoint", "id")},
    )
    app = build_app(open_facade(settings, as_user=ME, cluster=cluster), settings, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        assert [c.key for c in con.jobs_table.shown] == ["id", "tres", "state"]
        assert [c.key for c in con.steps_table.shown] == ["checkpoint", "id"]
        assert "cpu=" in screen_text(app)  # the Resources column: squeue's tres-alloc
        seen = []
        for _ in range(5):
            await pilot.press("l")
            await pilot.pause()
            seen.append(tuple(c.key for c in con.jobs_table.all_columns))
        assert seen[0][-1] == "checkpoint" and "steps" in seen[0]  # sckpt's default
        assert "start" in seen[1] and "tres" in seen[2]
        assert "left" in seen[3]  # the time layout: Elapsed and Left (squeue's %L)
        assert seen[4] == ("id", "tres", "state")  # round again to the config's own


async def test_a_held_jobs_heading_names_no_expected_start(tmp_path: Any) -> None:
    """A held job's steps heading said "expected start in 1m": it starts when released."""
    clock = ManualClock()
    cluster = SimulatedCluster(
        seed=1, n_jobs=0, clock=clock, users=demo_users_for(ME), arrivals=False
    )
    job_id = cluster.control.submit(ME, name="requeued").job_id
    cluster.requeue_job(cluster.user(ME), job_id, False)  # pending, with a begin time
    cluster.hold_job(cluster.user(ME), job_id)  # then held: Slurm keeps that time
    settings = Settings(refresh_interval=3600, audit_log=tmp_path / "a.log")
    app = build_app(open_facade(settings, as_user=ME, cluster=cluster), settings, clock=clock)
    held = cluster.job(job_id)
    assert held.held and held.state is JobState.PENDING
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        console_of(pilot).select_target(StepId(job_id))
        await pilot.pause()
        heading = next(x for x in screen_text(app).splitlines() if "Steps of" in x)
        assert "expected start" not in heading and "JobHeldUser" in heading, heading


async def test_an_array_tasks_row_is_named_as_squeue_names_it(console: Any) -> None:
    """From the jobs table, the form and the toast named an array task by its record's
    id (``10`` for ``9_1``)."""
    c = console(arrays=True)
    run = c.cluster.control.submit_array(ME, "1-2", running=2, name="sweep")
    task = next(j for j in run if j.array_task_id == 1)
    async with c.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        con.select_target(StepId(task.job_id))
        con.jobs_table.focus()
        await pilot.pause()
        assert str(con.selected_target()) == f"{task.array_job_id}_1"
        await pilot.press("c")
        await pilot.pause()
        assert f"Create {task.array_job_id}_1" in screen_text(c.app)


async def test_the_time_layout_shows_each_jobs_time_left(console: Any) -> None:
    """``l`` offers a layout with time left (squeue's ``%L``), what an operator reads
    before vacating anything; a job near its limit stands out."""
    c = console(n_jobs=0)
    near = c.cluster.control.submit(ME, name="near", n_steps=1, duration=3600).job_id
    c.clock.advance(3300)  # 5 minutes before its one-hour limit
    far = c.cluster.control.submit(ME, name="far", n_steps=1, duration=7200).job_id
    async with c.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        while con.layouts()[con.layout_index][0] != "time":
            await pilot.press("l")
        await pilot.pause()
        header = next(x for x in screen_text(c.app).splitlines() if "JobID" in x)
        assert "Left" in header and "Checkpoint" in header
        cells = {k: con.jobs_table.cells_of(k) for k in (str(near), str(far))}
        assert cells[str(near)]["left"].plain == "5m"  # type: ignore[index]
        assert cells[str(near)]["left"].style == "yellow"  # type: ignore[index]
        assert cells[str(far)]["left"].plain == "2h00m"  # type: ignore[index]
        assert cells[str(near)]["limit"].plain == "1h00m"  # type: ignore[index]
        assert "Limit" in header


async def test_the_config_may_show_squeues_scheduling_columns(tmp_path: Any) -> None:
    """``[columns] jobs`` may name limit, end, priority and qos (squeue's %l %e %Q %q)."""
    clock = ManualClock()
    cluster = SimulatedCluster(
        seed=1, n_jobs=0, clock=clock, users=demo_users_for(ME), arrivals=False
    )
    job = cluster.control.submit(ME, name="md", duration=3600)
    keys = ("id", "limit", "end", "priority", "qos", "checkpoint")
    settings = Settings(refresh_interval=3600, audit_log=tmp_path / "a.log", columns={"jobs": keys})
    app = build_app(open_facade(settings, as_user=ME, cluster=cluster), settings, clock=clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        assert [c.key for c in con.jobs_table.shown] == list(keys)
        cells = con.jobs_table.cells_of(str(job.job_id))
        assert cells is not None
        shown = {k: cells[k].plain for k in keys[1:5]}
        assert shown == {
            "limit": "1h00m",
            "end": job_start(replace(job, start_time=job.end_time), clock()),
            "priority": str(job.priority),
            "qos": "normal",
        }
