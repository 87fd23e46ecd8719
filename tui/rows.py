"""What the console's tables show: the jobs table's rows as a change, and each row's cells.

The table (``widgets/row_table.RowTable``) keeps its rows as (key, sort key, data) and
renders cell text only for the rows on screen, so a refresh must hand it *what changed*,
not the whole queue: ``plan`` compares the jobs that pass the view (filter, "mine only",
finished) with what the table shows, by identity of each row's data object, and returns
the rows to upsert and the keys to remove.  The engine keeps the same ``JobView`` object
for a job that did not change, so at 10,000 jobs with three changed the plan holds three
rows and applying it costs three ordered inserts on the UI thread.

``plan`` runs on the refresh worker's thread (it reads, never changes, what it is given);
its filter pass is O(jobs) there, with no objects made per unchanged job.  A new view
(filter typed, sort changed) or an order that depends on the clock (sorting by elapsed
time) is a *reset*: every visible row, already in order, built on the worker as well.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import total_ordering
from typing import Any, TypeAlias

from rich.text import Text
from sckpt.backend.give_way import paced
from sckpt.backend.model import (
    FINISHED_STATES,
    NO_VAL,
    CheckpointKind,
    JobState,
    JobView,
    StepId,
    StepView,
)

from .console_text import Filter, job_cells, job_sort_key, matches, step_cells
from .outcomes import Shown
from .refresh import JobKey, job_key

TIME_SORTED = frozenset({"elapsed", "left"})
"""Columns whose order changes with the clock alone (a running job's elapsed time grows
past a finished one's): sorted by them, every changed refresh re-sorts (a reset)."""


@dataclass(frozen=True, slots=True)
class ViewState:
    """What decides which jobs the table shows and in which order (besides the data)."""

    filter: Filter
    mine_only: bool
    me: str
    show_finished: bool
    sort_column: str
    sort_reverse: bool


@dataclass(frozen=True, slots=True, eq=False)
class GoneRow:
    """A job the controller stopped reporting, shown for a while with its last view.

    One object per vanished job, kept from refresh to refresh (``plan`` reuses the one the
    table holds), so its row counts as unchanged like any other.
    """

    view: JobView


RowData: TypeAlias = JobView | GoneRow
"""What a jobs-table row holds: the job's view, or the view of a job that has gone."""


@total_ordering
@dataclass(frozen=True, slots=True)
class Descending:
    """A sort key that orders backwards (for a reversed sort of mixed-type keys)."""

    key: tuple[object, ...]

    def __lt__(self, other: Descending) -> bool:
        return other.key < self.key


def row_key(job_view: JobView) -> str:
    """A job's row key: its id, or with ``-M`` ``CLUSTER/ID`` (two clusters' jobs may share
    an id)."""
    job_id = job_view.job.job_id
    return f"{job_view.cluster}/{job_id}" if job_view.cluster else str(job_id)


def key_target(key: str) -> StepId:
    """The whole job a row key names (``row_key`` backwards)."""
    cluster, _, job_id = key.rpartition("/")
    return StepId(int(job_id), cluster=cluster)


def step_target(job_view: JobView, step: StepView) -> StepId:
    """A step's target: its id, on its job's cluster."""
    step_id = step.step.step_id
    return replace(step_id, cluster=job_view.cluster) if job_view.cluster else step_id


def view_of(data: RowData) -> JobView:
    return data.view if isinstance(data, GoneRow) else data


def sort_key(data: RowData, view: ViewState, now: float) -> object:
    """The row's place in the table: by job id (the default, a plain int), else by the
    sort column with the job id breaking ties; ``Descending`` when reversed."""
    job_view = view_of(data)
    key: tuple[object, ...]
    if view.sort_column == "id":
        # squeue's id order (``job_order``): an array's tasks together, by task.
        job = job_view.job
        if job.array_task_id is None:
            first, second = job.job_id, NO_VAL
        else:
            first, second = job.array_job_id, job.array_task_id
        if view.sort_reverse:
            first, second = -first, -second
        if job_view.cluster:  # -M: ids repeat across clusters; the cluster breaks ties
            return (first, second, job_view.cluster)
        return (first, second)
    key = job_sort_key(job_view, view.sort_column, now)
    return Descending(key) if view.sort_reverse else key


@dataclass(frozen=True, slots=True)
class RowPlan:
    """What to change in the jobs table to show one snapshot under one view state."""

    view: ViewState
    base: Mapping[str, RowData]
    """What the table showed when this was planned: if that is no longer it, plan again."""
    shown: dict[str, RowData]
    """What the table shows once the plan is applied (row key → data)."""
    upserts: list[tuple[str, object, RowData]]
    """(key, sort key, data) of new and changed rows; every row when ``reset``."""
    removals: list[str]
    reset: bool
    """True: ``upserts`` is the whole table in display order (the view changed)."""


def passes(job_view: JobView, view: ViewState, recent: frozenset[JobKey]) -> bool:
    """Whether a job is in the table under ``view`` (``recent``: finished jobs that still
    linger while finished ones are hidden)."""
    j = job_view.job
    if view.mine_only and j.user != view.me:
        return False
    if not view.show_finished and j.state in FINISHED_STATES and job_key(job_view) not in recent:
        return False
    return matches(view.filter, job_view)


def plan(
    view: ViewState,
    jobs: Iterable[JobView],
    gone: Iterable[JobView],
    recent: frozenset[JobKey],
    shown: Mapping[str, RowData],
    now: float,
    *,
    reset: bool = False,
) -> RowPlan:
    """The change that makes a table showing ``shown`` show ``jobs`` and ``gone`` under
    ``view``.  ``reset``: the table's view is not ``view`` (plan every row)."""
    reset = reset or view.sort_column in TIME_SORTED
    visible: dict[str, RowData] = {}
    for job_view in paced(jobs):  # on the refresh worker: a key goes first (give_way)
        if passes(job_view, view, recent):
            visible[row_key(job_view)] = job_view
    for job_view in gone:
        if passes(job_view, view, recent):
            key = row_key(job_view)
            if key in visible:
                continue  # listed again (requeued under its id): the listing wins
            before = shown.get(key)
            if isinstance(before, GoneRow) and before.view is job_view:
                visible[key] = before
            else:
                visible[key] = GoneRow(job_view)
    if reset:
        rows = [(key, sort_key(data, view, now), data) for key, data in visible.items()]
        rows.sort(key=_by_sort_key)
        return RowPlan(view, shown, visible, rows, [], True)
    upserts = [
        (key, sort_key(data, view, now), data)
        for key, data in visible.items()
        if shown.get(key) is not data
    ]
    added = sum(1 for key, _, _ in upserts if key not in shown)
    removals: list[str] = []
    if len(shown) + added != len(visible):  # some shown row is no longer visible
        removals = [key for key in shown if key not in visible]
    return RowPlan(view, shown, visible, upserts, removals, False)


def _by_sort_key(row: tuple[str, Any, RowData]) -> Any:
    return row[1]


def elapsed_steady(job_view: JobView, now: float) -> float:
    """Seconds during which the job's elapsed text (``compact_duration``) cannot change."""
    j = job_view.job
    if j.state is not JobState.RUNNING or not j.start_time:
        return float("inf")  # pending, suspended or finished: the time does not move
    seconds = j.time_used(now)
    if seconds < 60:
        return 1.0
    if seconds < 86_400:
        return float(60 - seconds % 60)
    return float(3600 - seconds % 3600)


def render_job(data: object, now: float) -> tuple[dict[str, Text], float]:
    """A row's cells and until when they hold (its elapsed time is the only clock-driven
    cell); called for rows on screen only."""
    assert isinstance(data, JobView | GoneRow)
    job_view = view_of(data)
    cells = job_cells(job_view, now, gone=isinstance(data, GoneRow))
    return cells, now + elapsed_steady(job_view, now)


@dataclass(frozen=True, slots=True, eq=False)
class StepRow:
    """A step's row that says what became of a checkpoint requested from this console
    (``requested``, ``completed``, ``failed (<code>)``) instead of the step's state."""

    view: StepView
    shown: Shown


def step_row(view: StepView, shown: Shown | None) -> StepView | StepRow:
    """What the steps table holds for ``view``: the view itself (the same object from
    refresh to refresh while it does not change), or a ``StepRow`` when ``shown``."""
    return view if shown is None else StepRow(view, shown)


def render_step(data: object, now: float) -> tuple[dict[str, Text], float]:
    """A step row's cells; a checkpoint in progress counts its time up, so those cells
    hold for a second only."""
    assert isinstance(data, StepView | StepRow)
    if isinstance(data, StepRow):
        return step_cells(data.view, now, data.shown.word), float("inf")
    steady = 1.0 if data.checkpoint.kind is CheckpointKind.IN_PROGRESS else float("inf")
    return step_cells(data, now), now + steady
