"""Slurm 19.05's checkpoint rules, each written once.

Why a module of its own: the simulated controller, the cooperative engine, the listing
engine and the console all need the same answers (which check refuses first, what a whole
job acts on, which code a whole-job request reports, what the checkpoint column says), and
every copy written so far drifted from the others.  Each rule of
``shared/reference/checkpoint-semantics.md`` has one function here; callers bring the
facts (a job record, its steps, who asks, a counter) and get a decision or a typed error.

Pure: no I/O, no Slurm, no clock.  It imports only ``model`` and ``errors``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .errors import (
    EALREADY,
    ESLURM_DISABLED,
    ESLURM_INVALID_JOB_ID,
    AccessDenied,
    AlreadyDone,
    Disabled,
    InvalidArgument,
    InvalidJobId,
    JobNotFinished,
    JobPending,
    JobSuspended,
    NoSuchImage,
    NotSupported,
    PermissionRefused,
    describe,
    error_for,
)
from .model import (
    STEP_BATCH,
    STEP_EXTERN,
    STEP_INTERACTIVE,
    ActionResult,
    CheckpointError,
    CheckpointKind,
    CheckpointState,
    Job,
    JobState,
    Step,
    StepId,
)

MAX_DISABLE = 0xFFFF
"""The disable counter's ceiling (a ``uint16_t`` in the plugins' state)."""

DEFAULT_MAX_WAIT = 10
"""scontrol's MaxWait when none is given (seconds)."""

RESTART_DIR_ENV = "SLURM_RESTART_DIR"
"""Where a restarted job's tasks find their images (as srun_cr set it)."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sends a request, as the controller sees it (uid from munge, name for messages)."""

    uid: int
    name: str
    is_slurm_user: bool = False
    """SlurmUser: allowed job-level requests on anyone's job, and restarts."""

    @property
    def is_root(self) -> bool:
        return self.uid == 0


# ---------------------------------------------------------------------- targets


def is_job_level(target: StepId) -> bool:
    """The whole job (``NO_VAL``) or its batch script: in 19.05 both were ``NO_VAL``.

    They reach the controller's job-level path: SlurmUser allowed, ESLURM_JOB_SUSPENDED,
    the job record saved by create/vacate, restart accepted.
    """
    return target.is_whole_job or target.is_batch


_SPECIAL_ORDER = {STEP_BATCH: 0, STEP_EXTERN: 1, STEP_INTERACTIVE: 2}


def step_order(step: int) -> tuple[int, int]:
    """squeue's order within a job: batch, extern, interactive, then 0, 1, 2 ..."""
    special = _SPECIAL_ORDER.get(step)
    return (special, 0) if special is not None else (3, step)


def image_path(base: str, step: StepId) -> str:
    """``<base>/<job>.<step>``, or ``<base>/<job>`` for the batch script."""
    leaf = f"{step.job_id}" if step.is_batch else f"{step.job_id}.{step.step_text}"
    return f"{base.rstrip('/')}/{leaf}"


def saved_record_path(directory: str, job_id: int) -> str:
    """Where create/vacate of a batch job save its record, and restart reads it."""
    return f"{directory.rstrip('/')}/{job_id}.ckpt"


# ---------------------------------------------------------------------- checks 1-6


def may_act(target: StepId, job: Job, caller: Caller) -> bool:
    """Check 2: the job's owner and root may; for job-level requests SlurmUser too."""
    return (
        caller.is_root or caller.uid == job.uid or (is_job_level(target) and caller.is_slurm_user)
    )


def not_asked(job: Job) -> CheckpointState:
    """Another user's step: ``unknown``, since able and error answer only its owner or root
    (the controller's check 2; the cooperative engine keeps it, so every view agrees)."""
    return CheckpointState(
        CheckpointKind.UNKNOWN,
        reason=f"not asked: the controller answers only {job.user} (the owner) or root",
    )


def owner_hint(job: Job, who: str) -> str:
    """Whose job it is and who else may act on it: the words of every refusal for want of
    ownership, a checkpoint's (check 2) and job control's (the controller's refusal)."""
    return f"job {job.job_id} belongs to {job.user}; only its owner or {who} may do this"


