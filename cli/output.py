"""What the command line prints: scontrol-style lines, squeue-style tables, and JSON.

Everything a person reads goes through ``clean()`` first: job names, comments, paths and
Slurm's messages are data, and data containing terminal escape sequences must be shown
literally, never interpreted by the terminal.  JSON output is ``json.dumps`` (which escapes
control characters itself) over plain dicts built from the backend's frozen records.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from sckpt.backend import operations, progress
from sckpt.backend.control_chars import escape_controls
from sckpt.backend.errors import SckptError, identify
from sckpt.backend.model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    CheckpointKind,
    CheckpointState,
    JobState,
    JobView,
    Step,
    StepId,
    StepView,
)


def clean(text: object) -> str:
    """Text safe to print on a terminal: control characters become visible escapes.

    Newlines and tabs are escaped too, so one record stays one line.  Strings decoded with
    ``surrogateescape`` (non-UTF-8 bytes) print their bytes as ``\\xNN`` instead of failing.
    """
    value = str(text)
    if value.isascii() and value.isprintable():  # the usual case, with nothing to escape
        return value
    value = escape_controls(value)
    if any("\udc80" <= ch <= "\udcff" for ch in value):
        value = "".join(
            f"\\x{ord(ch) - 0xDC00:02x}" if "\udc80" <= ch <= "\udcff" else ch for ch in value
        )
    return value


def format_time(unix_seconds: float) -> str:
    """Local time as Slurm's ``slurm_make_time_str`` prints it by default (ISO 8601)."""
    if unix_seconds <= 0:
        return "None"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(unix_seconds))


def format_elapsed(seconds: float) -> str:
    """squeue's TIME column: ``M:SS``, ``H:MM:SS``, ``D-HH:MM:SS``."""
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


# ---------------------------------------------------------------- scontrol-style lines


def able_line(result: AbleResult | None) -> str:
    """scontrol's answer to ``checkpoint able``: ``Yes``, ``Began at <time>``, or ``No``.

    ``None`` stands for ESLURM_DISABLED, which scontrol printed as ``No`` and did not count
    as an error.
    """
    if result is None:
        return "No"
    if result.in_progress_since:
        return f"Began at {format_time(result.in_progress_since)}"
    return "Yes"


def error_line(error: CheckpointError) -> str:
    """scontrol's answer to ``checkpoint error``: ``error(<code>): <msg>``."""
    return f"error({error.code}): {clean(error.message)}"


def named_like(step: StepId, target: StepId) -> StepId:
    """A step of ``target``'s job named as the target is: an array task's steps as
    ``9_1.0``, not by the record's own id (``10.0``)."""
    if target.array_task_id is None or step.job_id != target.job_id:
        return step
    return replace(step, array_job_id=target.array_job_id, array_task_id=target.array_task_id)


WAITED_COMPLETED = "checkpoint completed"
"""How an engine that waits for the checkpoint itself (the cooperative one, up to MaxWait)
begins the detail of one that completed."""


def waited_completed(result: ActionResult) -> bool:
    """Whether the engine's answer already says the checkpoint completed."""
    return result.detail.startswith(WAITED_COMPLETED)


def action_line(result: ActionResult, name: str = "") -> str:
    """One line saying a mutating operation was requested (Slurm accepted it), with its
    detail when any; the progress words are ``backend/progress.py``'s.  ``name``: the
    target's name when its id does not say it (an array's pending record, ``7_[3-9]``)."""
    shown = name or result.target
    signalled = "signal" in operations.operation(result.operation).arguments
    if signalled and result.detail.startswith("signal "):
        # an operation given --signal (cancel's) only sent it, ending nothing: "42: cancel
        # requested" read as if the job ended
        text = f"{shown}: {clean(result.detail)}"
    elif waited_completed(result):
        # The cooperative engine waited for the checkpoint itself: it did not stop at
        # "requested" ("create requested: checkpoint completed" said both).
        rest = result.detail[len(WAITED_COMPLETED) :]
        text = f"{shown}: {result.operation} {progress.COMPLETED}{clean(rest)}"
    else:
        text = f"{shown}: {result.operation} {progress.REQUESTED}"
        if result.detail:
            text += f": {clean(result.detail)}"
    refused = [
        f"{named_like(step, result.target)}={code}" for step, code in result.per_step if code
    ]
    if refused:
        text += f" (steps answering an error: {', '.join(refused)})"
    return text


def outcome_line(target: StepId, operation: str, outcome: str) -> str:
    """``--wait``'s line once a checkpoint is no longer in progress: ``42.0: create
    completed``, ``42.0: create failed (28)``, or ``42.0: vacate ended`` (the step is gone)."""
    return f"{target}: {operation} {outcome}"


