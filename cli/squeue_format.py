"""squeue's ``-o``/``-O``/``-S`` for ``sckpt ls``: its field letters and names, its widths,
its sort keys, and the same bytes out, for the fields sckpt has.

Why a module of its own: operators' scripts and fingers know ``squeue -h -o "%.18i %.2t"``;
``sckpt ls`` accepting the same text and printing what squeue prints (plus the checkpoint
columns) means nothing new to learn and scripts that switch from one to the other.  The rules
are squeue 22.05's (``src/squeue/opts.c``, ``print.c``, ``sort.c``):

* ``-o``: text before the first ``%`` is printed first on every line; then each
  ``%[.][size]type[suffix]`` (``.`` right-justifies; a size cuts and pads; empty tokens of
  ``%%`` are skipped, as strtok does).  A size cuts the value too, except node lists and
  times when right-justified, which squeue never cuts.
* ``-O``: ``Name[:[.][size][suffix]]`` comma-separated, names in any case, size 20 when no
  ``:`` is given, no separator between fields.
* ``-S``: letters read from the end, each ``-``-prefixed one descending; stable sorts, so the
  first key wins.

Where sckpt differs, it is stricter: an unknown field or sort key, a field sckpt does not
have, a signed or huge size are refused (exit 2) instead of squeue's warning and a half
table.  ``%=`` / ``Checkpoint`` is sckpt's checkpoint column (squeue uses every letter).
Pure: the model and ``output`` only.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from sckpt.backend.errors import UsageError
from sckpt.backend.model import TIME_UNLIMITED, Job, JobState, JobView, StepView, job_order

from . import output

Row = TypeVar("Row", JobView, StepView)

MAX_WIDTH = 4096
"""Largest field size accepted (squeue puts a buffer of that size on its stack)."""
LONG_DEFAULT_WIDTH = 20
"""``-O`` without ``:size``: squeue allots 20 characters."""
CHECKPOINT_LETTER = "="
"""The checkpoint column's ``-o`` letter: squeue uses all 52 letters, and ``=`` means nothing
to a shell (``~`` and ``!`` do)."""


@dataclass(frozen=True)
class Field(Generic[Row]):
    """One column squeue can print and sckpt has: its ``-o`` letter, its ``-O`` names, its
    header, its value, and whether it may be a ``-S`` sort key (and by what)."""

    letter: str
    names: tuple[str, ...]
    header: str
    value: Callable[[Row, float], str]
    sort: Callable[[Row, float], object] | None = None
    cut: Callable[[Row], bool] = lambda _row: True
    """Whether a right-justified value longer than its size is cut (squeue: not node lists,
    not times)."""
    header_cut: bool = True


@dataclass(frozen=True)
class Column(Generic[Row]):
    """A field with its size, justification and the text squeue prints after it; a column
    without a field is the literal text before the first ``%``."""

    field: Field[Row] | None
    width: int = 0
    right: bool = False
    suffix: str = ""


# ---------------------------------------------------------------- values as squeue prints them


def squeue_time(unix_seconds: int) -> str:
    """``slurm_make_time_str`` as squeue calls it: ``N/A`` for 0, ISO 8601 local time, or
    ``$SLURM_TIME_FORMAT`` when it names a strftime format (``standard`` is ISO)."""
    if not unix_seconds:
        return "N/A"
    wanted = os.environ.get("SLURM_TIME_FORMAT", "")
    fmt = "%Y-%m-%dT%H:%M:%S" if wanted in ("", "standard", "relative") else wanted
    return time.strftime(fmt, time.localtime(unix_seconds))


def squeue_secs(seconds: int) -> str:
    """squeue's ``_print_secs``: ``M:SS`` ... ``D-HH:MM:SS``, ``INVALID`` past a year."""
    if seconds < 0 or seconds > 365 * 24 * 3600:
        return "INVALID"
    return output.format_elapsed(seconds)


def speaks_1905(release: str) -> bool:
    """Whether ``release`` (``19.05.8``) prints as 19.05 and before did where later ones
    differ: its controller sends an empty string for a job without a dependency (squeue
    prints it empty, not ``(null)``) and none for a pending job's node list (scontrol
    prints ``(null)``, not nothing); sckpt's job record holds "" for both."""
    return release.startswith(("17.", "18.", "19."))


def _or_null(text: str) -> str:
    """A C string squeue prints with ``%s``: a NULL one (sckpt's "") reads ``(null)``."""
    return text if text else "(null)"


