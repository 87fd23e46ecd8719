"""What the console shows, as pure functions of the backend's records (no widgets here).

Kept apart from the widgets so the formatting, the filter language and the sort keys can be
tested without a terminal, and so the refresh worker can build rows off the UI thread.

Every value that comes from Slurm (job names, users, paths, error messages) goes through
``literal``: it becomes a rich ``Text`` (never parsed as markup) with control characters
shown as escapes, so a job named ``[red]x`` or ``\\x1b]0;pwned`` is displayed as typed and
cannot drive the terminal.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from rich.text import Text
from sckpt.backend import progress
from sckpt.backend.columns import LAYOUTS, STEP_COLUMN_KEYS
from sckpt.backend.control_chars import escape_controls
from sckpt.backend.filters import FILTER_FIELDS as FILTER_FIELDS  # re-exported
from sckpt.backend.filters import Filter as Filter  # re-exported
from sckpt.backend.filters import matches as match_filter
from sckpt.backend.filters import parse_filter as parse_filter  # re-exported
from sckpt.backend.model import (
    TIME_UNLIMITED,
    CheckpointError,
    CheckpointKind,
    CheckpointState,
    Job,
    JobState,
    JobView,
    StepView,
    job_order,
)


def printable(value: str) -> str:
    """``value`` with every C0/C1 control character replaced by its ``\\xNN`` escape."""
    return escape_controls(value)


def literal(value: object, style: str = "") -> Text:
    """A Slurm-supplied value as display text: no markup, no terminal escapes."""
    return Text(printable(str(value)), style=style, no_wrap=True, overflow="ellipsis")


DETAIL_TEXT = 240
"""Longest free text (error message, comment, history line) shown whole in the detail: a
job's owner decides its length, not the screen; ``--json`` carries up to MAX_TEXT."""


def bounded(value: str, style: str = "", limit: int = DETAIL_TEXT) -> Text:
    """``literal(value)`` cut at ``limit`` characters, saying how many more there are."""
    if len(value) <= limit:
        return literal(value, style)
    text = literal(value[:limit], style)
    text.append(f" … (+{len(value) - limit} characters; --json shows them)", style="dim")
    return text


def compact_duration(seconds: float) -> str:
    """A short human duration for narrow columns: ``45s``, ``12m``, ``3h05m``, ``2d04h``.

    Granularity is coarse on purpose: a column that changes every second would force a
    repaint of every running row on every refresh.
    """
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def stopwatch(seconds: float) -> str:
    """A running time that visibly counts up: ``45s``, ``1m05s``, ``1h02m``, ``2d04h``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return compact_duration(s)


def ago(seconds: float) -> str:
    """``updated 2 s ago`` style: seconds below a minute, then the compact form."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s ago"
    return f"{compact_duration(s)} ago"


def clock_time(stamp: float) -> str:
    """A Unix time as local ``HH:MM:SS`` (the day is implied: the console shows recent events)."""
    return time.strftime("%H:%M:%S", time.localtime(stamp))


