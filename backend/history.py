"""A job's history and the finished jobs, from Slurm's accounting: bounds and how to read them.

Why a module: the command line, the console and the facade ask accounting (slurmdbd) the
same two questions -- "every record of this job" and "which jobs ended lately" -- and must
bound them alike (a time window and a count), check a person's bounds alike and name each
record's outcome alike.  slurmdbd keeps every requeue of a job as a record of its own; this
module never keeps history itself.
"""

from __future__ import annotations

import re
import time

from . import operations, progress
from .errors import UsageError
from .model import Job, JobRecord, JobState, JobView, StepCheckpointEvent

HISTORY_SINCE = 30 * 86400
"""How far back ``sckpt history`` looks by default (seconds): job ids are reused once Slurm's
MaxJobId wraps, so an unbounded look could mix two jobs."""
HISTORY_LIMIT = 100
"""At most this many records of one job by default (the newest are kept)."""
FINISHED_SINCE = 86400
"""The console's finished jobs (``f``) from accounting: the last day by default."""
FINISHED_LIMIT = 500
"""At most this many finished jobs from accounting in the console (the newest)."""
MAX_LIMIT = 100_000
"""The largest ``--limit`` accepted."""

_SPAN = re.compile(r"^(\d+)\s*([smhdw]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
SINCE_FORMS = "a span back from now (90m, 12h, 7d, 2w), a date (2026-11-20) or date and time"
"""What ``--since`` takes, for messages."""


def parse_since(value: object, now: float | None = None) -> int:
    """``--since`` as Unix seconds: ``7d``/``12h``/``90m``/``2w`` back from now, or a local
    date (``2026-11-20``) or date and time (``2026-11-20T08:00``).  Raises ``UsageError``."""
    text = str(value).strip()
    current = time.time() if now is None else now
    m = _SPAN.match(text)
    if m:
        return max(0, int(current) - int(m.group(1)) * _UNITS[m.group(2)])
    for form in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"):
        try:
            return int(time.mktime(time.strptime(text, form)))
        except (ValueError, OverflowError):
            continue
    raise UsageError(f"invalid --since {text!r}: expected {SINCE_FORMS}")


def check_limit(value: object) -> int:
    """A record count between 1 and MAX_LIMIT, else ``UsageError``."""
    try:
        n = int(str(value))
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_LIMIT:
        raise UsageError(
            f"invalid --limit {value!r}: expected a whole number from 1 to {MAX_LIMIT}"
        )
    return n


def oldest_first(records: tuple[JobRecord, ...]) -> tuple[JobRecord, ...]:
    """A job's records in the order they happened (submission, then start); an array's
    tasks submitted together in task order."""
    return tuple(
        sorted(
            records,
            key=lambda r: (
                r.submit_time,
                r.start_time,
                r.end_time,
                -1 if r.array_task_id is None else r.array_task_id,
                r.job_id,
            ),
        )
    )


def newest_ended_first(records: tuple[JobRecord, ...]) -> tuple[JobRecord, ...]:
    """Finished jobs, the latest to end first (one record per job id, its latest)."""
    latest: dict[tuple[str, int], JobRecord] = {}
    for r in records:
        key = (r.cluster, r.job_id)
        old = latest.get(key)
        if old is None or (r.submit_time, r.end_time) >= (old.submit_time, old.end_time):
            latest[key] = r
    return tuple(sorted(latest.values(), key=lambda r: (r.end_time, r.job_id), reverse=True))


def state_text(record: JobRecord) -> str:
    """The record's state as sacct prints it (``CANCELLED by 0``, ``REQUEUED`` ...)."""
    if record.cancelled_by is not None:
        return f"{record.state} by {record.cancelled_by}"
    return record.state


def exit_text(record: JobRecord) -> str:
    """sacct's ``ExitCode``: ``status:signal``."""
    return f"{record.exit_code}:{record.signal}"


def run_label(index: int, record: JobRecord) -> str:
    """Which run of the job a record is: the first, or the restart count after requeues."""
    n = record.restart_count if record.restart_count is not None else index
    return "first run" if n == 0 else f"restart {n}"


def run_labels(records: tuple[JobRecord, ...], skipped: int) -> list[str]:
    """``run_label`` of each record, counted per job as sacct names it (an array's
    ``history`` lists every task: each task's first record is its first run)."""
    ids = [record_id(r) for r in records]
    if len(set(ids)) <= 1:
        return [run_label(skipped + i, r) for i, r in enumerate(records)]
    seen: dict[str, int] = {}
    labels = []
    for shown, r in zip(ids, records, strict=True):
        labels.append(run_label(seen.get(shown, 0), r))
        seen[shown] = seen.get(shown, 0) + 1
    return labels


def date_text(when: int) -> str:
    """A Unix time as the local date and time sacct prints (``2026-11-24T08:00:00``);
    ``Unknown`` for 0, as sacct says of a time not set."""
    if not when:
        return "Unknown"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(when))