_REASON_STATES = frozenset(
    {
        JobState.PENDING,
        JobState.TIMEOUT,
        JobState.OUT_OF_MEMORY,
        JobState.DEADLINE,
        JobState.FAILED,
    }
)


def _shows_reason(job: Job) -> bool:
    return job.state in _REASON_STATES


def reason_list(job: Job) -> str:
    """``%R``: ``(reason)`` for pending and failed jobs, else the node list."""
    if _shows_reason(job):
        return f"({job.state_reason or 'None'})"
    return job.nodes


def _start_key(job: Job, now: float) -> float:
    """squeue's ``_get_start_time``: no start time sorts last, a late pending one as now."""
    if not job.start_time:
        return now + 100
    if job.state is JobState.PENDING and job.start_time < now:
        return now
    return job.start_time


def _job(
    letter: str,
    names: Sequence[str],
    header: str,
    value: Callable[[Job], str],
    sort: Callable[[Job], object] | None = None,
) -> Field[JobView]:
    return Field(
        letter,
        tuple(names),
        header,
        lambda view, _now: value(view.job),
        (lambda view, _now: sort(view.job)) if sort is not None else None,
    )


def _ckpt_summary(view: JobView, _now: float) -> str:
    return output.job_checkpoint_summary(view)


def _array_task(job: Job) -> str:
    """squeue's ``%K``: the task, the pending range (``5-50%2``), or ``N/A``."""
    if job.array_task_str:
        return job.array_task_str
    return "N/A" if job.array_task_id is None else str(job.array_task_id)


def _job_time(view: JobView, now: float) -> str:
    return squeue_secs(view.job.time_used(now))


def _time_limit(view: JobView, _now: float) -> str:
    """squeue's ``%l``: ``UNLIMITED``, ``NOT_SET``, or the limit as ``_print_secs``."""
    limit = view.job.time_limit
    if limit is None:
        return "NOT_SET"
    return "UNLIMITED" if limit == TIME_UNLIMITED else squeue_secs(limit * 60)


def _time_left(view: JobView, now: float) -> str:
    """squeue's ``%L``: the limit minus TIME (``INVALID`` once past it, as squeue)."""
    limit = view.job.time_limit
    if limit is None:
        return "NOT_SET"
    left = view.job.time_left(now)
    return "UNLIMITED" if left is None else squeue_secs(left)


def _end_time(view: JobView, now: float) -> str:
    """squeue's ``%e``: ``NONE`` for a job without a time limit that has not ended (Slurm
    keeps a year ahead as its end), else the end time (``N/A`` unset)."""
    job = view.job
    if job.time_limit == TIME_UNLIMITED and job.end_time > now:
        return "NONE"
    return squeue_time(job.end_time)


def memory_text(megabytes: int) -> str:
    """squeue's ``%m``: ``convert_num_unit`` with its CONVERT_NUM_UNIT_EXACT flag on a
    size in MB: 1024ths while nothing is lost (half values kept: ``2.50G``), ``0`` for
    none, ``4000M`` when it does not divide."""
    if not megabytes:
        return "0"
    num: float = float(megabytes)
    unit = 2  # M in "\0KMGTP?"
    while num >= 1024 and int(num) % 512 == 0:
        num /= 1024
        unit += 1
    letter = "\0KMGTP?"[unit] if unit <= 5 else "?"
    return f"{int(num)}{letter}" if num == int(num) else f"{num:.2f}{letter}"


def _memory_key(job: Job) -> int:
    return job.min_memory


def _limit_key(view: JobView, _now: float) -> float:
    limit = view.job.time_limit
    return float("inf") if limit is None or limit == TIME_UNLIMITED else limit


def _left_key(view: JobView, now: float) -> float:
    left = view.job.time_left(now)
    return float("inf") if left is None else left


DEPENDENCY = _job("E", ["Dependency"], "DEPENDENCY", lambda j: _or_null(j.dependency))
DEPENDENCY_1905 = _job("E", ["Dependency"], "DEPENDENCY", lambda j: j.dependency)
"""``%E`` as 19.05's squeue prints a job without a dependency (``speaks_1905``)."""

