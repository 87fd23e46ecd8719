"""What a job's state files tell the cooperative engine, read as it shows and checks them.

The engine (``engine.py``) reads the records through the store; the words and rules it then
applies to them are here: which tasks belong to this run of the job, which must not be sent
their signal, how each task started, the checkpoint column of a running step, what each
task would resume from on restart, and a store failure as the error a person sees.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from .. import rules
from ..errors import (
    ESLURM_NOT_SUPPORTED,
    AccessDenied,
    NotSupported,
    SckptError,
    UnsafeVacate,
    error_for,
)
from ..model import AutoCheckpoints, CheckpointKind, CheckpointState, Job, Step, StepId, job_step_id
from .access import image_dir_problem
from .generations import TaskImages, generation_of, image_problem
from .protocol import StepRecord, StoreError, TaskInfo, recorded_image
from .store import ImageIndex, StepStore, job_stores

NOT_UNDER_RUN = "not supported for this step: it was not started under `sckpt run`"
WRAPPER_STEP_NAME = "sckpt"
"""The name srun gives ``srun sckpt run -- PROGRAM``'s step (its program's base name)."""
STARTING_GRACE = 30.0
"""Seconds a step under ``srun sckpt run`` may run before its wrapper has registered it."""


def runs_the_wrapper(step: Step) -> bool:
    """Whether srun launched ``step`` to run ``sckpt run``: its command line says so
    (``srun -J md .venv/bin/sckpt run -- ./app``, whatever the step is named; Slurm 21.08
    and later report it), or srun named the step ``sckpt``, its program's base name (the
    only sign on older releases)."""
    return step.name == WRAPPER_STEP_NAME or _runs_sckpt_run(step.submit_line)


@functools.lru_cache(maxsize=4096)
def _runs_sckpt_run(submit_line: str) -> bool:
    """Whether srun's command line runs ``sckpt run``.  Kept per line: every refresh asks
    it of each running step without a state file, and ``shlex`` splitting the same lines
    again was a third of the idle console's CPU (bench/README.md)."""
    try:
        words = shlex.split(submit_line)
    except ValueError:  # an unbalanced quote: srun's own words, split as they are
        words = submit_line.split()
    return any(
        Path(word).name == WRAPPER_STEP_NAME and after == "run"
        for word, after in itertools.pairwise(words)
    )


def unregistered(step: Step, where: Path, now: float) -> CheckpointState:
    """The column of a running step with no registration of this run of the job.

    A step srun launched to run ``sckpt run`` (``runs_the_wrapper``): for its first seconds
    it is starting; later its wrapper could not register it (a working directory the job's
    user cannot write, ...), which the wrapper wrote on the job's stderr.  Any other step
    was not started under ``sckpt run``.
    """
    if not runs_the_wrapper(step):
        return CheckpointState(CheckpointKind.NOT_SUPPORTED, reason=NOT_UNDER_RUN)
    if now - step.start_time < STARTING_GRACE:
        why = "starting: `sckpt run` has not registered the step yet, ask again in a moment"
        return CheckpointState(CheckpointKind.STARTING, reason=why)
    return CheckpointState(
        CheckpointKind.NOT_SUPPORTED,
        reason=f"`sckpt run` could not register the step in {where}: the job's stderr "
        "says why (its StdErr in `sckpt show JOB`)",
    )


def blocked_refusal(blocked: Sequence[tuple[StepId, TaskInfo, str]]) -> NotSupported:
    """The refusal of tasks that must not be sent their signal: each task and why, then
    what would help.  Advice on signal handlers only where a handler is the cause: a task
    whose checkpointing is off (an image directory it cannot make) needs none of it."""
    hint = "; ".join(f"{step} {task.describe()}: {why}" for step, task, why in blocked[:6])
    hint += "; nothing was sent"
    if any(not task.off for _, task, _ in blocked):
        hint += (
            " (the program must install its checkpoint-signal handler first thing: README, "
            "Cooperative checkpointing; or start it under 'sckpt run --transparent', which "
            "needs no handler)"
        )
    return NotSupported(hint=hint)


def named(job: Job, step: StepId) -> StepId:
    """``step`` named as squeue names it (``9_1.0``): the wrapper names its images so."""
    return job_step_id(job, step.step, step.cluster)


