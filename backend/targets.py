"""Parsing and validation of the targets users type: job, step and array task ids.

Everything here runs before any engine is called, so invalid input never reaches Slurm.
Each refusal is a ``UsageError`` whose message says what was expected.  The operations'
other arguments (max_wait, image_dir, ...) have their rules in ``arguments.py``.

An action's target is resolved once, by ``resolve``, into a ``ResolvedTarget``: the job
record it names (an array task's own job id, found in a listing: ``arrays.py``), with
``-M`` its cluster (``on_cluster``), checked against its operation's row (``whole_job``),
and what the row asks of it (``job_level``, ``completes``).  Every later step of
``Facade.act`` (the read-only guard, the audit line, ``acting.perform``, the engine) only
reads that value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .errors import UsageError
from .model import (
    STEP_BATCH,
    STEP_EXTERN,
    STEP_INTERACTIVE,
    WHOLE_JOB,
    StepId,
    expand_task_ranges,
)
from .operations import Operation

MAX_JOB_ID = 0xFFFFFFF0
"""Job ids above this collide with Slurm's special values."""
MAX_STEP = 0xFFFFFFF0

_NAMED_STEPS = {"batch": STEP_BATCH, "extern": STEP_EXTERN, "interactive": STEP_INTERACTIVE}
_TARGET = re.compile(
    r"(?P<job>[0-9]{1,10})"
    r"(?:_(?:(?P<task>[0-9]{1,10})|\[(?P<range>[0-9,:\-]{1,200})(?:%[0-9]{1,10})?\]))?"
    r"(?:\.(?P<step>[0-9]{1,10}|[a-z]+))?"
)

TARGET_FORMS = (
    "JOB, JOB.STEP, JOB.batch, JOB.extern or JOB.interactive (for example 123.4), "
    "or an array task ARRAY_TASK[.STEP] (123_4, 123_4.0)"
)
MAX_TASKS_NAMED = 10_000
"""Most array tasks one ``123_[...]`` may name (a typo such as ``1-4000000`` would else
make sckpt act four million times)."""


def parse_target(text: str) -> StepId:
    """``"123"`` -> whole job, ``"123.4"``, ``"123.batch"``, ... -> that step; ``"7_3"``,
    ``"7_3.0"`` -> that array task (or its step), unresolved (``StepId.unresolved``: the
    facade finds the task's own job record).  A range (``7_[1-5]``) names several
    targets: ``parse_targets``."""
    found = parse_targets(text)
    if len(found) != 1 or "[" in text:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise UsageError(f"{shown!r} names several array tasks: expected one job or step")
    return found[0]


def parse_targets(text: str) -> tuple[StepId, ...]:
    """``parse_target``, and ``"7_[1-5,9]"`` (``.STEP`` too) -> one target per task, as
    scontrol reads a task range (a ``%N`` run limit after it is allowed and ignored)."""
    if not isinstance(text, str):
        raise UsageError(f"expected a step id as text: {TARGET_FORMS}")
    shown = text if len(text) <= 40 else text[:37] + "..."
    match = _TARGET.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"invalid job or step id {shown!r}: expected {TARGET_FORMS}")
    job_id = int(match["job"])
    if not 0 < job_id <= MAX_JOB_ID:
        raise UsageError(f"invalid job id {shown!r}: expected a number from 1 to {MAX_JOB_ID}")
    step = _step_number(match["step"], shown)
    if match["task"] is not None:
        tasks: tuple[int, ...] = (int(match["task"]),)
    elif match["range"] is not None:
        try:
            tasks = expand_task_ranges(match["range"])
        except ValueError:
            raise UsageError(
                f"invalid array task range in {shown!r}: expected tasks such as "
                f"{job_id}_[1-5,7] or {job_id}_[0-20:4]"
            ) from None
        if len(tasks) > MAX_TASKS_NAMED:
            raise UsageError(
                f"{shown!r} names {len(tasks)} array tasks: at most {MAX_TASKS_NAMED} at once"
            )
    else:
        return (StepId(job_id, step),)
    if any(task > MAX_JOB_ID for task in tasks):
        raise UsageError(f"invalid array task in {shown!r}: expected 0 to {MAX_JOB_ID}")
    return tuple(StepId(0, step, array_job_id=job_id, array_task_id=task) for task in tasks)