JOB_FIELDS: tuple[Field[JobView], ...] = (
    _job("i", ["JobArrayID"], "JOBID", lambda j: j.label, job_order),
    _job("A", ["JobID"], "JOBID", lambda j: str(j.job_id), lambda j: j.job_id),
    _job("F", ["ArrayJobID"], "ARRAY_JOB_ID", lambda j: str(j.array_job_id or j.job_id)),
    _job("K", ["ArrayTaskID"], "ARRAY_TASK_ID", _array_task),
    _job("j", ["Name"], "NAME", lambda j: j.name, lambda j: j.name),
    _job("u", ["UserName"], "USER", lambda j: j.user, lambda j: j.user),
    _job("U", ["UserID"], "UID", lambda j: str(j.uid), lambda j: j.uid),
    _job("P", ["Partition"], "PARTITION", lambda j: j.partition, lambda j: j.partition),
    _job("t", ["StateCompact"], "ST", lambda j: j.state.short, lambda j: j.state.short),
    _job("T", ["State"], "STATE", lambda j: j.state.value, lambda j: j.state.value),
    _job("r", ["Reason"], "REASON", lambda j: j.state_reason or "None"),
    Field(
        "R",
        ("ReasonList",),
        "NODELIST(REASON)",
        lambda view, _now: reason_list(view.job),
        cut=lambda view: _shows_reason(view.job),
        header_cut=False,
    ),
    Field(
        "N",
        ("NodeList",),
        "NODELIST",
        lambda view, _now: view.job.nodes,
        cut=lambda _view: False,
        header_cut=False,
    ),
    _job("D", ["NumNodes"], "NODES", lambda j: str(j.num_nodes), lambda j: j.num_nodes),
    _job("C", ["NumCPUs"], "CPUS", lambda j: str(j.num_cpus), lambda j: j.num_cpus),
    _job("", ["NumTasks"], "TASKS", lambda j: str(j.num_tasks)),
    Field(
        "M",
        ("TimeUsed",),
        "TIME",
        _job_time,
        lambda view, now: view.job.time_used(now),
        cut=lambda _view: False,
    ),
    Field("l", ("TimeLimit",), "TIME_LIMIT", _time_limit, _limit_key, cut=lambda _v: False),
    Field("L", ("TimeLeft",), "TIME_LEFT", _time_left, _left_key, cut=lambda _v: False),
    Field("e", ("EndTime",), "END_TIME", _end_time, lambda view, _now: view.job.end_time),
    _job(
        "V",
        ["SubmitTime"],
        "SUBMIT_TIME",
        lambda j: squeue_time(j.submit_time),
        lambda j: j.submit_time,
    ),
    Field(
        "S",
        ("StartTime",),
        "START_TIME",
        lambda view, _now: squeue_time(view.job.start_time),
        lambda view, now: _start_key(view.job, now),
    ),
    _job("Q", ["PriorityLong"], "PRIORITY", lambda j: str(j.priority), lambda j: j.priority),
    _job("q", ["QOS"], "QOS", lambda j: _or_null(j.qos), lambda j: j.qos),
    DEPENDENCY,
    _job("m", ["MinMemory"], "MIN_MEMORY", lambda j: memory_text(j.min_memory), _memory_key),
    _job("k", ["Comment"], "COMMENT", lambda j: _or_null(j.comment)),
    _job("Z", ["WorkDir"], "WORK_DIR", lambda j: _or_null(j.work_dir)),
    _job("n", ["ReqNodes"], "REQ_NODES", lambda j: j.required_nodes),
    _job("a", ["Account"], "ACCOUNT", lambda j: _or_null(j.account)),
    _job("", ["RestartCnt"], "RESTART_COUNT", lambda j: str(j.restart_count)),
    _job("", ["BatchFlag"], "BATCH_FLAG", lambda j: str(int(j.batch))),
    _job("", ["tres-alloc", "tres"], "TRES_ALLOC", lambda j: j.tres or "N/A"),
    _job("b", ["tres-per-node"], "TRES_PER_NODE", lambda j: j.tres_per_node or "N/A"),
    Field(
        "Y",
        ("SchedNodes",),
        "SCHEDNODES",
        # squeue passes a NULL list to printf's %s, which glibc writes as "(null)"
        lambda view, _now: view.job.sched_nodes or "(null)",
        cut=lambda _view: False,
        header_cut=False,
    ),
    Field(CHECKPOINT_LETTER, ("Checkpoint",), "CKPT", _ckpt_summary, _ckpt_summary),
)


def _step_time(view: StepView, now: float) -> str:
    return squeue_secs(output.step_run_time(view.step, now))