def failure_line(prefix: str, error: object) -> str:
    """The one line written to stderr for a refusal or a failure."""
    return clean(f"sckpt: {prefix}{error}" if prefix else f"sckpt: {error}")


# ---------------------------------------------------------------- checkpoint state in words


def checkpoint_text(state: CheckpointState) -> str:
    """A step's checkpoint column, in words (the console's vocabulary)."""
    kind = state.kind
    if kind is CheckpointKind.DISABLED:
        return f"disabled x{state.disable_count}" if state.disable_count else "disabled"
    if kind is CheckpointKind.IN_PROGRESS:
        return f"{progress.IN_PROGRESS} since {format_time(state.in_progress_since)}"
    if kind is CheckpointKind.NOT_SUPPORTED:
        if not state.reason or state.reason.startswith("not supported"):
            return state.reason or "not supported"
        return f"not supported: {state.reason}"
    if kind is CheckpointKind.ABLE and state.checkpointer:
        return f"{kind.value}, {state.checkpointer}"  # able, transparent (DMTCP 4.2.0)
    return kind.value


def last_error_text(state: CheckpointState) -> str:
    """``0``, or ``<code> <ESLURM name>`` for the step's last checkpoint error."""
    error = state.last_error
    if error is None and state.kind is CheckpointKind.UNKNOWN:
        return CheckpointKind.UNKNOWN.value  # not asked (another user's step): not "0"
    if error is None or error.code == 0:
        return "0"
    return f"{error.code} {error.name}"


_SUMMARY_ORDER = (
    CheckpointKind.IN_PROGRESS,
    CheckpointKind.DISABLED,
    CheckpointKind.ABLE,
    CheckpointKind.STARTING,
    CheckpointKind.NOT_SUPPORTED,
    CheckpointKind.UNKNOWN,
    CheckpointKind.PENDING,
    CheckpointKind.ENDED,
)


def _kind_words(kind: CheckpointKind) -> str:
    """A checkpoint kind in the summary's words (``in progress``: ``backend/progress.py``)."""
    return (
        progress.IN_PROGRESS if kind is CheckpointKind.IN_PROGRESS else kind.value.replace("_", " ")
    )


def job_checkpoint_summary(view: JobView) -> str:
    """The job row's checkpoint column: one kind, or a tally such as ``2 able, 1 disabled``;
    then, when some steps' last checkpoint failed, how many and the highest code (``able; 1
    failed (28)``): a step whose checkpoint failed is usually ``able`` again, and the row
    must not read as if all were well."""
    if not view.steps:
        if view.job.state is JobState.PENDING:
            count = view.job.array_task_count if view.job.array_task_str else 0
            pending = CheckpointKind.PENDING.value
            return f"{pending} ({count} tasks)" if count > 1 else pending
        if view.job.state.is_finished:
            return CheckpointKind.ENDED.value
        return "-"
    counts: dict[CheckpointKind, int] = {}
    for step in view.steps:
        counts[step.checkpoint.kind] = counts.get(step.checkpoint.kind, 0) + 1
    if len(counts) == 1:
        tally = _kind_words(next(iter(counts)))
    else:
        ordered = [kind for kind in _SUMMARY_ORDER if kind in counts]
        ordered += [kind for kind in counts if kind not in ordered]
        tally = ", ".join(f"{counts[kind]} {_kind_words(kind)}" for kind in ordered)
    codes = [s.checkpoint.failed_code for s in view.steps if s.checkpoint.failed_code]
    if not codes:
        return tally
    return f"{tally}; {len(codes)} {progress.failed(max(codes))}"


# ---------------------------------------------------------------- tables


def render_table(header: Sequence[str], rows: Iterable[Sequence[str]], *, noheader: bool) -> str:
    """Left-aligned columns separated by two spaces; the last column is never padded."""
    body = [_clean_row(row) for row in rows]
    lines_in = body if noheader else [header, *body]
    if not lines_in:
        return ""
    # One format per table, applied row by row at C speed (``ls`` of a 100,000-job demo
    # prints 80,000 rows); the widest cell of each column sets its width.
    widths = [max(map(len, column)) for column in zip(*lines_in, strict=True)][:-1]
    line = "  ".join([*(f"{{:<{width}}}" for width in widths), "{}"])
    return "\n".join([line.format(*row).rstrip() for row in lines_in])


def _clean_row(row: Sequence[str]) -> Sequence[str]:
    """A table row through ``clean``: one check of the whole row when nothing in it needs
    escaping (the usual case: the row itself), else cell by cell."""
    joined = "".join(row)
    if joined.isascii() and joined.isprintable():
        return row
    return [clean(cell) for cell in row]


