"""The step's automatic checkpoints, carried out by one of its wrappers (``policy.py`` decides).

Every task's wrapper answers checkpoint requests (``wrapper.py``); one of them, task 0's,
also *makes* them when the step's policy says one is due, so a step-wide request (every
task's image of one moment) is made once, under the store's lock, and never doubled.  A
step whose task 0 has ended takes no more automatic checkpoints (an operator's still work).

What it does on each turn of the wrapper's loop (``turn``):

* reads the job's end time from the controller when a ``before end`` policy needs it, at
  most every ``LOOK_CEILING`` seconds and more often as the end nears (``scontrol show
  job``: the controller, since ``--time-min`` and ``scontrol update TimeLimit=`` move it);
* starts the checkpoint that is due (``policy.due``), in the record;
* once a before-end or preemption checkpoint has ended, requeues the job when
  ``policy.decide_requeue`` says so, or records why the chain ends (the step's error).

On SIGTERM (``on_sigterm``: preemption, scancel, the time limit) it starts a checkpoint at
once when one fits in the grace left, and after a preemption requeues the job itself:
Slurm 22.05 fails a job that ends during its GraceTime instead of requeueing it.
"""

from __future__ import annotations

import contextlib
import errno
import subprocess
import time
from collections.abc import Callable

from ..model import RUN_BY, StepId
from . import policy
from .options import JobFacts, job_facts, note
from .protocol import (
    CAUSE_BEFORE_END,
    CAUSE_SIGTERM,
    AutoPolicy,
    StepRecord,
    StoreError,
)
from .store import StepStore

BY = RUN_BY
"""Who the history names for an automatic checkpoint (its cause says why)."""
LOOK_FLOOR = 5.0
LOOK_CEILING = 300.0
"""Bounds of the wait between two looks at the job's end time."""
CHAIN_END_CODE = errno.ECANCELED
"""The step's error when a requeue chain ends before the program did."""
REQUEUE_SLACK = 5
"""Seconds past KillWait a self-requeued job waits before it may start again: its epilog."""
KILL_WAIT_GUESS = 30
"""Slurm's default KillWait: the grace after a time limit's or scancel's SIGTERM when the
controller's configuration cannot be read."""

Requeuer = Callable[[int], str]
"""Requeues job N: "" when done, else why not, in one line."""


def requeue_job(job_id: int) -> str:
    """``scontrol requeue JOB``, then bring the begin time it sets close: "" or the refusal
    in one line.

    A requeue sets the job's begin time ``cred_expire`` (120 s) ahead, and the end of its
    completion sets it so again only when it is not already ahead (seen on 22.05.8: a
    begin time set in between is kept).  The job is pending from the requeue on, so its
    begin time can be changed at once: to when its steps are surely gone (KillWait, after
    which slurmstepd kills what is left, plus ``REQUEUE_SLACK``).  Had the completion
    taken longer, it sets the two minutes again: no worse than without.
    """
    try:
        done = _scontrol("requeue", str(job_id))
    except FileNotFoundError:
        return "scontrol is not installed on this node: the job cannot requeue itself"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"scontrol requeue {job_id} failed: {exc}"
    if done.returncode:
        said = (done.stderr or done.stdout).strip().splitlines()
        return f"scontrol requeue {job_id} refused: {said[-1] if said else done.returncode}"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        begin = f"StartTime=now+{kill_wait() + REQUEUE_SLACK}"
        changed = _scontrol("update", f"JobId={job_id}", begin)
        if changed.returncode:
            note(f"the requeued job waits out Slurm's begin time: {changed.stderr.strip()}")
    return ""


def _scontrol(*words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["scontrol", *words], capture_output=True, text=True, timeout=30, check=False
    )


def kill_wait() -> int:
    """The controller's KillWait (``scontrol show config``), else ``KILL_WAIT_GUESS``."""
    with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError):
        for line in _scontrol("show", "config").stdout.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "KillWait":
                return int(value.split()[0])
    return KILL_WAIT_GUESS


def grace_time(partition: str) -> int:
    """The partition's GraceTime (``scontrol show partition``), 0 when it cannot be read."""
    with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError):
        out = _scontrol("show", "partition", "-o", partition).stdout if partition else ""
        for word in out.split():
            key, _, value = word.partition("=")
            if key == "GraceTime":
                return int(value)
    return 0


