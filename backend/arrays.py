"""Job array targets, looked up in a listing: which job record an id names.

Why a lookup: Slurm acts on job records, and an array task's record has a job id of its own
(``7_3`` may be job 9) that squeue does not show.  Users type the array's names, so before
any engine is called the facade turns them into records here, as scontrol reads them:

* ``7_3`` (``7_3.0``): the record of task 3 (or its step 0);
* ``7`` where 7 is an array's id: every record of the array (its tasks that run, and the
  record of those still pending), as ``scontrol hold 7`` or ``scancel 7`` act on them all;
* any other number: that job record, as before.

A task still pending inside its array's one record (``7_[4-50%2]``) has no record of its
own until the scheduler splits it off: acting on that record would act on every pending
task.  ``hold`` and ``release`` name it as scontrol does (``7_5``: the controller splits
it off), so for them it stays unresolved (``pending_ok``); anything else is refused with
what to do instead.  Pure: the model only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from .errors import InvalidJobId, UsageError
from .model import Job, StepId, expand_task_ranges, job_label, job_order


class ArrayIndex:
    """The arrays of one listing: task -> record, array id -> its records."""

    def __init__(self, jobs: Iterable[Job]) -> None:
        self.tasks: dict[tuple[int, int], Job] = {}
        self.pending: dict[int, Job] = {}
        self.records: dict[int, list[Job]] = {}
        self.by_id: dict[int, Job] = {}
        for job in jobs:
            self.by_id[job.job_id] = job
            if not job.array_job_id:
                continue
            self.records.setdefault(job.array_job_id, []).append(job)
            if job.array_task_id is not None:
                self.tasks[(job.array_job_id, job.array_task_id)] = job
            elif job.array_task_str:
                self.pending[job.array_job_id] = job
        for records in self.records.values():
            records.sort(key=job_order)

    def resolve(self, target: StepId, *, pending_ok: bool = False) -> StepId:
        """One target's record: an array task's own job id filled in (``7_3`` -> job 9);
        a plain record that is an array task gets its array names (for what is shown and
        logged).  ``InvalidJobId`` when no record holds the task."""
        if not target.unresolved:
            job = self.by_id.get(target.job_id)
            if job is None or job.array_task_id is None or target.array_task_id is not None:
                return target
            return replace(target, array_job_id=job.array_job_id, array_task_id=job.array_task_id)
        array_id, task = target.array_job_id, target.array_task_id
        assert task is not None  # unresolved says so
        job = self.tasks.get((array_id, task))
        if job is not None:
            return replace(target, job_id=job.job_id)
        pending = self.pending.get(array_id)
        if pending is not None and task in _tasks_of(pending):
            if pending_ok:  # hold/release: by its name, as scontrol (arrays.py's doc)
                return target
            raise UsageError(
                f"{target} has not started: it is one of the pending tasks "
                f"{job_label(pending)}, which Slurm keeps as one job record until each "
                f"task starts; hold or release it, act on the whole array ({array_id}), "
                "or wait for it to start"
            )
        raise InvalidJobId(
            hint=f"no array task {target.job_text} is listed (squeue -r -j {array_id} lists "
            "the array's tasks)"
        )

    def expand(self, target: StepId) -> tuple[StepId, ...]:
        """As scontrol reads a typed id: an array's id names every record of the array
        (``7`` -> ``7_1``, ``7_2``, ``7_[3-50%2]``; ``7.0`` stays job 7's step 0)."""
        if target.unresolved or not target.is_whole_job:
            return (self.resolve(target),)
        records = self.records.get(target.job_id)
        if not records:
            return (self.resolve(target),)
        return tuple(
            replace(
                target,
                job_id=job.job_id,
                array_job_id=job.array_job_id if job.array_task_id is not None else 0,
                array_task_id=job.array_task_id,
            )
            for job in records
        )


def _tasks_of(job: Job) -> tuple[int, ...]:
    try:
        return expand_task_ranges(job.array_task_str)
    except ValueError:
        return ()


def needs_listing(target: StepId) -> bool:
    """Whether ``target`` can only be read with a listing: an array task, or a whole job
    (whose id may be an array's)."""
    return target.unresolved or target.is_whole_job
