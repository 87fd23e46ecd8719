"""A snapshot shows the listing as it is, whoever refreshed it last.

Why: actions refresh the listing themselves (restart watches its job pend and run), and the
controller answers "no change" to the next refresh once one has seen a change.  The
snapshot must still rebuild its views from that change: CI once saw `restart --wait` read a
job as CANCELLED for 30 s while squeue said RUNNING.
"""

from __future__ import annotations

from sckpt.backend.engines.live import LiveEngine
from sckpt.backend.model import JobState, Snapshot
from sckpt.backend.simulator import ManualClock, SimulatedCluster


def test_a_change_an_action_refreshed_reaches_the_next_snapshot() -> None:
    clock = ManualClock(1_700_000_000)
    cluster = SimulatedCluster(seed=5, n_jobs=200, clock=clock)
    engine = LiveEngine(cluster.connect("root"), clock=clock)
    before = engine.snapshot()
    job = next(v.job for v in before.jobs if v.job.state == JobState.RUNNING and v.job.batch)
    cluster.connect("root").requeue(job.job_id, hold=True)
    assert engine.refresh()  # an action's own look finds the change first
    after = engine.snapshot()
    assert after.changed
    assert _state(after, job.job_id) == JobState.PENDING
    again = engine.snapshot()
    assert not again.changed  # once shown, it is not news again
    assert _state(again, job.job_id) == JobState.PENDING


def _state(snap: Snapshot, job_id: int) -> JobState:
    return next(v.job.state for v in snap.jobs if v.job.job_id == job_id)
