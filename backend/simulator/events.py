"""Time: what the simulated controller does as its clock moves.

Every call first applies the events due by now (``Timeline._tick``), in time order, so the
outcome does not depend on how often anyone looks: jobs start and end, checkpoints end
(vacate then terminates the step), new jobs arrive, finished jobs are forgotten after
MinJobAge (accounting keeps them), and the demo's output files grow.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from ..model import STEP_BATCH, STEP_EXTERN, JobState, StepId
from .catalog import APPS, Bits
from .records import JobRec, StepRec, keep_highest, record_event
from .touches import DemoTouches


class Timeline(DemoTouches):
    """The events the controller applies as time passes, and the transitions they make."""

    def _tick(self) -> None:
        """Apply every event due by now, in time order."""
        now = self.clock()
        if now > self._now:
            self._now = now
        due = self._events.pop_due
        while (event := due(now)) is not None:
            when, _seq, kind, job_id, step, token = event
            self._apply(when, kind, job_id, step, token)
        if self._output is not None:
            for job_id in self._output.known:
                self._write_output(job_id)

    def _write_output(self, job_id: int) -> None:
        """Bring the job's demo output file up to now (made when first asked for)."""
        rec = self._jobs.get(job_id)
        if rec is None or self._output is None:
            return
        with contextlib.suppress(OSError):  # the demo's directory is gone: no output
            self._output.update(rec.job, APPS[rec.app][1], int(self._now))

    def _apply(self, when: float, kind: str, job_id: int, step: int, token: int) -> None:
        t = int(when)
        if kind == "arrive":
            rng = self._rng
            new = self._new_job(rng, JobState.PENDING, when)
            expected = when + rng.randint(20, 240)
            new.job = replace(
                new.job,
                submit_time=t,
                state_reason="Priority",
                held=False,
                start_time=int(expected),
            )
            self._events.push(expected, "start", new.job.job_id, token=new.token)
            self._events.push(when + rng.randint(45, 180), "arrive", 0)
            self._version += 1
            return
        rec = self._jobs.get(job_id)
        if rec is None:
            return
        if kind == "start":
            if rec.token != token or rec.job.state is not JobState.PENDING or rec.job.held:
                return
            self._start(rec, t, Bits(self._rng.getrandbits(128)))
        elif kind == "end":
            if rec.token != token or rec.job.state is not JobState.RUNNING:
                return
            self._end_job(rec, t, JobState.FAILED if rec.fails else JobState.COMPLETED)
        elif kind == "purge":
            if rec.token != token or not rec.job.state.is_finished:
                return
            self._dbd.keep_final_record(rec.job)
            del self._jobs[job_id]
            self._transparent.pop(job_id, None)
            self._auto.pop(job_id, None)
            self._dirty.add(job_id)
        elif kind == "auto":
            self._auto_due(rec, step, t, token)
        elif kind == "ckpt_done":
            srec = rec.steps.get(step)
            code = self._pending_codes.pop((StepId(job_id, step), token), 0)
            if srec is None or srec.ckpt_token != token or not srec.ckpt_start:
                return
            self._finish_checkpoint(rec, srec, t, code)
        self._version += 1

    def _finish_checkpoint(self, rec: JobRec, srec: StepRec, t: int, code: int) -> None:
        """A checkpoint ends: start_time back to 0, the result recorded, vacate terminates."""
        started, srec.ckpt_start = srec.ckpt_start, 0
        keep_highest(srec, code, "")
        srec.last_ckpt = t
        cause = self._pending_causes.pop((srec.step.step_id, srec.ckpt_token), "")
        by = "sckpt run" if cause else ""
        record_event(srec, t, "done", by, code, srec.image_dir, cause)
        if not code:
            self._image_done(rec, srec, t, float(t - started))
        self._dirty.add(rec.job.job_id)
        if srec.ckpt_vacate:
            srec.ckpt_vacate = False
            self._terminate_step(rec, srec, t)

    def _terminate_step(self, rec: JobRec, srec: StepRec, t: int) -> None:
        """SIGTERM after vacate: the step goes; the batch step (or the last step) ends the job."""
        sid = srec.step.step_id
        rec.steps.pop(sid.step, None)
        self._dirty.add(sid.job_id)
        left = [k for k in rec.steps if k != STEP_EXTERN]
        if sid.step == STEP_BATCH or not left:
            self._end_job(rec, t, JobState.CANCELLED, reason="Vacated")

    def _end_job(self, rec: JobRec, t: int, state: JobState, reason: str = "") -> None:
        rec.token += 1
        rec.steps = {}
        self._dirty.add(rec.job.job_id)
        if rec.requeue:
            rec.requeue = False
            self._dbd.close_run(rec.job, t, "REQUEUED")
            rec.job = replace(
                rec.job,
                state=JobState.PENDING,
                state_reason="BeginTime",
                nodes="",
                num_nodes=0,
                end_time=0,
                start_time=0,
                restart_count=rec.job.restart_count + 1,
            )
            self._events.push(float(t + 30), "start", rec.job.job_id, token=rec.token)
            return
        if state is JobState.FAILED and not reason:
            reason = "NonZeroExitCode"
        rec.job = replace(rec.job, state=state, end_time=t, state_reason=reason)
        self._dbd.close_run(rec.job, t, state.value, exit_code=1 if state is JobState.FAILED else 0)
        # Like MinJobAge: the controller forgets finished jobs after a while (and a
        # restart then recreates the job from its saved record).
        self._events.push(float(t + self.min_job_age), "purge", rec.job.job_id, token=rec.token)
