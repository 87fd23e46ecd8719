"""The cooperative engine's waits pass on its injected clock and sleep (issue 35, item 8).

The engine over the simulated controller's client library, with a step's record written
as ``sckpt run`` writes it but no wrapper to answer: create waits for its ``max_wait``,
and restart for the credential gap and the begin time, on the fake pair only.  The clock
moves only when the engine sleeps, so an engine that slept or read the time on its own
would never see its deadline pass and hang here (or sleep seconds of real time).  The
real wrapper's answers are in tests/cooperative/.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from sckpt.backend.checkpointing import wait_end
from sckpt.backend.checkpointing.engine import WAIT_POLL, CooperativeEngine
from sckpt.backend.checkpointing.protocol import HANDLER_CAUGHT, StepRecord, TaskInfo
from sckpt.backend.checkpointing.restart import BEGIN_WATCH, CREDENTIAL_GAP
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.errors import CheckpointFailed, JobCancelled
from sckpt.backend.model import JobState, StepId
from sckpt.backend.simulator import ManualClock, SimulatedCluster


class FakeSleep:
    """Moves the simulated cluster's clock on instead of sleeping; keeps what it was asked
    for, and runs ``at`` once the clock has reached ``when``."""

    def __init__(self, cluster: SimulatedCluster) -> None:
        self.cluster = cluster
        self.slept: list[float] = []
        self.when = float("inf")
        self.at: Callable[[], None] = lambda: None

    def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.cluster.control.advance(seconds)
        if self.cluster.clock() >= self.when:
            self.when = float("inf")
            self.at()


def _setup(tmp_path: Path) -> tuple[SimulatedCluster, CooperativeEngine, FakeSleep, int]:
    cluster = SimulatedCluster(
        seed=5, n_jobs=0, clock=ManualClock(), arrivals=False, demo_touches=False
    )
    sleep = FakeSleep(cluster)
    me = "root" if os.getuid() == 0 else str(os.getuid())
    engine = CooperativeEngine(
        cluster.connect(me), state_dir=str(tmp_path / "state"), clock=cluster.clock, sleep=sleep
    )
    job = cluster.control.submit("alice", n_steps=1, duration=36000).job_id
    store = StepStore(tmp_path / "state", StepId(job, 0))
    store.ensure_directory()

    def register(rec: StepRecord) -> None:
        rec.tasks["0"] = TaskInfo(0, "cn01", 4242, 0, "SIGUSR1", "/img", handler=HANDLER_CAUGHT)

    store.update(register, create=True)
    return cluster, engine, sleep, job


def test_a_create_nobody_answers_times_out_on_the_fake_clock(tmp_path: Path) -> None:
    cluster, engine, sleep, job = _setup(tmp_path)
    start = cluster.clock()
    with pytest.raises(CheckpointFailed) as failed:
        engine.create(StepId(job, 0), 5, None)
    assert failed.value.code == errno.ETIME
    # Only the fake sleep passed the time: polls of WAIT_POLL until the deadline, five
    # seconds of the cluster's clock and not one more poll.
    assert set(sleep.slept) == {WAIT_POLL}
    assert cluster.clock() - start == pytest.approx(5.0, abs=WAIT_POLL + 1e-9)
    rec = StepStore(tmp_path / "state", StepId(job, 0)).read()
    assert rec is not None and rec.in_progress is None
    assert rec.checkpoint_error().code == errno.ETIME


def test_a_job_cancelled_during_the_wait_ends_it_at_the_next_look(tmp_path: Path) -> None:
    cluster, engine, sleep, job = _setup(tmp_path)
    start = cluster.clock()
    sleep.when = start + 2.0
    sleep.at = lambda: cluster.control.set_job_state(job, JobState.CANCELLED)
    with pytest.raises(JobCancelled, match=f"job {job} was cancelled"):
        engine.create(StepId(job, 0), 0, None)  # no limit: only the cancel ends it
    # The engine looks at the job every LOOK_EVERY seconds of its clock, and settles once
    # (wait_end.SETTLE) on its sleep before it says why.
    assert wait_end.SETTLE in sleep.slept
    assert cluster.clock() - start < 2.0 + wait_end.LOOK_EVERY + wait_end.SETTLE + 2 * WAIT_POLL
    rec = StepStore(tmp_path / "state", StepId(job, 0)).read()
    assert rec is not None and rec.in_progress is None
    assert rec.checkpoint_error().code == errno.ECANCELED


def test_a_restart_waits_out_the_credential_gap_on_the_fake_clock(tmp_path: Path) -> None:
    cluster, engine, sleep, job = _setup(tmp_path)
    cluster.requeue_job(cluster.user("root"), job, hold=True)  # as vacate leaves it
    gone = str(tmp_path / "gone")  # its image lost: --force starts the task from zero
    StepStore(tmp_path / "state", StepId(job, 0)).update(lambda r: r.last_image.update({"0": gone}))
    start = cluster.clock()
    done = engine.restart(StepId(job), False, None, force=True)
    assert f"job {job} released" in done.detail
    assert cluster.job(job).state == JobState.RUNNING
    # A held job's end time is unknown: the release waited CREDENTIAL_GAP on the fake
    # clock, then watched the begin time, all on the engine's sleep.
    assert sleep.slept[0] == CREDENTIAL_GAP
    assert CREDENTIAL_GAP <= cluster.clock() - start < CREDENTIAL_GAP + BEGIN_WATCH
