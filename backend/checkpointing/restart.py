"""How restart brings a job back: the images it resumes from, the release, and what it
waits for (a requeue to finish completing, and the begin time it sets).

Vacate requeues a batch job held; restart releases it (or requeues a finished one) and
starts it now.  Slurm's requeue completes in the background: until then the job keeps its
nodes and steps, and the end of the requeue sets a begin time about two minutes ahead, so
a restart that cleared it too early would wait those two minutes.  These functions watch the
job through ``look`` (the engine's fresh listing) and act through the binding; they read
time and wait on the engine's ``clock`` and ``sleep`` only (a test's fake pair moves time
on when slept, so no wait here is real time in it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import ESLURM_JOB_NOT_PENDING, SlurmError
from ..model import Job, JobState, Step
from ..slurm_api import SlurmAPI
from .protocol import StepRecord, image_leaf
from .records import image_in, named
from .store import StepStore

SETTLE_POLL = 0.2
CREDENTIAL_GAP = 2.0
"""Seconds between the end of a job's run and its restart: slurmd refuses a job credential
issued in the same second as the revocation of the job's previous one."""
BEGIN_WATCH = 10.0
"""How long restart watches for a begin time set again by a late requeue completion."""
SETTLE_TIMEOUT = 120.0
"""Longest wait for a requeued job to finish completing (KillWait + MessageTimeout ...)."""

Look = Callable[[int], tuple[Job | None, Sequence[Step]]]
"""A fresh look at one job: the job (None when Slurm no longer lists it) and its steps."""


def wait_settled(
    look: Look,
    job_id: int,
    timeout: float = SETTLE_TIMEOUT,
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Wait until a requeued job has finished completing: no nodes, no steps left.

    Until then its steps still run (vacate has not "ended the step" yet), and the end of
    the requeue would set the begin time again after a restart had cleared it.
    Returns whether it had to wait.
    """
    deadline = clock() + timeout
    waited = False
    while clock() < deadline:
        job, steps = look(job_id)
        if job is None or (not job.nodes and not steps):
            return waited
        waited = True
        sleep(SETTLE_POLL)
    return waited


def keep_begin_time_now(
    look: Look,
    binding: SlurmAPI,
    job_id: int,
    timeout: float = BEGIN_WATCH,
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """A requeue still completing sets the begin time ahead again: clear it again.

    Watches the job for a few seconds; returns as soon as it left PENDING or waits for
    anything but its begin time (resources, priority ...).  A finished job whose requeue
    waits for its completion to end (its epilog) still shows its old state: it is
    watched until it pends (at most SETTLE_TIMEOUT), or it would wait out the begin time
    the requeue then sets, two minutes ahead.
    """
    deadline = clock() + timeout
    extended = False
    while clock() < deadline:
        sleep(SETTLE_POLL)
        job, _steps = look(job_id)
        if job is not None and job.state.is_finished:
            if not extended:  # once: the longest a completion is waited for
                deadline = max(deadline, clock() + SETTLE_TIMEOUT)
                extended = True
            continue
        if job is None or job.state != JobState.PENDING:
            return
        if job.state_reason == "BeginTime":
            start_now(binding, job_id)
        elif job.state_reason not in ("None", ""):
            return


def start_now(binding: SlurmAPI, job_id: int) -> None:
    """Clear the begin time a requeue sets (about two minutes ahead).

    A job that started meanwhile (ESLURM_JOB_NOT_PENDING) has nothing left to clear.
    """
    try:
        binding.set_begin_time(job_id, 0)
    except SlurmError as exc:
        if exc.code != ESLURM_JOB_NOT_PENDING:
            raise


def images_under(
    job: Job, records: list[tuple[StepStore, StepRecord]], image_dir: str
) -> list[tuple[StepStore, str, dict[str, str]]]:
    """The images an operator's ``image_dir`` holds for each step of ``job``: its store,
    its name and each task's image (steps with none are left out)."""
    chosen = []
    for store, rec in records:
        leaf = Path(image_dir) / image_leaf(named(job, store.step), rec.name)
        found = {
            p: image
            for p in set(rec.tasks) | set(rec.last_image)
            if (image := image_in(leaf / f"task{p}"))
        }
        if found:
            chosen.append((store, rec.name, found))
    return chosen


def release_and_start(
    look: Look,
    binding: SlurmAPI,
    job: Job,
    records: list[tuple[StepStore, StepRecord]],
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Release the held ``job`` (or requeue it when it finished) and start it now, no
    sooner than ``CREDENTIAL_GAP`` after its last run ended (``records``' end times, which
    the engine wrote with the same ``clock``); every wait is on ``sleep``."""
    # slurmd refuses a job credential issued in the same second as the revocation of
    # the job's previous one ("Job credential revoked"): start a second later at least.
    ended = max((r.ended_at for _s, r in records), default=0.0)
    not_before = ended + CREDENTIAL_GAP
    if job.state == JobState.PENDING:
        # A job sckpt did not end (``scontrol requeuehold``, a node lost) may have been
        # requeued a moment ago, and a held job's end time is Unknown: wait the gap.
        if wait_settled(look, job.job_id, clock=clock, sleep=sleep) or not ended:
            not_before = max(not_before, clock() + CREDENTIAL_GAP)
        binding.release(job.job_id)
    else:
        if 0 < job.end_time < clock() + 86400:
            not_before = max(not_before, job.end_time + CREDENTIAL_GAP)
        binding.requeue(job.job_id, hold=False)
    sleep(max(0.0, min(not_before - clock(), CREDENTIAL_GAP)))
    start_now(binding, job.job_id)
    keep_begin_time_now(look, binding, job.job_id, clock=clock, sleep=sleep)
