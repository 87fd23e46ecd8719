"""Automatic checkpoints: when ``sckpt run`` checkpoints its step by itself, and what follows.

Slurm gives a job little warning (``slurm-events`` in the reference): a time limit and a
preemption send SIGTERM and then SIGKILL seconds later, a dead node sends nothing.  So the
step's wrapper takes checkpoints on its own, by a policy (``protocol.AutoPolicy``, kept in
the step's record so the console shows it and ``sckpt auto`` changes it):

* **every D**: an interval checkpoint whenever ``next_due`` has passed.  A disabled step is
  skipped and checkpointed as soon as it is enabled again (its due time has passed by
  then); a checkpoint already running, or a program still writing an earlier image, is
  never doubled (``StepRecord.refusal``); a failed one is tried again at the next due time,
  since the due time moves when a checkpoint *starts*, not when it succeeds.
* **every auto**: the interval that wastes the least expected time, Young's rule
  sqrt(2 x C x MTBF) (Daly 2006 adds higher-order terms, negligible while C ≪ MTBF), with C the
  step's last measured checkpoint duration, worked out again after every checkpoint and
  kept within ``AUTO_FLOOR`` .. ``AUTO_CEILING``.
* **before end D**: that long before the job's end time (read from the controller, again
  and again: ``--time-min`` and ``scontrol update TimeLimit=`` move it) every task is
  checkpointed once per run; once every task's image is complete, a batch job is requeued
  (``decide_requeue``) and its next run resumes from it.  The chain ends when the program
  exits, after ``max_restarts`` requeues, or when a link produced no new complete image.
* **SIGTERM** (preemption, scancel, the time limit): a checkpoint at once when one fits in
  the grace left (``fits``); after a preemption, the job is requeued too, since Slurm 22.05
  lets a job that ends during its GraceTime fail instead of requeueing it.

Which rule applies is decided here, from values; the wrapper reads the clock, the record
and the controller, and carries the decisions out.  Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TypeVar

from .. import rules
from ..arguments import (
    DEFAULT_MAX_RESTARTS,
    DEFAULT_MTBF,
    EVERY_AUTO,
    describe_duration,
    describe_policy,
)
from ..errors import UsageError
from ..model import AutoCheckpoints
from .protocol import (
    CAUSE_BEFORE_END,
    CAUSE_INTERVAL,
    AutoPolicy,
    StepRecord,
)

AUTO_FLOOR = 60
AUTO_CEILING = 24 * 3600
"""Bounds of the interval ``--every auto`` works out."""
ASSUMED_COST = 10.0
"""The checkpoint cost assumed by ``--every auto`` before one was measured."""
REQUEST_WAIT_FLOOR = 300
"""An automatic checkpoint may take this long, or 20 times the last one, before it is
recorded as timed out (ETIME)."""
SIGTERM_MARGIN = 1.5
"""A SIGTERM checkpoint is started when the last one took at most grace / this."""


def policy_of(every: int, before_end: int, max_restarts: int, mtbf: int, set_by: str) -> AutoPolicy:
    """The record's policy from the arguments' values (``every`` may be ``EVERY_AUTO``)."""
    return AutoPolicy(
        every=0 if every == EVERY_AUTO else every,
        auto=every == EVERY_AUTO,
        before_end=before_end,
        max_restarts=max_restarts or DEFAULT_MAX_RESTARTS,
        mtbf=mtbf or DEFAULT_MTBF,
        set_by=set_by,
    )


def describe(policy: AutoPolicy) -> str:
    """``every 30m, before end 10m (at most 10 restarts)``; "" for no policy
    (``arguments.describe_policy``, whose words the front ends show too)."""
    return describe_policy(policy)


P = TypeVar("P", AutoPolicy, AutoCheckpoints)


def changed(current: P, every: int | None, before_end: int | None, off: bool, set_by: str) -> P:
    """``current`` as ``sckpt auto`` changes it: ``off`` clears it; else a given ``every``
    (``EVERY_AUTO`` for auto) or ``before_end`` replaces its own, one left out (None)
    stays.  ``set_by`` names the operator: a policy an operator set outlives the job's
    requeues (``Autopilot.register``), so does one switched off."""
    if off:
        return replace(current, every=0, auto=False, before_end=0, set_by=set_by)
    return replace(
        current,
        every=current.every if every is None else 0 if every == EVERY_AUTO else every,
        auto=current.auto if every is None else every == EVERY_AUTO,
        before_end=current.before_end if before_end is None else before_end,
        max_restarts=current.max_restarts or DEFAULT_MAX_RESTARTS,
        set_by=set_by,
    )


def set_by_operator(
    rec: StepRecord,
    *,
    every: int | None,
    before_end: int | None,
    off: bool,
    by: str,
    now: int,
) -> str:
    """``sckpt auto`` on one step's record (under its lock): the policy ``changed``, the
    next interval checkpoint one interval from ``now`` (0: none), a history line; the
    policy's words ("off" when none is left)."""
    rec.policy = changed(rec.policy, every, before_end, off, by)
    step = interval(rec.policy, max(rec.ckpt_seconds.values(), default=0.0))
    if rec.policy.auto:
        rec.policy.every = step
    rec.next_due = now + step if step else 0
    said = describe(rec.policy) or "off"
    rec.log("auto", by, 0, said, now=now)
    return said


