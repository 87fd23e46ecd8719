"""``sckpt ls``: jobs and steps with their checkpoint state, filtered like squeue.

The filters are applied to one snapshot taken through the facade, so ``ls`` costs the
controller exactly what one console refresh costs.  Without ``--state`` (or ``--all``) only
active jobs are listed (pending, running, suspended), as squeue does by default.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sckpt.backend.filters import Filter, matches
from sckpt.backend.model import (
    CheckpointKind,
    ClusterInfo,
    JobState,
    JobView,
    Snapshot,
    StepView,
)

from . import output
from .arguments import ACTIVE_STATES


@dataclass(frozen=True)
class ListFilter:
    """What ``ls`` keeps; an empty set means "no filter on that field".

    ``users`` is the exception: None means no filter, an empty set matches nobody (what
    ``--mine --user someone-else`` asks for).
    """

    users: frozenset[str] | None = None
    states: frozenset[JobState] = ACTIVE_STATES
    job_ids: frozenset[int] = frozenset()
    partitions: frozenset[str] = frozenset()
    checkpoint: frozenset[CheckpointKind] = frozenset()
    words: Filter = field(default_factory=Filter)
    """The console's filter language (``sckpt ls user:bob state:R``), already valid."""

    def keeps_step(self, step: StepView) -> bool:
        """Whether a step's row is listed (``ls -s``): its checkpoint state is wanted."""
        return not self.checkpoint or step.checkpoint.kind in self.checkpoint


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
        if wanted.job_ids and job.job_id not in wanted.job_ids:
            continue
        if wanted.partitions and job.partition not in wanted.partitions:
            continue
        if wanted.checkpoint and not any(wanted.keeps_step(s) for s in view.steps):
            continue
        if not matches(wanted.words, view, output.job_checkpoint_summary(view)):
            continue
        kept.append(view)
    kept.sort(key=lambda v: v.job.job_id)
    return kept


def render_text(
    views: list[JobView],
    snapshot: Snapshot,
    wanted: ListFilter,
    *,
    steps: bool,
    noheader: bool,
) -> str:
    """squeue's table (jobs), or ``squeue -s``'s (the steps ``wanted`` keeps), with the
    checkpoint columns."""
    now = snapshot.taken_at
    if steps:
        rows = [
            output.step_row(step, now)
            for view in views
            for step in view.steps
            if wanted.keeps_step(step)
        ]
        return output.render_table(output.STEP_HEADER, rows, noheader=noheader)
    rows = [output.job_row(view, now) for view in views]
    return output.render_table(output.JOB_HEADER, rows, noheader=noheader)


def render_json(
    views: list[JobView], snapshot: Snapshot, info: ClusterInfo | None
) -> dict[str, Any]:
    """The document ``ls --json`` prints: cluster facts, freshness, jobs with their steps.

    ``cluster`` is null when the controller could not be asked (``stale`` says why).
    """
    return {
        "cluster": output.to_jsonable(info) if info is not None else None,
        "taken_at": snapshot.taken_at,
        "stale": snapshot.stale,
        "stale_since": snapshot.stale_since,
        "error": snapshot.error,
        "jobs": [output.job_json(view, snapshot.taken_at) for view in views],
    }