def _step_ckpt(view: StepView, _now: float) -> str:
    return output.checkpoint_text(view.checkpoint)


STEP_FIELDS: tuple[Field[StepView], ...] = (
    Field(
        "i", ("StepID",), "STEPID", lambda v, _n: str(v.step.step_id), lambda v, _n: v.step.step_id
    ),
    Field("j", ("StepName",), "NAME", lambda v, _n: v.step.name),
    Field(
        "P",
        ("Partition",),
        "PARTITION",
        lambda v, _n: v.step.partition,
        lambda v, _n: v.step.partition,
    ),
    Field("u", ("UserName",), "USER", lambda v, _n: v.step.user, lambda v, _n: v.step.user),
    Field("U", ("UserID",), "UID", lambda v, _n: str(v.step.uid), lambda v, _n: v.step.uid),
    Field(
        "M",
        ("TimeUsed",),
        "TIME",
        _step_time,
        lambda v, now: output.step_run_time(v.step, now),
        cut=lambda _v: False,
    ),
    Field(
        "N",
        ("Nodes",),
        "NODELIST",
        lambda v, _n: v.step.nodes,
        cut=lambda _v: False,
        header_cut=False,
    ),
    Field("A", ("NumTasks",), "TASKS", lambda v, _n: str(v.step.num_tasks)),
    Field(
        "S",
        ("StartTime",),
        "START_TIME",
        lambda v, _n: squeue_time(v.step.start_time),
        lambda v, _n: v.step.start_time,
    ),
    Field("", ("StepState",), "STATE", lambda v, _n: v.step.state),
    Field(
        "",
        ("CheckpointError",),
        "LAST_ERROR",
        lambda v, _n: output.last_error_text(v.checkpoint),
    ),
    Field(CHECKPOINT_LETTER, ("Checkpoint",), "CKPT", _step_ckpt, _step_ckpt),
)


# ---------------------------------------------------------------- parsing


def _fields_text(fields: Sequence[Field[Row]], long: bool) -> str:
    if long:
        return ", ".join(name for f in fields for name in f.names)
    return " ".join(f"%{f.letter}" for f in fields if f.letter)


def parse_format(text: str, fields: Sequence[Field[Row]]) -> list[Column[Row]]:
    """``-o``: squeue's ``parse_format`` (prefix, then ``%[.][size]type[suffix]`` tokens)."""
    if text.lower() == "%all":
        raise UsageError("format %all is not supported: use --parsable for every column with '|'")
    by_letter = {f.letter: f for f in fields if f.letter}
    columns: list[Column[Row]] = []
    if not text.startswith("%"):
        prefix = text.split("%", 1)[0]
        if prefix:
            columns.append(Column(None, suffix=prefix))
    tokens = [t for t in text.split("%") if t]
    if not text.startswith("%"):
        tokens = tokens[1:]
    for token in tokens:
        match = re.fullmatch(r"(\.?)([0-9]*)(.?)(.*)", token, re.DOTALL)
        assert match is not None  # the pattern matches any string
        right, digits, letter, suffix = match.groups()
        width = _width(digits, f"%{token}")
        field = by_letter.get(letter)
        if field is None:
            what = f"field %{letter}" if letter else f"field %{token} (no letter)"
            hint = (
                " (squeue has no '-': fields are left-justified unless '.')"
                if letter == "-"
                else ""
            )
            raise UsageError(
                f"unknown or unsupported format {what}{hint}: sckpt has "
                f"{_fields_text(fields, long=False)}"
            )
        columns.append(Column(field, width, bool(right), suffix))
    if not any(c.field is not None for c in columns):
        raise UsageError(
            f"format {text!r} has no field: expected %<letter> such as %i (see 'sckpt ls --help')"
        )
    return columns


def parse_long_format(text: str, fields: Sequence[Field[Row]]) -> list[Column[Row]]:
    """``-O``: squeue's ``parse_long_format`` (``Name[:[.][size][suffix]]``, comma-separated)."""
    by_name = {name.lower(): f for f in fields for name in f.names}
    columns: list[Column[Row]] = []
    for token in (t for t in text.split(",") if t):
        name, sep, spec = token.partition(":")
        field = by_name.get(name.lower())
        if field is None:
            raise UsageError(
                f"unknown or unsupported format field {name!r}: sckpt has "
                f"{_fields_text(fields, long=True)}"
            )
        if not sep:
            columns.append(Column(field, LONG_DEFAULT_WIDTH))
            continue
        right = spec.startswith(".")
        rest = spec[1:] if right else spec
        digits = re.match(r"[0-9]*", rest)
        assert digits is not None
        if rest[:1] in ("-", "+"):
            raise UsageError(f"bad width in {token!r}: expected a size such as {name}:10")
        width = _width(digits.group(), token)
        columns.append(Column(field, width, right, rest[digits.end() :]))
    if not columns:
        raise UsageError("format is empty: expected field names such as JobID,State")
    return columns