def check_before_end_limit(
    before_end: int, time_limit: int, job_id: int, what: str = "before_end"
) -> None:
    """Refuse a ``before_end`` not shorter than the job's time limit: its checkpoint would
    come at once, and again after every requeue (``UsageError``, naming ``what``: the
    option or the argument)."""
    if time_limit and before_end >= time_limit:
        raise UsageError(
            f"{what} {describe_duration(before_end)} is not shorter than job "
            f"{job_id}'s time limit ({describe_duration(time_limit)})"
        )


def young_daly(cost: float, mtbf: int) -> int:
    """The interval sqrt(2 x C x MTBF), within ``AUTO_FLOOR`` .. ``AUTO_CEILING`` seconds."""
    raw = math.sqrt(2.0 * max(cost, 0.1) * max(mtbf, 1))
    return int(min(AUTO_CEILING, max(AUTO_FLOOR, raw)))


def interval(policy: AutoPolicy, cost: float) -> int:
    """Seconds to the next interval checkpoint (0: the policy has none)."""
    if policy.auto:
        return young_daly(cost or ASSUMED_COST, policy.mtbf or DEFAULT_MTBF)
    return policy.every


def request_wait(cost: float) -> int:
    """How long an automatic checkpoint may take before it is recorded as timed out."""
    return max(REQUEST_WAIT_FLOOR, int(20 * cost))


def due(rec: StepRecord, now: float, restart_count: int) -> str:
    """Which automatic checkpoint is due now: ``before end``, ``interval`` or "" (none).

    Nothing is due while ``rec.refusal()`` says no checkpoint may start (disabled, one
    running, a program still writing): the due time stays passed, so it is taken on the
    first turn after that ends.
    """
    policy = rec.policy
    if not policy.active or rec.refusal()[0]:
        return ""
    if (
        policy.before_end
        and rec.end_time
        and now >= rec.end_time - policy.before_end
        and rec.before_end_run != restart_count
    ):
        return CAUSE_BEFORE_END
    if (policy.every or policy.auto) and rec.next_due and now >= rec.next_due:
        return CAUSE_INTERVAL
    return ""


def fits(cost: float, grace_left: float) -> bool:
    """Whether a checkpoint that took ``cost`` last time can complete in ``grace_left``
    seconds (an unmeasured one is tried: the last complete image stays the restart point
    whatever happens)."""
    if grace_left <= 0:
        return False
    return cost * SIGTERM_MARGIN <= grace_left


@dataclass(frozen=True)
class Requeue:
    """What to do after a before-end or preemption checkpoint: requeue or not, and why."""

    go: bool
    why: str


def decide_requeue(
    rec: StepRecord,
    request_id: str,
    *,
    restart_count: int,
    batch: bool,
    reason: str,
    need_image: bool = True,
) -> Requeue:
    """After checkpoint ``request_id`` ended: whether the job is requeued to continue.

    One requeue a run, only for a batch job (Slurm requeues no other).  A before-end link
    (``need_image``) requeues only after every task's checkpoint completed and not past
    ``max_restarts``: a link that produced no new image would repeat itself forever.  A
    preemption requeues whatever its checkpoint did (``request_id`` "" when none fitted in
    the grace): the job resumes from its newest complete image, as Slurm's own
    ``PreemptMode=REQUEUE`` would, and preemptions are not the job's doing, so not capped.
    """
    if rec.requeued_run == restart_count:
        return Requeue(False, "this run was requeued already")
    if not batch:
        return Requeue(False, rules.batch_only(rec.job_id, batch))
    if not need_image:
        return Requeue(True, reason)
    results = rec.last_results if request_id and rec.last_request == request_id else {}
    failed = [f"task {p}: {m}" for p, (c, m) in sorted(results.items()) if int(c)]
    if not results or failed:
        what = "; ".join(failed[:3]) or "it did not end"
        return Requeue(False, f"the {reason} checkpoint did not complete ({what}): no new image")
    limit = rec.policy.max_restarts or DEFAULT_MAX_RESTARTS
    if restart_count >= limit:
        return Requeue(False, f"{restart_count} restarts reached (--max-restarts {limit})")
    return Requeue(True, f"{reason}: every task's image is complete")
