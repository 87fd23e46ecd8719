"""The simulated cluster: an in-process Slurm 19.05 controller with a checkpoint plugin.

Why it exists: no Slurm release still supported has the checkpoint API, so the console's
demo (``sckpt --demo``), its UI tests and the rule tests need a cluster that follows the
historical rules (``shared/reference/checkpoint-semantics.md``).  ``SimulatedCluster`` is the
controller; ``connect(user)`` gives its client library, ``SimulatedSlurm`` (``client.py``),
a ``SlurmAPI`` like the cffi binding, so the demo is the native engine over it (several
connections, one per user, may share one controller: that is how the tests check access).
The rules themselves are ``backend/rules.py``'s; the controller calls them
(``checkpoint.py`` lists them in order), and its plugin (``plugins.py``) decides the rest.
Tests make things happen through ``SimulatedCluster.control`` (``control.py``).

The controller is made of parts it holds, none a subclass of another, each with one concern
and each given only the parts it calls:

* ``state.ClusterState``: the data they share (settings, jobs, what changed, the listing's
  version) and the caller's rights (checks 1-6);
* ``events.Timeline``: the clock and the events to come, applied in time order; each part
  registers the kinds of event it handles;
* ``population.Population``: what jobs exist (the seeded ones, the submitted ones, arrays)
  and ``lifecycle.Lifecycle``: their starts and ends as time passes;
* ``views.Views``: what is listed and answered (the tests' oracle too);
* ``jobctl.JobControl``: scancel and scontrol;
* ``checkpoint.CheckpointController``: the checkpoint API, by plugin (``plugins.py``), and
  ``checkpoint_runs.CheckpointRuns``: the checkpoints it starts, while they run and as
  they end;
* ``autopolicy.AutoPolicies``: ``sckpt run``'s automatic checkpoints;
* ``accounting.Accounting``: the simulated slurmdbd;
* ``touches.DemoTouches``: what the demo adds to the generated jobs, once.

``SimulatedCluster`` builds them and offers their public methods under one name (what the
client library, ``SimulatedSlurm``, and the tests call).

Everything random comes from ``random.Random(seed)`` or from a hash of ids, so the same
seed, size and clock give the same cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, partial

from ..errors import UsageError
from ..gc_pause import cyclic_gc_paused, freeze_built
from ..model import (
    AbleResult,
    ActionResult,
    AutoCheckpoints,
    CheckpointError,
    CheckpointState,
    Interconnect,
    Job,
    JobRecord,
    JobState,
    JobStdio,
    Snapshot,
    StepCheckpointEvent,
    StepId,
    StepProcesses,
)
from ..rules import Caller
from ..slurm_api import ControllerConfig
from .accounting import Accounting
from .autopolicy import AutoPolicies
from .catalog import DEMO_USERS, uid_for
from .checkpoint import CheckpointController
from .checkpoint_runs import CheckpointRuns
from .client import SimulatedSlurm
from .control import SimulatorControl
from .events import Timeline
from .jobctl import JobControl
from .lifecycle import Lifecycle
from .output import DemoOutput
from .plugins import CHECKPOINT_TYPES, CheckpointPlugin
from .population import Population
from .records import DEFAULT_JOB_CHECKPOINT_DIR, Listing, SavedRecord, TransparentStep
from .state import ClusterSettings, ClusterState
from .touches import DemoTouches
from .views import Views


class SimulatedCluster:
    """A deterministic in-process cluster following Slurm 19.05's checkpoint rules.

    Arguments: ``seed`` and ``n_jobs`` fix the generated cluster; ``clock`` (default
    ``time.time``; pass ``ManualClock()`` for tests) is read on every call; ``users`` are the
    job owners (default ``DEMO_USERS``); ``checkpoint_type`` is one of ``CHECKPOINT_TYPES``
    (``plugins.py``: blcr, the default, ompi as the real 19.05 test cluster runs it, none);
    ``job_checkpoint_dir`` is slurm.conf's JobCheckpointDir ("" = none configured);
    ``arrivals`` submits a new job every few minutes so the demo stays alive;
    ``demo_touches`` disables a few steps, starts one checkpoint and leaves one error so
    the demo shows every state; ``min_job_age`` is how long a job that finishes during
    the simulation stays known (slurm.conf's MinJobAge; jobs generated as finished stay);
    ``numbered_steps`` fixes how many numbered steps a batch job runs (default: 1-5 drawn
    per job), for benchmarks that need many steps per job; ``arrays`` adds the demo's job
    arrays after the generated jobs (``DemoTouches.arrays``: running tasks, a pending
    range with a run limit, a held array), so the other jobs keep their ids and fields;
    ``output_dir`` (the demo's) gives batch jobs real output files there (``output.py``;
    "" = none, the paths alone); ``first_part`` (the demo's console) builds only that many
    jobs now and the rest when first needed or when ``finish_building`` is called
    (``staging.py``: the same cluster, its first screen sooner).
    """

    def __init__(
        self,
        seed: int = 42,
        n_jobs: int = 48,
        clock: Callable[[], float] | None = None,
        *,
        users: Sequence[str] = DEMO_USERS,
        checkpoint_type: str = "checkpoint/blcr",
        prolog_contain: bool = True,
        checkpoint_dir_exists: bool = True,
        job_checkpoint_dir: str = DEFAULT_JOB_CHECKPOINT_DIR,
        cluster_name: str = "demo",
        arrivals: bool = True,
        demo_touches: bool = True,
        min_job_age: int = 3600,
        first_job_id: int = 184_201,
        numbered_steps: int | None = None,
        output_dir: str = "",
        arrays: bool = False,
        first_part: int | None = None,
    ) -> None:
        _check_arguments(n_jobs, users, checkpoint_type, numbered_steps)
        settings = ClusterSettings(
            seed,
            tuple(Caller(uid_for(name), name) for name in users),
            checkpoint_type,
            prolog_contain,
            checkpoint_dir_exists,
            job_checkpoint_dir,
            cluster_name,
            arrivals,
            min_job_age,
            numbered_steps,
        )
        self.state = state = ClusterState(
            settings, clock if clock is not None else time.time, first_job_id
        )
        self.settings = settings
        self.timeline = Timeline(state, DemoOutput(output_dir) if output_dir else None)
        self.dbd = Accounting(cluster_name, settings.users)
        self.population = Population(state, self.timeline, n_jobs)
        self.lifecycle = Lifecycle(state, self.timeline, self.population, self.dbd)
        self.views = Views(state, self.timeline, self.dbd)
        self.jobctl = JobControl(state, self.timeline, self.lifecycle, self.dbd)
        self.runs = CheckpointRuns(state, self.timeline, self.lifecycle)
        self.checkpoints = CheckpointController(state, self.timeline, self.lifecycle, self.runs)
        self.policies = AutoPolicies(state, self.timeline, self.runs)
        # The records form no reference cycles, and the cyclic collector walking a
        # million young objects again and again costs half the time of a 100,000-job
        # build: pause it while building, and for big clusters move what was built out
        # of its sight (gc.freeze; the objects are still freed by reference counting).
        with cyclic_gc_paused():
            states = self.population.draw_states(n_jobs)
            first = n_jobs if first_part is None else max(0, min(first_part, n_jobs))
            rest = _Rest(states[first:], n_jobs, first_job_id, demo_touches, arrays)
            if first < n_jobs:
                self.population.generate_jobs(states[:first])
                self.views.rebuild_dirty()  # the first part's listing
                state.staging.defer(partial(self._build_rest, rest), first)
                return
            self.population.generate_jobs(states)
            self._complete(rest)

    def _build_rest(self, rest: _Rest) -> None:
        """The jobs after the first part, then ``_complete`` (``staging.py``).  The jobs are
        made without the lock: nothing else changes the cluster meanwhile (any call that
        would waits for this build), and the reads allowed meanwhile (the first part's
        listing, the probes of its steps) do not look at them."""
        with cyclic_gc_paused():
            self.population.generate_jobs(rest.states)
            with self.state.lock:
                self._complete(rest, anew=True)

    def _complete(self, rest: _Rest, anew: bool = False) -> None:
        """What a build makes after the seeded jobs, in this order: the first arrival, the
        accounting past, the demo's touches and arrays, the listing (``anew``: of every
        job, after a first part's)."""
        state = self.state
        self.population.first_arrival()
        self.dbd.seed(state.jobs, rest.n_jobs, int(state.now), rest.first_job_id)
        touches = DemoTouches(self.population, self.timeline, self.runs, self.policies)
        if rest.touches:
            touches.touch()
        state.staging.building = False  # the clock moves again: the arrays' submissions tick
        if rest.arrays:
            touches.arrays()
        self.views.rebuild_dirty(anew=anew)
        freeze_built(rest.n_jobs)

    # -- a cluster built in two parts (``staging.py``)
    @property
    def building(self) -> bool:
        """Only the first part of the jobs exists yet (``first_part``)."""
        return self.state.staging.pending

    @property
    def first_part(self) -> int:
        """How many jobs the first part's listing holds (0: the cluster was built whole)."""
        return self.state.staging.first_part

    def allow_part(self) -> None:
        """The console's listing and able/error probes may be answered from the first part
        until the rest is built; every other call still waits for the whole cluster."""
        self.state.staging.allow_part()

    def finish_building(self) -> None:
        """Build the rest of a cluster built in two parts (at once if it was built whole)."""
        self.state.staging.finish()

    def _whole(self) -> None:
        """Before a call that must see the whole cluster: the rest built first."""
        self.state.staging.ready()

    # -- the settings it was built with (read-only: the parts read ``settings``)
    @property
    def seed(self) -> int:
        return self.settings.seed

    @property
    def clock(self) -> Callable[[], float]:
        """The clock the controller reads (a ``ManualClock`` in tests)."""
        return self.state.clock

    @property
    def users(self) -> tuple[Caller, ...]:
        """The job owners."""
        return self.settings.users

    @property
    def slurm_user(self) -> Caller:
        return self.state.slurm_user

    @property
    def checkpoint_type(self) -> str:
        return self.settings.checkpoint_type

    @property
    def plugin(self) -> CheckpointPlugin:
        return self.state.plugin

    @property
    def cluster_name(self) -> str:
        return self.settings.cluster_name

    @property
    def job_checkpoint_dir(self) -> str:
        return self.settings.job_checkpoint_dir

    @property
    def checkpoint_dir_exists(self) -> bool:
        return self.settings.checkpoint_dir_exists

    @property
    def prolog_contain(self) -> bool:
        return self.settings.prolog_contain

    @property
    def arrivals(self) -> bool:
        return self.settings.arrivals

    @property
    def min_job_age(self) -> int:
        return self.settings.min_job_age

    @property
    def numbered_steps(self) -> int | None:
        return self.settings.numbered_steps

    def now(self) -> float:
        """The cluster's current time (its clock)."""
        return self.state.clock()

    def user(self, name: str) -> Caller:
        """The simulated user called ``name`` (root, slurm, a job owner, anyone)."""
        return self.state.user(name)

    @property
    def size(self) -> tuple[int, int]:
        """(jobs, steps) currently known."""
        self._whole()
        with self.state.lock:
            jobs = self.state.jobs
            return len(jobs), sum(len(r.steps) for r in jobs.values())

    def connect(self, user: str) -> SimulatedSlurm:
        """This controller's client library, acting as ``user`` (a ``SlurmAPI``)."""
        parts = (self.state, self.views, self.jobctl, self.checkpoints)
        return SimulatedSlurm(self, parts, self.user(user))

    @cached_property
    def control(self) -> SimulatorControl:
        """What tests do to the cluster: move its clock, submit jobs, force outcomes."""
        self._whole()
        return SimulatorControl(
            self.state, self.timeline, self.population, self.lifecycle, self.checkpoints,
            self.runs, self.views, self.dbd,
        )  # fmt: skip

    # -- what it answers (``views.Views``)
    def accounting(
        self, job_id: int, since: int, until: int = 0, finished: bool = False
    ) -> tuple[JobRecord, ...]:
        self._whole()
        return self.views.accounting(job_id, since, until, finished)

    def snapshot(self) -> Snapshot:
        self._whole()
        return self.views.snapshot()

    def listing(self) -> Listing:
        self._whole()
        return self.views.listing()

    def controller_config(self) -> ControllerConfig:
        return self.views.controller_config()

    def checkpoint_events(self, job_id: int) -> tuple[StepCheckpointEvent, ...]:
        self._whole()
        return self.views.checkpoint_events(job_id)

    def transparent_steps(self, job_id: int) -> Mapping[int, TransparentStep]:
        return self.views.transparent_steps(job_id)

    def job_stdio(self, job_id: int) -> JobStdio:
        self._whole()
        return self.views.job_stdio(job_id)

    def job(self, job_id: int) -> Job:
        self._whole()
        return self.views.job(job_id)

    def step_state(self, target: StepId) -> CheckpointState:
        self._whole()
        return self.views.step_state(target)

    def job_environment(self, job_id: int) -> dict[str, str]:
        self._whole()
        return self.views.job_environment(job_id)

    def jobs_where(self, predicate: Callable[[Job], bool]) -> list[Job]:
        self._whole()
        return self.views.jobs_where(predicate)

    def records(self) -> dict[str, SavedRecord]:
        self._whole()
        return self.checkpoints.records()

    # -- scancel and scontrol (``jobctl.JobControl``)
    def signal_step(self, caller: Caller, target: StepId, signal: int, end: bool) -> None:
        self._whole()
        self.jobctl.signal_step(caller, target, signal, end)

    def kill_job(self, caller: Caller, job_id: int, signal: int) -> None:
        self._whole()
        self.jobctl.kill_job(caller, job_id, signal)

    def hold_job(self, caller: Caller, job_id: int) -> None:
        self._whole()
        self.jobctl.hold_job(caller, job_id)

    def requeue_job(self, caller: Caller, job_id: int, hold: bool) -> None:
        self._whole()
        self.jobctl.requeue_job(caller, job_id, hold)

    def release(self, caller: Caller, job_id: int) -> None:
        self._whole()
        self.jobctl.release(caller, job_id)

    def set_begin_time(self, caller: Caller, job_id: int, when: int) -> None:
        self._whole()
        self.jobctl.set_begin_time(caller, job_id, when)

    def set_required_nodes(self, caller: Caller, job_id: int, nodelist: str) -> None:
        self._whole()
        self.jobctl.set_required_nodes(caller, job_id, nodelist)

    def hold_task(self, caller: Caller, array_id: int, task: int, hold: bool) -> None:
        self._whole()
        self.jobctl.hold_task(caller, array_id, task, hold)

    # -- the checkpoint API (``checkpoint.CheckpointController``)
    def able(self, caller: Caller, target: StepId) -> AbleResult:
        self._whole()
        return self.checkpoints.able(caller, target)

    def error(self, caller: Caller, target: StepId) -> CheckpointError:
        self._whole()
        return self.checkpoints.error(caller, target)

    def enable(self, caller: Caller, target: StepId) -> ActionResult:
        self._whole()
        return self.checkpoints.enable(caller, target)

    def disable(self, caller: Caller, target: StepId) -> ActionResult:
        self._whole()
        return self.checkpoints.disable(caller, target)

    def create(
        self, caller: Caller, target: StepId, max_wait: int, image_dir: str | None
    ) -> ActionResult:
        self._whole()
        return self.checkpoints.create(caller, target, max_wait, image_dir)

    def vacate(
        self, caller: Caller, target: StepId, max_wait: int, image_dir: str | None
    ) -> ActionResult:
        self._whole()
        return self.checkpoints.vacate(caller, target, max_wait, image_dir)

    def requeue(
        self, caller: Caller, target: StepId, max_wait: int, image_dir: str | None = None
    ) -> ActionResult:
        self._whole()
        return self.checkpoints.requeue(caller, target, max_wait, image_dir)

    def complete(
        self, caller: Caller, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        self._whole()
        return self.checkpoints.complete(caller, target, begin_time, error_code, error_msg)

    def tasks(
        self,
        caller: Caller,
        target: StepId,
        begin_time: int,
        image_dir: str,
        max_wait: int,
        nodelist: str,
    ) -> ActionResult:
        self._whole()
        return self.checkpoints.tasks(caller, target, begin_time, image_dir, max_wait, nodelist)

    def restart(
        self, caller: Caller, target: StepId, stick: bool, image_dir: str | None
    ) -> ActionResult:
        self._whole()
        return self.checkpoints.restart(caller, target, stick, image_dir)

    def step_processes(self, caller: Caller, target: StepId) -> StepProcesses:
        self._whole()
        return self.checkpoints.step_processes(caller, target)

    def interconnect(self, caller: Caller, target: StepId) -> Interconnect:
        self._whole()
        return self.checkpoints.interconnect(caller, target)

    # -- automatic checkpoints (``autopolicy.AutoPolicies``)
    def set_auto(
        self, caller: Caller, target: StepId, every: int | None, before_end: int | None, off: bool
    ) -> ActionResult:
        self._whole()
        return self.policies.set_auto(caller, target, every, before_end, off)

    def auto_policies(self, job_id: int) -> Mapping[int, AutoCheckpoints]:
        return self.policies.auto_policies(job_id)


def _check_arguments(
    n_jobs: int, users: Sequence[str], checkpoint_type: str, numbered_steps: int | None
) -> None:
    """One clear line for an argument the cluster cannot be built with."""
    if n_jobs < 0:
        raise UsageError("n_jobs must be 0 or more")
    if not users:
        raise UsageError("the simulated cluster needs at least one user")
    if checkpoint_type not in CHECKPOINT_TYPES:
        raise UsageError(f"checkpoint_type must be one of {', '.join(CHECKPOINT_TYPES)}")
    if numbered_steps is not None and numbered_steps < 0:
        raise UsageError("numbered_steps must be 0 or more")


@dataclass(frozen=True, slots=True)
class _Rest:
    """What a cluster built in two parts still has to build (``SimulatedCluster._build_rest``):
    the states of the jobs after the first part, and the build's arguments it needs."""

    states: list[JobState]
    n_jobs: int
    first_job_id: int
    touches: bool
    arrays: bool
