"""The real-cluster base engine: listing through the binding, the reference's state checks.

``LiveEngine`` is what sckpt runs on a modern Slurm (20.02 and later, such as Debian 12's
22.05) when no cooperative engine is installed: jobs and steps are listed through the
libslurm binding exactly as ``squeue`` sees them, and every checkpoint operation first
applies the controller's checks in the reference's order (no such job, access, pending,
suspended, finished, no such step) and then answers ESLURM_NOT_SUPPORTED "not supported by
this Slurm".  State errors win over "not supported", as they did in Slurm itself.

Subclassing (how the cooperative engine builds on it):

* ``check_target(target, job_level_ok_for_slurm_user=True)`` runs checks 1-6 on fresh data
  and returns ``(job, steps)``: the steps the operation acts on (every RUNNING step for
  the whole job);
* ``checkpoint_state(job, step)`` decides what the snapshot shows per step (override it
  to read a state store); it runs for every step on every changed snapshot, so keep it
  cheap;
* override the nine operations and call ``check_target`` first (the four job-control
  verbs, cancel, hold, release and requeue, are the controller's and defined here once);
* ``caller_uid`` / ``caller_name`` are the real user running sckpt; ``slurm_user()`` is
  the cluster's SlurmUser; ``binding`` is the ``sckpt.backend.libslurm`` Binding.

Made for the name ``live`` by ``engines/registry.py``.
"""

from __future__ import annotations

import contextlib
import signal as signal_module
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import groupby
from operator import attrgetter

from .. import rules
from ..errors import (
    AccessDenied,
    InvalidJobId,
    NotSupported,
    SlurmError,
)
from ..gc_pause import cyclic_gc_paused, freeze_built
from ..give_way import paced
from ..model import (
    STEP_PENDING,
    AbleResult,
    ActionResult,
    CheckpointError,
    CheckpointState,
    ClusterInfo,
    Interconnect,
    Job,
    JobRecord,
    JobStdio,
    JobView,
    NodePids,
    Snapshot,
    Step,
    StepId,
    StepProcesses,
    StepView,
    label_steps,
)
from ..slurm_api import ControllerConfig, SlurmAPI, StepsResult
from .base import Engine

AUTO_UNDER_RUN = (
    "automatic checkpoints are those of steps under `sckpt run` (--every, --before-end), "
    "which the cooperative engine changes"
)
"""Why an engine without ``sckpt run``'s state files cannot change a step's policy."""