def check_owner(target: StepId, job: Job, caller: Caller) -> None:
    """Check 2 as its refusal: ESLURM_ACCESS_DENIED naming whose job it is."""
    if not may_act(target, job, caller):
        who = "root or SlurmUser" if is_job_level(target) else "root"
        raise AccessDenied(hint=owner_hint(job, who))


def check_job(
    target: StepId, job: Job | None, caller: Caller, *, suspended_ok: bool = False
) -> Job:
    """The controller's checks 1-5, in its order; returns the job when they pass.

    ``suspended_ok``: a completion report (``complete``) skips check 4, as slurmctld's
    ``job_step_checkpoint_comp`` does.

    1. no such job -> ESLURM_INVALID_JOB_ID; 2. neither owner nor root (job-level
    requests: nor SlurmUser) -> ESLURM_ACCESS_DENIED; 3. pending -> ESLURM_JOB_PENDING;
    4. suspended -> ESLURM_DISABLED (job-level: ESLURM_JOB_SUSPENDED); 5. not running ->
    ESLURM_ALREADY_DONE.
    """
    job_level = is_job_level(target)
    if job is None:
        raise InvalidJobId(hint=f"there is no job {target.job_id}")
    check_owner(target, job, caller)
    if job.state is JobState.PENDING:
        raise JobPending(hint=f"job {job.job_id} has not started yet")
    if job.state is JobState.SUSPENDED and not suspended_ok:
        if job_level:
            raise JobSuspended(hint=f"resume job {job.job_id} first")
        raise Disabled(hint=f"job {job.job_id} is suspended; resume it first")
    if job.state not in (JobState.RUNNING, JobState.SUSPENDED):
        raise AlreadyDone(hint=f"job {job.job_id} is {job.state.value.lower()}")
    return job


S = TypeVar("S")


def steps_acted_on(target: StepId, steps: Iterable[S], step_of: Callable[[S], Step]) -> list[S]:
    """Check 6 and the whole-job expansion.

    The whole job acts on every RUNNING step, in squeue's order; a named step (``.batch``
    included) must exist, else ESLURM_INVALID_JOB_ID.  ``step_of`` gives the ``Step`` of
    whatever the caller keeps per step (a record, a store entry ...).
    """
    if target.is_whole_job:
        running = [s for s in steps if step_of(s).state == "RUNNING"]
        return sorted(running, key=lambda s: step_order(step_of(s).step_id.step))
    for s in steps:
        if step_of(s).step_id.step == target.step:
            return [s]
    raise InvalidJobId(hint=f"job {target.job_id} has no running step {target.step_text}")


def check_target(
    target: StepId,
    job: Job | None,
    steps: Sequence[Step],
    caller: Caller,
    *,
    suspended_ok: bool = False,
) -> tuple[Job, list[Step]]:
    """Checks 1-6 on a job record and its listed steps: (job, the steps acted on)."""
    checked = check_job(target, job, caller, suspended_ok=suspended_ok)
    return checked, steps_acted_on(target, steps, lambda s: s)


# ---------------------------------------------------------------------- the plugin


def able_code(disable_count: int) -> int:
    """``able``: ESLURM_DISABLED while the counter is non-zero."""
    return ESLURM_DISABLED if disable_count else 0


def checkpoint_code(disable_count: int, in_progress: bool) -> int:
    """create/vacate/requeue: ESLURM_DISABLED while disabled, then EALREADY while one runs."""
    if disable_count:
        return ESLURM_DISABLED
    if in_progress:
        return EALREADY
    return 0


def disabled(count: int) -> int:
    """``disable``: one more on the counter (at most ``MAX_DISABLE``)."""
    return min(MAX_DISABLE, count + 1)


def enabled(count: int) -> int:
    """``enable``: one less, never below zero (BLCR's wrap to 65535 is not reproduced)."""
    return max(0, count - 1)


def kept_error(code: int, message: str, new_code: int, new_message: str) -> tuple[int, str]:
    """A completion report: only the highest error code is kept, with its message.

    An equal code fills in a message that was missing.  Returns (code, message).
    """
    if new_code > code or (new_code == code and new_message and not message):
        return new_code, new_message or (describe(new_code)[1] if new_code else "")
    return code, message


