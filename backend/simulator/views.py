"""What the simulated controller answers about its jobs: the listing ``load_jobs`` and
``get_steps`` return, the views with each step's checkpoint state (the tests' oracle),
the configuration, the stdio paths, the checkpoint history and accounting.

Views (``JobView``) are built when asked and rebuilt only for jobs that changed, so an
unchanged snapshot costs one tuple of the cached views.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain
from operator import attrgetter
from types import MappingProxyType

from .. import rules
from ..errors import InvalidJobId, describe
from ..gc_pause import cyclic_gc_paused
from ..model import (
    CheckpointError,
    CheckpointKind,
    CheckpointState,
    Job,
    JobRecord,
    JobState,
    JobStdio,
    JobView,
    Snapshot,
    Step,
    StepCheckpointEvent,
    StepId,
    StepView,
    label_steps,
)
from ..slurm_api import ControllerConfig
from .accounting import Accounting
from .catalog import SLURM_USER
from .events import Timeline
from .records import (
    SIMULATED_VERSION,
    JobRec,
    Listing,
    StepRec,
    TransparentStep,
    in_progress,
    untouched,
)
from .state import ClusterState

_ABLE = CheckpointState(kind=CheckpointKind.ABLE)
_STEP = attrgetter("step")
"""A ``StepRec``'s step (``records.step_of``, at C speed)."""
_NO_TRANSPARENT: Mapping[int, TransparentStep] = MappingProxyType({})


