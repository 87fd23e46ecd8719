"""The full console: header, filter box, jobs table, steps of the selected job, footer.

The screen holds only view state (filter, toggles, sort); the data lives on the app and
arrives through ``refresh_view`` after each refresh.  Both tables are synced in place
(``KeyedTable.sync``), so a refresh never moves the operator's cursor or scroll position.

Turning 10,000 jobs into rows (filter, sort, cell texts) costs tens of milliseconds, and a
key pressed meanwhile waits if that runs on the UI thread.  So the refresh worker calls
``plan_rows`` on its own thread with the view state the screen had when the refresh began
(``view_state``), and the UI thread only syncs the table with the finished rows; a plan
whose view state or cell cache is no longer the screen's (the operator changed the filter
meanwhile) is dropped and the rows are built again on the UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from sckpt.backend.model import JobState, JobView, StepId
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.widgets import DataTable, Footer, Input, Static

from ..console_text import (
    JOB_COLUMNS,
    STEP_COLUMNS,
    Filter,
    job_cells,
    job_elapsed,
    job_sort_key,
    parse_filter,
    printable,
    step_cells,
    visible_jobs,
)
from ..keys import CONSOLE_KEYS, bindings
from ..widgets.header import StatusHeader
from ..widgets.keyed_table import KeyedTable
from .base import TargetScreen

SORTABLE = tuple(c.key for c in JOB_COLUMNS)

CellCache = dict[int, tuple[JobView, bool, dict[str, Text], float]]
"""Per job: the view the cells were built from, its "gone" mark, the cells, and until when
the elapsed text stays the same."""


@dataclass(frozen=True, slots=True)
class ViewState:
    """What decides which jobs the table shows and in which order (besides the data)."""

    filter: Filter
    mine_only: bool
    me: str
    show_finished: bool
    sort_column: str
    sort_reverse: bool


@dataclass(frozen=True, slots=True)
class JobRows:
    """The jobs table's rows, built (possibly off the UI thread) for one view state."""

    view: ViewState
    base: CellCache
    """The cell cache the rows were built from: the plan is stale if it was replaced."""
    cache: CellCache
    """The cell cache to keep once these rows are shown."""
    keys: list[str]
    cells: list[dict[str, Text]]
    """The rows, as two lists rather than a list of pairs: a refresh builds these for
    every row, and 10,000 short-lived tuples that outlive a young collection make the
    garbage collector's full collections (100-300 ms at 10,000 jobs) come sooner."""


def _elapsed_steady(view: JobView, now: float) -> float:
    """Seconds during which the job's elapsed text (``compact_duration``) cannot change."""
    j = view.job
    if j.state.is_finished:
        return float("inf")
    start = j.submit_time if j.state is JobState.PENDING else j.start_time
    if not start:
        return float("inf")
    seconds = max(0, int(now - start))
    if seconds < 60:
        return 1.0
    if seconds < 86_400:
        return float(60 - seconds % 60)
    return float(3600 - seconds % 3600)


def _cells(cache: CellCache, view: JobView, now: float, gone: bool) -> dict[str, Text]:
    """A job's cells, rebuilt only when its view changed (the engine reuses unchanged
    ``JobView`` objects); otherwise only the elapsed time is recomputed, and only once its
    text can have changed.  Returning the very same dict lets ``KeyedTable.sync`` skip the
    row without comparing cells."""
    job_id = view.job.job_id
    cached = cache.get(job_id)
    if cached is not None and cached[0] is view and cached[1] == gone:
        cells, valid_until = cached[2], cached[3]
        if now < valid_until:
            return cells
        elapsed = job_elapsed(view, now)
        if cells["elapsed"].plain != elapsed:
            cells = {**cells, "elapsed": Text(elapsed, justify="right")}
    else:
        cells = job_cells(view, now, gone=gone)
    cache[job_id] = (view, gone, cells, now + _elapsed_steady(view, now))
    return cells