def worst_error(errors: Iterable[CheckpointError]) -> CheckpointError:
    """``error`` over several steps: the one with the highest code, message and all (a
    plugin may leave a message with code 0: checkpoint/ompi's srun pid); code 0 when none."""
    worst = max(errors, key=lambda e: e.code, default=None)
    return worst if worst is not None else CheckpointError(0, describe(0)[0], "")


def tasks_code(step_nodes: Iterable[str], wanted: Iterable[str]) -> int:
    """``tasks``: a node list naming a node the step does not run on is an invalid target."""
    return ESLURM_INVALID_JOB_ID if set(wanted) - set(step_nodes) else 0


def tasks_hint(step: StepId, step_nodes: Iterable[str], wanted: Iterable[str], listed: str) -> str:
    """What ``tasks_code``'s ESLURM_INVALID_JOB_ID means here: a node, not the job, is wrong.

    The controller's code is kept (scripts may test it), but its message, "Invalid job id
    specified", points at the wrong thing; the hint names the nodes the step does not run
    on and the ones it does (``listed``, the step's node list as Slurm prints it).
    """
    outside = sorted(set(wanted) - set(step_nodes))
    if not outside:
        return ""
    named = ", ".join(outside[:8]) + (f" (+{len(outside) - 8} more)" if len(outside) > 8 else "")
    which = "node" if len(outside) == 1 else "nodes"
    verb = "is" if len(outside) == 1 else "are"
    return f"{which} {named} {verb} not in step {step}, which runs on {listed or 'no node'}"


def aggregate(
    target: StepId,
    operation: str,
    codes: Sequence[tuple[StepId, int]],
    detail: str = "",
    hint: str = "",
) -> ActionResult:
    """Over the steps acted on: the highest return code is the answer.

    A non-zero one is raised (``raise_highest``).  Success returns the ``ActionResult``
    (with every step's code for a whole-job request).
    """
    raise_highest(target, codes, hint)
    return ActionResult(target, operation, detail, tuple(codes) if target.is_whole_job else ())


def raise_highest(target: StepId, codes: Sequence[tuple[StepId, int]], hint: str = "") -> None:
    """The highest return code over the steps acted on, raised as its typed error when it
    is not 0, naming what each step answered when the request covered several; ``hint``
    explains a single step's refusal.  For a check before anything is done, whose success
    is no answer yet (``aggregate`` is the answer)."""
    highest = max((code for _sid, code in codes), default=0)
    if highest:
        if target.is_whole_job or len(codes) > 1:
            hint = refusal_hint(codes)
        raise error_for(highest, hint=hint)


def refusal_hint(codes: Sequence[tuple[StepId, int]]) -> str:
    """What each step answered, for a request over several: "2 of 4 running steps ..."."""
    refused = [f"{sid} {describe(code)[0]}" for sid, code in codes if code]
    return f"{len(refused)} of {len(codes)} running steps refused: " + ", ".join(refused[:6])


# ---------------------------------------------------------------------- restart


def check_job_level(operation: str, target: StepId) -> None:
    """An operation whose row is ``job_level`` (restart) applies to the job or its batch
    step only: another step is ESLURM_NOT_SUPPORTED, the controller's answer (19.05's
    ``job_restart`` gave it before any lookup, even for an unknown job).

    Checked once, before any engine is asked (``acting.perform``, from the row read by
    ``targets.resolve``): no engine checks it again."""
    if not is_job_level(target):
        raise NotSupported(
            hint=f"{operation} applies to a whole job (JOB or JOB.batch), not one step"
        )


def check_restart(target: StepId, job: Job | None, ended: bool | None = None) -> None:
    """Restart's check of the job it is given: ESLURM_JOB_NOT_FINISHED while it runs.
    (That the target is the job or its batch step was checked before any engine was
    asked: ``check_job_level``.)

    ``ended`` overrides "the job has finished" for engines whose meaning of an ended job
    is wider (the cooperative engine's vacated job waits held in PENDING).
    """
    if job is None:
        return
    if not (job.state.is_finished if ended is None else ended):
        raise JobNotFinished(hint=f"job {target.job_id} is {job.state.value.lower()}")