class LiveEngine(Engine):
    """Jobs and steps from libslurm; checkpoint operations: state checks, then NotSupported."""

    name = "live"
    waits_on_controller = True
    runs_checkpoints = False  # a subclass that carries them out says True

    def __init__(self, binding: SlurmAPI, clock: Callable[[], float] = time.time) -> None:
        self.binding = binding
        self.clock = clock
        """When a snapshot is taken (the simulated controller's clock in the demo and tests)."""
        self.caller_uid: int = binding.caller_uid
        self.caller_name = binding.caller_name
        self._lock = threading.RLock()
        self._jobs_update = 0
        self._steps_update = 0
        self._jobs: tuple[Job, ...] = ()
        self._by_job: dict[int, Job] = {}
        self._steps_by_job: dict[int, tuple[Step, ...]] = {}
        """Each job's steps in squeue's order (``rules.step_order``)."""
        self._listed_raw: Mapping[int, tuple[Step, ...]] = {}
        """Each job's steps in the listing's order (to reuse the sorted tuple above)."""
        self._views: tuple[JobView, ...] = ()
        self._views_by_id: dict[int, JobView] = {}
        """The last views by job id, and the step listing each was built from."""
        self._listed_by_id: dict[int, tuple[Step, ...]] = {}
        """``_steps_by_job`` when the views were last built (each job's view was built from
        its entry, or from an equal one)."""
        self._loaded = False
        self._listing_changes = 0
        """How many refreshes found the listing changed.  Any caller may refresh (an action
        looks at its job first), so whether the views are current is this count against
        ``_views_of``, never what the snapshot's own refresh returned."""
        self._views_of = -1
        """``_listing_changes`` when the views were last built."""
        self._conf: ControllerConfig | None = None

    @property
    def acting_user(self) -> str:
        """The real user running sckpt: the controller checks every request against it."""
        return self.caller_name

    # ------------------------------------------------------------------ facts

    def controller_config(self) -> ControllerConfig:
        """``slurm_load_ctl_conf`` once (ControllerConfig), then from memory."""
        with self._lock:
            if self._conf is None:
                self._conf = self.binding.ctl_conf()
            return self._conf

    def slurm_user(self) -> str:
        """SlurmUser (allowed whole-job requests on anyone's job); "" when unknown."""
        try:
            return str(self.controller_config().slurm_user)
        except SlurmError:
            return ""

    def not_supported_reason(self) -> str:
        """Why checkpoint operations cannot work here, in words."""
        version = self.binding.header_version or "this release"
        return (
            f"not supported by this Slurm ({version}): the checkpoint API was removed in "
            "20.02 and no cooperative engine is installed"
        )

    def cluster_info(self) -> ClusterInfo:
        try:
            conf = self.controller_config()
        except SlurmError:
            # Controller down: still say what we know; the facade asks again later.
            return ClusterInfo(
                cluster_name="",
                slurm_version=self.binding.header_version,
                engine=self.name,
                acting_user=self.caller_name,
            )
        return ClusterInfo(
            cluster_name=conf.cluster_name,
            slurm_version=conf.version,
            engine=self.name,
            acting_user=self.caller_name,
            switch_type=conf.switch_type,
            proctrack_type=conf.proctrack_type,
        )

    # ------------------------------------------------------------------ accounting

    def _own_cluster(self) -> str:
        """The controller's ClusterName for accounting queries ("": let slurmdbd's client
        use the local one, when the controller does not answer)."""
        try:
            return str(self.controller_config().cluster_name)
        except SlurmError:
            return ""

    def now(self) -> float:
        return self.clock()

    def job_records(self, job_id: int, since: int, until: int = 0) -> tuple[JobRecord, ...]:
        return self.binding.job_records(job_id, since, until, cluster=self._own_cluster())

    def finished_jobs(self, since: int, until: int = 0) -> tuple[JobRecord, ...]:
        return self.binding.finished_jobs(since, until, cluster=self._own_cluster())

    # ------------------------------------------------------------------ listing

    def refresh(self) -> bool:
        """Load jobs, and steps only when the jobs changed; True when anything changed.

        One RPC when nothing changed.  slurmctld answers "no change" to both
        REQUEST_JOB_INFO and REQUEST_JOB_STEP_INFO by one test against the same clock,
        ``(request->last_update - 1) >= last_job_update`` (src/slurmctld/proc_req.c,
        ``_slurm_rpc_dump_jobs`` and ``_slurm_rpc_job_step_get_info``, identical in every
        release sckpt supports: 19.05, 20.02, 20.11, 21.08, 22.05, 23.02, 23.11, 24.05,
        24.11, 25.05, 25.11, 26.05), and creating or deleting a step bumps
        ``last_job_update`` (``_create_step_record`` / ``delete_step_record`` in
        src/slurmctld/step_mgr.c, src/stepmgr/stepmgr.c from 24.05).  The steps are always
        asked right after a jobs answer that changed, so their update time is never older
        than the jobs': when the jobs say "no change", so would the steps.
        tests/binding/test_lists.py checks the bump and the single RPC on the real 22.05;
        on 19.05 the source above is the evidence (tests/native runs this refresh there).
        """
        with self._lock:
            jobs = self.binding.load_jobs(self._jobs_update if self._loaded else 0)
            if jobs.changed or not self._loaded:
                steps = self.binding.get_steps(self._steps_update if self._loaded else 0)
            else:
                steps = StepsResult(False, self._steps_update)
            changed = not self._loaded or jobs.changed or steps.changed
            self._listing_changes += changed
            if jobs.changed or not self._loaded:
                self._jobs = jobs.jobs
                self._jobs_update = jobs.last_update
                self._by_job = dict(zip(map(_JOB_ID, self._jobs), self._jobs, strict=True))
            if steps.changed or not self._loaded:
                self._steps_update = steps.last_update
                self._listed_raw, self._steps_by_job = _group_steps(
                    steps, self._listed_raw, self._steps_by_job
                )
            self._loaded = True
            return changed

    def checkpoint_state(self, job: Job, step: Step) -> CheckpointState:
        """What the console shows for a step: here, why checkpoints cannot happen."""
        by_job = rules.column_for_job(job)
        if by_job is not None:
            return CheckpointState(by_job[0], reason=by_job[1])
        return CheckpointState(
            rules.column_for_step(0, False, rules.Plugin.NONE), reason=self.not_supported_reason()
        )

    volatile_states = False
    """True when ``checkpoint_state`` can change while the job/step list does not (a state
    store, the controller's able/error): the views of the jobs ``states_due`` names are
    then rebuilt on every snapshot and ``changed`` says whether they differ."""

    def states_due(self) -> set[int] | None:
        """Jobs whose checkpoint states may have changed while their listing did not.

        None: any job.  The listing engine's states follow from the listing alone: no
        job.  Engines with ``volatile_states`` name theirs (every job by default).
        """
        return None if self.volatile_states else set()

    def step_views(self, job: Job, steps: Sequence[Step]) -> tuple[StepView, ...]:
        """A job's steps with their ``checkpoint_state`` (engines may share work per job)."""
        return tuple(StepView(step, self.checkpoint_state(job, step)) for step in steps)

    def build_views(self) -> tuple[JobView, ...]:
        """Jobs with their steps and each step's ``checkpoint_state``.

        A job whose record and steps equal the previous snapshot's, and whose states are
        not due (``states_due``), keeps its previous ``JobView`` object without asking
        ``checkpoint_state`` again: the console skips a view it has seen by identity, so on
        a 10,000-job cluster where a few jobs changed it rebuilds and compares a few rows,
        not all of them (new views for every job cost the idle console ~5 s of CPU a
        minute on the bench cluster).
        """
        due = self.states_due()
        old_view = self._views_by_id.get
        listed_now = self._steps_by_job.get
        listed_then = self._listed_by_id.get
        views: list[JobView] = []
        keep = views.append
        for job in paced(self._jobs):  # a key goes first: give_way.py
            job_id = job.job_id
            listed = listed_now(job_id, ())
            old = old_view(job_id)
            if old is None or not (old.job is job or old.job == job):
                keep(self._restated(job, listed, None))
            elif due is not None and job_id not in due and listed_then(job_id, ()) == listed:
                keep(old)  # the tuple comparison: C-level, identity first
            else:
                keep(self._restated(job, listed, old))
        self._views_by_id = dict(zip(map(_JOB_ID, self._jobs), views, strict=True))
        self._listed_by_id = self._steps_by_job  # replaced, never changed in place
        return tuple(views)

    def _restated(self, job: Job, listed: Sequence[Step], old: JobView | None) -> JobView:
        """The job's view with its steps' states asked again: ``old`` (the view of this
        same job record) when they are what it shows, so the console skips it by
        identity; else a new view."""
        steps = self.step_views(job, label_steps(job, listed))
        if old is not None and old.steps == steps:
            return old
        return JobView(job, steps)

    def snapshot(self) -> Snapshot:
        # The listing's and the views' records hold no cycles: gc_pause.py.
        with self._lock, cyclic_gc_paused():
            first = not self._views
            self.refresh()
            changed = self._views_of != self._listing_changes
            if changed or first:
                views = self.build_views()
                if first:
                    freeze_built(len(views))
                changed = changed or views != self._views
                self._views = views
                self._views_of = self._listing_changes
            elif self.volatile_states:
                changed = self._rebuild_due()
            return Snapshot(jobs=self._views, taken_at=self.clock(), changed=changed)

    def _rebuild_due(self) -> bool:
        """The listing did not change: rebuild the views of the jobs whose states are due
        only; True when one of them differs.

        What ``build_views`` would do with an unchanged listing, without its pass over
        every job: an idle console on a 10,000-job cluster with 50 running jobs looks at
        50 jobs per refresh, not 10,000 (that pass was most of its idle CPU).
        """
        due = self.states_due()
        by_id = self._views_by_id
        replaced: dict[int, JobView] = {}
        for job_id in by_id if due is None else due:
            old = by_id.get(job_id)
            if old is None:
                continue
            view = self._restated(old.job, self._steps_by_job.get(job_id, ()), old)
            if view is not old:
                replaced[job_id] = view
        if not replaced:
            return False
        by_id.update(replaced)
        self._views = tuple(replaced.get(v.job.job_id, v) for v in self._views)
        return True

    def ping(self) -> float:
        return self.binding.ping()

    def job_stdio(self, target: StepId) -> JobStdio:
        try:
            return self.binding.job_stdio(target.job_id)
        except InvalidJobId as refused:  # Slurm's code alone: say what it means here
            refused.hint = refused.hint or f"there is no job {target.job_id}"
            raise

    def step_processes(self, target: StepId) -> StepProcesses:
        if target.is_whole_job:
            with self._lock:
                self.refresh()
                steps = [
                    s for s in self._steps_by_job.get(target.job_id, ()) if s.state == "RUNNING"
                ]
            if target.job_id not in self._by_job:
                raise InvalidJobId(hint=f"there is no job {target.job_id}")
            nodes: list[NodePids] = []
            proctrack = ""
            for step in steps:
                one = self.binding.step_pids(step.step_id)
                proctrack = one.proctrack_type
                nodes.extend(one.nodes)
            return StepProcesses(target, tuple(nodes), proctrack)
        return self.binding.step_pids(target)

    def interconnect(self, target: StepId) -> Interconnect:
        with self._lock:
            self.refresh()
            job = self._by_job.get(target.job_id)
            if job is None:
                raise InvalidJobId(hint=f"there is no job {target.job_id}")
            steps = list(self._steps_by_job.get(target.job_id, ()))
            if not target.is_whole_job:
                steps = [s for s in steps if s.step_id.step == target.step]
                if not steps:
                    raise InvalidJobId(hint=f"job {target.job_id} has no step {target.step_text}")
        switch = ""
        try:
            switch = self.controller_config().switch_type
        except SlurmError:
            switch = ""
        network = next((s.network for s in steps if s.network), "")
        return Interconnect(target, switch, network)

    # ------------------------------------------------------------------ the reference's checks

    def caller(self) -> rules.Caller:
        """Who the controller sees: the real user, and whether that is SlurmUser."""
        if self.caller_uid == 0:
            return rules.Caller(0, self.caller_name)
        slurm_user = self.slurm_user()
        return rules.Caller(
            self.caller_uid,
            self.caller_name,
            is_slurm_user=bool(slurm_user) and slurm_user == self.caller_name,
        )

    def check_target(self, target: StepId, *, suspended_ok: bool = False) -> tuple[Job, list[Step]]:
        """``rules.check_target`` (checks 1-6, in the controller's order) on fresh data;
        ``suspended_ok`` for a completion report."""
        with self._lock:
            self.refresh()
            job = self._by_job.get(target.job_id)
            steps = list(self._steps_by_job.get(target.job_id, ()))
        return rules.check_target(target, job, steps, self.caller(), suspended_ok=suspended_ok)

    def check_restart(self, target: StepId) -> Job | None:
        """``rules.check_restart`` (ESLURM_JOB_NOT_FINISHED) on fresh data; the job's
        listing, None when it is not listed.  (A step that is not the batch step never
        gets here: ``acting.perform`` refused it, the row's ``job_level``.)"""
        with self._lock:
            self.refresh()
            job = self._by_job.get(target.job_id)
        rules.check_restart(target, job)
        return job

    def not_supported(self) -> NotSupported:
        return NotSupported(hint=self.not_supported_reason())

    # ------------------------------------------------------------------ the nine operations

    def able(self, target: StepId) -> AbleResult:
        self.check_target(target)
        raise self.not_supported()

    def error(self, target: StepId) -> CheckpointError:
        self.check_target(target)
        raise self.not_supported()

    def create(self, target: StepId, max_wait: int, image_dir: str | None) -> ActionResult:
        self.check_target(target)
        raise self.not_supported()

    def vacate(
        self, target: StepId, max_wait: int, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        self.check_target(target)
        raise self.not_supported()

    def restart(
        self, target: StepId, stick: bool, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        self.check_restart(target)
        raise self.not_supported()

    def enable(self, target: StepId) -> ActionResult:
        self.check_target(target)
        raise self.not_supported()

    def disable(self, target: StepId) -> ActionResult:
        self.check_target(target)
        raise self.not_supported()

    def complete(
        self, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        self.check_target(target, suspended_ok=True)  # as job_step_checkpoint_comp
        raise self.not_supported()

    def tasks(
        self, target: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> ActionResult:
        self.check_target(target)
        raise self.not_supported()

    def auto(
        self, target: StepId, every: int | None, before_end: int | None, off: bool
    ) -> ActionResult:
        self.check_target(target)
        raise NotSupported(hint=f"{AUTO_UNDER_RUN}; {self.not_supported_reason()}")

    # ------------------------------------------------------------------ job control
    # The same on every engine that talks to a controller (native, cooperative, live, the
    # demo's simulated one): the controller applies its own rules and its refusal comes
    # back as it is, code, name and message, as scancel and scontrol print it.  No check
    # of sckpt's runs first, so the answer is always the controller's.

    @contextlib.contextmanager
    def _owner_named(self, target: StepId) -> Iterator[None]:
        """A job-control refusal for want of ownership, with whose job it is, as a
        checkpoint refusal says it (``rules.owner_hint``): Slurm's answer is the code alone.
        The code, name and message stay the controller's; the binding's general hint for
        hold and release ("neither the job's owner nor an operator") stays only when the
        job is not in the listing."""
        try:
            yield
        except AccessDenied as refused:
            with self._lock, contextlib.suppress(SlurmError):
                self.refresh()  # one listing, on a refusal only
            job = self._by_job.get(target.job_id)
            if job is not None:
                refused.hint = rules.owner_hint(job, "an operator")
            raise

    def cancel(self, target: StepId, signal: int | None) -> ActionResult:
        """scancel: the whole job (``slurm_kill_job``) or one step (``slurm_kill_job_step``)
        ends; with ``signal``, only that signal is sent (``scancel --signal``: to the job's
        steps, or to the one step with ``slurm_signal_job_step``)."""
        with self._owner_named(target):
            return self._cancel(target, signal)

    def _cancel(self, target: StepId, signal: int | None) -> ActionResult:
        if target.is_whole_job:
            self.binding.kill_job(target.job_id, _SIGKILL if signal is None else signal)
        elif signal is None:
            self.binding.kill_step(target, _SIGKILL)
        else:
            self.binding.signal_step(target, signal)
        detail = "" if signal is None else f"signal {_signal_name(signal)} sent"
        return ActionResult(target, "cancel", detail=detail)

    def hold(self, target: StepId) -> ActionResult:
        """scontrol hold: priority 0 (JobHeldAdmin for an operator, JobHeldUser otherwise);
        an array task still pending in its array's record (``unresolved``) by its name."""
        with self._owner_named(target):
            if target.unresolved:
                assert target.array_task_id is not None  # unresolved says so
                self.binding.hold_task(target.array_job_id, target.array_task_id, hold=True)
            else:
                self.binding.hold(target.job_id)
        return ActionResult(target, "hold")

    def release(self, target: StepId) -> ActionResult:
        """scontrol release: a held job's priority is computed again (an array task still
        pending in its array's record: by its name, as ``hold``)."""
        with self._owner_named(target):
            if target.unresolved:
                assert target.array_task_id is not None  # unresolved says so
                self.binding.hold_task(target.array_job_id, target.array_task_id, hold=False)
            else:
                self.binding.release(target.job_id)
        return ActionResult(target, "release")

    def requeue(self, target: StepId) -> ActionResult:
        """scontrol requeue: a batch job ends and goes back to pending (not held)."""
        with self._owner_named(target):
            self.binding.requeue(target.job_id, hold=False)
        return ActionResult(target, "requeue")


_SIGKILL = int(signal_module.SIGKILL)
"""What scancel sends without ``--signal``: the controller then ends the job or step."""


def _signal_name(number: int) -> str:
    """``SIGUSR1`` for 10; the number itself for a signal Python has no name for (SIGRTMIN+n)."""
    try:
        return signal_module.Signals(number).name
    except ValueError:
        return str(number)


def _step_key(step: Step) -> tuple[int, int]:
    return rules.step_order(step.step_id.step)


_JOB_ID = attrgetter("job_id")
_JOB_OF = attrgetter("step_id.job_id")
_STEP_OF = attrgetter("step_id.step")


def _group_steps(
    result: StepsResult,
    raw_before: Mapping[int, tuple[Step, ...]],
    sorted_before: dict[int, tuple[Step, ...]],
) -> tuple[Mapping[int, tuple[Step, ...]], dict[int, tuple[Step, ...]]]:
    """The steps of each job: as listed, and in squeue's order (tuples, so that
    ``build_views`` compares a job's steps with the last listing's in one C-level
    comparison, identical records by identity).

    Why this shape: a changed step listing is the whole queue's steps (100,000 at 10,000
    jobs), and this runs on every one.  A binding that keeps its answer grouped
    (``StepsResult.by_job``) hands the same tuple for a job whose steps did not change, so
    only new tuples are looked at.  Otherwise slurmctld lists a job's steps together, so
    ``groupby`` with ``attrgetter`` groups them in C; a job whose steps are the very
    records of the last listing keeps its sorted tuple instead of being sorted again.
    Pending steps -- an srun waiting for resources, one record per wait with no process
    behind it, which ``squeue -s`` does not show -- are not steps to act on and are left
    out of the sorted tuples.
    """
    ordered: dict[int, tuple[Step, ...]] = {}
    before = raw_before.get
    if result.by_job is not None:
        for job_id, listed in paced(result.by_job.items()):
            old = before(job_id)
            same = old is listed or (old is not None and old == listed)
            ordered[job_id] = sorted_before[job_id] if same else _in_squeue_order(listed)
        return result.by_job, ordered  # the binding's own: read here, never changed
    raw = _grouped(result.steps)
    for job_id, listed in raw.items():
        old = before(job_id)
        if old is not None and old[0] is listed[0] and old == listed:
            # The last listing's tuples: the new ones die at once, so a changed listing
            # leaves no new objects for the cyclic GC to walk (each survivor was one).
            raw[job_id] = old
            ordered[job_id] = sorted_before[job_id]
        else:
            ordered[job_id] = _in_squeue_order(listed)
    return raw, ordered


def _grouped(steps: Sequence[Step]) -> dict[int, tuple[Step, ...]]:
    """A flat listing's steps per job, in its order (C-level ``groupby``)."""
    groups = [(job_id, tuple(group)) for job_id, group in groupby(steps, _JOB_OF)]
    raw = dict(groups)
    if len(raw) != len(groups):  # a job listed in two places: join its groups
        raw = {}
        for job_id, listed in groups:
            earlier = raw.get(job_id)
            raw[job_id] = listed if earlier is None else earlier + listed
    return raw


def _in_squeue_order(listed: tuple[Step, ...]) -> tuple[Step, ...]:
    """A job's steps in squeue's order, pending ones left out (a C-level search first:
    they are rare)."""
    if STEP_PENDING in map(_STEP_OF, listed):
        listed = tuple(s for s in listed if s.step_id.step != STEP_PENDING)
    if len(listed) > 1:
        return tuple(sorted(listed, key=_step_key))
    return listed