def finished_view(record: JobRecord) -> JobView | None:
    """A finished job known only to accounting, as a job row of the console (no steps);
    None when the record did not end the job (a requeue: the job runs on)."""
    try:
        state = JobState(record.state)
    except ValueError:
        return None
    if not state.is_finished:
        return None
    job = Job(
        job_id=record.job_id,
        name=record.name,
        user=record.user,
        uid=record.uid,
        partition=record.partition,
        state=state,
        nodes="" if record.nodes == "None assigned" else record.nodes,
        num_nodes=0,
        submit_time=record.submit_time,
        start_time=record.start_time,
        end_time=record.end_time,
        work_dir=record.work_dir,
        restart_count=record.restart_count or 0,
        account=record.account,
    )
    return JobView(job)


def record_id(record: JobRecord) -> str:
    """A record's job id as sacct prints it: ``123``, or an array task's ``7_3``."""
    if record.array_job_id and record.array_task_id is not None:
        return f"{record.array_job_id}_{record.array_task_id}"
    return str(record.job_id)


REQUESTS = frozenset(op.name for op in operations.OPERATIONS if op.starts_checkpoint)
"""Events that start a checkpoint (the table's rows that do): its outcome is the ``done``
that follows for the step."""


def checkpoint_results(
    events: tuple[StepCheckpointEvent, ...],
) -> list[tuple[StepCheckpointEvent, str]]:
    """The events a history lists, each with its result in ``progress.py``'s words.

    Why: an event's code is the answer to that operation, not a checkpoint's outcome.  A
    ``create`` accepted (code 0) was listed ``completed`` while its checkpoint was still in
    progress, and a checkpoint that ended was listed twice (``create`` and ``done``).  A
    request now takes the outcome of the ``done`` that follows it for its step (that line
    is not listed again): ``completed``, ``failed (28)``; with none yet, the step's latest
    request is ``in progress`` and an earlier one ``requested`` (its outcome was not
    recorded).  A request refused is ``failed (code)``; any other event is ``completed``
    or ``failed (code)`` as before, a ``done`` with no request of its own too.
    """
    lines: list[tuple[StepCheckpointEvent, str]] = []
    waiting: dict[object, int] = {}
    for item in events:
        event, step = item.event, item.step_id
        code_word = progress.failed(event.code) if event.code else progress.COMPLETED
        if event.operation == "done" and step in waiting:
            index = waiting.pop(step)
            lines[index] = (lines[index][0], code_word)
            continue
        if event.operation in REQUESTS and not event.code:
            earlier = waiting.pop(step, None)
            if earlier is not None:
                lines[earlier] = (lines[earlier][0], progress.REQUESTED)
            waiting[step] = len(lines)
            lines.append((item, progress.IN_PROGRESS))
            continue
        lines.append((item, code_word))
    return lines
