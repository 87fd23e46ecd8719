"""The console with several clusters (``-M``), on two simulated clusters whose job ids overlap.

Both clusters start numbering at the same id, as two real clusters do, so every job id is
on both: a row, its steps and every action must stay with their own cluster.  The clusters
are the simulated controller (the engine code a real cluster runs), put together by the
same ``ClustersEngine`` that ``-M`` builds over real controllers; one cluster "goes down"
by making its engine's listing raise what the binding raises for a controller that does
not answer.  The real clusters (slurmdbd, two slurmctld) are in ``tests/test_clusters.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend import errors as E
from sckpt.backend.config import Settings
from sckpt.backend.engines.base import Engine
from sckpt.backend.engines.clusters import ClustersEngine
from sckpt.backend.facade import Facade, simulated_engine
from sckpt.backend.model import JobState, Snapshot, StepId
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for
from sckpt.tui.app import SckptApp, build_app
from textual.pilot import Pilot

from .conftest import ME, screen_text, settle
from .console_keys import console_of

NAMES = ("sckpt-a", "sckpt-b")
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 50), id="160x50")]


class Outage:
    """Makes one cluster's controller "not answer": its snapshots and pings raise."""

    def __init__(self) -> None:
        self.down = False

    def check(self) -> None:
        if self.down:
            raise E.ControllerUnreachable(hint="slurmctld did not answer (test outage)")


