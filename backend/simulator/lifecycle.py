"""A job's life as time passes: new jobs arrive, pending jobs start, running jobs end (or go
back to pending when a requeue asked for it), a step ends after vacate, and finished jobs
are forgotten after MinJobAge (accounting keeps them).

``Lifecycle`` handles the timeline's ``arrive``, ``start``, ``end`` and ``purge`` events, and
is what job control and the checkpoint API call to end a step or a job.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import STEP_BATCH, STEP_EXTERN, JobState
from .accounting import Accounting
from .catalog import Bits
from .events import Timeline
from .population import Population
from .records import JobRec, StepRec, pending_again
from .state import ClusterState


class Lifecycle:
    """Jobs starting and ending, by the clock or by a request."""

    def __init__(
        self, state: ClusterState, timeline: Timeline, population: Population, dbd: Accounting
    ) -> None:
        self.state = state
        self.timeline = timeline
        self.population = population
        self.dbd = dbd
        timeline.on("arrive", self._arrive)
        timeline.on("start", self._start)
        timeline.on("end", self._end)
        timeline.on("purge", self._purge)

    def _arrive(self, when: float, _rec: JobRec | None, _step: int, _token: int) -> bool:
        """A new submission, and the next one a few minutes on (``arrivals``)."""
        rng = self.population.rng
        new = self.population.new_job(rng, JobState.PENDING, when)
        expected = when + rng.randint(20, 240)
        new.job = replace(
            new.job,
            submit_time=int(when),
            state_reason="Priority",
            held=False,
            start_time=int(expected),
        )
        self.timeline.push(expected, "start", new.job.job_id, token=new.token)
        self.timeline.push(when + rng.randint(45, 180), "arrive", 0)
        return True

    def _start(self, when: float, rec: JobRec | None, _step: int, token: int) -> bool:
        if rec is None or rec.token != token:
            return False
        if rec.job.state is not JobState.PENDING or rec.job.held:
            return False
        population = self.population
        population.start(rec, int(when), Bits(population.rng.getrandbits(128)))
        return True

    def _end(self, when: float, rec: JobRec | None, _step: int, token: int) -> bool:
        if rec is None or rec.token != token or rec.job.state is not JobState.RUNNING:
            return False
        self.end_job(rec, int(when), JobState.FAILED if rec.fails else JobState.COMPLETED)
        return True

    def _purge(self, _when: float, rec: JobRec | None, _step: int, token: int) -> bool:
        """MinJobAge has passed: the controller forgets the finished job."""
        if rec is None or rec.token != token or not rec.job.state.is_finished:
            return False
        state = self.state
        job_id = rec.job.job_id
        self.dbd.keep_final_record(rec.job)
        del state.jobs[job_id]
        state.transparent.pop(job_id, None)
        state.auto.pop(job_id, None)
        state.dirty.add(job_id)
        return True

    def terminate_step(self, rec: JobRec, srec: StepRec, t: int) -> None:
        """SIGTERM after vacate: the step goes; the batch step (or the last step) ends the job."""
        sid = srec.step.step_id
        rec.steps.pop(sid.step, None)
        self.state.dirty.add(sid.job_id)
        left = [k for k in rec.steps if k != STEP_EXTERN]
        if sid.step == STEP_BATCH or not left:
            self.end_job(rec, t, JobState.CANCELLED, reason="Vacated")

    def end_job(self, rec: JobRec, t: int, state: JobState, reason: str = "") -> None:
        """The job's run ends at ``t`` in ``state``; a job a requeue asked for goes back to
        PENDING instead and starts again 30 s on."""
        rec.token += 1
        rec.steps = {}
        self.state.dirty.add(rec.job.job_id)
        if rec.requeue:
            rec.requeue = False
            self.dbd.close_run(rec.job, t, "REQUEUED")
            rec.job = pending_again(rec.job, "BeginTime")
            self.timeline.push(float(t + 30), "start", rec.job.job_id, token=rec.token)
            return
        if state is JobState.FAILED and not reason:
            reason = "NonZeroExitCode"
        rec.job = replace(rec.job, state=state, end_time=t, state_reason=reason)
        self.dbd.close_run(rec.job, t, state.value, exit_code=1 if state is JobState.FAILED else 0)
        # Like MinJobAge: the controller forgets finished jobs after a while (and a
        # restart then recreates the job from its saved record).
        min_job_age = self.state.settings.min_job_age
        self.timeline.push(float(t + min_job_age), "purge", rec.job.job_id, token=rec.token)
