"""``ClustersEngine`` (``-M``): one engine per cluster, one listing, per-cluster freshness.

Two simulated controllers whose job ids overlap stand for two clusters; a cluster "goes down"
when its listing raises what the binding raises for a controller that does not answer.  The
real clusters are in ``tests/test_clusters.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from sckpt.backend import errors as E
from sckpt.backend.engines.clusters import RETRY_FIRST, ClustersEngine
from sckpt.backend.facade import simulated_engine
from sckpt.backend.model import ClusterInfo, JobState, Snapshot, StepId
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for

ME = "alice"


class Counted:
    """A cluster's engine that counts its listings and can be made not to answer."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.writes_allowed = True
        self.listings = 0
        self.down = False

    def snapshot(self) -> Snapshot:
        self.listings += 1
        if self.down:
            raise E.ControllerUnreachable(hint="test outage")
        snap: Snapshot = self.inner.snapshot()
        return snap

    def ping(self) -> float:
        if self.down:
            raise E.ControllerUnreachable(hint="test outage")
        return 0.001

    def cluster_info(self) -> ClusterInfo:
        info: ClusterInfo = self.inner.cluster_info()
        return info

    def hold(self, target: StepId) -> Any:
        return self.inner.hold(target)

    def close(self) -> None:
        pass


def _two(clock: ManualClock) -> tuple[ClustersEngine, dict[str, Counted], dict[str, Any]]:
    sims = {
        name: SimulatedCluster(
            seed=3 + i, n_jobs=4, clock=clock, users=demo_users_for(ME), arrivals=False,
            demo_touches=False, cluster_name=name,
        )
        for i, name in enumerate(("sckpt-a", "sckpt-b"))
    }  # fmt: skip
    engines = {name: Counted(simulated_engine(sim, ME)) for name, sim in sims.items()}
    engine = ClustersEngine(list(engines.items()), monotonic=clock)  # type: ignore[arg-type]
    return engine, engines, sims


def test_jobs_carry_their_cluster_and_unchanged_ones_keep_their_view() -> None:
    clock = ManualClock()
    engine, _engines, sims = _two(clock)
    first = engine.snapshot()
    ids = {(v.cluster, v.job.job_id) for v in first.jobs}
    for name, sim in sims.items():
        listed = {v.job.job_id for v in simulated_engine(sim, ME).snapshot().jobs}
        assert {j for c, j in ids if c == name} == listed
    # Ids overlap: the same job id on both clusters is two jobs.
    assert {j for c, j in ids if c == "sckpt-a"} & {j for c, j in ids if c == "sckpt-b"}
    second = engine.snapshot()
    assert not second.changed
    assert all(a is b for a, b in zip(first.jobs, second.jobs, strict=True))
    # A change on one cluster: that job's view is new, every other one the same object.
    job = sims["sckpt-b"].control.submit(ME, name="new", state=JobState.PENDING).job_id
    third = engine.snapshot()
    assert third.changed
    old = {(v.cluster, v.job.job_id): v for v in second.jobs}
    for view in third.jobs:
        if (view.cluster, view.job.job_id) == ("sckpt-b", job):
            assert view.job.name == "new"
        elif view.cluster == "sckpt-a":
            assert view is old[(view.cluster, view.job.job_id)]


def test_a_down_cluster_keeps_its_jobs_stale_and_is_asked_again_after_the_backoff() -> None:
    clock = ManualClock()
    engine, engines, _sims = _two(clock)
    engine.snapshot()
    engines["sckpt-b"].down = True
    snap = engine.snapshot()
    assert snap.changed and not snap.stale
    assert {c.name: c.stale for c in snap.clusters} == {"sckpt-a": False, "sckpt-b": True}
    assert all(v.stale == (v.cluster == "sckpt-b") for v in snap.jobs)
    assert any(v.cluster == "sckpt-b" for v in snap.jobs)
    asked = engines["sckpt-b"].listings
    clock.advance(RETRY_FIRST - 1)
    assert not engine.snapshot().changed
    assert engines["sckpt-b"].listings == asked  # not before the back-off
    clock.advance(2)
    engine.snapshot()
    assert engines["sckpt-b"].listings == asked + 1
    # A ping that finds it answering lets the next listing ask it at once.
    engines["sckpt-b"].down = False
    engine.ping()
    snap = engine.snapshot()
    assert snap.changed and not any(v.stale for v in snap.jobs)
    assert not any(c.stale for c in snap.clusters)


def test_every_cluster_down_fails_the_snapshot() -> None:
    clock = ManualClock()
    engine, engines, _sims = _two(clock)
    engine.snapshot()
    for counted in engines.values():
        counted.down = True
    with pytest.raises(E.ControllerUnreachable):
        engine.snapshot()
    with pytest.raises(E.ControllerUnreachable):
        engine.ping()


def test_actions_are_routed_by_the_targets_cluster() -> None:
    clock = ManualClock()
    engine, _engines, sims = _two(clock)
    job = sims["sckpt-a"].control.submit(ME, name="x", state=JobState.PENDING).job_id
    assert sims["sckpt-b"].control.submit(ME, name="y", state=JobState.PENDING).job_id == job
    result = engine.hold(StepId(job, cluster="sckpt-a"))
    assert result.target == StepId(job, cluster="sckpt-a")
    assert sims["sckpt-a"].job(job).held and not sims["sckpt-b"].job(job).held
    with pytest.raises(E.UsageError, match="which cluster"):
        engine.hold(StepId(job))


def test_m_is_refused_on_the_demo(tmp_path: Any) -> None:
    from sckpt.backend.config import Settings
    from sckpt.backend.facade import open_facade

    with pytest.raises(E.UsageError, match="not --demo"):
        open_facade(Settings(audit_log=tmp_path / "audit.log"), demo=True, clusters="all")