class Breakable(Engine):
    """A cluster's engine whose controller can be made unreachable (``Outage``)."""

    def __init__(self, inner: Engine, outage: Outage) -> None:
        self.inner = inner
        self.name = inner.name
        self.outage = outage

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def snapshot(self) -> Snapshot:
        self.outage.check()
        return self.inner.snapshot()

    def ping(self) -> float:
        self.outage.check()
        return self.inner.ping()

    def cluster_info(self) -> Any:
        return self.inner.cluster_info()

    def job_stdio(self, target: StepId) -> Any:
        return self.inner.job_stdio(target)

    def step_processes(self, target: StepId) -> Any:
        return self.inner.step_processes(target)

    def interconnect(self, target: StepId) -> Any:
        return self.inner.interconnect(target)

    def able(self, target: StepId) -> Any:
        return self.inner.able(target)

    def error(self, target: StepId) -> Any:
        return self.inner.error(target)

    def create(self, target: StepId, max_wait: int, image_dir: str | None) -> Any:
        return self.inner.create(target, max_wait, image_dir)

    def vacate(
        self, target: StepId, max_wait: int, image_dir: str | None, force: bool = False
    ) -> Any:
        return self.inner.vacate(target, max_wait, image_dir, force)

    def restart(
        self, target: StepId, stick: bool, image_dir: str | None, force: bool = False
    ) -> Any:
        return self.inner.restart(target, stick, image_dir, force)

    def enable(self, target: StepId) -> Any:
        return self.inner.enable(target)

    def disable(self, target: StepId) -> Any:
        return self.inner.disable(target)

    def complete(self, target: StepId, begin_time: int, error_code: int, error_msg: str) -> Any:
        return self.inner.complete(target, begin_time, error_code, error_msg)

    def tasks(
        self, target: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> Any:
        return self.inner.tasks(target, begin_time, image_dir, max_wait, nodelist)

    def auto(self, target: StepId, every: int | None, before_end: int | None, off: bool) -> Any:
        return self.inner.auto(target, every, before_end, off)

    def cancel(self, target: StepId, signal: int | None) -> Any:
        return self.inner.cancel(target, signal)

    def hold(self, target: StepId) -> Any:
        return self.inner.hold(target)

    def release(self, target: StepId) -> Any:
        return self.inner.release(target)

    def requeue(self, target: StepId) -> Any:
        return self.inner.requeue(target)


@dataclass
class Clusters:
    app: SckptApp
    facade: Facade
    sims: dict[str, SimulatedCluster]
    outages: dict[str, Outage]
    clock: ManualClock
    audit: Path


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[Callable[..., Clusters]]:
    made: list[Facade] = []

    def make(
        *,
        n_jobs: int = 5,
        read_only: bool = False,
        names: tuple[str, ...] = NAMES,
    ) -> Clusters:
        clock = ManualClock()
        sims = {
            name: SimulatedCluster(
                seed=11 + i,
                n_jobs=n_jobs,
                clock=clock,
                users=demo_users_for(ME),
                arrivals=False,
                demo_touches=False,
                cluster_name=name,
            )
            for i, name in enumerate(names)
        }
        outages = {name: Outage() for name in names}
        engine = ClustersEngine(
            [(n, Breakable(simulated_engine(sims[n], ME), outages[n])) for n in names],
            monotonic=clock,
        )
        audit = tmp_path / "audit.log"
        settings = Settings(refresh_interval=3600.0, audit_log=audit, read_only=read_only)
        facade = Facade(engine, settings, read_only=read_only)
        made.append(facade)
        app = build_app(facade, settings, clock=clock)
        return Clusters(app, facade, sims, outages, clock, audit)

    yield make
    for facade in made:
        facade.close()


def rows_of(app: SckptApp) -> dict[str, dict[str, str]]:
    con = console_of_app(app)
    out = {}
    for key in con.jobs_table.row_keys_in_order:
        cells = con.jobs_table.cells_of(key)
        assert cells is not None
        out[key] = {name: text.plain for name, text in cells.items()}
    return out


def console_of_app(app: SckptApp) -> Any:
    screen = app.console_screen()
    assert screen is not None
    return screen


async def test_both_clusters_jobs_are_listed_with_their_cluster(
    clusters: Callable[..., Clusters],
) -> None:
    c = clusters()
    shared = c.sims["sckpt-a"].control.submit(ME, name="on-a", state=JobState.PENDING).job_id
    assert (
        c.sims["sckpt-b"].control.submit(ME, name="on-b", state=JobState.PENDING).job_id == shared
    )
    async with c.app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        rows = rows_of(c.app)
        expected = {
            f"{name}/{view.job.job_id}": (name, str(view.job.job_id), view.job.state.short)
            for name, sim in c.sims.items()
            for view in simulated_engine(sim, ME).snapshot().jobs
        }
        shown = {key: (r["cluster"], r["id"], r["state"]) for key, r in rows.items()}
        # Every active job of both clusters, and finished ones only while they linger.
        assert shown == {key: row for key, row in expected.items() if key in shown}
        active = {key for key, row in expected.items() if row[2] in ("R", "PD", "S")}
        assert active <= set(shown) and len(active) > 4
        # The same id on both clusters: two rows, each with its own job's name.
        assert rows[f"sckpt-a/{shared}"]["name"] == "on-a"
        assert rows[f"sckpt-b/{shared}"]["name"] == "on-b"
        text = screen_text(c.app)
        assert "Cluster" in text.splitlines()[1] or "Cluster" in text
        assert "sckpt sckpt-a,sckpt-b" in text.splitlines()[0]


async def test_an_action_goes_to_the_rows_cluster_only(clusters: Callable[..., Clusters]) -> None:
    c = clusters()
    a, b = c.sims["sckpt-a"], c.sims["sckpt-b"]
    job = a.control.submit(ME, name="same-a", state=JobState.PENDING).job_id
    assert b.control.submit(ME, name="same-b", state=JobState.PENDING).job_id == job
    async with c.app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        assert con.jobs_table.select_key(f"sckpt-b/{job}")
        assert con.selected_target() == StepId(job, cluster="sckpt-b")
        await pilot.press("H")  # hold: asks first
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
    assert b.job(job).held
    assert not a.job(job).held
    lines = c.audit.read_text().splitlines()
    assert (
        len(lines) == 1 and '"cluster": "sckpt-b"' in lines[0] and '"operation": "hold"' in lines[0]
    )


async def test_read_only_refusal_names_the_cluster(clusters: Callable[..., Clusters]) -> None:
    c = clusters(read_only=True)
    job = c.sims["sckpt-b"].control.submit(ME, name="ro", state=JobState.PENDING).job_id
    with pytest.raises(E.ReadOnlyError) as refused:
        c.facade.hold(StepId(job, cluster="sckpt-b"))
    assert f"hold {job} on cluster sckpt-b refused" in refused.value.message
    assert '"cluster": "sckpt-b"' in c.audit.read_text()
    assert not c.sims["sckpt-b"].job(job).held


def test_a_target_without_its_cluster_is_refused_when_several_are_shown(
    clusters: Callable[..., Clusters],
) -> None:
    c = clusters()
    job = c.sims["sckpt-a"].control.submit(ME, name="x", state=JobState.PENDING).job_id
    with pytest.raises(E.UsageError, match="which cluster"):
        c.facade.hold(StepId(job))
    with pytest.raises(E.UsageError, match="not one of -M's"):
        c.facade.hold(StepId(job, cluster="sckpt-z"))
    assert not c.sims["sckpt-a"].job(job).held


def test_one_cluster_chosen_takes_targets_without_a_cluster(
    clusters: Callable[..., Clusters],
) -> None:
    c = clusters(names=("sckpt-b",))
    job = c.sims["sckpt-b"].control.submit(ME, name="x", state=JobState.PENDING).job_id
    result = c.facade.hold(str(job))
    assert result.target == StepId(job, cluster="sckpt-b")
    assert c.sims["sckpt-b"].job(job).held


async def test_one_cluster_down_marks_only_its_rows_stale(
    clusters: Callable[..., Clusters],
) -> None:
    c = clusters()
    async with c.app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        before = rows_of(c.app)
        c.outages["sckpt-b"].down = True
        c.clock.advance(5)
        c.app.refresh_now()
        await settle(pilot)
        after = rows_of(c.app)
        header = screen_text(c.app).splitlines()[0]
        assert set(after) == set(before)  # B's rows stay, with their last data
        for key, row in after.items():
            if key.startswith("sckpt-b/"):
                assert row["cluster"] == "sckpt-b!"
            else:
                assert row["cluster"] == "sckpt-a"
        assert "sckpt-b STALE since" in header
        assert "sckpt-a STALE" not in header and " STALE since" not in header.split("sckpt-b")[0]
        assert not c.app.freshness.stale  # the console's data as a whole is fresh
        # Back: the next listing after the back-off shows B fresh again.
        c.outages["sckpt-b"].down = False
        c.clock.advance(120)
        c.app.refresh_now()
        await settle(pilot)
        assert all(not r["cluster"].endswith("!") for r in rows_of(c.app).values())
        assert "STALE" not in screen_text(c.app).splitlines()[0]


async def test_every_cluster_down_is_the_usual_outage(clusters: Callable[..., Clusters]) -> None:
    c = clusters()
    async with c.app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        for outage in c.outages.values():
            outage.down = True
        c.clock.advance(5)
        c.app.refresh_now()
        await settle(pilot)
        assert c.app.freshness.stale
        assert " STALE since" in screen_text(c.app).splitlines()[0]


@pytest.mark.parametrize("size", SIZES)
def test_clusters_console_snapshot(
    snap_compare: Any, clusters: Callable[..., Clusters], size: tuple[int, int]
) -> None:
    c = clusters(n_jobs=8)

    async def one_down(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        c.outages["sckpt-b"].down = True
        c.clock.advance(5)
        c.app.refresh_now()
        await settle(pilot)

    assert snap_compare(c.app, terminal_size=size, run_before=one_down)


async def test_opened_on_a_step_of_one_cluster_selects_that_clusters_job(
    clusters: Callable[..., Clusters],
) -> None:
    """``sckpt -M sckpt-b JOB.STEP``: the console opens on sckpt-b's step, not on sckpt-a's
    job of the same id."""
    c = clusters()
    job = (
        c.sims["sckpt-b"]
        .control.submit(ME, name="focus-b", state=JobState.RUNNING, n_steps=2)
        .job_id
    )
    assert (
        c.sims["sckpt-a"].control.submit(ME, name="focus-a", state=JobState.RUNNING).job_id == job
    )
    target = StepId(job, 1, cluster="sckpt-b")
    c.app.focus_target = target
    async with c.app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        con = console_of(pilot)
        assert con.jobs_table.selected_key == f"sckpt-b/{job}"
        assert con.selected_target() == target
        text = screen_text(c.app)  # the step's detail: sckpt-b's job
        assert f"{job} focus-b" in text and "focus-a" not in text
