"""The demo looks like a cluster that was running before sckpt started (issue 34, 15).

Each ``sckpt --demo`` command builds the simulated cluster afresh from the seed at its own
"now": a checkpoint in progress whose begin time moved with every command made ``complete
--begin-time`` from a hint fail a second later; every array task had started "now"; and
pending jobs showed 0 nodes where squeue shows what they asked for.
"""

from __future__ import annotations

from sckpt.backend.facade import simulated_engine
from sckpt.backend.model import CheckpointKind, JobState
from sckpt.backend.simulator import ManualClock, SimulatedCluster
from sckpt.backend.simulator.clock import DEMO_EPOCH


def _demo(at: float) -> SimulatedCluster:
    return SimulatedCluster(seed=42, n_jobs=48, clock=ManualClock(at), arrays=True)


def _in_progress(cluster: SimulatedCluster) -> dict[str, int]:
    snapshot = simulated_engine(cluster, "root").snapshot()
    return {
        str(s.step.step_id): s.checkpoint.in_progress_since
        for v in snapshot.jobs
        for s in v.steps
        if s.checkpoint.kind is CheckpointKind.IN_PROGRESS
    }


def test_a_checkpoint_in_progress_began_at_the_same_time_for_every_command() -> None:
    first = _in_progress(_demo(DEMO_EPOCH))
    assert first and all(first.values())
    assert _in_progress(_demo(DEMO_EPOCH + 1.5)) == first
    assert _in_progress(_demo(DEMO_EPOCH + 30)) == first


def test_array_tasks_started_one_after_another_and_pending_jobs_ask_for_nodes() -> None:
    cluster = _demo(DEMO_EPOCH)
    jobs = [v.job for v in simulated_engine(cluster, "root").snapshot().jobs]
    sweep = sorted(
        (j for j in jobs if j.is_array and j.state is JobState.RUNNING and j.name == "sweep"),
        key=lambda j: j.array_task_id or 0,
    )
    starts = [j.start_time for j in sweep]
    assert len(starts) == 3 and starts == sorted(set(starts))  # distinct, in task order
    assert all(j.submit_time < starts[0] for j in sweep)
    assert max(starts) < DEMO_EPOCH  # none started at the moment the demo began
    pending = [j for j in jobs if j.state is JobState.PENDING]
    assert pending and all(j.num_nodes >= 1 for j in pending)
