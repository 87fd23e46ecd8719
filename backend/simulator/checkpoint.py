"""The checkpoint API as the simulated slurmctld runs it: the controller's checks in order
(``rules.check_job``), then the plugin (``plugins.py``) on each step acted on.

Rules, in the controller's order of checks:

1. no such job -> ESLURM_INVALID_JOB_ID
2. caller neither owner nor root -> ESLURM_ACCESS_DENIED (job-level requests: SlurmUser too)
3. pending -> ESLURM_JOB_PENDING
4. suspended -> ESLURM_DISABLED (job-level request: ESLURM_JOB_SUSPENDED)
5. not running -> ESLURM_ALREADY_DONE
6. no such step -> ESLURM_INVALID_JOB_ID
7. the plugin (``CheckpointPlugin``; checkpoint/none answers ESLURM_NOT_SUPPORTED).

"Job-level" requests are the whole job (``123``) and the batch script (``123.batch``): in
Slurm 19.05 ``SLURM_BATCH_SCRIPT`` *was* ``NO_VAL``, so both reached the controller's
job-level path (SlurmUser allowed, ESLURM_JOB_SUSPENDED, job record saved by create/vacate,
restart accepted).  They differ in what the plugin acts on: the whole job acts on every
RUNNING step and reports the highest code; ``123.batch`` acts on the batch step alone.

A checkpoint the plugin starts runs for at most ``max_wait`` seconds (0 = no limit) in
simulated time; at its end the error code/message record the result (ETIME when max_wait
ran out); vacate then terminates the step (the batch step's end ends the job).  Those
running checkpoints are ``checkpoint_runs.CheckpointRuns``'s.
Restart (given the job or its batch step: another step is refused before any engine, by
restart's row, ``acting.perform``): ESLURM_JOB_NOT_FINISHED while the job runs, ENOENT
without the saved record ``<dir>/<jobid>.ckpt``, EINVAL when the record is for another job,
EPERM for a non-owner who is neither root nor SlurmUser; the job is resubmitted under the
same id, pinned to its old nodes with ``stick``, and its tasks get ``SLURM_RESTART_DIR``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .. import operations, rules
from ..errors import (
    ESLURM_NOT_SUPPORTED,
    ESLURM_USER_ID_MISSING,
    ESLURMD_JOB_NOTRUNNING,
    ESLURMD_STEP_SUSPENDED,
    AlreadyDone,
    Disabled,
    InvalidJobId,
    NoSuchImage,
    NotSupported,
    describe,
    error_for,
)
from ..hostlist import expand_hostlist
from ..model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    Interconnect,
    JobState,
    NodePids,
    StepId,
    StepProcesses,
)
from ..rules import Caller
from .catalog import APPS, stable_hash
from .checkpoint_runs import CheckpointRuns
from .events import Timeline
from .lifecycle import Lifecycle
from .records import (
    JobRec,
    SavedRecord,
    StepRec,
    in_progress,
    keep_highest,
    pending_again,
    record_event,
)
from .state import ClusterState


class CheckpointController:
    """The nine checkpoint operations (plus requeue), acting as ``caller``: the
    controller's checks, then the plugin on each step acted on; the checkpoints they
    start run in ``runs``, and create/vacate of a batch job save its record here."""

    def __init__(
        self, state: ClusterState, timeline: Timeline, lifecycle: Lifecycle, runs: CheckpointRuns
    ) -> None:
        self.state = state
        self.timeline = timeline
        self.lifecycle = lifecycle
        self.runs = runs
        self._records: dict[str, SavedRecord] = {}
        """Saved job records by path (the simulated ``<dir>/<jobid>.ckpt`` files)."""

    def put_record(self, path: str, record: SavedRecord) -> None:
        """Place a saved record at ``path`` (a copied or foreign file: restart's EINVAL)."""
        with self.state.lock:
            self._records[path] = record

    def records(self) -> dict[str, SavedRecord]:
        """Saved job records by path (the simulated ``<dir>/<jobid>.ckpt`` files)."""
        with self.state.lock:
            return dict(self._records)

    def _batch_job_plugin_call(self, rec: JobRec, target: StepId) -> bool:
        """The plugin answers a job-level request on a batch job without a step
        (checkpoint/ompi's ``job_checkpoint``: ESLURM_NOT_SUPPORTED)."""
        return self.state.plugin.refuses_job_level(target, rec.job.batch)

    def _aggregate(
        self, target: StepId, operation: str, codes: list[tuple[StepId, int]], detail: str = ""
    ) -> ActionResult:
        """``rules.aggregate``, saying which CheckpointType refused a single step."""
        hint = (
            f"CheckpointType is {self.state.settings.checkpoint_type}"
            if not self.state.plugin.supported
            else ""
        )
        return rules.aggregate(target, operation, codes, detail, hint)

    def _run(
        self,
        caller: Caller,
        target: StepId,
        operation: str,
        per_step: Callable[[JobRec, StepRec], int],
        before: Callable[[JobRec], None] | None = None,
        detail: str = "",
        *,
        suspended_ok: bool = False,
    ) -> ActionResult:
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.checks(caller, target, suspended_ok=suspended_ok)
            completes = operations.operation(operation).completes
            if not completes and self._batch_job_plugin_call(rec, target):
                if before is not None:
                    before(rec)  # create/vacate save the job record first
                raise NotSupported()
            steps = self.state.targets(rec, target)
            if before is not None:
                before(rec)
            codes = []
            for srec in steps:
                code = per_step(rec, srec) if self.state.plugin.supported else ESLURM_NOT_SUPPORTED
                codes.append((srec.step.step_id, code))
            self.state.dirty.add(rec.job.job_id)
            self.state.version += 1
            return self._aggregate(target, operation, codes, detail)

    def able(self, caller: Caller, target: StepId) -> AbleResult:
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.checks(caller, target)
            if self._batch_job_plugin_call(rec, target):
                raise NotSupported()
            steps = self.state.targets(rec, target)
            if not self.state.plugin.supported:
                self._aggregate(
                    target, "able", [(s.step.step_id, ESLURM_NOT_SUPPORTED) for s in steps]
                )
            codes = [(s.step.step_id, rules.able_code(s.disable_count)) for s in steps]
            self._aggregate(target, "able", codes)
            starts = [s.ckpt_start for s in steps if in_progress(s)]
            return AbleResult(target, min(starts) if starts else 0)

    def error(self, caller: Caller, target: StepId) -> CheckpointError:
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.checks(caller, target)
            if self._batch_job_plugin_call(rec, target):
                raise NotSupported()
            steps = self.state.targets(rec, target)
            if not self.state.plugin.supported:
                self._aggregate(
                    target, "error", [(s.step.step_id, ESLURM_NOT_SUPPORTED) for s in steps]
                )
            return rules.worst_error(
                CheckpointError(s.error_code, describe(s.error_code)[0], s.error_msg) for s in steps
            )

    def enable(self, caller: Caller, target: StepId) -> ActionResult:
        def op(rec: JobRec, srec: StepRec) -> int:
            srec.disable_count = self.state.plugin.enabled(srec.disable_count)
            record_event(srec, int(self.state.now), "enable", caller.name, 0)
            return 0

        return self._run(caller, target, "enable", op)

    def disable(self, caller: Caller, target: StepId) -> ActionResult:
        def op(rec: JobRec, srec: StepRec) -> int:
            srec.disable_count = self.state.plugin.disabled(srec.disable_count)
            record_event(srec, int(self.state.now), "disable", caller.name, 0)
            return 0

        return self._run(caller, target, "disable", op)

    def _save_record(self, rec: JobRec, image_dir: str | None) -> None:
        """Batch job, create/vacate: save ``<dir>/<jobid>.ckpt`` first (no dir: DISABLED)."""
        directory = image_dir or self.state.settings.job_checkpoint_dir
        if not directory:
            raise Disabled(hint="no ImageDir given and JobCheckpointDir is not set")
        if (
            directory == self.state.settings.job_checkpoint_dir
            and not self.state.settings.checkpoint_dir_exists
        ):
            raise NoSuchImage()  # creat() of the record fails
        path = rules.saved_record_path(directory, rec.job.job_id)
        self._records[path] = SavedRecord(path, rec.job.job_id, rec.job.uid, rec.job.user, rec.job)

    def _checkpoint(
        self,
        caller: Caller,
        target: StepId,
        operation: str,
        max_wait: int,
        image_dir: str | None,
        vacate: bool,
        requeue: bool = False,
    ) -> ActionResult:
        now = int(self.state.clock())

        def before(rec: JobRec) -> None:
            if requeue and not rec.job.batch:
                raise NotSupported(hint="requeue needs a batch job")
            if rules.is_job_level(target) and rec.job.batch:
                self._save_record(rec, image_dir)
            if requeue:
                rec.requeue = True

        def op(rec: JobRec, srec: StepRec) -> int:
            return self.runs.start(
                rec, srec, now, operation, caller.name, max_wait, image_dir, vacate or requeue
            )

        detail = f"max_wait {max_wait}s" + (f", image dir {image_dir}" if image_dir else "")
        return self._run(caller, target, operation, op, before, detail)

    def create(
        self, caller: Caller, target: StepId, max_wait: int, image_dir: str | None
    ) -> ActionResult:
        return self._checkpoint(caller, target, "create", max_wait, image_dir, vacate=False)

    def vacate(
        self, caller: Caller, target: StepId, max_wait: int, image_dir: str | None
    ) -> ActionResult:
        return self._checkpoint(caller, target, "vacate", max_wait, image_dir, vacate=True)

    def requeue(
        self, caller: Caller, target: StepId, max_wait: int, image_dir: str | None = None
    ) -> ActionResult:
        """Checkpoint every step, end the job, put it back to PENDING (batch jobs only)."""
        if not rules.is_job_level(target):
            with self.state.lock:
                self.state.checks(caller, target)
            raise NotSupported(hint="requeue applies to a whole batch job")
        return self._checkpoint(
            caller, target, "requeue", max_wait, image_dir, vacate=True, requeue=True
        )

    def complete(
        self, caller: Caller, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        now = int(self.state.clock())

        def op(rec: JobRec, srec: StepRec) -> int:
            answered = self.state.plugin.complete(srec, error_code, error_msg, now)
            if answered is not None:
                return answered
            keep_highest(srec, error_code, error_msg)
            record_event(srec, now, "complete", caller.name, error_code)
            if srec.ckpt_start and begin_time == srec.ckpt_start:
                srec.ckpt_start = 0
                srec.ckpt_token += 1
                srec.last_ckpt = now
                if srec.ckpt_vacate:
                    srec.ckpt_vacate = False
                    self.lifecycle.terminate_step(rec, srec, now)
            return 0

        target = self.state.plugin.complete_target(target)
        return self._run(caller, target, "complete", op, suspended_ok=True)

    def tasks(
        self,
        caller: Caller,
        target: StepId,
        begin_time: int,
        image_dir: str,
        max_wait: int,
        nodelist: str,
    ) -> ActionResult:
        wanted = set(expand_hostlist(nodelist)) if nodelist else set()
        if self.state.plugin.tasks_at_slurmd:
            self._tasks_at_slurmd(caller, target, begin_time, wanted)
        outside: list[str] = []  # why a step refused: the nodes it does not run on

        def op(rec: JobRec, srec: StepRec) -> int:
            nodes = expand_hostlist(srec.step.nodes)
            refused = rules.tasks_code(nodes, wanted)
            if refused:
                outside.append(rules.tasks_hint(srec.step.step_id, nodes, wanted, srec.step.nodes))
                return refused
            srec.last_ckpt = begin_time or int(self.state.now)
            record_event(srec, int(self.state.now), "tasks", caller.name, 0, image_dir)
            return 0

        try:
            return self._run(caller, target, "tasks", op, detail=f"nodes {nodelist or 'all'}")
        except InvalidJobId as refused:
            if not outside:
                raise
            raise InvalidJobId(refused.code, hint="; ".join(outside)) from None

    def _tasks_at_slurmd(
        self, caller: Caller, target: StepId, begin_time: int, wanted: set[str]
    ) -> None:
        """``slurm_checkpoint_tasks`` never reaches slurmctld: slurmd and the step's
        slurmstepd answer, in their order (OMPI.md); checkpoint/ompi cannot signal the
        tasks, which slurmd reports as ESLURMD_JOB_NOTRUNNING.  Always raises."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.jobs.get(target.job_id)
            srec = None
            alive = rec is not None and rec.job.state in (JobState.RUNNING, JobState.SUSPENDED)
            if rec is not None and alive and not rules.is_job_level(target):
                srec = rec.steps.get(target.step)
            if rec is None or srec is None:
                raise InvalidJobId()
            nodes = expand_hostlist(srec.step.nodes)
            if rules.tasks_code(nodes, wanted):
                raise InvalidJobId(hint=rules.tasks_hint(target, nodes, wanted, srec.step.nodes))
            if not (caller.is_root or caller.is_slurm_user or caller.uid == rec.job.uid):
                raise error_for(ESLURM_USER_ID_MISSING)
            if srec.tasks_time and begin_time == srec.tasks_time:
                raise AlreadyDone()
            if rec.job.state is JobState.SUSPENDED:
                raise error_for(ESLURMD_STEP_SUSPENDED)
            srec.tasks_time = begin_time
            raise error_for(ESLURMD_JOB_NOTRUNNING)

    def restart(
        self, caller: Caller, target: StepId, stick: bool, image_dir: str | None
    ) -> ActionResult:
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.jobs.get(target.job_id)
            rules.check_restart(target, rec.job if rec is not None else None)
            directory = image_dir or self.state.settings.job_checkpoint_dir
            path = rules.saved_record_path(directory, target.job_id)
            saved = self._records.get(path)
            rules.check_saved_record(
                target,
                f"at {path}",
                saved.job_id if saved is not None else None,
                saved.uid if saved is not None else -1,
                saved.user if saved is not None else "",
                caller,
            )
            assert saved is not None
            now = int(self.state.clock())
            if rec is None:  # forgotten (MinJobAge): rebuilt from the saved record
                app = next((i for i, a in enumerate(APPS) if a[0] == saved.job.name), 0)
                rec = JobRec(replace(saved.job), app, 3600, False, 1)
                self.state.jobs[target.job_id] = rec
            rec.n_nodes = saved.job.num_nodes or rec.n_nodes
            rec.token += 1
            rec.steps = {}
            rec.env = {rules.RESTART_DIR_ENV: directory}
            rec.job = pending_again(
                rec.job,
                "Priority",
                submit_time=now,
                required_nodes=saved.job.nodes if stick else "",
                comment=f"restarted from {directory}",
            )
            self.timeline.push(float(now + 5), "start", target.job_id, token=rec.token)
            self.state.dirty.add(target.job_id)
            self.state.version += 1
            where = f" on {saved.job.nodes}" if stick and saved.job.nodes else ""
            return ActionResult(target, "restart", f"resubmitted as job {target.job_id}{where}")

    def step_processes(self, caller: Caller, target: StepId) -> StepProcesses:
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.checks(caller, target)
            steps = self.state.targets(rec, target)
            nodes: list[NodePids] = []
            for srec in steps:
                names = expand_hostlist(srec.step.nodes)
                per_node = max(1, srec.step.num_tasks // max(1, len(names)))
                for i, node in enumerate(names):
                    base = 1000 + stable_hash(target.job_id, srec.step.step_id.step, i) % 60000
                    nodes.append(NodePids(node, tuple(base + k for k in range(min(per_node, 8)))))
            return StepProcesses(target, tuple(nodes), "proctrack/cgroup")

    def interconnect(self, caller: Caller, target: StepId) -> Interconnect:
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.checks(caller, target)
            steps = self.state.targets(rec, target)
            network = next((s.step.network for s in steps if s.step.network), "")
            return Interconnect(target, "switch/none", network)