def requeue_refusal(job: Job) -> str:
    """Why Slurm cannot requeue ``job``; "" when it can.

    Only a job with a batch script can be requeued (``slurm_requeue`` answers
    ESLURM_BATCH_ONLY for one started by ``srun`` or ``salloc``), and a requeue is how the
    cooperative vacate ends a job so that restart can bring it back.  Vacate and restart
    (and anything that would end a job to resume it later) say this one sentence, so the
    command line and the console give the same reason.
    """
    return batch_only(job.job_id, job.batch)


def batch_only(job_id: int, batch: bool) -> str:
    """``requeue_refusal`` from what a job's own wrapper knows of it (``scontrol show
    job``'s BatchFlag): the same sentence for its ``--before-end`` requeue."""
    if batch:
        return ""
    return (
        f"job {job_id} has no batch script (started by srun or salloc), so Slurm "
        "cannot requeue it and restart cannot bring it back"
    )


def no_image_hint(job_id: int, image_dir: str | None) -> str:
    """What restart's bare ENOENT means, and what would make an image: the API answers
    with the code only, which read as a missing file of sckpt's own."""
    where = f"in {image_dir}" if image_dir else "in the cluster's checkpoint directory"
    return (
        f"there is no checkpoint image of job {job_id} {where} to restart from: a job is "
        f"saved for restart when it is vacated while it runs, by sckpt vacate {job_id} "
        "(vacated with --image-dir DIR, it restarts with the same --image-dir)"
    )


def no_record(target: StepId, where: str) -> NoSuchImage:
    """Restart without the job's saved record: ENOENT."""
    return NoSuchImage(hint=f"no saved record of job {target.job_id} {where}")


def check_saved_record(
    target: StepId,
    where: str,
    saved_job_id: int | None,
    owner_uid: int,
    owner: str,
    caller: Caller,
) -> None:
    """Restart's record checks, in order: missing (``saved_job_id`` None) -> ENOENT;
    another job's -> EINVAL; a caller neither owner, root nor SlurmUser -> EPERM.

    ``where`` names the place looked at, for the messages ("at /var/slurm/.../5.ckpt").
    """
    if saved_job_id is None:
        raise no_record(target, where)
    if saved_job_id != target.job_id:
        raise InvalidArgument(
            hint=f"the record {where} is job {saved_job_id}'s, not job {target.job_id}'s"
        )
    if not (caller.is_root or caller.uid == owner_uid or caller.is_slurm_user):
        raise PermissionRefused(hint=f"job {target.job_id} belongs to {owner}")


# ---------------------------------------------------------------------- the console's column


class Plugin(enum.Enum):
    """What the cluster can do for a running step, as far as the checkpoint column goes."""

    WORKS = "works"
    NONE = "none"
    """No checkpoint support (checkpoint/none, a Slurm without the API, a step not under
    ``sckpt run``): every operation answers ESLURM_NOT_SUPPORTED."""


def column_for_job(job: Job) -> tuple[CheckpointKind, str] | None:
    """The checkpoint column decided by the job's state alone; None for a running job.

    The same for every engine: a pending (or requeued) job has not started, a suspended
    one refuses (ESLURM_DISABLED), a finished one is done.
    """
    if job.state is JobState.RUNNING:
        return None
    if job.state is JobState.PENDING:
        return CheckpointKind.PENDING, "the job has not started"
    if job.state is JobState.SUSPENDED:
        return CheckpointKind.DISABLED, "job suspended"
    return CheckpointKind.ENDED, f"job {job.state.value.lower()}"


def column_for_step(
    disable_count: int, in_progress: bool, plugin: Plugin = Plugin.WORKS
) -> CheckpointKind:
    """The checkpoint column of a running job's step, from its plugin state.

    It says what ``able`` answers: not supported wins; then the disable counter
    (ESLURM_DISABLED even while a checkpoint runs); then a checkpoint in progress.
    """
    if plugin is Plugin.NONE:
        return CheckpointKind.NOT_SUPPORTED
    if disable_count:
        return CheckpointKind.DISABLED
    if in_progress:
        return CheckpointKind.IN_PROGRESS
    return CheckpointKind.ABLE