def _width(digits: str, where: str) -> int:
    width = int(digits) if digits else 0
    if width > MAX_WIDTH:
        raise UsageError(f"bad width in {where!r}: at most {MAX_WIDTH}")
    return width


def parse_sort(text: str, fields: Sequence[Field[Row]]) -> list[tuple[Field[Row], bool]]:
    """``-S``: squeue's keys, most significant first, each with its "descending" flag.

    squeue reads the text a character at a time (``-t,i`` = ``-ti``); ``cluster`` sorts by
    cluster name, a no-op here (one cluster).
    """
    by_letter = {f.letter: f for f in fields if f.letter and f.sort is not None}
    keys: list[tuple[Field[Row], bool]] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in ",+-":
            i += 1
            continue
        descending = i > 0 and text[i - 1] == "-"
        if text[i : i + 7].lower() == "cluster":
            i += 7
            continue
        field = by_letter.get(char)
        if field is None:
            known = ",".join(by_letter)
            raise UsageError(
                f"unknown or unsupported sort key {char!r} in {text!r}: sckpt sorts by {known} "
                "(a leading - sorts that key descending)"
            )
        keys.append((field, descending))
        i += 1
    return keys


def sort_rows(rows: list[Row], keys: Sequence[tuple[Field[Row], bool]], now: float) -> list[Row]:
    """The rows in ``-S`` order: stable sorts from the least significant key, as squeue."""
    ordered = list(rows)
    for field, descending in reversed(keys):
        sort = field.sort
        assert sort is not None
        ordered.sort(key=lambda row: sort(row, now), reverse=descending)  # type: ignore[arg-type,return-value]
    return ordered


# ---------------------------------------------------------------- printing


def _cell(text: str, width: int, right: bool, cut: bool) -> str:
    """squeue's ``_print_str``: pad to ``width``; left-justified text is always cut to it,
    right-justified text only when ``cut``."""
    if width == 0:
        return text
    if right:
        padded = text.rjust(width)
        return padded[:width] if cut else padded
    return text[:width].ljust(width)


def render(
    columns: Sequence[Column[Row]], rows: Sequence[Row], now: float, *, noheader: bool
) -> list[str]:
    """Every line squeue would print (header first unless ``noheader``), unstripped."""
    lines: list[str] = []
    if not noheader:
        parts = []
        for column in columns:
            if column.field is not None:
                parts.append(
                    _cell(column.field.header, column.width, column.right, column.field.header_cut)
                )
            parts.append(column.suffix)
        lines.append("".join(parts))
    for row in rows:
        parts = []
        for column in columns:
            field = column.field
            if field is not None:
                text = output.clean(field.value(row, now))
                parts.append(_cell(text, column.width, column.right, field.cut(row)))
            parts.append(output.clean(column.suffix))
        lines.append("".join(parts))
    return lines


def render_parsable(
    columns: Sequence[Column[Row]], rows: Sequence[Row], now: float, *, noheader: bool
) -> list[str]:
    """``--parsable``: the fields' whole values, each followed by ``|`` (as ``sacct -p``);
    sizes, suffixes and literal text are layout and are dropped."""
    fields = [c.field for c in columns if c.field is not None]
    lines = [] if noheader else ["".join(f"{f.header}|" for f in fields)]
    for row in rows:
        lines.append("".join(f"{output.clean(f.value(row, now))}|" for f in fields))
    return lines


DEFAULT_JOB_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R %="
"""squeue's default columns and sckpt's checkpoint one: what ``--parsable`` prints without
``-o``/``-O``."""
DEFAULT_STEP_FORMAT = (
    "StepID,StepName,Partition,UserName,StepState,TimeUsed,NumTasks,Nodes,CheckpointError,"
    "Checkpoint"
)
"""``ls -s``'s columns, for ``--parsable`` without ``-o``/``-O``."""
