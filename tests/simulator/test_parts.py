"""The simulated controller's parts, each built and driven alone through its public methods.

``SimulatedCluster`` holds them (``backend/simulator/cluster.py``); here each test builds only
the parts the one under test is given, on a ``ManualClock``, so a change to one part is
checked without the others (the whole controller: ``tests/backend/test_sim_rules.py``).
"""

from __future__ import annotations

import errno
import gc
import weakref

import pytest
from sckpt.backend.checkpointing.protocol import CAUSE_INTERVAL
from sckpt.backend.errors import NoSuchImage, NotSupported
from sckpt.backend.model import RUN_BY, AutoCheckpoints, JobState, StepId
from sckpt.backend.rules import Caller
from sckpt.backend.simulator import ManualClock, SimulatedCluster
from sckpt.backend.simulator.accounting import Accounting
from sckpt.backend.simulator.autopolicy import AutoPolicies
from sckpt.backend.simulator.catalog import STATE_WEIGHTS, uid_for
from sckpt.backend.simulator.checkpoint import CheckpointController
from sckpt.backend.simulator.checkpoint_runs import CheckpointRuns
from sckpt.backend.simulator.events import Timeline
from sckpt.backend.simulator.jobctl import JobControl
from sckpt.backend.simulator.lifecycle import Lifecycle
from sckpt.backend.simulator.population import Population
from sckpt.backend.simulator.records import JobRec, TransparentStep
from sckpt.backend.simulator.state import ClusterSettings, ClusterState
from sckpt.backend.simulator.views import Views

FIRST_ID = 500


def _state(
    clock: ManualClock,
    *,
    seed: int = 3,
    checkpoint_type: str = "checkpoint/blcr",
    min_job_age: int = 3600,
    checkpoint_dir_exists: bool = True,
) -> ClusterState:
    users = tuple(Caller(uid_for(name), name) for name in ("alice", "bob"))
    settings = ClusterSettings(
        seed=seed,
        users=users,
        checkpoint_type=checkpoint_type,
        prolog_contain=True,
        checkpoint_dir_exists=checkpoint_dir_exists,
        job_checkpoint_dir="/ckpt",
        cluster_name="parts",
        arrivals=False,
        min_job_age=min_job_age,
        numbered_steps=None,
    )
    return ClusterState(settings, clock, FIRST_ID)


def _lives(state: ClusterState) -> tuple[Timeline, Population, Lifecycle, Accounting]:
    """The parts every job's life needs: the clock, the population, their lifecycle."""
    timeline = Timeline(state, None)
    population = Population(state, timeline, 0)
    dbd = Accounting("parts", state.settings.users)
    return timeline, population, Lifecycle(state, timeline, population, dbd), dbd


