"""``Facade.history``: bounds, read-only mode, and the cooperative store's checkpoint events
merged into a job's accounting records (the engine is the cooperative one over the
simulated controller's client library, whose accounting answers as slurmdbd would)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sckpt.backend.audit import AuditLog
from sckpt.backend.checkpointing.engine import CooperativeEngine
from sckpt.backend.checkpointing.protocol import StepRecord
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.errors import InvalidJobId, UsageError
from sckpt.backend.facade import Facade
from sckpt.backend.model import STEP_BATCH, StepId
from sckpt.backend.simulator import ManualClock, SimulatedCluster


def _cluster() -> SimulatedCluster:
    return SimulatedCluster(
        seed=5, n_jobs=0, clock=ManualClock(), arrivals=False, demo_touches=False
    )


def _facade(cluster: SimulatedCluster, tmp_path: Path, *, read_only: bool = False) -> Facade:
    me = os.getuid()
    name = "root" if me == 0 else str(me)
    engine = CooperativeEngine(
        cluster.connect(name), state_dir=str(tmp_path / "state"), clock=cluster.clock
    )
    audit = AuditLog(tmp_path / "audit.log", required=False)
    return Facade(engine, read_only=read_only, audit=audit)


def test_records_and_the_stores_checkpoint_events_oldest_first(tmp_path: Path) -> None:
    cluster = _cluster()
    job = cluster.control.submit("alice", name="md", n_steps=1, duration=36000).job_id
    cluster.requeue_job(cluster.user("alice"), job, hold=False)
    cluster.control.advance(200)
    store = StepStore(tmp_path / "state", StepId(job, STEP_BATCH))
    store.ensure_directory()

    def logged(rec: StepRecord) -> None:
        rec.log("create", "alice", 0, image_dir="/img/1")
        rec.log("vacate", "root", 28, "disk full")

    store.update(logged, create=True)
    found = _facade(cluster, tmp_path, read_only=True).history(str(job))
    assert [r.state for r in found.records] == ["REQUEUED", "RUNNING"]
    assert [(e.step_id, e.event.operation, e.event.code) for e in found.checkpoints] == [
        (StepId(job, STEP_BATCH), "create", 0),
        (StepId(job, STEP_BATCH), "vacate", 28),
    ]
    assert not (tmp_path / "audit.log").exists()  # reading is not audited, read-only or not


def test_bounds_are_checked_and_an_unknown_job_is_invalid(tmp_path: Path) -> None:
    facade = _facade(_cluster(), tmp_path)
    with pytest.raises(UsageError, match="name the job"):
        facade.history("12.batch")
    with pytest.raises(UsageError, match="invalid --limit"):
        facade.history("12", limit=0)
    with pytest.raises(UsageError, match="invalid --since"):
        facade.history("12", since="yesterday-ish")
    with pytest.raises(InvalidJobId, match="accounting has no record of job 12 since "):
        facade.history("12")


def test_finished_jobs_are_newest_first_and_cut_at_the_limit(tmp_path: Path) -> None:
    cluster = _cluster()
    alice = cluster.user("alice")
    jobs = [cluster.control.submit("alice", name=f"j{i}", n_steps=1).job_id for i in range(3)]
    for job in jobs:
        cluster.control.advance(60)
        cluster.kill_job(alice, job, 9)
    facade = _facade(cluster, tmp_path)
    found = facade.finished_jobs(limit=2)
    assert [r.job_id for r in found.records] == [jobs[2], jobs[1]]
    assert found.truncated and {r.state for r in found.records} == {"CANCELLED"}
    assert facade.finished_jobs(since="30s").records[0].job_id == jobs[2]
    assert len(facade.finished_jobs(since="30s").records) == 1
