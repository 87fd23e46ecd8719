"""The facade's accounting reads: a job's history and the jobs that finished.

Accounting (slurmdbd) is asked only when a person asks (``sckpt history``, the console's
``f``), never by the refresh, and always in a bounded window: records since a time (a
default span back from the engine's clock), at most a limit of them (``history.py`` holds
those rules).  ``Facade.history`` and ``Facade.finished_jobs`` call these.
"""

from __future__ import annotations

from . import history as history_rules
from .engines.base import Engine
from .errors import InvalidJobId, UsageError
from .model import FinishedJobs, JobHistory, Snapshot, StepCheckpointEvent, StepId


def job_history(
    engine: Engine,
    step: StepId,
    since: int | str | None,
    limit: int | str | None,
    last: Snapshot | None,
) -> JobHistory:
    """Every accounting record of ``step``'s job in the window, oldest first (at most
    ``limit``, the newest), and its steps' checkpoint events: the engine's, else those of
    the ``last`` snapshot.  ``InvalidJobId`` when accounting has none in the window."""
    if not step.is_whole_job:
        raise UsageError(f"history of {step}: name the job (JOB), not a step")
    start = window_start(engine, since, history_rules.HISTORY_SINCE)
    most = history_rules.check_limit(history_rules.HISTORY_LIMIT if limit is None else limit)
    found = history_rules.oldest_first(engine.job_records(step.job_id, start))
    if not found:
        raise InvalidJobId(
            message=f"accounting has no record of job {step.job_id} since "
            + history_rules.date_text(start),
            hint="look further back with --since, or check the job id",
        )
    kept = found[-most:]
    newest = found[-1]
    events = engine.checkpoint_events(step.job_id, newest.work_dir, newest.uid)
    if not events:
        events = snapshot_events(last, step.job_id)
    return JobHistory(
        job_id=step.job_id,
        cluster=newest.cluster,
        records=kept,
        checkpoints=events,
        since=start,
        limit=most,
        truncated=len(found) > most,
        skipped=len(found) - len(kept),
    )


def finished_jobs(engine: Engine, since: int | str | None, limit: int | str | None) -> FinishedJobs:
    """Jobs that ended in the window (default ``FINISHED_SINCE`` back), newest first, at
    most ``limit``."""
    start = window_start(engine, since, history_rules.FINISHED_SINCE)
    most = history_rules.check_limit(history_rules.FINISHED_LIMIT if limit is None else limit)
    found = history_rules.newest_ended_first(engine.finished_jobs(start))
    return FinishedJobs(
        records=found[:most],
        since=start,
        limit=most,
        truncated=len(found) > most,
        taken_at=engine.now(),
    )


def window_start(engine: Engine, value: int | str | None, default_span: int) -> int:
    """Where a window begins: ``value`` (Unix seconds, or ``parse_since`` text measured
    back from the engine's clock), else ``default_span`` back from the engine's now."""
    if value is None:
        return max(0, int(engine.now()) - default_span)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise UsageError(f"invalid since {value}: Unix seconds from 0")
        return value
    return history_rules.parse_since(value, now=engine.now())


def snapshot_events(last: Snapshot | None, job_id: int) -> tuple[StepCheckpointEvent, ...]:
    """The job's steps' checkpoint events in the ``last`` snapshot (engines that keep them
    on the step, as the simulated controller does), oldest first."""
    if last is None:
        return ()
    found = [
        StepCheckpointEvent(view.step.step_id, event)
        for job in last.jobs
        if job.job.job_id == job_id
        for view in job.steps
        for event in view.checkpoint.history
    ]
    return tuple(sorted(found, key=lambda e: (e.event.time, e.step_id)))
