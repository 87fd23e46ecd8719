"""A job's steps, grouped by the engine: the same from a flat listing (libslurm's array) and
from a listing kept per job (``StepsResult.by_job``, the simulated controller's).

Why: the per-job answer lets the engine skip every job whose step tuple it has seen (the
demo's idle CPU), so both paths must give the very same views, and an unchanged job must
keep its view object (the console skips a view it has seen by identity).
"""

from __future__ import annotations

from dataclasses import replace

from sckpt.backend.engines.live import LiveEngine
from sckpt.backend.libslurm import JobsResult, StepsResult
from sckpt.backend.model import (
    STEP_BATCH,
    STEP_EXTERN,
    STEP_PENDING,
    CheckpointState,
    Job,
    JobState,
    JobView,
    Step,
    StepId,
)
from sckpt.backend.simulator import ManualClock, SimulatedCluster
from sckpt.backend.slurm_api import SlurmAPI


class FlatSteps:
    """A binding whose step answers carry no per-job grouping, as libslurm's do."""

    def __init__(self, inner: SlurmAPI) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def get_steps(self, prev_update: int = 0) -> StepsResult:
        return replace(self.inner.get_steps(prev_update), by_job=None)


def _shown(jobs: tuple[JobView, ...]) -> list[tuple[Job, list[tuple[StepId, CheckpointState]]]]:
    return [(v.job, [(s.step.step_id, s.checkpoint) for s in v.steps]) for v in jobs]


def test_a_grouped_and_a_flat_listing_give_the_same_views_as_the_cluster_moves() -> None:
    clock = ManualClock(1_700_000_000)
    cluster = SimulatedCluster(seed=5, n_jobs=400, clock=clock)
    grouped = LiveEngine(cluster.connect("root"), clock=clock)
    flat = LiveEngine(FlatSteps(cluster.connect("root")), clock=clock)  # type: ignore[arg-type]
    changes = 0
    for _ in range(30):
        clock.advance(45)  # jobs start, end, arrive and are purged
        a, b = grouped.snapshot(), flat.snapshot()
        assert a.changed == b.changed
        changes += a.changed
        assert _shown(a.jobs) == _shown(b.jobs)
    assert changes >= 10
    assert sum(len(v.steps) for v in a.jobs) > 400


class PerJob:
    """A binding answering two jobs' steps per job, out of squeue's order, with a pending
    step; ``renew`` gives job 2 a new tuple (its steps changed), job 1 keeps its own."""

    header_version = "22.05.8"
    caller_uid = 0
    caller_name = "root"

    def __init__(self) -> None:
        def step(job: int, n: int) -> Step:
            return Step(StepId(job, n), "s", "root", 0, "debug", "RUNNING", "n1")

        self.jobs = tuple(
            Job(j, "j", "root", 0, "debug", JobState.RUNNING, nodes="n1", batch=True)
            for j in (1, 2)
        )
        self.by_job = {
            1: (step(1, 1), step(1, STEP_PENDING), step(1, STEP_BATCH), step(1, 0)),
            2: (step(2, STEP_EXTERN), step(2, 0)),
        }
        self.version = 5

    def renew(self) -> None:
        self.by_job = {
            **self.by_job,
            2: (*self.by_job[2], replace(self.by_job[2][1], step_id=StepId(2, 1))),
        }
        self.version += 1

    def load_jobs(self, prev: int = 0) -> JobsResult:
        if prev == self.version:
            return JobsResult(False, prev)
        return JobsResult(True, self.version, self.jobs)

    def get_steps(self, prev: int = 0) -> StepsResult:
        if prev == self.version:
            return StepsResult(False, prev)
        flat = tuple(s for steps in self.by_job.values() for s in steps)
        return StepsResult(True, self.version, flat, dict(self.by_job))


def test_per_job_steps_are_sorted_pending_ones_left_out_and_unchanged_views_kept() -> None:
    binding = PerJob()
    engine = LiveEngine(binding)  # type: ignore[arg-type]
    first = engine.snapshot().jobs
    # squeue's order: batch, extern, then numbered; the pending srun is not a step.
    assert [str(s.step.step_id) for s in first[0].steps] == ["1.batch", "1.0", "1.1"]
    assert [str(s.step.step_id) for s in first[1].steps] == ["2.extern", "2.0"]
    assert _shown(first) == _shown(LiveEngine(FlatSteps(PerJob())).snapshot().jobs)  # type: ignore[arg-type]

    binding.renew()
    second = engine.snapshot()
    assert second.changed
    assert second.jobs[0] is first[0]  # the same tuple: the same view, not rebuilt
    assert second.jobs[1] is not first[1]
    assert [str(s.step.step_id) for s in second.jobs[1].steps] == ["2.extern", "2.0", "2.1"]
