"""Parsing and validation of what users type: step ids, max_wait, image dirs.

Everything here runs before any engine is called, so invalid input never reaches Slurm.
Each refusal is a ``UsageError`` whose message says what was expected.
"""

from __future__ import annotations

import re
import signal as signal_module

from .errors import UsageError
from .model import (
    STEP_BATCH,
    STEP_EXTERN,
    STEP_INTERACTIVE,
    WHOLE_JOB,
    StepId,
    expand_task_ranges,
)

MAX_JOB_ID = 0xFFFFFFF0
"""Job ids above this collide with Slurm's special values."""
MAX_STEP = 0xFFFFFFF0
MAX_WAIT_LIMIT = 65535
"""max_wait is a uint16_t in the checkpoint API."""
MAX_PATH = 4095

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


def validate_max_wait(value: object) -> int:
    """Seconds to wait for a checkpoint: a whole number 0..65535."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise UsageError(f"max_wait must be a whole number of seconds from 0 to {MAX_WAIT_LIMIT}")
    if isinstance(value, str):
        if not re.fullmatch(r"[0-9]{1,6}", value.strip()):
            shown = value if len(value) <= 20 else value[:17] + "..."
            raise UsageError(
                f"invalid max_wait {shown!r}: expected a whole number of seconds "
                f"from 0 to {MAX_WAIT_LIMIT}"
            )
        value = int(value)
    if not 0 <= value <= MAX_WAIT_LIMIT:
        raise UsageError(f"max_wait {value} out of range: expected 0 to {MAX_WAIT_LIMIT} seconds")
    return value


def validate_image_dir(value: object) -> str:
    """An absolute path, printable, without ``..`` components, at most 4095 bytes."""
    if not isinstance(value, str) or not value:
        raise UsageError("image_dir must be an absolute path such as /scratch/ckpt")
    shown = repr(value if len(value) <= 60 else value[:57] + "...")
    # C0, DEL and C1 (0x80-0x9f: 0x9b is a one-byte CSI on some terminals), as plain_text.
    if any(ord(ch) < 32 or 127 <= ord(ch) <= 159 for ch in value):
        raise UsageError(f"image_dir {shown} contains control characters: expected a plain path")
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"image_dir {shown} is not valid UTF-8: expected a plain path") from None
    if not value.startswith("/"):
        raise UsageError(f"image_dir {shown} is relative: expected an absolute path")
    if ".." in value.split("/"):
        raise UsageError(f"image_dir {shown} contains '..': expected a path without it")
    if len(encoded) > MAX_PATH:
        raise UsageError(f"image_dir is {len(encoded)} bytes long: at most {MAX_PATH} allowed")
    return value


def require_whole_job(operation: str, target: StepId) -> None:
    """A verb that acts on jobs only (hold, release, requeue, as scontrol's) given a step is
    bad usage, said before Slurm is asked (scontrol would read ``12.3`` as no job at all)."""
    if not target.is_whole_job:
        raise UsageError(
            f"{operation} acts on a whole job: give JOB ({target.job_id}), not the step {target}"
        )


SIGNAL_FORMS = "a signal name or number, such as TERM, SIGUSR1 or 10"


def validate_signal(value: object) -> int | None:
    """``scancel --signal``'s value: a name (``USR1``, ``SIGUSR1``, any case) or a number
    of a signal this system has; None stays None (scancel's default: end the job)."""
    if value is None:
        return None
    if isinstance(value, signal_module.Signals):
        return int(value)
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        text = value.strip().upper()
        if text.isdigit() and len(text) <= 3:
            number = int(text)
        elif re.fullmatch(r"[A-Z0-9]{1,16}", text):
            found = signal_module.Signals.__members__.get(
                text if text.startswith("SIG") else f"SIG{text}"
            )
            number = int(found) if found is not None else None
    valid = {int(s) for s in signal_module.valid_signals()}
    if number is None or number not in valid:
        shown = repr(
            value if not isinstance(value, str) or len(value) <= 20 else value[:17] + "..."
        )
        raise UsageError(f"invalid signal {shown}: expected {SIGNAL_FORMS}")
    return number