def unregistered_step(step: Step, where: Path, now: float) -> NotSupported:
    """The refusal of a running step with no registration (``unregistered``'s words)."""
    reason = unregistered(step, where, now).reason
    if reason == NOT_UNDER_RUN:
        return NotSupported(hint=f"{NOT_UNDER_RUN} (no live registration in {where})")
    return NotSupported(hint=f"{step.step_id}: {reason}")


def unregistered_job(job: Job, steps: Iterable[tuple[Step, Path]], now: float) -> NotSupported:
    """The refusal of a whole job none of whose running steps registered: what each
    ``srun sckpt run`` step is doing, else how to launch one."""
    why = [
        f"{s.step_id}: {unregistered(s, where, now).reason}"
        for s, where in steps
        if s.state == "RUNNING" and runs_the_wrapper(s)
    ]
    return NotSupported(
        hint="; ".join(why[:4])
        or f"no step of job {job.job_id} runs under `sckpt run` "
        "(launch it as `srun sckpt run -- PROGRAM`)"
    )


def images_text(last_image: dict[str, str]) -> str:
    """Every task's last image, for an answer: ``image P`` for one task; for several whose
    images are one generation under one step directory, ``images DIR/task{0,1,2,3}/g2``
    (the shell's brace form); else each task's path (the answer named only task 0's)."""
    paths = [last_image[k] for k in sorted(last_image, key=lambda k: int(k) if k.isdigit() else 0)]
    if len(paths) <= 1:
        return f"image {paths[0]}" if paths else "no image"
    parts = [Path(p) for p in paths]
    same = {(p.parent.parent, p.name) for p in parts}
    tasks = [p.parent.name for p in parts]
    if len(same) == 1 and all(t.startswith("task") for t in tasks):
        step_dir, generation = same.pop()
        ranks = ",".join(t.removeprefix("task") for t in tasks)
        return f"images {step_dir}/task{{{ranks}}}/{generation}"
    return "images " + ", ".join(paths)


def column(rec: StepRecord | None, job: Job) -> CheckpointState | None:
    """A running step's checkpoint column from its record (None: no state file, or no
    registration of this run of the job: ``unregistered`` says which)."""
    tasks = current_tasks(rec, job) if rec is not None else []
    if rec is None or not tasks:
        return None
    reason = ""
    blocked = blocked_tasks(rec, job)
    if blocked:
        task, why = blocked[0]
        reason = why if len(tasks) == 1 else f"task {task.procid}: {why}"
    busy = rec.busy()  # a program still writing the image of an expired request
    since = rec.in_progress.start if rec.in_progress else busy.busy_since if busy else 0
    kind = rules.column_for_step(
        rec.disable_count,
        bool(since),
        rules.Plugin.NONE if blocked else rules.Plugin.WORKS,
    )
    err = rec.checkpoint_error()
    return CheckpointState(
        kind=kind,
        reason=reason,
        disable_count=rec.disable_count,
        in_progress_since=since,
        last_error=err if err.code else None,
        image_dir=next(iter(sorted(rec.last_image.values())), ""),
        last_checkpoint_time=rec.last_image_time,
        history=rec.events(),
        start_notes=start_notes(tasks),
        checkpointer=next((t.checkpointer for t in tasks if t.checkpointer), ""),
        image_bytes=sum(rec.image_bytes.values()),
        checkpoint_seconds=max(rec.ckpt_seconds.values(), default=0.0),
        coordinator=rec.coordinator,
        slowest_task=slowest_task(rec.ckpt_seconds),
        auto=auto_view(rec),
        outside=outside_connections(tasks),
    )


def slowest_task(seconds: dict[str, float]) -> int:
    """The task (procid) whose last checkpoint took longest; -1 with fewer than two tasks."""
    if len(seconds) < 2:
        return -1
    return int(max(seconds, key=lambda procid: (seconds[procid], -int(procid))))


def outside_connections(tasks: list[TaskInfo]) -> tuple[str, ...]:
    """Each task's connections to outside the step, prefixed with its rank."""
    return tuple(f"task {t.procid} {named}" for t in tasks for named in t.outside)


