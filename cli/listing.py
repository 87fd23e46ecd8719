"""``sckpt ls``: jobs and steps with their checkpoint state, filtered like squeue.

The filters are applied to one snapshot taken through the facade, so ``ls`` costs the
controller exactly what one console refresh costs.  Without ``--state`` (or ``--all``) only
active jobs are listed (pending, running, suspended), as squeue does by default.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sckpt.backend.filters import Filter, matches, step_checkpoint_words
from sckpt.backend.hostlist import expand_hostlist
from sckpt.backend.model import (
    ACTIVE_STATES,
    ClusterInfo,
    Job,
    JobState,
    JobView,
    Snapshot,
    StepView,
    expand_task_ranges,
    job_order,
)

from . import output
from . import squeue_format as sf


@dataclass(frozen=True)
class ListFilter:
    """What ``ls`` keeps; an empty set means "no filter on that field".

    ``users`` is the exception: None means no filter, an empty set matches nobody (what
    ``--mine --user someone-else`` asks for).
    """

    users: frozenset[str] | None = None
    states: frozenset[JobState] = ACTIVE_STATES
    job_ids: frozenset[str] = frozenset()
    """squeue ``-j``: job ids, arrays' ids and array tasks (``7_3``), as typed."""
    partitions: frozenset[str] = frozenset()
    checkpoint: frozenset[str] = frozenset()
    """``--ckpt``: checkpoint words (``filters.CHECKPOINT_WORDS``), a step having any."""
    words: Filter = field(default_factory=Filter)
    """The console's filter language (``sckpt ls user:bob state:R``), already valid."""
    names: frozenset[str] = frozenset()
    nodes: frozenset[str] = frozenset()
    """Node names (``-w``'s host list, expanded): a row on any of them is kept."""
    accounts: frozenset[str] = frozenset()
    """Lower-cased: squeue compares accounts case-insensitively."""
    steps: bool = False
    """``ls -s``: ``-n`` and ``-w`` then select steps by their own name and nodes, as
    ``squeue -s`` does; without it, jobs by theirs."""

    def keeps_step(self, step: StepView) -> bool:
        """Whether a step's row is listed (``ls -s``): its checkpoint state is wanted and,
        with ``-s``, its name and nodes are."""
        if self.checkpoint and self.checkpoint.isdisjoint(step_checkpoint_words(step)):
            return False
        if self.steps:
            return self.named(step.step.name) and self.on_nodes(step.step.nodes)
        return True

    def named(self, name: str) -> bool:
        """``-n``: the name is one of those asked for (exactly, as squeue)."""
        return not self.names or name in self.names

    def on_nodes(self, nodelist: str) -> bool:
        """``-w``: the host list shares a node with those asked for (none while pending)."""
        if not self.nodes:
            return True
        return bool(nodelist) and not self.nodes.isdisjoint(expand_hostlist(nodelist))


def select(jobs: Iterable[JobView], wanted: ListFilter) -> list[JobView]:
    """The jobs that match every filter, each whole.

    A filter selects rows; it does not rewrite them: a job is kept when one of its steps
    has a wanted checkpoint state, and keeps all its steps, so its CKPT summary (``1
    disabled, 4 able``) still describes the job.  ``ls -s`` then lists only the steps
    ``keeps_step`` accepts.
    """
    kept: list[JobView] = []
    for view in jobs:
        job = view.job
        if wanted.users is not None and not {job.user, str(job.uid)} & wanted.users:
            continue
        if wanted.states and job.state not in wanted.states:
            continue
        if wanted.job_ids and not job_named(job, wanted.job_ids):
            continue
        if wanted.partitions and job.partition not in wanted.partitions:
            continue
        if wanted.accounts and job.account.lower() not in wanted.accounts:
            continue
        if not wanted.steps and not (wanted.named(job.name) and wanted.on_nodes(job.nodes)):
            continue
        by_step = wanted.steps and bool(wanted.names or wanted.nodes)
        if (wanted.checkpoint or by_step) and not any(wanted.keeps_step(s) for s in view.steps):
            continue
        if not matches(wanted.words, view):
            continue
        kept.append(view)
    kept.sort(key=lambda v: job_order(v.job))
    return kept


START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
"""squeue ``--start``'s columns (its ``opts.c``), with ``-S S`` and ``-t PD``."""


def one_per_task(views: list[JobView], wanted: ListFilter) -> list[JobView]:
    """squeue ``-r``: the record of an array's pending tasks as one row per task (``7_3``,
    ``7_4`` ...), each the same record named for its task; with ``-j 7_4``, that task only.
    A range libslurm cut short (``...``) stays one row."""
    out: list[JobView] = []
    for view in views:
        job = view.job
        try:
            tasks = expand_task_ranges(job.array_task_str) if job.array_task_str else ()
        except ValueError:
            tasks = ()
        if not tasks:
            out.append(view)
            continue
        for task in tasks:
            one = replace(job, array_task_id=task, array_task_str="")
            if not wanted.job_ids or job_named(one, wanted.job_ids):
                out.append(replace(view, job=one))
    return out


def job_named(job: Job, ids: frozenset[str]) -> bool:
    """Whether squeue ``-j IDS`` lists ``job``: its own id, its array's id, or its task
    (``7_3``, also while pending in its array's record ``7_[3-50]``)."""
    if str(job.job_id) in ids:
        return True
    if not job.array_job_id:
        return False
    if str(job.array_job_id) in ids or job.label in ids:
        return True
    if job.array_task_str:
        prefix = f"{job.array_job_id}_"
        named = {int(i[len(prefix) :]) for i in ids if i.startswith(prefix)}
        try:
            return bool(named & set(expand_task_ranges(job.array_task_str)))
        except ValueError:
            return False
    return False