class _Recorder:
    """A part that notes the events handed to it (the timeline holds its handlers weakly:
    they are methods of the parts the cluster holds)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, int | None, int, int]] = []

    def note(self, when: float, rec: JobRec | None, step: int, token: int) -> bool:
        self.seen.append((when, rec.job.job_id if rec is not None else None, step, token))
        return True

    def stale(self, when: float, rec: JobRec | None, step: int, token: int) -> bool:
        return False


def test_the_timeline_hands_due_events_to_their_handlers_in_time_order() -> None:
    clock = ManualClock()
    state = _state(clock)
    timeline = Timeline(state, None)
    recorder = _Recorder()
    timeline.on("noted", recorder.note)
    timeline.on("stale", recorder.stale)
    t0 = clock()
    timeline.push(t0 + 30, "noted", 0, 2)
    timeline.push(t0 + 10, "noted", 0, 1, token=7)
    timeline.push(t0 + 10, "noted", 0, 3)  # the same second: in the order pushed
    timeline.push(t0 + 20, "stale", 0)
    timeline.push(t0 + 100, "noted", 0, 4)
    clock.advance(50)
    timeline.tick()
    assert recorder.seen == [(t0 + 10, None, 1, 7), (t0 + 10, None, 3, 0), (t0 + 30, None, 2, 0)]
    assert state.version == 3  # the stale event changed nothing
    assert state.now == t0 + 50
    timeline.tick()
    assert len(recorder.seen) == 3  # each event once
    clock.advance(50)
    timeline.tick()
    assert recorder.seen[-1] == (t0 + 100, None, 4, 0)


def test_a_dropped_cluster_is_freed_by_reference_counting() -> None:
    # Its parts refer to each other only one way (the timeline holds its handlers
    # weakly), so a big cluster, hidden from the cyclic GC once built, is still freed.
    gc.disable()
    try:
        cluster = SimulatedCluster(seed=2, n_jobs=30, clock=ManualClock())
        cluster.connect("alice").load_jobs()
        state = weakref.ref(cluster.state)
        del cluster
        assert state() is None
    finally:
        gc.enable()


def test_the_population_alone_draws_the_same_jobs_from_the_same_seed() -> None:
    clock = ManualClock()
    built = []
    for _ in range(2):
        state = _state(clock, seed=11)
        Population(state, Timeline(state, None), 60).generate(60)
        built.append(state)
    first, second = built
    assert [r.job for r in first.jobs.values()] == [r.job for r in second.jobs.values()]
    assert list(first.jobs) == list(range(FIRST_ID, FIRST_ID + 60))
    states = {r.job.state for r in first.jobs.values()}
    assert states == {state for state, _ in STATE_WEIGHTS}  # every state at least once
    other = _state(clock, seed=12)
    Population(other, Timeline(other, None), 60).generate(60)
    assert [r.job for r in other.jobs.values()] != [r.job for r in first.jobs.values()]


def test_the_population_alone_schedules_each_running_jobs_end() -> None:
    clock = ManualClock()
    state = _state(clock)
    timeline = Timeline(state, None)
    Population(state, timeline, 40).generate(40)
    recorder = _Recorder()
    timeline.on("end", recorder.note)
    timeline.on("start", recorder.stale)
    running = {
        r.job.job_id: r.job.end_time
        for r in state.jobs.values()
        if r.job.state in (JobState.RUNNING, JobState.SUSPENDED)
    }
    assert running
    clock.advance(60 * 3600)
    timeline.tick()
    assert {job_id: when for when, job_id, _step, _token in recorder.seen} == running


def test_the_lifecycle_ends_a_job_and_forgets_it_after_min_job_age() -> None:
    clock = ManualClock()
    state = _state(clock, min_job_age=60)
    timeline, population, _lifecycle, dbd = _lives(state)
    job = population.submit("alice", name="md", duration=100)
    assert job.state is JobState.RUNNING and state.jobs[job.job_id].steps
    clock.advance(100)
    timeline.tick()
    ended = state.jobs[job.job_id]
    assert ended.job.state is JobState.COMPLETED
    assert ended.job.end_time == int(clock()) and ended.steps == {}
    clock.advance(60)
    timeline.tick()
    assert job.job_id not in state.jobs
    kept = dbd.query(state.jobs, int(clock()), job.job_id, 0)
    assert [(r.state, r.end_time) for r in kept] == [("COMPLETED", int(clock()) - 60)]


def test_job_control_alone_holds_a_pending_job_until_it_is_released() -> None:
    clock = ManualClock()
    state = _state(clock)
    timeline, population, lifecycle, dbd = _lives(state)
    jobctl = JobControl(state, timeline, lifecycle, dbd)
    job_id = population.submit("alice", state=JobState.PENDING).job_id
    alice, bob = state.user("alice"), state.user("bob")
    jobctl.hold_job(alice, job_id)
    held = state.jobs[job_id].job
    assert (held.held, held.state_reason, held.priority) == (True, "JobHeldUser", 0)
    with pytest.raises(Exception, match="Invalid user id"):
        jobctl.release(bob, job_id)
    jobctl.release(alice, job_id)
    clock.advance(1)
    timeline.tick()
    assert state.jobs[job_id].job.state is JobState.RUNNING


def test_the_checkpoint_rules_alone_end_a_scripted_checkpoint() -> None:
    clock = ManualClock()
    state = _state(clock)
    timeline, population, lifecycle, _dbd = _lives(state)
    runs = CheckpointRuns(state, timeline, lifecycle)
    checkpoints = CheckpointController(state, timeline, lifecycle, runs)
    step = StepId(population.submit("alice", batch=False, n_steps=1).job_id, 0)
    alice = state.user("alice")
    runs.script(step, duration=5, code=errno.ENOSPC)
    checkpoints.create(alice, step, 0, None)
    assert checkpoints.able(alice, step).in_progress_since == int(clock())
    clock.advance(5)
    error = checkpoints.error(alice, step)
    assert (error.code, checkpoints.able(alice, step).in_progress_since) == (errno.ENOSPC, 0)
    # Vacate ends the step once its checkpoint ends, and with its last step (no batch
    # step here) the job.
    runs.script(step, duration=3)
    checkpoints.vacate(alice, step, 0, None)
    clock.advance(3)
    timeline.tick()
    ended = state.jobs[step.job_id].job
    assert (ended.state, ended.state_reason) == (JobState.CANCELLED, "Vacated")


def test_the_checkpoint_rules_follow_the_plugin_and_the_saved_record_dir() -> None:
    clock = ManualClock()
    state = _state(clock, checkpoint_type="checkpoint/none", checkpoint_dir_exists=False)
    timeline, population, lifecycle, _dbd = _lives(state)
    runs = CheckpointRuns(state, timeline, lifecycle)
    checkpoints = CheckpointController(state, timeline, lifecycle, runs)
    job_id = population.submit("alice", n_steps=1).job_id
    alice = state.user("alice")
    with pytest.raises(NotSupported, match="checkpoint/none"):
        checkpoints.create(alice, StepId(job_id, 0), 0, None)
    with pytest.raises(NoSuchImage):  # the whole batch job saves its record first
        checkpoints.create(alice, StepId(job_id), 0, None)
    assert checkpoints.records() == {}


def test_the_views_alone_move_the_listing_only_when_something_changed() -> None:
    clock = ManualClock()
    state = _state(clock)
    timeline, population, _lifecycle, dbd = _lives(state)
    views = Views(state, timeline, dbd)
    job = population.submit("alice", name="md", n_steps=2, duration=600)
    first = views.listing()
    assert [j.job_id for j in first.jobs] == [job.job_id]
    assert [s.step_id.step for s in first.by_job[job.job_id]][-2:] == [0, 1]
    assert views.listing() is first  # nothing happened: the same answer
    snap = views.snapshot()
    assert snap.changed and not views.snapshot().changed
    clock.advance(600)  # the job ends
    later = views.listing()
    assert later.version > first.version
    assert later.jobs[0].state is JobState.COMPLETED and later.by_job[job.job_id] == ()
    assert views.snapshot().changed


def test_the_policies_alone_start_a_due_checkpoint_as_sckpt_run_would() -> None:
    clock = ManualClock()
    state = _state(clock)
    timeline, population, lifecycle, _dbd = _lives(state)
    policies = AutoPolicies(state, timeline, CheckpointRuns(state, timeline, lifecycle))
    job_id = population.submit("alice", n_steps=1, duration=7200).job_id
    rec = state.jobs[job_id]
    state.transparent[job_id] = {0: TransparentStep("md", "transparent (DMTCP 4.2.0)")}
    due = int(clock()) + 300
    policies.put_policy(rec, 0, AutoCheckpoints(every=600), due)
    assert policies.auto_policies(job_id)[0].next_due == due
    clock.advance(300)
    timeline.tick()
    history = rec.steps[0].history or []
    assert [(e.time, e.operation, e.by, e.cause) for e in history] == [
        (due, "create", RUN_BY, CAUSE_INTERVAL)
    ]
    assert policies.auto_policies(job_id)[0].next_due == due + 600