def step_outcome(rec: StepRecord, job: Job) -> tuple[int, str]:
    """A step's checkpoint outcome in create's answer: its code, and every task's image
    (``images_text``) or ``error(N): ...``."""
    err = rec.checkpoint_error()
    return err.code, images_text(
        rec.last_image
    ) if not err.code else f"error({err.code}): {err.message}"


def not_restored(stores: Iterable[tuple[StepId, StepStore]], job: Job) -> tuple[str, ...]:
    """The connections DMTCP will not restore, one note each (create's answer says them)."""
    out: list[str] = []
    for step_id, store in stores:
        with contextlib.suppress(StoreError):
            rec = store.read()
            tasks = current_tasks(rec, job) if rec is not None else []
            out += [
                f"{step_id} {named}: not restored by DMTCP (a dead socket after a restart)"
                for named in outside_connections(tasks)
            ]
    return tuple(out)


def auto_view(rec: StepRecord) -> AutoCheckpoints | None:
    """The step's automatic checkpoints as the console shows them (None: no policy)."""
    p = rec.policy
    if not p.active and not rec.chain_end:
        return None
    return AutoCheckpoints(
        every=p.every,
        auto=p.auto,
        before_end=p.before_end,
        max_restarts=p.max_restarts,
        next_due=rec.next_due if (p.every or p.auto) else 0,
        end_time=rec.end_time,
        chain_end=rec.chain_end,
        set_by=p.set_by,
    )


def job_records(
    directory: Path, job: Job, *, strict: bool = False
) -> list[tuple[StepStore, StepRecord]]:
    """Every step record of ``job``.  ``strict`` (restart): a state directory or file
    that is refused (a link, another user's) raises its typed error naming it, where a
    lenient read skips it."""
    out = []
    try:
        stores = job_stores(directory, job.job_id, owner=job.uid)
    except StoreError as exc:
        if strict:
            raise typed(exc) from None
        return []
    for store in stores:
        try:
            rec = store.read()
        except StoreError as exc:
            if strict:
                raise typed(exc) from None
            continue
        if rec is not None:
            out.append((store, rec))
    return out


def resume_plan(
    job: Job, records: list[tuple[StepStore, StepRecord]], index: ImageIndex
) -> list[tuple[int, str]]:
    """What each task of ``job`` will start from: ``(0, "1.0 task 0 resumes from
    generation 3")`` or ``(code, "1.0 task 1: /img/g2 does not exist")``.

    The image is found by the rule the wrapper uses (``protocol.recorded_image``) and
    looked at as the job's user would (``image_problem``, then ``image_dir_problem``
    for that user's permissions): the wrapper hands over nothing else.
    """
    try:
        images = index.read()
    except StoreError:
        images = {}  # the records still hold their images
    plan: list[tuple[int, str]] = []
    for store, rec in records:
        for procid in sorted(set(rec.tasks) | set(rec.last_image), key=procid_order):
            who = f"{job.label}.{store.step.step_text} task {procid}"  # an array's 7_3.0
            path = recorded_image(images, rec.name, rec, int(procid))
            if not path:
                plan.append((0, f"{who} starts fresh (no image recorded)"))
                continue
            code, why = image_problem(path)
            if not code:
                code, why = image_dir_problem(path, job.uid, write=False)
            if code:
                plan.append((code, f"{who}: its last image {why}"))
                continue
            number = generation_of(path)
            what = f"generation {number}" if number else path
            plan.append((0, f"{who} resumes from {what}"))
    return plan


def image_in(task_dir: Path) -> str:
    """The image to resume from in an operator's task directory: its newest complete
    generation, else (images copied before generations) the directory itself when it holds
    an image; "" when there is none."""
    try:
        latest = TaskImages(task_dir).latest()
    except OSError:
        return ""
    if latest is not None:
        return str(latest)
    return "" if image_problem(task_dir)[0] else str(task_dir)


def start_notes(tasks: Iterable[TaskInfo]) -> tuple[str, ...]:
    """``task 0: resumed from generation 3 (PATH)`` for each task that said how it started."""
    return tuple(
        f"task {t.procid}: {t.start_note}"
        for t in sorted(tasks, key=lambda t: t.procid)
        if t.start_note
    )


def procid_order(procid: str) -> int:
    return int(procid) if procid.isdigit() else -1