class ConsoleScreen(TargetScreen):
    """Jobs and steps, filtered and sorted, with the action keys."""

    BINDINGS = [
        *bindings(CONSOLE_KEYS),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self, *, read_only: bool) -> None:
        super().__init__(read_only=read_only, id="console")
        self.filter: Filter = Filter()
        self.filter_text = ""
        self.mine_only = False
        self.show_finished = False
        self.sort_column = "id"
        self.sort_reverse = False
        self.steps_job: int | None = None
        """The job whose steps the steps table shows."""
        self._cell_cache: CellCache = {}
        """Replaced, never changed in place: a refresh worker may be reading it."""
        self._steps_heading: Text | None = None

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.sckpt.info, interval=self.sckpt.interval, id="header")
        yield Input(placeholder="filter: text or field:value (user:alice state:R)", id="filter")
        yield KeyedTable(JOB_COLUMNS, id="jobs")
        yield Static("", id="steps-title", markup=False)
        yield KeyedTable(STEP_COLUMNS, id="steps")
        yield Footer(compact=True)

    @property
    def jobs_table(self) -> KeyedTable:
        return self.query_one("#jobs", KeyedTable)

    @property
    def steps_table(self) -> KeyedTable:
        return self.query_one("#steps", KeyedTable)

    def on_mount(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = False
        box.cursor_blink = self.app.animation_level != "none"
        width = self.app.size.width
        self.jobs_table.fit_columns(width)
        self.steps_table.fit_columns(width)
        self.jobs_table.focus()
        self.update_note()
        self.refresh_view()

    def on_resize(self, event: Resize) -> None:
        self.jobs_table.fit_columns(event.size.width)
        self.steps_table.fit_columns(event.size.width)

    # ------------------------------------------------------------------ data → tables

    def view_state(self) -> ViewState:
        """The view state now (read on the UI thread, handed to ``plan_rows``)."""
        return ViewState(
            self.filter,
            self.mine_only,
            self.sckpt.info.acting_user,
            self.show_finished,
            self.sort_column,
            self.sort_reverse,
        )

    def plan_rows(
        self,
        view: ViewState,
        known: list[JobView],
        gone: frozenset[int],
        recent: frozenset[int],
        now: float,
    ) -> JobRows:
        """The jobs table's rows for ``view`` (safe on any thread: reads the cell cache,
        builds a new one, touches no widget)."""
        base = self._cell_cache
        jobs = visible_jobs(
            known,
            view.filter,
            mine_only=view.mine_only,
            me=view.me,
            show_finished=view.show_finished,
            recently_finished=recent,
        )
        if view.sort_column == "id":  # the default, and the hot path at 10,000 jobs
            jobs.sort(key=lambda v: v.job.job_id, reverse=view.sort_reverse)
        else:
            column = view.sort_column
            jobs.sort(key=lambda v: job_sort_key(v, column, now), reverse=view.sort_reverse)
        cache = dict(base)
        keys = [str(v.job.job_id) for v in jobs]
        cells = [_cells(cache, v, now, v.job.job_id in gone) for v in jobs]
        if len(cache) > len(known):
            # Forget the cells of jobs the app no longer knows (purged by the controller
            # and past their linger): without this the cache grew by one job, its steps
            # and its cells for every job that ever passed through a console left open.
            ids = {v.job.job_id for v in known}
            for job_id in [i for i in cache if i not in ids]:
                del cache[job_id]
        return JobRows(view, base, cache, keys, cells)

    def refresh_view(self, planned: JobRows | None = None) -> None:
        """Sync both tables with the app's data, keeping cursor and scroll.

        ``planned`` is the rows a refresh worker built; they are used when they still
        fit the screen's view state and cell cache, else the rows are built here.
        """
        view = self.view_state()
        if planned is None or planned.view != view or planned.base is not self._cell_cache:
            app = self.sckpt
            planned = self.plan_rows(
                view, app.all_jobs(), app.gone_ids(), app.recently_finished(), app.now()
            )
        self._cell_cache = planned.cache
        with self.app.batch_update():
            self.jobs_table.sync(zip(planned.keys, planned.cells, strict=True))
            self.refresh_steps()

    def refresh_steps(self) -> None:
        """Show the steps of the job under the cursor."""
        key = self.jobs_table.selected_key
        job = self.sckpt.job(int(key)) if key else None
        if job is None:
            self.steps_job = None
            self.steps_table.sync([])
            self._set_steps_title(Text("Steps", style="bold"))
            return
        if job.job.job_id != self.steps_job:
            self.steps_job = job.job.job_id
            self.steps_table.sync([])
        now = self.sckpt.now()
        rows = [(str(s.step.step_id), step_cells(s, now)) for s in job.steps]
        self.steps_table.sync(rows)
        heading = Text(f"Steps of {job.job.job_id} ", style="bold")
        heading.append(printable(job.job.name))
        heading.append(f"  ({len(job.steps)})", style="dim")
        if job.job.state_reason and not job.steps:
            heading.append(f"  {printable(job.job.state_reason)}", style="dim")
        self._set_steps_title(heading)

    def _set_steps_title(self, heading: Text) -> None:
        """Repaint the steps title only when it changed, without a layout pass (one line)."""
        if heading != self._steps_heading:
            self._steps_heading = heading
            self.query_one("#steps-title", Static).update(heading, layout=False)

    @on(DataTable.RowHighlighted, "#jobs")
    def _job_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None and int(event.row_key.value) != self.steps_job:
            self.refresh_steps()

    @on(DataTable.RowSelected, "#jobs")
    def _job_selected(self) -> None:
        if self.steps_table.row_count:
            self.steps_table.focus()

    @on(DataTable.RowSelected, "#steps")
    def _step_selected(self, event: DataTable.RowSelected) -> None:
        target = self.selected_step()
        if target is not None:
            self.sckpt.open_step(target)

    @on(DataTable.HeaderSelected, "#jobs")
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, False
        self.update_note()
        self.refresh_view()

    # ------------------------------------------------------------------ selection

    def selected_step(self) -> StepId | None:
        """The step under the steps table's cursor."""
        key = self.steps_table.selected_key
        job = self.steps_job
        if key is None or job is None:
            return None
        view_of_job = self.sckpt.job(job)
        for view in view_of_job.steps if view_of_job is not None else ():
            if str(view.step.step_id) == key:
                return view.step.step_id
        return None

    def selected_target(self) -> StepId | None:
        """The focused table decides: a step in the steps table, else the whole job."""
        if self.focused is self.steps_table:
            step = self.selected_step()
            if step is not None:
                return step
        key = self.jobs_table.selected_key
        return StepId(int(key)) if key else None

    # ------------------------------------------------------------------ view keys

    def update_note(self) -> None:
        """Show the view state (filter, toggles, sort) in the header."""
        parts = []
        if self.filter_text:
            parts.append(f"filter: {self.filter_text}")
        if self.mine_only:
            parts.append("mine")
        if self.show_finished:
            parts.append("+finished")
        arrow = "↓" if self.sort_reverse else "↑"
        parts.append(f"sort {self.sort_column}{arrow}")
        header = self.query_one("#header", StatusHeader)
        header.note = "  ".join(parts)
        header.tick(self.sckpt.now())

    def action_filter(self) -> None:
        """``/``: open the filter box."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        """Escape: clear the filter (in the filter box) or leave it."""
        box = self.query_one("#filter", Input)
        if box.has_focus and box.value:
            box.value = ""
            return
        if box.display and not box.value:
            box.display = False
        self.jobs_table.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.filter = parse_filter(event.value)
        self.update_note()
        self.refresh_view()

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        if self.filter.errors:
            self.notify("; ".join(self.filter.errors), severity="warning", markup=False)
        if not event.value:
            event.input.display = False
        self.jobs_table.focus()

    def action_sort(self) -> None:
        """``s``: sort by the next column."""
        keys = [c.key for c in self.jobs_table.shown] or list(SORTABLE)
        index = keys.index(self.sort_column) if self.sort_column in keys else -1
        self.sort_column = keys[(index + 1) % len(keys)]
        self.sort_reverse = False
        self.update_note()
        self.refresh_view()

    def action_reverse(self) -> None:
        """``S``: reverse the sort order."""
        self.sort_reverse = not self.sort_reverse
        self.update_note()
        self.refresh_view()

    def action_mine(self) -> None:
        """``m``: only my jobs, or everyone's."""
        self.mine_only = not self.mine_only
        self.update_note()
        self.refresh_view()
        self.notify(
            "showing my jobs only" if self.mine_only else "showing everyone's jobs", markup=False
        )

    def action_finished(self) -> None:
        """``f``: show finished jobs, or only the recently finished ones."""
        self.show_finished = not self.show_finished
        self.update_note()
        self.refresh_view()
        self.notify(
            "showing finished jobs"
            if self.show_finished
            else "hiding finished jobs (recent ones stay a while)",
            markup=False,
        )

    def action_refresh(self) -> None:
        """``ctrl+r``: refresh now."""
        self.sckpt.refresh_now()