def date_time(stamp: float) -> str:
    """A Unix time as local ``YYYY-MM-DD HH:MM:SS`` (accounting records span days)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def zoned_time(stamp: float) -> str:
    """A Unix time as local ``YYYY-MM-DD HH:MM:SS ZONE`` (``UTC``, ``CET``, or ``+0530``
    where the zone has no abbreviation)."""
    local = time.localtime(stamp)
    zone = time.strftime("%Z", local)
    if not zone or zone[0] in "+-":
        zone = time.strftime("%z", local)
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', local)} {zone}"


def relative(seconds: float) -> str:
    """How long ago (``seconds`` > 0) or how far ahead: ``45 s ago``, ``12 min ago``,
    ``3 h 05 min ago``, ``2 d 4 h ago``, ``in 5 min``."""
    s = int(abs(seconds))
    if s < 60:
        amount = f"{s} s"
    elif s < 3600:
        amount = f"{s // 60} min"
    elif s < 86_400:
        amount = f"{s // 3600} h {s % 3600 // 60:02d} min"
    else:
        amount = f"{s // 86_400} d {s % 86_400 // 3600} h"
    return f"in {amount}" if seconds < 0 and s else f"{amount} ago"


def moment(stamp: float, now: float) -> str:
    """A time in the detail screens, relative and absolute with its zone:
    ``12 min ago (2026-11-24 17:03:12 UTC)``."""
    return f"{relative(now - stamp)} ({zoned_time(stamp)})"


def job_elapsed(job: JobView, now: float) -> str:
    """Run time so far (running) or total run time (finished); ``-`` before the job started.

    A pending job has no run time (squeue's TIME says 0:00 there); showing its time queued
    under "Elapsed" read as run time to operators.
    """
    j = job.job
    if j.state is JobState.PENDING or not j.start_time:
        return "-"
    return compact_duration(j.time_used(now))


def job_left(job: Job, now: float) -> Text:
    """The Left column: time until the job's limit (squeue ``%L``), ``none`` without a
    limit, ``-`` when it has ended or Slurm gives none; in yellow under ten minutes, when
    a checkpoint before the end is due (``0s`` in red: past it)."""
    if job.state.is_finished or job.time_limit is None:
        return Text("-", style="dim", justify="right")
    left = job.time_left(now)
    if left is None:
        return Text("none", style="dim", justify="right")
    style = "bold red" if left <= 0 else "yellow" if left < 600 else ""
    return Text(compact_duration(max(0, left)), style=style, justify="right")


def job_limit(job: Job) -> str:
    """The Limit column: the time limit (``28h00m``), ``none`` without one, ``-`` unset."""
    if job.time_limit is None:
        return "-"
    return "none" if job.time_limit == TIME_UNLIMITED else compact_duration(job.time_limit * 60)


def job_end(job: Job, now: float) -> str:
    """The End column: when it ended or will at its limit (squeue ``%e``), as the Start
    column writes times; ``-`` unknown or without a limit."""
    if not job.end_time or (job.time_limit == TIME_UNLIMITED and job.end_time > now):
        return "-"
    return job_start(replace(job, state=JobState.RUNNING, start_time=job.end_time), now)


def job_start(job: Job, now: float) -> str:
    """The Start column: when a pending job is expected to start (``in 12m``, squeue
    ``--start``; ``-`` when Slurm has no estimate, ``now`` when it is overdue), else when
    the job started (``13:27``, local time; the date when not today)."""
    if job.state is JobState.PENDING:
        if not job.start_time:
            return "-"
        ahead = job.start_time - now
        return f"in {compact_duration(ahead)}" if ahead >= 1 else "now"
    if not job.start_time:
        return "-"
    started = time.localtime(job.start_time)
    if time.strftime("%Y-%m-%d", started) == time.strftime("%Y-%m-%d", time.localtime(now)):
        return time.strftime("%H:%M", started)
    return time.strftime("%b %d", started)


AUTO_MARK = " ⟳"
"""Appended to ``able`` for a step that checkpoints by itself (the detail says how)."""


def checkpoint_text(state: CheckpointState, now: float) -> Text:
    """The step's checkpoint column: able / disabled xN / in progress since ... / ..."""
    kind = state.kind
    if kind is CheckpointKind.ABLE:
        # One character for a policy (sckpt run --every/--before-end), right after the
        # word, so that 80 columns cut the checkpointer's name, never the mark.
        mark = AUTO_MARK if state.auto is not None and state.auto.active else ""
        if state.checkpointer:  # sckpt run --transparent: DMTCP, whatever the program does
            return Text(f"able{mark}, {state.checkpointer}", style="green")
        return Text(f"able{mark}", style="green")
    if kind is CheckpointKind.DISABLED:
        # The native engine sees only "disabled" (slurm_checkpoint_able), not the counter.
        count = f" ×{state.disable_count}" if state.disable_count else ""  # noqa: RUF001
        return Text(f"disabled{count}", style="yellow")
    if kind is CheckpointKind.IN_PROGRESS:
        since = state.in_progress_since
        if since:
            # The time counting up first: at 80 columns the clock time is what is cut.
            return Text(
                f"{progress.IN_PROGRESS} {stopwatch(now - since)} since {clock_time(since)}",
                style="bold cyan",
            )
        return Text(progress.IN_PROGRESS, style="bold cyan")
    if kind is CheckpointKind.NOT_SUPPORTED:
        text = Text("not supported", style="dim")
        # The reason without its own "not supported" (the column read "not supported:
        # not suppor…"): Slurm's message for the code is often just those words.
        reason = state.reason.strip()
        if reason and "not supported" not in reason.lower():
            text.append(": ")
            text.append_text(literal(reason))
        return text
    if kind is CheckpointKind.PENDING:
        return Text("pending", style="dim")
    if kind is CheckpointKind.STARTING:
        return Text(CheckpointKind.STARTING.value, style="cyan")
    if kind is CheckpointKind.ENDED:
        return Text(CheckpointKind.ENDED.value, style="dim")
    # The command line's word for a state the controller did not tell (another user's
    # step: it answers only the owner or root); the step detail says why.
    return Text(CheckpointKind.UNKNOWN.value, style="dim")


def outcome_text(word: str) -> Text:
    """A checkpoint requested from this console, in ``progress.py``'s words: ``requested``
    until the data shows it, then ``completed`` or ``failed (<code>)``."""
    if word == progress.COMPLETED:
        return Text(word, style="green")
    if word == progress.REQUESTED:
        return Text(word, style="cyan")
    if word == CheckpointKind.ENDED.value:
        return Text(word, style="dim")
    return Text(word, style="bold red")


def error_text(error: CheckpointError | None) -> Text:
    """``2037 ESLURM_DISABLED: message``; empty when there is no error."""
    if error is None or error.code == 0:
        return Text("")
    text = Text(f"{error.code} {printable(error.name)}", style="red")
    if error.message:
        text.append(": ")
        text.append_text(bounded(error.message))
    return text


def job_summary(job: JobView) -> Text:
    """One cell for a job's checkpoint picture: counts of its steps' states."""
    state = job.job.state
    if state is JobState.PENDING:
        count = job.job.array_task_count if job.job.array_task_str else 0
        return Text(f"pending ({count} tasks)" if count > 1 else "pending", style="dim")
    if state.is_finished:
        return Text(CheckpointKind.ENDED.value, style="dim")
    if not job.steps:
        return Text("no steps", style="dim")
    counts: dict[CheckpointKind, int] = {}
    for step in job.steps:
        counts[step.checkpoint.kind] = counts.get(step.checkpoint.kind, 0) + 1
    parts: list[tuple[str, str]] = []
    labels = (
        (CheckpointKind.IN_PROGRESS, progress.IN_PROGRESS, "bold cyan"),
        (CheckpointKind.ABLE, "able", "green"),
        (CheckpointKind.STARTING, CheckpointKind.STARTING.value, "cyan"),
        (CheckpointKind.DISABLED, "dis", "yellow"),
        (CheckpointKind.NOT_SUPPORTED, "n/s", "dim"),
        (CheckpointKind.ENDED, "ended", "dim"),
        (CheckpointKind.PENDING, "pend", "dim"),
        (CheckpointKind.UNKNOWN, CheckpointKind.UNKNOWN.value, "dim"),
    )
    for kind, label, style in labels:
        if counts.get(kind):
            parts.append((f"{counts[kind]} {label}", style))
    text = Text()
    for i, (part, style) in enumerate(parts):
        if i:
            text.append(" ")
        text.append(part, style=style)
    failed = sum(1 for s in job.steps if s.checkpoint.failed_code)
    if failed:  # the steps whose last checkpoint failed, usually "able" again: say so
        text.append(f" {failed} failed", style="bold red")
    return text


def state_text(state: JobState, *, gone: bool = False) -> Text:
    """squeue's short state code, coloured; ``gone`` marks a job the controller forgot."""
    style = {
        JobState.RUNNING: "green",
        JobState.PENDING: "yellow",
        JobState.SUSPENDED: "magenta",
    }.get(state, "dim")
    text = Text(state.short, style=style)
    if gone:
        text.append("*", style="dim")
    return text


# ----------------------------------------------------------------- columns and rows


@dataclass(frozen=True, slots=True)
class Column:
    """One table column: key, header label, width (None = the rest of the line: rows are
    rendered on screen only, so a column cannot be sized to every row of the queue) and
    the minimum table width (terminal columns) at which it is shown, so narrow terminals
    drop the least useful."""

    key: str
    label: str
    width: int | None
    min_width: int = 0
    room: int = 0
    """The flexible column's (width None) own share of the line: what is left beyond it
    widens the columns whose text is cut (``columns_for``)."""
    least: int = 0
    """The narrowest a fixed column gets when the line is too short for every column and
    the flexible one (0: it keeps its width).  The checkpoint column is what sckpt is for:
    the others are narrowed first (``NARROW_FIRST``)."""


JOB_COLUMN_SET: Mapping[str, Column] = {
    c.key: c
    for c in (
        Column("id", "JobID", 9, least=7),
        Column("user", "User", 11, least=6),
        Column("name", "Name", 16, least=6),
        Column("partition", "Part", 7, 100, least=4),
        Column("state", "St", 3),
        Column("elapsed", "Elapsed", 7),
        Column("left", "Left", 7),
        Column("limit", "Limit", 6),
        Column("end", "End", 11, least=5),
        Column("priority", "Priority", 10, 110),
        Column("qos", "QOS", 8, 110, least=4),
        Column("start", "Start", 9, least=6),
        Column("nodes", "Nodes", 12, 120, least=6),
        Column("steps", "Stp", 3, 70),
        # the resources layout's own column: shown at every width where it is chosen
        Column("tres", "Resources", 20, least=10),
        Column("checkpoint", "Checkpoint", None, room=24),
    )
}
"""Every column of the jobs table by key (``backend/columns.py`` names them for the
config): the layouts choose among these."""
STEP_COLUMN_SET: Mapping[str, Column] = {
    c.key: c
    for c in (
        Column("id", "Step", 14, least=10),
        Column("name", "Name", 12, 100),
        Column("state", "State", 9, least=7),
        Column("tasks", "Tasks", 5, 110),
        Column("nodes", "Nodes", 12, 130),
        Column("checkpoint", "Checkpoint", 26),
        Column("error", "Last error", None, room=30),
    )
}
"""Every column of the steps table by key."""


def job_columns(keys: Sequence[str], *, many_clusters: bool = False) -> tuple[Column, ...]:
    """The jobs table's columns for a layout (``backend/columns.py``), in its order; with
    ``-M`` and several clusters the cluster first, the name narrower to make room."""
    chosen = tuple(JOB_COLUMN_SET[k] for k in keys)
    if not many_clusters:
        return chosen
    return (
        Column("cluster", "Cluster", 8),
        *(replace(c, width=11) if c.key == "name" else c for c in chosen),
    )


def step_columns(keys: Sequence[str]) -> tuple[Column, ...]:
    """The steps table's columns, in the order ``keys`` (``[columns] steps``) gives."""
    return tuple(STEP_COLUMN_SET[k] for k in keys)


JOB_COLUMNS: tuple[Column, ...] = job_columns(LAYOUTS["default"])
"""sckpt's own layout of the jobs table."""

CLUSTER_JOB_COLUMNS: tuple[Column, ...] = job_columns(LAYOUTS["default"], many_clusters=True)
"""The jobs table with ``-M`` and more than one cluster: the cluster first (the name gives
it room, so that 80 columns still show the checkpoint summary)."""

STEP_COLUMNS: tuple[Column, ...] = step_columns(STEP_COLUMN_KEYS)


FLEX_MIN = 14
"""The least the flexible column keeps when a long job id is widened into its room."""


def columns_for(
    columns: Sequence[Column], width: int, wanted: Mapping[str, int] | None = None
) -> tuple[Column, ...]:
    """The columns shown at a terminal ``width``, the flexible one sized to what is left.

    ``wanted``: the widest text seen in each column (the rows painted so far).  A fixed
    column whose text is wider than it is widened into what the flexible column leaves
    beyond its ``room``, fairly when that is not enough for all: at 160 columns a job name
    or a pending reason was cut next to sixty blank columns.
    """
    shown = narrowed([c for c in columns if width >= c.min_width], width)
    fixed = sum((c.width or 0) + 2 for c in shown)
    rest = max(10, width - fixed - 2 - 2)  # cell padding, vertical scrollbar
    flexible = [c for c in shown if c.width is None]
    spare = max(0, rest - sum(c.room for c in flexible))
    needs = {
        c.key: wanted.get(c.key, 0) - c.width
        for c in shown
        if c.width is not None and wanted and wanted.get(c.key, 0) > c.width
    }
    # A job id squeue writes long (an array's pending range, 7_[3-20%2]) is the row's
    # name: it is widened first, from the flexible column's own room too (down to
    # ``FLEX_MIN``), before other cut text shares what is left.
    first = min(needs.pop("id", 0), max(0, rest - FLEX_MIN))
    spare = max(0, spare - first) if first <= spare else 0
    rest -= first
    grants = share(spare, needs)
    if first:
        grants["id"] = first
    rest -= sum(grants.values()) - first
    return tuple(
        Column(
            c.key,
            c.label,
            rest if c.width is None else c.width + grants.get(c.key, 0),
            c.min_width,
            c.room,
            c.least,
        )
        for c in shown
    )


FLEX_LEAST = 13
"""What the flexible column keeps before fixed columns are narrowed: the checkpoint summary
of the 80-column default layout (``1 in progress``)."""
NARROW_FIRST = ("name", "tres", "user", "nodes", "end", "qos", "partition", "start", "id", "state")
"""Fixed columns that give up width on a short line (down to ``least``), the one with the
most to give first; on a tie, in this order."""


def narrowed(shown: Sequence[Column], width: int) -> list[Column]:
    """``shown`` with fixed columns narrowed, in ``NARROW_FIRST`` order, until the flexible
    column (the checkpoint summary) keeps ``FLEX_LEAST`` cells of a ``width`` line.

    Why: at 60 columns the checkpoint column fell off the screen while JobID and User kept
    their full width, and at 80 the resources layout had no room for its Resources."""
    if not any(c.width is None for c in shown):
        return list(shown)
    short = sum((c.width or 0) + 2 for c in shown) + 4 + FLEX_LEAST - width
    widths = {c.key: c.width for c in shown}
    least = {c.key: c.least for c in shown if c.width and c.least and c.key in NARROW_FIRST}
    while short > 0:  # a cell at a time from the one with most to give (ties: the order)
        spare = [(widths[k] or 0) - least[k] for k in NARROW_FIRST if k in least]
        if not spare or max(spare) <= 0:
            break
        key = [k for k in NARROW_FIRST if k in least][spare.index(max(spare))]
        widths[key] = (widths[key] or 0) - 1
        short -= 1
    kept = [replace(c, width=widths[c.key]) if c.width is not None else c for c in shown]
    for key in DROP_FIRST:  # still too short at their narrowest: the least useful go
        if short <= 0:
            break
        gone = next((c for c in kept if c.key == key), None)
        if gone is not None and gone.width is not None:
            kept.remove(gone)
            short -= gone.width + 2
    return kept


DROP_FIRST = ("steps", "priority", "end", "elapsed", "limit", "start", "nodes", "partition", "qos")
"""Columns left out, in this order, when narrowing is not enough for the checkpoint's."""


def share(spare: int, needs: Mapping[str, int]) -> dict[str, int]:
    """``spare`` cells given to ``needs`` (key → cells wanted): all of each need when there
    is enough, else the smallest needs met first and the rest split evenly."""
    grants: dict[str, int] = {}
    left = spare
    pending = sorted(needs.items(), key=lambda item: item[1])
    for index, (key, need) in enumerate(pending):
        grant = min(need, left // (len(pending) - index))
        if grant > 0:
            grants[key] = grant
            left -= grant
    return grants


def job_cells(view: JobView, now: float, *, gone: bool = False) -> dict[str, Text]:
    """Every job column's cell, keyed by column key."""
    j = view.job
    return {
        "cluster": cluster_text(view),
        "id": Text(j.label),
        "user": literal(j.user),
        "name": literal(j.name),
        "partition": literal(j.partition),
        "state": state_text(j.state, gone=gone),
        "elapsed": Text(job_elapsed(view, now), justify="right"),
        "left": job_left(j, now),
        "limit": Text(job_limit(j), justify="right"),
        "end": Text(job_end(j, now), justify="right"),
        "priority": Text(str(j.priority), justify="right"),
        "qos": literal(j.qos) if j.qos else Text("-", style="dim"),
        "start": Text(job_start(j, now), justify="right"),
        "nodes": literal(j.nodes or (j.state_reason and f"({j.state_reason})") or ""),
        "steps": Text(str(len(view.steps)), justify="right"),
        "tres": literal(j.tres) if j.tres else Text("-", style="dim"),
        "checkpoint": job_summary(view),
    }


def cluster_text(view: JobView) -> Text:
    """The job's cluster (``-M``); in red while that cluster does not answer: the row is its
    last known state."""
    if view.stale:
        return literal(f"{view.cluster}!", style="bold reverse red")
    return literal(view.cluster)


def step_cells(view: StepView, now: float, outcome: str | None = None) -> dict[str, Text]:
    """Every step column's cell, keyed by column key; ``outcome``: what became of a
    checkpoint requested from this console, said instead of the step's state."""
    s = view.step
    return {
        "id": Text(str(s.step_id)),
        "name": literal(s.name),
        "state": literal(s.state),
        "tasks": Text(str(s.num_tasks), justify="right"),
        "nodes": literal(s.nodes),
        "checkpoint": outcome_text(outcome) if outcome else checkpoint_text(view.checkpoint, now),
        "error": error_text(view.checkpoint.last_error),
    }


def job_sort_key(view: JobView, column: str, now: float) -> tuple[object, ...]:
    """A sort key for a job by column; ties broken by job id so the order is stable."""
    j = view.job
    value: object
    if column == "id":
        value = job_order(j)
    elif column == "cluster":
        value = view.cluster
    elif column == "user":
        value = j.user
    elif column == "name":
        value = j.name.lower()
    elif column == "partition":
        value = j.partition
    elif column == "state":
        value = j.state.short
    elif column == "elapsed":
        value = j.time_used(now)  # what the column shows, as squeue's -S M
    elif column == "limit":
        limit = j.time_limit
        value = float("inf") if limit is None or limit == TIME_UNLIMITED else limit
    elif column == "end":
        value = j.end_time or float("inf")
    elif column == "priority":
        value = j.priority
    elif column == "qos":
        value = j.qos
    elif column == "left":  # squeue -S L: the least time left first, no limit last
        left = j.time_left(now)
        value = float("inf") if left is None or j.state.is_finished else left
    elif column == "start":  # squeue -S S: no estimate last
        value = j.start_time or float("inf")
    elif column == "tres":
        value = j.tres
    elif column == "nodes":
        value = j.nodes
    elif column == "steps":
        value = len(view.steps)
    elif column == "checkpoint":
        value = job_summary(view).plain
    else:
        value = 0
    return (value, j.job_id, view.cluster)


# ----------------------------------------------------------------- filter language
# The language and the test (parse_filter, Filter, FILTER_FIELDS, matches) are the backend's,
# shared with ``sckpt ls FILTER``.


def matches(flt: Filter, view: JobView) -> bool:
    """Whether a job passes the filter (``backend/filters.py``, the test ``sckpt ls FILTER``
    applies too); a filter with an unknown field matches nothing."""
    return flt.empty or match_filter(flt, view)