def typed(exc: StoreError) -> SckptError:
    """A state-store failure as the error a person sees: one sentence with the code of the
    system call behind it (ENOSPC for a full file system, EPERM for a refused link), or
    the controller's access error for a permission refusal, as Slurm's own refusals read."""
    if exc.errno == errno.EACCES or "Permission denied" in exc.message:
        return AccessDenied(hint=exc.message)
    if exc.errno:
        return error_for(exc.errno, exc.message, exc.hint)
    return exc


def current_tasks(rec: StepRecord, job: Job) -> list[TaskInfo]:
    """Tasks registered by this run of the job (a requeued job's old ones do not count)."""
    return [t for t in rec.running_tasks if t.restart_count == job.restart_count]


def blocked_tasks(rec: StepRecord, job: Job) -> list[tuple[TaskInfo, str]]:
    """This run's tasks whose program must not be sent its checkpoint signal, and why."""
    return [(t, why) for t in current_tasks(rec, job) if (why := t.checkpoint_blocker())]


def cut_refusal(rec: StepRecord, job: Job, tasks: list[TaskInfo], hosts: set[str] | None) -> str:
    """Why a checkpoint of a step with one DMTCP coordinator (``--coordinator step``) cannot
    be one cut of every task ("" when it can): the request leaves a task out (``tasks`` on
    some nodes), or a task of this run has ended.  Nothing is asked then."""
    if rec.coordinator != "step":
        return ""
    ended = sorted(
        t.procid
        for t in rec.tasks.values()
        if t.restart_count == job.restart_count and t.state != "running"
    )
    if ended:
        return f"a cut must include every task: task {ended[0]} of the step has ended"
    left_out = sorted(t.procid for t in tasks if hosts is not None and t.host not in hosts)
    if left_out and len(left_out) < len(tasks):
        return (
            f"a cut must include every task: the step has one DMTCP coordinator "
            f"(--coordinator step) and task {left_out[0]} is left out; nothing was asked"
        )
    return ""


def task_failures(stores: Iterable[tuple[StepId, StepStore]]) -> list[tuple[int, str, str]]:
    """Tasks of the started steps whose checkpoint did not complete: (code, message, who
    and why), worst first."""
    out = []
    for step_id, store in stores:
        try:
            rec = store.read()
        except StoreError as exc:
            out.append((ESLURM_NOT_SUPPORTED, exc.message, f"{step_id}: {exc.message}"))
            continue
        if rec is None:
            continue
        results = [(int(c), str(m), p) for p, (c, m) in sorted(rec.last_results.items()) if c]
        if not results and rec.error_code:  # ended by `complete` with an error
            results = [(rec.error_code, rec.error_msg, "")]
        for c, m, procid in results:
            task = rec.tasks.get(procid)
            who = f"{step_id} " + (task.describe() if task else f"task {procid}")
            out.append((c, m, f"{who.strip()}: error({c}): {m}"))
    return sorted(out, key=lambda f: -f[0])


def unprotected_refusal(job: Job, plain: Sequence[Step]) -> UnsafeVacate:
    """Vacate's refusal when the requeue of ``job`` would end ``plain`` steps, which are
    not under ``sckpt run``, without an image."""
    names = ", ".join(f"{s.step_id} ({s.name})" for s in plain[:6])
    return UnsafeVacate(
        ESLURM_NOT_SUPPORTED,
        hint=f"the requeue of job {job.job_id} would end {names} without an "
        "image (not under `sckpt run`); nothing was done; --force vacates anyway "
        "and restart then starts them from the beginning",
        losses=tuple(f"{s.step_id} ({s.name}): not under sckpt run" for s in plain),
    )


def vacate_failed(
    job: Job, code: int, message: str | None, hint: str, failures: Sequence[tuple[int, str, str]]
) -> UnsafeVacate:
    """Vacate's refusal to end what was not checkpointed: ``failures`` (``task_failures``)
    with the first one's ``code`` and ``message``, and the ``hint`` naming them."""
    what = f"job {job.job_id}" if job.batch else "the step"
    return UnsafeVacate(
        code,
        message,
        hint=hint + f"; {what} keeps running, nothing was ended; --force vacates anyway and "
        "restart then starts those tasks without an image",
        losses=tuple(f[2] for f in failures),
    )
