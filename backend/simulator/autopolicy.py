"""Automatic checkpoints in the simulated controller: the demo's steps under ``sckpt run
--every/--before-end``, and ``sckpt auto`` on them.

On a real cluster task 0's wrapper carries a step's policy out (``checkpointing/autopilot.py``)
and the cooperative engine reads it from the step's record; Slurm 19.05 had nothing of the
kind.  So the demo keeps the policies here, beside the steps launched under ``sckpt run
--transparent`` (``ClusterState.auto``): an ``auto`` event comes due at each step's next
interval (and once before the job's end), starts a checkpoint as the wrapper would (its
history lines say ``sckpt run`` and the cause), and moves the due time on by the interval.
The demo's engine shows them (``SimulatedEngine``), as the cooperative engine shows a record's.

Simplified where the demo needs no more: a disabled step, or one with a checkpoint already
running, skips its turn (the wrapper takes it as soon as it may); a before-end checkpoint
requeues nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from .. import rules
from ..arguments import DEFAULT_MTBF, describe_policy
from ..checkpointing import policy
from ..checkpointing.protocol import CAUSE_BEFORE_END, CAUSE_INTERVAL
from ..errors import NotSupported
from ..model import RUN_BY, ActionResult, AutoCheckpoints, JobState, StepId
from ..rules import Caller
from .checkpoint_runs import CheckpointRuns
from .events import Timeline
from .records import AUTO_BEFORE_END, AUTO_INTERVAL, JobRec, in_progress, record_event
from .state import ClusterState

NO_POLICY = AutoCheckpoints()
"""A step's policy before anyone set one (shared)."""
NOT_UNDER_RUN = (
    "not started under `sckpt run`: only such steps checkpoint by themselves "
    "(the demo's steps marked 'transparent (DMTCP ...)' are)"
)


class AutoPolicies:
    """The policies of the steps under ``sckpt run``: due checkpoints, and changes."""

    def __init__(self, state: ClusterState, timeline: Timeline, runs: CheckpointRuns) -> None:
        self.state = state
        self.timeline = timeline
        self.runs = runs
        timeline.on("auto", self._due_event)

    def _due_event(self, when: float, rec: JobRec | None, step: int, token: int) -> bool:
        """An ``auto`` event (``_auto_due``); it counts as a change whenever its job is
        still known."""
        if rec is None:
            return False
        self._auto_due(rec, step, int(when), token)
        return True

    def put_policy(self, rec: JobRec, step: int, policy: AutoCheckpoints, due: int) -> None:
        """Step ``step`` of ``rec`` runs under ``policy``, its next interval checkpoint at
        ``due`` (0: none); its before-end checkpoint, when it has one, at the job's end
        less that.  The events come due as the clock moves (``_auto_due``)."""
        job_id = rec.job.job_id
        self.state.auto.setdefault(job_id, {})[step] = (policy, due)
        if due:
            self.timeline.push(float(due), "auto", job_id, step, AUTO_INTERVAL)
        end = rec.job.end_time - policy.before_end if policy.before_end else 0
        if end > self.state.now:
            self.timeline.push(float(end), "auto", job_id, step, AUTO_BEFORE_END)
        self.state.dirty.add(job_id)

    def set_auto(
        self,
        caller: Caller,
        target: StepId,
        every: int | None,
        before_end: int | None,
        off: bool,
    ) -> ActionResult:
        """``sckpt auto``: the controller's checks, then each step's policy changed
        (``policy.changed``) and its next interval checkpoint one interval from now."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.checks(caller, target)
            job_id = rec.job.job_id
            marked = self.state.transparent.get(job_id, {})
            steps = [s for s in self.state.targets(rec, target) if s.step.step_id.step in marked]
            if not steps:
                raise NotSupported(hint=NOT_UNDER_RUN)
            limit = rec.job.end_time - rec.job.start_time
            if before_end and limit > 0:
                policy.check_before_end_limit(before_end, limit, job_id)
            now = int(self.state.now)
            policies = self.state.auto.setdefault(job_id, {})
            codes = []
            words = []
            for srec in steps:
                step = srec.step.step_id.step
                new = policy.changed(
                    policies.get(step, (NO_POLICY, 0))[0], every, before_end, off, caller.name
                )
                if new.auto:
                    cost = marked[step].checkpoint_seconds or policy.ASSUMED_COST
                    new = replace(new, every=policy.young_daly(cost, DEFAULT_MTBF))
                policies.pop(step, None)
                if new.active:
                    self.put_policy(rec, step, new, now + new.every if new.every else 0)
                said = describe_policy(new) or "off"
                record_event(srec, now, "auto", caller.name, 0, message=said)
                words.append(said)
                codes.append((srec.step.step_id, 0))
            self.state.dirty.add(job_id)
            self.state.version += 1
        detail = words[0] if len(set(words)) == 1 else "; ".join(words)
        return rules.aggregate(target, "auto", codes, detail)

    def _auto_due(self, rec: JobRec, step: int, when: int, token: int = 0) -> None:
        """A step's automatic checkpoint is due at ``when`` (``token``: interval or before
        end); an event its policy no longer names (changed, switched off) is stale."""
        entry = self.state.auto.get(rec.job.job_id, {}).get(step)
        srec = rec.steps.get(step)
        if entry is None or srec is None or rec.job.state is not JobState.RUNNING:
            return
        pol, due = entry
        if token == AUTO_BEFORE_END:
            if not pol.before_end or rec.job.end_time - pol.before_end != when:
                return
            cause = CAUSE_BEFORE_END
        else:
            if due != when or not pol.every:
                return
            self.state.auto[rec.job.job_id][step] = (pol, when + pol.every)
            self.timeline.push(float(when + pol.every), "auto", rec.job.job_id, step)
            cause = CAUSE_INTERVAL
        if srec.disable_count or in_progress(srec):
            return  # its turn is skipped (the wrapper takes it as soon as it may)
        self.runs.start(rec, srec, when, "create", RUN_BY, 0, None, cause=cause)
        self.state.dirty.add(rec.job.job_id)

    def auto_policies(self, job_id: int) -> Mapping[int, AutoCheckpoints]:
        """The job's steps' policies with their next due time (and the job's end where a
        before-end policy needs it), by step number; empty for a job without."""
        with self.state.lock:
            self.timeline.tick()
            entries = self.state.auto.get(job_id)
            rec = self.state.jobs.get(job_id)
            if not entries or rec is None:
                return MappingProxyType({})
            end = rec.job.end_time
            return MappingProxyType(
                {
                    step: replace(pol, next_due=due, end_time=end if pol.before_end else 0)
                    for step, (pol, due) in entries.items()
                }
            )