class Views:
    """The controller's answers about jobs, steps and their checkpoint state."""

    def __init__(self, state: ClusterState, timeline: Timeline, dbd: Accounting) -> None:
        self.state = state
        self.timeline = timeline
        self.dbd = dbd
        self._plugin = state.plugin
        self._checkpoint_type = state.settings.checkpoint_type
        self._listed_jobs: dict[int, Job] = {}
        """Each job's record, in job id order: what ``load_jobs`` lists."""
        self._step_records: dict[int, tuple[Step, ...]] = {}
        """Each job's step records as listed, one tuple per job, replaced only when the job
        changes (``StepsResult.by_job``: see ``listing``)."""
        self._returned_version = -1
        self._listed = Listing(-1, (), (), {})
        self._last_snapshot: tuple[JobView, ...] = ()
        self._output_paths: dict[int, tuple[str, str]] = {}
        """Where jobs write, as ``sbatch -o/-e`` set it (``set_output_paths``)."""

    def set_output_paths(self, job_id: int, std_out: str, std_err: str = "") -> None:
        """Where job ``job_id`` writes (as ``sbatch -o/-e`` would set it)."""
        with self.state.lock:
            self._output_paths[job_id] = (std_out, std_err or std_out)

    def accounting(
        self, job_id: int, since: int, until: int = 0, finished: bool = False
    ) -> tuple[JobRecord, ...]:
        """What slurmdbd answers (``Accounting.query``), up to now."""
        self.dbd.asked(job_id, finished)
        with self.state.lock:
            self.timeline.tick()
            return self.dbd.query(
                self.state.jobs, int(self.state.now), job_id, since, until, finished
            )

    def _ckpt_view(self, rec: JobRec, srec: StepRec) -> CheckpointState:
        # A plain running step (no history, counter 0, no error) shares one state object.
        if untouched(srec) and rec.job.state is JobState.RUNNING and self._plugin.supported:
            return _ABLE
        by_job = rules.column_for_job(rec.job)
        if by_job is not None:
            kind, reason = by_job
        else:
            plugin = rules.Plugin.WORKS if self._plugin.supported else rules.Plugin.NONE
            kind = rules.column_for_step(srec.disable_count, in_progress(srec), plugin)
            reason = {
                CheckpointKind.NOT_SUPPORTED: f"CheckpointType is {self._checkpoint_type}",
                CheckpointKind.IN_PROGRESS: "vacate" if srec.ckpt_vacate else "create",
                CheckpointKind.DISABLED: f"disabled {srec.disable_count}x",
            }.get(kind, "")
        last = None
        if srec.error_code:
            name, _msg = describe(srec.error_code)
            last = CheckpointError(srec.error_code, name, srec.error_msg)
        return CheckpointState(
            kind=kind,
            disable_count=srec.disable_count,
            in_progress_since=srec.ckpt_start if in_progress(srec) else 0,
            reason=reason,
            last_error=last,
            image_dir=srec.image_dir,
            last_checkpoint_time=srec.last_ckpt,
            history=tuple(srec.history or ()),
        )

    def rebuild_dirty(self, *, anew: bool = False) -> None:
        """Bring the listing (each job's record and step records, in id order) up to date
        with the jobs that changed; ``anew``: list every job again (the end of a build in
        two parts, ``staging.py``).  While the cluster is still being built the listing
        stays the first part's."""
        if self.state.staging.building or not (self.state.dirty or anew):
            return
        everything = anew or not self._listed_jobs  # the first build: every job, in id order
        with cyclic_gc_paused(everything):  # no cycles here either: gc_pause.py
            if everything:
                self._list_all()
            else:
                self._relist(sorted(self.state.dirty))
        self.state.dirty.clear()
        self.state.version += 1

    def _list_all(self) -> None:
        """The first listing: every job's record and step records, in one pass each (a
        100,000-job demo builds this before its first screen).  Listed in id order: the
        jobs were made in that order but for the demo arrays' own records (an array's id
        is taken before its tasks' ids)."""
        jobs = self.state.jobs
        self._listed_jobs = {job_id: jobs[job_id].job for job_id in sorted(jobs)}
        steps_of = self._step_records
        for job_id, rec in jobs.items():
            steps_of[job_id] = tuple(map(_STEP, rec.steps.values()))

    def _relist(self, order: list[int]) -> None:
        """The listing's entries of the jobs ``order`` names (id order), from their records."""
        listed = self._listed_jobs
        for job_id in order:
            rec = self.state.jobs.get(job_id)
            if rec is None:
                listed.pop(job_id, None)
                self._step_records.pop(job_id, None)
                continue
            # Steps are stored in squeue's order (batch, extern, 0, 1 ...).
            self._step_records[job_id] = tuple(srec.step for srec in rec.steps.values())
            if job_id not in listed and listed and job_id < next(reversed(listed)):
                # A job id older than the newest (never happens for new submissions): resort.
                listed[job_id] = rec.job
                self._listed_jobs = dict(sorted(listed.items()))
                listed = self._listed_jobs
            else:
                listed[job_id] = rec.job

    def snapshot(self) -> Snapshot:
        """Every job with its steps and their checkpoint state, as the simulator knows them
        (the tests' oracle).  Built when asked, not kept: the demo's console reads the
        controller through ``connect``, and views of 300,000 steps kept here for nobody
        were ~30 MB of the demo's memory at 100,000 jobs."""
        with self.state.lock:
            self.timeline.tick()
            self.rebuild_dirty()
            changed = self.state.version != self._returned_version
            if changed:
                self._last_snapshot = tuple(
                    self._view(self.state.jobs[job_id]) for job_id in self._listed_jobs
                )
                self._returned_version = self.state.version
            return Snapshot(jobs=self._last_snapshot, taken_at=self.state.clock(), changed=changed)

    def _view(self, rec: JobRec) -> JobView:
        view = self._ckpt_view
        steps = rec.steps.values()
        if rec.job.array_task_id is None:
            return JobView(rec.job, tuple(StepView(s.step, view(rec, s)) for s in steps))
        labelled = label_steps(rec.job, [s.step for s in steps])
        return JobView(
            rec.job,
            tuple(StepView(st, view(rec, s)) for st, s in zip(labelled, steps, strict=True)),
        )

    def listing(self) -> Listing:
        """What ``load_jobs``/``get_steps`` answer.

        The counter moves whenever anything changed (like slurmctld's ``last_job_update``,
        it never moves back), so a client passing it back gets "no change" until then.
        """
        with self.state.lock:
            self.timeline.tick()
            self.rebuild_dirty()
            if self._listed.version != self.state.version + 1:
                # C-level passes over kept per-job tuples: the demo lists its 100,000
                # steps on every changed refresh, in the console's own process.  The
                # copy of the per-job tuples is the answer's own (later changes do not
                # reach it), and an unchanged job's tuple is the last answer's object.
                self._listed = Listing(
                    self.state.version + 1,
                    tuple(self._listed_jobs.values()),
                    tuple(
                        chain.from_iterable(map(self._step_records.__getitem__, self._listed_jobs))
                    ),
                    dict(self._step_records),
                )
            return self._listed

    def controller_config(self) -> ControllerConfig:
        """What ``slurm_load_ctl_conf`` answers."""
        return ControllerConfig(
            cluster_name=self.state.settings.cluster_name,
            version=SIMULATED_VERSION,
            switch_type="switch/none",
            proctrack_type="proctrack/cgroup",
            select_type="select/cons_res",
            slurm_user=SLURM_USER,
            control_host="localhost",
            slurmctld_port=6817,
            prolog_contain=True,
            checkpoint_type=self.state.settings.checkpoint_type,
            last_update=int(self.state.now),
        )

    def checkpoint_events(self, job_id: int) -> tuple[StepCheckpointEvent, ...]:
        """Every checkpoint event the controller keeps of the job's steps, oldest first
        (the last ``HISTORY_LIMIT`` per step; a job no longer known has none)."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.jobs.get(job_id)
            if rec is None:
                return ()
            found = [
                StepCheckpointEvent(srec.step.step_id, event)
                for srec in rec.steps.values()
                for event in srec.history or ()
            ]
        return tuple(sorted(found, key=lambda e: (e.event.time, e.step_id)))

    def transparent_steps(self, job_id: int) -> Mapping[int, TransparentStep]:
        """The job's steps launched under ``sckpt run --transparent``, by step number
        (the demo's; none on a cluster built without ``demo_touches``)."""
        with self.state.lock:
            marked = self.state.transparent.get(job_id)
            return MappingProxyType(dict(marked)) if marked else _NO_TRANSPARENT

    def job_stdio(self, job_id: int) -> JobStdio:
        """``scontrol show job``'s StdOut/StdErr: Slurm's default for a batch job
        (``WORK_DIR/slurm-JOB.out``, errors to the same file), none for an interactive one.
        Anyone may ask, as on a Slurm without PrivateData=jobs."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.jobs.get(job_id)
            if rec is None:
                raise InvalidJobId()
            job = rec.job
            default = f"{job.work_dir}/slurm-{job_id}.out" if job.batch else ""
            if self.timeline.output is not None and job.batch:
                default = self.timeline.output.path(job_id)
                self.timeline.write_output(job_id)
            out, err = self._output_paths.get(job_id, (default, default))
            user = next((u.name for u in self.state.settings.users if u.uid == job.uid), job.user)
            return JobStdio(job_id, out, err, job.state, job.uid, user, job.batch)

    def job(self, job_id: int) -> Job:
        """The current record of one job (the tests' oracle)."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.jobs.get(job_id)
            if rec is None:
                raise InvalidJobId(hint=f"no job {job_id}")
            return rec.job

    def step_state(self, target: StepId) -> CheckpointState:
        """The checkpoint state of one step, as the snapshot shows it (the tests' oracle)."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.jobs.get(target.job_id)
            srec = rec.steps.get(target.step) if rec is not None else None
            if rec is None or srec is None:
                raise InvalidJobId(hint=f"no step {target}")
            return self._ckpt_view(rec, srec)

    def job_environment(self, job_id: int) -> dict[str, str]:
        """Environment the job's tasks get from the cluster (``SLURM_RESTART_DIR``)."""
        with self.state.lock:
            rec = self.state.jobs.get(job_id)
            return dict(rec.env) if rec is not None else {}

    def jobs_where(self, predicate: Callable[[Job], bool]) -> list[Job]:
        """Jobs matching ``predicate``, by id (for the tests to pick a job in a state)."""
        with self.state.lock:
            self.timeline.tick()
            return [r.job for r in self.state.jobs.values() if predicate(r.job)]