class Autopilot:
    """Task 0's automatic checkpoints of its step."""

    def __init__(
        self,
        store: StepStore,
        step: StepId,
        restart_count: int,
        start_policy: AutoPolicy,
        *,
        facts: Callable[[int], JobFacts | None] = job_facts,
        requeue: Requeuer = requeue_job,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        kill_wait: Callable[[], int] = kill_wait,
    ) -> None:
        self.store = store
        self.step = step
        self.restart_count = restart_count
        self.start_policy = start_policy
        self.facts_of = facts
        self.requeue = requeue
        self.clock = clock
        self.sleep = sleep
        """How ``finish`` waits between looks: with ``clock``, what a test drives."""
        self.kill_wait = kill_wait
        """The controller's KillWait: the grace after a SIGTERM before SIGKILL."""
        self.facts: JobFacts | None = None
        self.next_look = 0.0
        self.preempted = False
        self.preempt_request = ""
        """The SIGTERM checkpoint of a preemption ("" when none fitted)."""
        self.decided = False
        """Whether this run's requeue (or the chain's end) was decided already."""
        self.tuned_after = ""
        """The checkpoint whose measured cost ``every auto``'s interval last followed."""

    # ---- start -----------------------------------------------------------------------
    def first_look(self) -> JobFacts | None:
        """The job as the controller sees it at start, when the policy needs it."""
        if self.start_policy.before_end:
            self.look()
        return self.facts

    def register(self, rec: StepRecord, now: float) -> None:
        """Put the starting policy in the record (inside the wrapper's registration).

        An operator's ``sckpt auto`` outlives the job's requeues: a record whose policy an
        operator set keeps it.  The first interval checkpoint is one interval after start.
        """
        if rec.policy.set_by in ("", BY):
            rec.policy = AutoPolicy(**vars(self.start_policy))
        step = policy.interval(rec.policy, max(rec.ckpt_seconds.values(), default=0.0))
        if rec.policy.auto:
            rec.policy.every = step
        rec.next_due = int(now) + step if step else 0
        if self.facts is not None:
            rec.end_time = self.facts.end_time
        if rec.before_end_run != self.restart_count:
            rec.chain_end = ""

    # ---- each turn ---------------------------------------------------------------------
    def look(self) -> None:
        """Read the job from the controller and keep its end time in the record."""
        now = self.clock()
        facts = self.facts_of(self.step.job_id)
        if facts is None:
            self.next_look = now + 60
            return
        self.facts = facts
        rec_policy = self._policy()
        wait = LOOK_CEILING
        if rec_policy.before_end and facts.end_time:
            wait = (facts.end_time - rec_policy.before_end - now) / 2
        self.next_look = now + min(LOOK_CEILING, max(LOOK_FLOOR, wait))

        def change(rec: StepRecord) -> None:
            rec.end_time = facts.end_time

        with contextlib.suppress(StoreError):
            self.store.update(change)

    def _policy(self) -> AutoPolicy:
        with contextlib.suppress(StoreError):
            rec = self.store.read()
            if rec is not None:
                return rec.policy
        return self.start_policy

    def turn(self, program_running: bool) -> bool:
        """Start what is due; follow a chain.  True when a checkpoint was started (the
        wrapper then looks at the request at once instead of at its next poll)."""
        now = self.clock()
        try:
            rec = self.store.read()
        except StoreError:
            return False
        if rec is None or not rec.policy.active:
            return False
        if rec.policy.before_end and now >= self.next_look:
            self.look()
        if rec.policy.auto and rec.last_request != self.tuned_after:
            self._retune(rec.last_request)
        started = bool(self._start(lambda r: policy.due(r, now, self.restart_count)))
        if not started and program_running:
            self._follow_chain()
        return started

    def _retune(self, after: str) -> None:
        """``every auto``: after each checkpoint, the interval from its measured cost (the
        next checkpoint moves with it, counted from the last one's start)."""
        self.tuned_after = after

        def change(rec: StepRecord) -> None:
            step = policy.interval(rec.policy, max(rec.ckpt_seconds.values(), default=0.0))
            if rec.policy.auto and step != rec.policy.every:
                if rec.next_due:
                    rec.next_due += step - rec.policy.every
                rec.policy.every = step

        with contextlib.suppress(StoreError):
            self.store.update(change)

    def _start(self, cause_of: Callable[[StepRecord], str]) -> str:
        """Begin the checkpoint ``cause_of`` names, decided again under the lock; its
        request id ("" when none)."""
        now = self.clock()

        def change(rec: StepRecord) -> str:
            cause = cause_of(rec)
            if not cause:
                return ""
            cost = max(rec.ckpt_seconds.values(), default=0.0)
            req = rec.begin_request(
                BY, "", policy.request_wait(cost), "create", int(now), cause=cause
            )
            req.pending = sorted(
                t.procid for t in rec.running_tasks if t.restart_count == self.restart_count
            )
            step = policy.interval(rec.policy, cost)
            if rec.policy.auto:
                rec.policy.every = step
            if step:
                rec.next_due = int(now) + step
            if cause == CAUSE_BEFORE_END:
                rec.before_end_run = self.restart_count
                rec.before_end_request = req.request_id
            return req.request_id

        try:
            return str(self.store.update(change))
        except StoreError as exc:
            note(f"automatic checkpoint not started: {exc.message}")
            return ""

    # ---- the chain ---------------------------------------------------------------------
    def _follow_chain(self) -> None:
        """After this run's before-end (or preemption) checkpoint ended: requeue, or say
        why the chain ends."""
        if self.decided:
            return
        try:
            rec = self.store.read()
        except StoreError:
            return
        if rec is None or rec.in_progress is not None:
            return
        if self.preempted:
            request, reason, need_image = self.preempt_request, "preemption", False
        elif rec.before_end_run == self.restart_count and rec.before_end_request:
            request, reason, need_image = rec.before_end_request, "before end", True
            if rec.last_request != request:
                return  # not ended yet
        else:
            return
        self.decided = True
        batch = self.facts.batch if self.facts is not None else True
        decision = policy.decide_requeue(
            rec,
            request,
            restart_count=self.restart_count,
            batch=batch,
            reason=reason,
            need_image=need_image,
        )
        if decision.go:
            refused = self.requeue(self.step.job_id)
            if not refused:
                self._record(lambda r: self._requeued(r, decision.why))
                return
            why = refused
        else:
            why = decision.why
        note(f"the job is not requeued: {why}")
        self._record(lambda r: self._chain_ends(r, why, self.clock))

    def _requeued(self, rec: StepRecord, why: str) -> None:
        rec.requeued_run = self.restart_count
        rec.log("requeue", BY, 0, f"job requeued to continue ({why})", clock=self.clock)

    @staticmethod
    def _chain_ends(rec: StepRecord, why: str, clock: Callable[[], float]) -> None:
        rec.chain_end = why
        rec.keep_highest(CHAIN_END_CODE, f"requeue chain ended: {why}")
        rec.log("chain", BY, CHAIN_END_CODE, f"requeue chain ended: {why}", clock=clock)

    def _record(self, change: Callable[[StepRecord], None]) -> None:
        try:
            self.store.update(change)
        except StoreError as exc:
            note(f"could not record the requeue: {exc.message}")

    def finish(self) -> None:
        """The program has ended: a preemption's requeue is still owed (the program may
        have died of the SIGTERM before its checkpoint ended).  Waits for that checkpoint
        to close, at most the grace Slurm gives, then decides."""
        if not self.preempted or self.decided:
            return
        deadline = self.clock() + float(self.kill_wait())
        while self.clock() < deadline:
            try:
                rec = self.store.read()
            except StoreError:
                break
            if rec is None or rec.in_progress is None:
                break
            self.sleep(0.2)
        self._follow_chain()

    # ---- SIGTERM -----------------------------------------------------------------------
    def on_sigterm(self, program_running: bool) -> bool:
        """Slurm (or someone) asked the step to end: checkpoint at once if it fits in the
        grace left; after a preemption, requeue the job once that checkpoint ended.  True
        when a checkpoint was started."""
        try:
            rec = self.store.read()
        except StoreError:
            return False
        if rec is None or not rec.policy.active or rec.requeued_run == self.restart_count:
            return False  # no policy, or the job is ending because sckpt run requeued it
        facts = self.facts_of(self.step.job_id)
        if facts is not None:
            self.facts = facts
        now = self.clock()
        self.preempted = facts is not None and facts.preempted
        grace = float(self.kill_wait())  # after the SIGTERM, SIGKILL
        if self.preempted and facts is not None:
            # The grace ends at the moved end time; a job without a time limit shows none
            # (EndTime=Unknown, seen on 22.05.8): its preempt time + the partition's grace.
            # Then SIGTERM again, and SIGKILL after KillWait.
            end = facts.end_time or facts.preempt_time + grace_time(facts.partition)
            grace += max(0.0, end - now)
        cost = max(rec.ckpt_seconds.values(), default=0.0)
        started = ""
        if program_running and policy.fits(cost, grace):
            started = self._start(lambda r: "" if r.refusal()[0] else CAUSE_SIGTERM)
        else:
            note(f"SIGTERM: no checkpoint: the last one took {cost:.0f}s, {grace:.0f}s are left")
        self.preempt_request = started
        if self.preempted and not started:
            self._follow_chain()
        return bool(started)