JOB_HEADER = (
    "JOBID",
    "PARTITION",
    "NAME",
    "USER",
    "ST",
    "TIME",
    "NODES",
    "NODELIST(REASON)",
    "CKPT",
)
STEP_HEADER = (
    "STEPID",
    "NAME",
    "PARTITION",
    "USER",
    "STATE",
    "TIME",
    "TASKS",
    "NODELIST",
    "LAST_ERROR",
    "CKPT",
)


def job_row(view: JobView, now: float) -> list[str]:
    """One squeue-like row for a job (TIME is the elapsed run time, as squeue's)."""
    job = view.job
    elapsed = format_elapsed(job.time_used(now))
    where = job.nodes if job.nodes else f"({job.state_reason or 'None'})"
    return [
        job.label,
        job.partition,
        job.name,
        job.user,
        job.state.short,
        elapsed,
        str(job.num_nodes),
        where,
        job_checkpoint_summary(view),
    ]


def step_run_time(step: Step, now: float) -> int:
    """Seconds the step has run: Slurm's ``run_time`` when the engine reports one, else
    since its start at ``now`` (the simulated engine leaves ``run_time`` at 0).  The table's
    TIME and ``--json``'s ``run_time`` both come from here, so they agree."""
    if step.run_time:
        return step.run_time
    return max(0, int(now - step.start_time)) if step.start_time else 0


def step_row(view: StepView, now: float) -> list[str]:
    """One ``squeue -s``-like row for a step, with its checkpoint columns."""
    step = view.step
    elapsed = step_run_time(step, now)
    return [
        str(step.step_id),
        step.name,
        step.partition,
        step.user,
        step.state,
        format_elapsed(elapsed),
        str(step.num_tasks),
        step.nodes,
        last_error_text(view.checkpoint),
        checkpoint_text(view.checkpoint),
    ]


# ---------------------------------------------------------------- JSON


def to_jsonable(value: Any) -> Any:
    """Plain JSON data from the backend's records: StepId as its text, enums as values."""
    if isinstance(value, StepId):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def step_json(view: StepView, now: float) -> dict[str, Any]:
    """A step for ``ls --json``: the record, its id parts, and its checkpoint state."""
    data: dict[str, Any] = to_jsonable(view.step)
    data["run_time"] = step_run_time(view.step, now)
    data["job_id"] = view.step.step_id.job_id
    data["array_job_id"] = view.step.step_id.array_job_id
    data["array_task_id"] = view.step.step_id.array_task_id
    data["step"] = view.step.step_id.step_text
    data["checkpoint"] = to_jsonable(view.checkpoint)
    data["checkpoint"]["text"] = checkpoint_text(view.checkpoint)
    return data


def job_json(view: JobView, now: float) -> dict[str, Any]:
    """A job for ``ls --json``: the record, squeue's short state, summary and steps."""
    data: dict[str, Any] = to_jsonable(view.job)
    if view.cluster:  # -M: the job's cluster, and whether it answered the latest refresh
        data["cluster"] = view.cluster
        data["cluster_stale"] = view.stale
    data["state_short"] = view.job.state.short
    data["id"] = view.job.label  # squeue's JOBID: 123, 7_3 or 7_[4-50%2]
    data["array_task_count"] = view.job.array_task_count if view.job.is_array else 0
    data["checkpoint_summary"] = job_checkpoint_summary(view)
    data["steps"] = [step_json(step, now) for step in view.steps]
    return data


def error_json(error: BaseException) -> dict[str, Any]:
    """An error for JSON output: every key README promises, whatever the error.

    ``code`` and ``name`` are Slurm's for its refusals; sckpt's own refusals (read-only,
    bad input, audit log, no Slurm) have no code (null) and a name of their kind, as in
    the audit log (``errors.identify``).  ``hint`` is what to do about it ("" when none).
    """
    code, name = identify(error)
    data: dict[str, Any] = {
        "kind": type(error).__name__,
        "code": code,
        "name": name,
        "message": error.message if isinstance(error, SckptError) else str(error),
        "hint": error.hint if isinstance(error, SckptError) else "",
    }
    if isinstance(error, SckptError):
        data["exit_code"] = error.exit_code
    return data


def dumps(data: object) -> str:
    """Stable, readable JSON (sorted keys keep diffs of monitoring output small)."""
    return json.dumps(data, indent=2, sort_keys=True)


def to_stdout(text: str) -> None:
    """Print one line (or block) on stdout: answers, tables, JSON."""
    print(text, file=sys.stdout)


def to_stderr(text: str) -> None:
    """Print one line on stderr: refusals and failures."""
    print(text, file=sys.stderr)
