"""Job control as slurmctld does it: signals and scancel, hold and release, requeue, and
``scontrol update`` of a pending job (``job_signal`` and ``update_job`` rules).
"""

from __future__ import annotations

import signal as _signal
from dataclasses import replace

from ..errors import (
    ESLURM_BATCH_ONLY,
    ESLURM_JOB_FINISHED,
    ESLURM_JOB_NOT_PENDING,
    ESLURM_TRANSITION_STATE_NO_UPDATE,
    AccessDenied,
    AlreadyDone,
    InvalidJobId,
    JobPending,
    error_for,
)
from ..model import JobState, StepId, compress_task_ids, expand_task_ranges
from ..rules import Caller
from .accounting import Accounting
from .events import Timeline
from .lifecycle import Lifecycle
from .population import priority_of
from .records import REQUEUE_BEGIN_DELAY, JobRec, pending_again
from .state import ClusterState

_DEADLY = frozenset({_signal.SIGKILL, _signal.SIGTERM, _signal.SIGINT})
"""The signals that end a simulated task (its programs install no handler for them)."""


class JobControl:
    """scancel and scontrol on the simulated jobs, acting as ``caller``."""

    def __init__(
        self, state: ClusterState, timeline: Timeline, lifecycle: Lifecycle, dbd: Accounting
    ) -> None:
        self.state = state
        self.timeline = timeline
        self.lifecycle = lifecycle
        self.dbd = dbd

    def signal_step(self, caller: Caller, target: StepId, signal: int, end: bool) -> None:
        """``slurm_signal_job_step`` / ``slurm_kill_job_step``: a deadly signal (or ``end``)
        ends the step; any other signal reaches the tasks, which simulate no handler."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.owned(caller, target.job_id)
            if rec.job.state.is_finished:
                raise AlreadyDone()
            srec = rec.steps.get(target.step)
            if srec is None:
                raise InvalidJobId()
            if end or signal in _DEADLY:
                self.lifecycle.terminate_step(rec, srec, int(self.state.now))
            self.state.version += 1

    def kill_job(self, caller: Caller, job_id: int, signal: int) -> None:
        """``slurm_kill_job`` (scancel JOB), slurmctld's ``job_signal`` without flags: SIGKILL
        cancels a pending, suspended or running job (CANCELLED); another signal reaches a
        running job's steps (a deadly one ends them, the batch step's end ends the job) and
        cannot be sent to a job that is not running."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.owned(caller, job_id)
            if rec.job.state.is_finished:
                raise AlreadyDone()
            now = int(self.state.now)
            if signal == _signal.SIGKILL:
                rec.requeue = False
                self.lifecycle.end_job(rec, now, JobState.CANCELLED)
            elif rec.job.state is not JobState.RUNNING:
                raise error_for(ESLURM_TRANSITION_STATE_NO_UPDATE)
            elif signal in _DEADLY:
                for srec in list(rec.steps.values()):
                    if rec.job.state is JobState.RUNNING:
                        self.lifecycle.terminate_step(rec, srec, now)
            self.state.version += 1

    def hold_job(self, caller: Caller, job_id: int) -> None:
        """``scontrol hold`` (priority 0), as slurmctld's ``update_job`` takes it: a pending
        or running job is held (an operator's hold is JobHeldAdmin, an owner's JobHeldUser;
        a running job keeps running); a finished one is refused."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.owned(caller, job_id, update=True)
            if rec.job.state.is_finished:
                raise error_for(ESLURM_JOB_FINISHED)
            operator = caller.is_root or caller.is_slurm_user
            if rec.job.held and not operator:
                return  # "setting priority to current value": nothing changes
            reason = "JobHeldAdmin" if operator else "JobHeldUser"
            if rec.job.state is JobState.PENDING:
                rec.token += 1  # the start it was waiting for is off
                rec.job = replace(rec.job, held=True, state_reason=reason, priority=0)
            else:
                rec.job = replace(rec.job, held=True, priority=0)
            self.state.dirty.add(job_id)
            self.state.version += 1

    def requeue_job(self, caller: Caller, job_id: int, hold: bool) -> None:
        """``slurm_requeue``: end a batch job and put it back to PENDING (held with ``hold``);
        like slurmctld, the job may start again only after a begin time two minutes on."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.owned(caller, job_id)
            if not rec.job.batch:
                raise error_for(ESLURM_BATCH_ONLY)
            if rec.job.state is JobState.PENDING:
                raise JobPending()
            now = int(self.state.now)
            if not rec.job.state.is_finished:
                self.dbd.close_run(rec.job, now, "REQUEUED")
            rec.token += 1
            rec.steps = {}
            rec.job = pending_again(
                rec.job,
                "JobHeldUser" if hold else "BeginTime",
                held=hold,
                priority=0 if hold else priority_of(job_id),
            )
            rec.begin_at = now + REQUEUE_BEGIN_DELAY
            if not hold:
                self.timeline.push(float(rec.begin_at), "start", job_id, token=rec.token)
                rec.job = replace(rec.job, start_time=int(rec.begin_at))  # its begin time
            self.state.dirty.add(job_id)
            self.state.version += 1

    def _pending(self, caller: Caller, job_id: int) -> JobRec:
        rec = self.state.owned(caller, job_id)
        if rec.job.state is not JobState.PENDING:
            raise error_for(ESLURM_JOB_NOT_PENDING)
        return rec

    def _reschedule(self, rec: JobRec) -> None:
        """Start a pending, unheld job at its begin time (or now)."""
        rec.token += 1
        if not rec.job.held:
            when = max(float(rec.begin_at), self.state.now)
            self.timeline.push(when, "start", rec.job.job_id, token=rec.token)
        self.state.dirty.add(rec.job.job_id)
        self.state.version += 1

    def release(self, caller: Caller, job_id: int) -> None:
        """``scontrol release`` (priority INFINITE), as slurmctld's ``update_job`` takes it:
        a held job may start again; an admin hold only an operator releases (the owner is
        refused, as slurmctld refuses a priority change it does not allow); a job that is
        not held is left as it is; a finished one is refused."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.owned(caller, job_id, update=True)
            if rec.job.state.is_finished:
                raise error_for(ESLURM_JOB_FINISHED)
            if not rec.job.held:
                return  # "already released, ignoring request"
            operator = caller.is_root or caller.is_slurm_user
            if not operator and rec.job.state_reason == "JobHeldAdmin":
                raise AccessDenied()
            if rec.job.state is not JobState.PENDING:
                rec.job = replace(rec.job, held=False, priority=priority_of(job_id))
                self.state.dirty.add(job_id)
                self.state.version += 1
                return
            reason = "BeginTime" if rec.begin_at > self.state.now else "Priority"
            rec.job = replace(
                rec.job, held=False, state_reason=reason, priority=priority_of(job_id)
            )
            self._reschedule(rec)

    def set_begin_time(self, caller: Caller, job_id: int, when: int) -> None:
        """``scontrol update StartTime=``: 0 means now."""
        with self.state.lock:
            self.timeline.tick()
            rec = self._pending(caller, job_id)
            rec.begin_at = when or int(self.state.now)
            if rec.begin_at <= self.state.now and rec.job.state_reason == "BeginTime":
                rec.job = replace(rec.job, state_reason="Priority")
            self._reschedule(rec)

    def set_required_nodes(self, caller: Caller, job_id: int, nodelist: str) -> None:
        """``scontrol update ReqNodeList=``, on a pending job."""
        with self.state.lock:
            self.timeline.tick()
            rec = self._pending(caller, job_id)
            rec.job = replace(rec.job, required_nodes=nodelist)
            self.state.dirty.add(job_id)
            self.state.version += 1

    def hold_task(self, caller: Caller, array_id: int, task: int, hold: bool) -> None:
        """``scontrol hold|release 7_5`` of a task still pending in its array's record, as
        slurmctld does it: the task is split off into a record of its own (a new job id;
        the last one left takes the array's record itself), then held or released."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.jobs.get(array_id)
            if rec is None or rec.job.array_job_id != array_id or not rec.job.array_task_str:
                raise InvalidJobId()
            self.state.owned(caller, array_id, update=True)
            left = [t for t in expand_task_ranges(rec.job.array_task_str) if t != task]
            if len(left) == len(expand_task_ranges(rec.job.array_task_str)):
                raise InvalidJobId()
            if left:
                limit = f"%{rec.job.array_max_tasks}" if rec.job.array_max_tasks else ""
                rec.job = replace(rec.job, array_task_str=compress_task_ids(left) + limit)
                job_id = self.state.next_job_id
                self.state.next_job_id += 1
                split = JobRec(
                    replace(rec.job, job_id=job_id, array_task_id=task, array_task_str=""),
                    rec.app,
                    rec.duration,
                    rec.fails,
                    rec.n_numbered,
                )
                self.state.jobs[job_id] = split
                self.state.dirty.add(array_id)
            else:
                job_id = array_id
                rec.job = replace(rec.job, array_task_id=task, array_task_str="")
            self.state.dirty.add(job_id)
            self.state.version += 1
        if hold:
            self.hold_job(caller, job_id)
        else:
            self.release(caller, job_id)
