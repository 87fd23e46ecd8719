"""When a wait for a checkpoint must end because what it waits on is gone.

``create --wait`` (MaxWait 0: no bound) waited on the step's state file until every task
reported.  A cancelled job's wrappers never report (slurmstepd kills them with the
program, or a program frozen inside DMTCP's checkpoint never lets them finish), so the
wait went on until it was killed.  The engine now looks at Slurm once per poll interval
(``LOOK_EVERY``) while it waits, and this module says whether, and why, the wait is over:

* the job is no longer listed, or finished (completed, failed, timed out ...): ``WaitEnded``
  (exit 4);
* it was cancelled: ``JobCancelled`` (exit 5);
* someone requeued it (its restart count grew, or it is pending again): ``JobRequeued``
  (exit 6);
* a step waited on is no longer running while the job is: ``WaitEnded``.

Pure functions of two listings: the engine and the tests share them.
"""

from __future__ import annotations

import contextlib
import errno
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from ..errors import JobCancelled, JobRequeued, SckptError, WaitEnded
from ..model import Job, JobState, Step, StepId
from .protocol import StepRecord, StoreError
from .store import StepStore

STOPPED = "no outcome can come of the checkpoint any more: stopped waiting"
SETTLE = 0.4
"""Seconds between the look that saw the job or step go and the one that says how."""
LOOK_EVERY = 1.0
"""Seconds between two looks at Slurm during a wait: the command line's poll interval
(``cli/runtime.WAIT_POLL_SECONDS``), so a cancelled step ends ``--wait`` within one."""


def ended_by_state(job_id: int, state: JobState | None, reason: str = "") -> WaitEnded:
    """The end of a wait for job ``job_id`` now in ``state`` (None: no longer listed):
    ``JobCancelled``, ``JobRequeued`` (pending again) or ``WaitEnded`` (any other end)."""
    label = f"job {job_id}"
    if state is None:
        return WaitEnded(message=f"{label} ended (Slurm no longer lists it)", hint=STOPPED)
    if state == JobState.PENDING:
        why = f", {reason}" if reason and reason != "None" else ""
        return JobRequeued(message=f"{label} was requeued ({state.value}{why})", hint=STOPPED)
    if state == JobState.CANCELLED:
        return JobCancelled(message=f"{label} was cancelled", hint=STOPPED)
    return WaitEnded(message=f"{label} ended ({state.value})", hint=STOPPED)


def why_over(
    before: Job, now: Job | None, steps: Iterable[Step], watched: Iterable[StepId]
) -> WaitEnded | None:
    """Why a wait that began on ``before`` is over, seen in ``now`` (None: not listed any
    more) and its running ``steps``; None while it may still end normally."""
    if now is not None and now.restart_count > before.restart_count:
        return JobRequeued(
            message=f"job {before.job_id} was requeued ({now.state.value})", hint=STOPPED
        )
    if now is None:
        return ended_by_state(before.job_id, None)
    if now.state.is_finished or now.state == JobState.PENDING != before.state:
        return ended_by_state(before.job_id, now.state, now.state_reason)
    running = {s.step_id.step for s in steps if s.state == "RUNNING"}
    gone = [str(s) for s in watched if not s.is_whole_job and s.step not in running]
    if gone:
        return WaitEnded(message=f"step {', '.join(gone)} ended", hint=STOPPED)
    return None


def closing_words(ended: WaitEnded) -> str:
    """What a step's record says of a request whose wait ended this way."""
    return f"no outcome: {ended.message} during the checkpoint"


def close_request(
    rec: StepRecord,
    request_id: str,
    ended: WaitEnded,
    clock: Callable[[], float] = time.time,
) -> None:
    """Close request ``request_id`` in ``rec`` (if still open): every task that has not
    reported gets ECANCELED and the reason, so ``able`` stops saying "in progress"; the
    history's line has ``clock``'s time (the engine's)."""
    req = rec.in_progress
    if req is None or req.request_id != request_id:
        return
    for procid in list(req.pending):
        rec.report(procid, errno.ECANCELED, closing_words(ended), request_id, clock=clock)


Look = Callable[[int], tuple[Job | None, tuple[Step, ...]]]
"""A fresh listing's job and its steps (the engine's ``_look``)."""


def end_if_over(
    look: Look,
    job: Job,
    pending: Sequence[tuple[StepStore, str]],
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> None:
    """Raise ``why_over``'s error when ``job`` or a step waited on is gone, after closing
    the requests ``pending`` (each step's store and request id) that no wrapper will answer
    any more; nothing when the wait may go on (or Slurm did not answer: next time).
    ``sleep`` and ``clock`` are the engine's (a test's fake sleep moves its clock on)."""
    watched = [store.step for store, _rid in pending]
    try:
        now, steps = look(job.job_id)
        ended = why_over(job, now, steps, watched)
        if ended is None:
            return
        # A requeue ends the steps before the job's listing shows it pending, and a job's
        # end can lag its steps' too: one more look says which it was.
        sleep(SETTLE)
        now, steps = look(job.job_id)
        ended = why_over(job, now, steps, watched) or ended
    except SckptError:
        return  # Slurm did not answer: next time
    for store, rid in pending:
        with contextlib.suppress(StoreError):
            store.update(partial(close_request, request_id=rid, ended=ended, clock=clock))
    raise ended