@dataclass(frozen=True)
class Layout:
    """How ``ls`` prints: sckpt's table, or squeue's ``-o``/``-O`` columns; in ``-S`` order;
    ``--parsable``.  Built (so validated) from argv before Slurm is asked anything."""

    columns: tuple[sf.Column[JobView], ...] | None = None
    step_columns: tuple[sf.Column[StepView], ...] | None = None
    sort: tuple[tuple[sf.Field[JobView], bool], ...] = ()
    step_sort: tuple[tuple[sf.Field[StepView], bool], ...] = ()
    parsable: bool = False


def layout_from(
    *, steps: bool, fmt: str | None, long_fmt: str | None, sort: str | None, parsable: bool
) -> Layout:
    """Parse ``-o``/``-O``/``-S`` against the job fields, or with ``-s`` the step fields
    (squeue's letters differ between the two: ``%A`` is a job id, a step's task count)."""
    if steps:
        if fmt is not None:
            step_columns = sf.parse_format(fmt, sf.STEP_FIELDS)
        elif long_fmt is not None or parsable:
            spec = long_fmt if long_fmt is not None else sf.DEFAULT_STEP_FORMAT
            step_columns = sf.parse_long_format(spec, sf.STEP_FIELDS)
        else:
            step_columns = None
        keys = sf.parse_sort(sort, sf.STEP_FIELDS) if sort is not None else []
        return Layout(
            step_columns=None if step_columns is None else tuple(step_columns),
            step_sort=tuple(keys),
            parsable=parsable,
        )
    if long_fmt is not None:
        columns = sf.parse_long_format(long_fmt, sf.JOB_FIELDS)
    elif fmt is not None or parsable:
        columns = sf.parse_format(fmt if fmt is not None else sf.DEFAULT_JOB_FORMAT, sf.JOB_FIELDS)
    else:
        columns = None
    job_keys = sf.parse_sort(sort, sf.JOB_FIELDS) if sort is not None else []
    return Layout(
        columns=None if columns is None else tuple(columns),
        sort=tuple(job_keys),
        parsable=parsable,
    )


def for_release(layout: Layout, release: str) -> Layout:
    """``layout`` as ``release``'s squeue prints it (``squeue_format.speaks_1905``)."""
    if layout.columns is None or not sf.speaks_1905(release):
        return layout
    columns = tuple(
        replace(c, field=sf.DEPENDENCY_1905) if c.field is sf.DEPENDENCY else c
        for c in layout.columns
    )
    return replace(layout, columns=columns)


def order(views: list[JobView], layout: Layout, now: float) -> list[JobView]:
    """The jobs in ``-S`` order (job id order without ``-S``: sckpt's default)."""
    return sf.sort_rows(views, layout.sort, now) if layout.sort else views


def render_text(
    views: list[JobView],
    snapshot: Snapshot,
    wanted: ListFilter,
    *,
    steps: bool,
    noheader: bool,
    layout: Layout | None = None,
) -> str:
    """squeue's table (jobs), or ``squeue -s``'s (the steps ``wanted`` keeps), with the
    checkpoint columns; or the ``-o``/``-O`` columns, byte for byte as squeue prints them.

    With ``-M`` (``snapshot.clusters``) one such table per cluster under a ``CLUSTER: NAME``
    line, as ``squeue -M`` prints them (``-h`` drops those lines too, as there)."""
    if snapshot.clusters:
        parts = []
        for cluster in snapshot.clusters:
            mine = [view for view in views if view.cluster == cluster.name]
            table = _render_one(
                mine, snapshot, wanted, steps=steps, noheader=noheader, layout=layout
            )
            parts.append(table if noheader else f"CLUSTER: {cluster.name}\n{table}")
        return ("\n" if noheader else "\n\n").join(p for p in parts if p)
    return _render_one(views, snapshot, wanted, steps=steps, noheader=noheader, layout=layout)


def _render_one(
    views: list[JobView],
    snapshot: Snapshot,
    wanted: ListFilter,
    *,
    steps: bool,
    noheader: bool,
    layout: Layout | None,
) -> str:
    """One cluster's table (see ``render_text``)."""
    layout = layout or Layout()
    now = snapshot.taken_at
    if steps:
        kept = [step for view in views for step in view.steps if wanted.keeps_step(step)]
        if layout.step_sort:
            kept = sf.sort_rows(kept, layout.step_sort, now)
        if layout.step_columns is not None:
            draw = sf.render_parsable if layout.parsable else sf.render
            return "\n".join(draw(layout.step_columns, kept, now, noheader=noheader))
        rows = [output.step_row(step, now) for step in kept]
        return output.render_table(output.STEP_HEADER, rows, noheader=noheader)
    if layout.columns is not None:
        draw_jobs = sf.render_parsable if layout.parsable else sf.render
        return "\n".join(draw_jobs(layout.columns, views, now, noheader=noheader))
    rows = [output.job_row(view, now) for view in views]
    return output.render_table(output.JOB_HEADER, rows, noheader=noheader)


def render_json(
    views: list[JobView], snapshot: Snapshot, info: ClusterInfo | None
) -> dict[str, Any]:
    """The document ``ls --json`` prints: cluster facts, freshness, jobs with their steps.

    ``cluster`` is null when the controller could not be asked (``stale`` says why).
    """
    document = {
        "cluster": output.to_jsonable(info) if info is not None else None,
        "taken_at": snapshot.taken_at,
        "stale": snapshot.stale,
        "stale_since": snapshot.stale_since,
        "error": snapshot.error,
        "jobs": [output.job_json(view, snapshot.taken_at) for view in views],
    }
    if snapshot.clusters:  # -M: each cluster's freshness (one down leaves the others fresh)
        document["clusters"] = output.to_jsonable(snapshot.clusters)
    return document