def to_target(value: object) -> StepId:
    """A ``StepId`` from user text or a ``StepId``; ``UsageError`` for anything else (the
    facade's first check of every call)."""
    if isinstance(value, StepId):
        job_id, step = value.job_id, value.step
        if (
            not isinstance(job_id, int)
            or isinstance(job_id, bool)
            or not isinstance(step, int)
            or isinstance(step, bool)
        ):
            raise UsageError(f"invalid step id {value!r}: expected {TARGET_FORMS}")
        if not 0 < job_id <= MAX_JOB_ID and not value.unresolved:
            raise UsageError(f"invalid job id {job_id}: expected a number from 1 to {MAX_JOB_ID}")
        if step not in (WHOLE_JOB, STEP_BATCH, STEP_EXTERN, STEP_INTERACTIVE) and not (
            0 <= step <= MAX_STEP
        ):
            raise UsageError(f"invalid step number {step}: expected 0 to {MAX_STEP}")
        return value
    if isinstance(value, str):
        return parse_target(value)
    raise UsageError(f"invalid target of type {type(value).__name__}: expected {TARGET_FORMS}")


def _step_number(step_text: str | None, shown: str) -> int:
    if step_text is None:
        return WHOLE_JOB
    if step_text.isdigit():
        step = int(step_text)
        if step > MAX_STEP:
            raise UsageError(f"invalid step number in {shown!r}: expected 0 to {MAX_STEP}")
        return step
    if step_text in _NAMED_STEPS:
        return _NAMED_STEPS[step_text]
    raise UsageError(f"invalid step {step_text!r} in {shown!r}: expected {TARGET_FORMS}")


def require_whole_job(operation: str, target: StepId) -> None:
    """A verb that acts on jobs only (hold, release, requeue, as scontrol's) given a step is
    bad usage, said before Slurm is asked (scontrol would read ``12.3`` as no job at all)."""
    if not target.is_whole_job:
        raise UsageError(
            f"{operation} acts on a whole job: give JOB ({target.job_id}), not the step {target}"
        )


def on_cluster(target: StepId, clusters: Sequence[str]) -> StepId:
    """``target`` with its cluster, one of ``-M``'s ``clusters``: the only one when it names
    none; as it is without ``-M`` (no ``clusters``).  With several clusters a target must
    name its own (job ids repeat across clusters)."""
    if not clusters:
        return target
    if target.cluster:
        if target.cluster not in clusters:
            raise UsageError(f"cluster {target.cluster} is not one of -M's ({', '.join(clusters)})")
        return target
    if len(clusters) == 1:
        return replace(target, cluster=clusters[0])
    raise UsageError(
        f"{target}: which cluster? -M names {', '.join(clusters)}: name one with "
        "-M NAME to act on a job"
    )


@dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """An action's target, resolved once (``resolve``): what every later step reads."""

    step: StepId
    """The job record acted on: an array task's own job id and array names, and with
    ``-M`` its cluster; what the guard refuses, the audit line names and the engine is given."""
    job_level: bool = False
    """It must be the job or its batch step (the row's ``job_level``: restart): another
    step is the controller's refusal, ESLURM_NOT_SUPPORTED (``rules.check_job_level``),
    which ``acting.perform`` gives after read-only mode's refusal and before any engine is
    asked; no engine checks it."""
    matches_checkpoint: bool = False
    """A success reported on it must name the checkpoint in progress (the row's
    ``completes``, on one step: what ``able`` answers for a whole job differs between
    engines, ``acting.perform``)."""


def resolve(
    target: object,
    op: Operation,
    clusters: Sequence[str],
    record: Callable[[StepId, bool], StepId],
) -> ResolvedTarget:
    """``target`` for the operation ``op``, in this order: parsed (``to_target``), looked
    up as a job record (``record(step, pending_ok)``: the facade's listing, ``arrays.py``),
    given its ``-M`` cluster (``on_cluster``), refused as a step where the row acts on
    whole jobs only (``require_whole_job``).  ``UsageError`` (or the lookup's
    ``InvalidJobId``) when it cannot be.  A ``job_level`` row's refusal of a step is the
    controller's, not bad usage: it is only noted here (``ResolvedTarget.job_level``)."""
    step = on_cluster(record(to_target(target), op.pending_task_by_name), clusters)
    if op.whole_job:
        require_whole_job(op.name, step)
    return ResolvedTarget(
        step, job_level=op.job_level, matches_checkpoint=op.completes and not step.is_whole_job
    )
