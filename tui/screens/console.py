"""The full console: header, filter box, jobs table, steps of the selected job, footer.

The screen holds only view state (filter, toggles, sort); the data lives on the app and
arrives through ``refresh_view`` after each refresh.  Both tables are ``RowTable``s: they
hold rows as data and render the lines on screen only, so a refresh never moves the
operator's cursor or scroll position and costs the UI thread what changed, not the queue.

Which jobs to show and what changed (``rows.plan``: filter, the finished jobs' linger,
identity of each job's view) is worked out by the refresh worker on its own thread with
the view state the screen had when the refresh began (``view_state``) and what the table
showed then; the UI thread applies the few upserts and removals.  A plan made for a view
state or a table content that is no longer the screen's (the operator changed the filter
meanwhile) is made again on the UI thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.text import Text
from sckpt.backend.columns import STEP_COLUMN_KEYS, layouts
from sckpt.backend.errors import SlurmError
from sckpt.backend.model import CheckpointError, JobView, StepId, job_step_id
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.widgets import Input, Static

from .. import rows
from ..console_text import (
    CLUSTER_JOB_COLUMNS,
    Column,
    Filter,
    checkpoint_text,
    error_text,
    job_columns,
    job_start,
    parse_filter,
    printable,
    step_columns,
    zoned_time,
)
from ..keys import CONSOLE_KEYS, bindings
from ..messages import CheckDone, DataReady, FinishedLoaded, FreshnessChanged
from ..refresh import JobData, JobKey, Planner
from ..rows import RowData, RowPlan, ViewState
from ..widgets.header import StatusHeader
from ..widgets.key_footer import KeyFooter
from ..widgets.row_table import RowTable
from .base import TargetScreen

SORTABLE = tuple(c.key for c in CLUSTER_JOB_COLUMNS)


class ConsoleScreen(TargetScreen):
    """Jobs and steps, filtered and sorted, with the action keys."""

    BINDINGS = [
        *bindings(CONSOLE_KEYS),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]
    HELP_SECTIONS = (*TargetScreen.HELP_SECTIONS, ("Console", CONSOLE_KEYS))

    def __init__(self) -> None:
        super().__init__(id="console")
        self.filter: Filter = Filter()
        self.filter_text = ""
        self.mine_only = False
        self.show_finished = False
        self.count_text = ""
        """The header's job count: ``42 jobs``, or ``12/42 jobs`` while a filter (or
        ``m``) leaves some out of the table."""
        self.sort_column = "id"
        self.sort_reverse = False
        self.steps_job: StepId | None = None
        """The job whose steps the steps table shows (on its cluster, with ``-M``)."""
        self._shown: Mapping[str, RowData] = {}
        """What the jobs table shows (row key → data), for the next plan.  Replaced,
        never changed in place: a refresh worker may be reading it."""
        self._shown_view: ViewState | None = None
        """The view state the jobs table's rows were planned for."""
        self._steps_heading: Text | None = None
        self.accounted: tuple[JobView, ...] = ()
        """Finished jobs only accounting still knows (``f`` asked for them), shown like
        jobs the controller forgot; replaced, never changed in place."""
        self.marks: dict[StepId, None] = {}
        """Targets marked with space, in marking order (jobs and steps alike)."""
        self.layout_index = 0
        """Which of ``layouts()`` the jobs table shows (``l`` moves on)."""

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.sckpt.info, interval=self.sckpt.interval, id="header")
        # Not selected on focus: Tab then a letter replaced the typed filter.
        yield Input(
            placeholder="filter: text or field:value (user:alice state:R)",
            id="filter",
            select_on_focus=False,
        )
        now = self.sckpt.now
        yield RowTable(self.layout_columns(), render=rows.render_job, clock=now, id="jobs")
        yield Static("", id="steps-title", markup=False)
        chosen = self.sckpt.settings.columns.get("steps", STEP_COLUMN_KEYS)
        yield RowTable(step_columns(chosen), render=rows.render_step, clock=now, id="steps")
        yield KeyFooter(offered=self.offers)

    @property
    def jobs_table(self) -> RowTable:
        return self.query_one("#jobs", RowTable)

    @property
    def steps_table(self) -> RowTable:
        return self.query_one("#steps", RowTable)

    def on_mount(self) -> None:
        box = self.query_one("#filter", Input)
        _show_filter(box, False)
        box.cursor_blink = self.app.animation_level != "none"
        width = self.app.size.width
        self.jobs_table.fit_columns(width)
        self.steps_table.fit_columns(width)
        self.jobs_table.focus()
        # Textual's own LoadingIndicator over the jobs table until the first listing
        # arrives: a slow controller (or a first-use shim build) showed an empty table.
        # Set once the focus has landed on the table: a loading widget keeps a focus it has
        # (its keys go to the screen meanwhile) but cannot receive one.
        self.call_after_refresh(self._start_loading)
        self.update_note()
        self.refresh_view()

    def tick_headers(self) -> None:
        """Every second: the headers, and the rows whose times turned over: steps at once
        (a checkpoint in progress counts up second by second, between refreshes too);
        jobs (elapsed times) at the next refresh, or here one interval late when none
        repainted them (an unchanged listing does not reach the screen at every refresh)."""
        super().tick_headers()
        self.jobs_table.refresh_expired(late=self.sckpt.interval)
        self.steps_table.refresh_expired()

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

    def planner(self) -> Planner:
        """A plan maker for the data a refresh will bring, with the view state of now (made
        on the UI thread each time the rows are shown, handed to the refresh pipeline, and
        called on the refresh worker's)."""
        view = self.view_state()
        accounted = self.accounted if self.show_finished else ()

        def plan(data: JobData, now: float) -> RowPlan:
            return self.plan_rows(
                view,
                data.jobs.values(),
                [*data.gone_jobs(), *accounted],
                data.recently_finished(now),
                now,
            )

        return plan

    def on_data_ready(self, message: DataReady) -> None:
        if self.jobs_table.loading:
            self._end_loading()
        planned = message.planned
        self.refresh_view(planned if isinstance(planned, RowPlan) else None)

    def _start_loading(self) -> None:
        if self.sckpt.freshness.loaded or self.sckpt.freshness.stale:
            return
        box = self.query_one("#filter", Input)
        if not box.display:  # Textual's auto focus may still sit on the hidden box
            self.set_focus(self.jobs_table)
        self.jobs_table.loading = True

    def _end_loading(self) -> None:
        """Uncover the jobs table.  A loading widget cannot hold the focus (Textual moves it
        away), so the table takes it back, unless the operator opened the filter meanwhile."""
        self.jobs_table.loading = False
        if not self.query_one("#filter", Input).display:
            self.jobs_table.focus()

    def on_freshness_changed(self, message: FreshnessChanged) -> None:
        """A first listing that failed ends the loading indicator: the header says NO DATA
        YET and why, and a spinner under it would say the opposite."""
        super().on_freshness_changed(message)
        if self.jobs_table.loading and self.sckpt.freshness.stale:
            self._end_loading()

    def on_check_done(self, message: CheckDone) -> None:
        """``x`` asked able and error again: show the answers on the step's row."""
        target = message.target
        if target.is_whole_job:
            return
        if isinstance(message.able, SlurmError):
            able = Text(f"{message.able.name}", style="yellow")
        else:
            able = Text("able", style="green")
        job = self.sckpt.job(target)
        view = None
        if job is not None:
            view = next((s for s in job.steps if rows.step_target(job, s) == target), None)
        shown = checkpoint_text(view.checkpoint, self.sckpt.now()) if view is not None else able
        if able.plain != "able" or shown.plain == "able":
            shown = able if able.plain != "able" else shown
        self.steps_table.set_cell(str(target), "checkpoint", shown)
        if isinstance(message.error, CheckpointError):
            self.steps_table.set_cell(str(target), "error", error_text(message.error))

    def select_target(self, target: StepId) -> None:
        """Put the cursors on ``target``'s job (and step), focusing the steps for a step."""
        job = self.sckpt.job(target)
        key = rows.row_key(job) if job is not None else str(target.job_id)
        if self.jobs_table.select_key(key):
            self.refresh_steps()
            if not target.is_whole_job and self.steps_table.select_key(str(target)):
                self.steps_table.focus()

    def plan_rows(
        self,
        view: ViewState,
        jobs: Iterable[JobView],
        gone: Iterable[JobView],
        recent: frozenset[JobKey],
        now: float,
    ) -> RowPlan:
        """What to change in the jobs table to show ``jobs`` and ``gone`` under ``view``
        (safe on any thread: reads what the table shows, touches no widget)."""
        reset = view != self._shown_view
        return rows.plan(view, jobs, gone, recent, self._shown, now, reset=reset)

    def refresh_view(self, planned: RowPlan | None = None) -> None:
        """Bring both tables up to the app's data, keeping cursor and scroll.

        ``planned`` is what a refresh worker worked out; it is used when it was made for
        the screen's view state and what the table shows, else it is made here.
        """
        view = self.view_state()
        if planned is None or planned.view != view or planned.base is not self._shown:
            app = self.sckpt
            accounted = self.accounted if self.show_finished else ()
            planned = self.plan_rows(
                view,
                app.jobs(),
                [*app.gone_jobs(), *accounted],
                app.recently_finished(),
                app.now(),
            )
        with self.app.batch_update():
            if planned.reset:
                self.jobs_table.reset(planned.upserts)
            else:
                self.jobs_table.apply(planned.upserts, planned.removals)
            self._shown = planned.shown
            self._shown_view = planned.view
            self.jobs_table.refresh_expired()
            self.refresh_steps()
        # Every change of the view (filter, sort, ``m``, ``f``, layout) ends here: the next
        # refresh plans with this view on its worker.
        self.sckpt.plan_with(self.planner())
        count = self._job_count()
        if count != self.count_text:
            self.count_text = count
            self.update_note()

    def _job_count(self) -> str:
        """``42 jobs`` in the table; ``12/42 jobs`` when a filter or ``m`` hides some of
        the jobs the controller lists (squeue's total)."""
        shown = self.jobs_table.row_count
        loading = ", loading…" if self.sckpt.demo_part else ""  # the demo's first part
        if not (self.filter_text or self.mine_only):
            return f"{shown} job{'s' if shown != 1 else ''}{loading}"
        return f"{shown}/{len(list(self.sckpt.jobs()))} jobs{loading}"

    def refresh_steps(self) -> None:
        """Show the steps of the job under the cursor."""
        key = self.jobs_table.selected_key
        job = self.sckpt.job(rows.key_target(key)) if key else None
        if job is None:
            self.steps_job = None
            self.steps_table.sync([])
            self._set_steps_title(Text("Steps", style="bold"))
            return
        selected = StepId(job.job.job_id, cluster=job.cluster)
        if selected != self.steps_job:
            self.steps_job = selected
            self.steps_table.sync([])
        shown = self.sckpt.checkpoint_shown
        self.steps_table.sync((str(s.step.step_id), rows.step_row(s, shown(s))) for s in job.steps)
        self.steps_table.refresh_expired()
        on = f" on {job.cluster}" if job.cluster and self.sckpt.many_clusters else ""
        heading = Text(f"Steps of {job.job.label}{on} ", style="bold")
        heading.append(printable(job.job.name))
        heading.append(f"  ({len(job.steps)})", style="dim")
        if job.job.state_reason and not job.steps:
            heading.append(f"  {printable(job.job.state_reason)}", style="dim")
        if job.job.expected_start and not job.job.held:  # squeue --start's estimate
            # (a held job starts when released, whatever time the scheduler keeps)
            start = job_start(job.job, self.sckpt.now())
            heading.append(f"  expected start {start} ({zoned_time(job.job.start_time)})")
        self._set_steps_title(heading)

    def refresh_outcomes(self) -> None:
        """Only the steps' rows say what was requested (not the jobs table)."""
        self.refresh_steps()

    def _set_steps_title(self, heading: Text) -> None:
        """Repaint the steps title only when it changed, without a layout pass (one line)."""
        if heading != self._steps_heading:
            self._steps_heading = heading
            self.query_one("#steps-title", Static).update(heading, layout=False)

    @on(RowTable.RowHighlighted, "#jobs")
    def _job_highlighted(self, event: RowTable.RowHighlighted) -> None:
        if event.key is None or rows.key_target(event.key) != self.steps_job:
            self.refresh_steps()

    @on(RowTable.RowSelected, "#jobs")
    def _job_selected(self) -> None:
        if self.steps_table.row_count:
            self.steps_table.focus()

    @on(RowTable.RowSelected, "#steps")
    def _step_selected(self, event: RowTable.RowSelected) -> None:
        target = self.selected_step()
        if target is not None:
            self.sckpt.open_step(target)

    @on(RowTable.HeaderSelected, "#jobs")
    def _header_selected(self, event: RowTable.HeaderSelected) -> None:
        column = event.column
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
        if view_of_job is None:
            return None
        for view in view_of_job.steps:
            if str(view.step.step_id) == key:
                return rows.step_target(view_of_job, view)
        return None

    def selected_target(self) -> StepId | None:
        """The focused table decides: a step in the steps table, else the whole job."""
        if self.focused is self.steps_table:
            step = self.selected_step()
            if step is not None:
                return step
        key = self.jobs_table.selected_key
        if not key:
            return None
        target = rows.key_target(key)
        view = self.sckpt.job(target)
        # An array task by its name (9_1, not its record's id 10): the form's title, the
        # confirmation and the toasts say it as squeue does.
        return job_step_id(view.job, cluster=target.cluster) if view is not None else target

    # ------------------------------------------------------------------ view keys

    def update_note(self) -> None:
        """Show the view state (sort, toggles, filter) in the header."""
        arrow = "↓" if self.sort_reverse else "↑"
        parts = [f"sort {self.sort_column}{arrow}"]
        if self.layout_index:
            parts.append(f"columns {self.layouts()[self.layout_index][0]}")
        if self.mine_only:
            parts.append("mine")
        if self.show_finished:
            parts.append("+finished")
        if self.marks:
            parts.append(f"{len(self.marks)} marked")
        # The filter near the end: on a short header line its end is cut, after the count.
        if self.filter_text:
            parts.append(f"filter: {self.filter_text}")
        if self.count_text:  # after the filter: on a short line the count goes first
            parts.append(self.count_text)
        header = self.query_one("#header", StatusHeader)
        header.note = "  ".join(parts)
        header.tick(self.sckpt.now())

    # ------------------------------------------------------------------ marks

    def action_mark(self) -> None:
        """Space: mark the row under the cursor (the job, or the step in the steps
        table) for an action on several rows, or unmark it."""
        target = self.selected_target()
        if target is None:
            return
        if target in self.marks:
            del self.marks[target]
        else:
            self.marks[target] = None
        self._show_marks()

    def marked_targets(self) -> list[StepId]:
        return list(self.marks)

    def clear_marks(self) -> None:
        self.marks.clear()
        self._show_marks()

    def _show_marks(self) -> None:
        self.jobs_table.set_marked(str(t) for t in self.marks if t.is_whole_job)
        self.steps_table.set_marked(str(t) for t in self.marks if not t.is_whole_job)
        self.update_note()

    def action_filter(self) -> None:
        """``/``: open the filter box."""
        box = self.query_one("#filter", Input)
        _show_filter(box, True)
        box.focus()

    def action_clear_filter(self) -> None:
        """Escape: clear the filter (in the filter box) or leave it; in a table, unmark
        the marked rows first."""
        box = self.query_one("#filter", Input)
        if self.marks and not box.has_focus:
            count = len(self.marks)
            self.clear_marks()
            self.notify(f"{count} marked rows unmarked", markup=False)
            return
        if box.has_focus and box.value:
            box.value = ""
            return
        if box.display and not box.value:
            _show_filter(box, False)
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
            _show_filter(event.input, False)
        self.jobs_table.focus()

    def layouts(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The jobs table's layouts: ``[columns] jobs`` of the config first, then sckpt's."""
        return layouts(self.sckpt.settings.columns.get("jobs"))

    def layout_columns(self) -> tuple[Column, ...]:
        _name, keys = self.layouts()[self.layout_index % len(self.layouts())]
        return job_columns(keys, many_clusters=self.sckpt.many_clusters)

    def action_layout(self) -> None:
        """``l``: the next column layout (``backend/columns.py``)."""
        self.layout_index = (self.layout_index + 1) % len(self.layouts())
        self.jobs_table.set_columns(self.layout_columns())
        shown = {c.key for c in self.jobs_table.all_columns}
        if self.sort_column not in shown:
            self.sort_column, self.sort_reverse = "id", False
        self.update_note()
        self.refresh_view()
        name = self.layouts()[self.layout_index][0]
        self.notify(f"columns: {name}", markup=False)

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
        """``f``: show finished jobs, or only the recently finished ones.

        Showing them also asks Slurm's accounting (in a worker, once per press) for the
        jobs that ended in the last day, which the controller forgets after MinJobAge.
        """
        self.show_finished = not self.show_finished
        self.update_note()
        self.refresh_view()
        self.notify(
            "showing finished jobs (asking accounting for the last day's)"
            if self.show_finished
            else "hiding finished jobs (recent ones stay a while)",
            markup=False,
        )
        if self.show_finished:
            self.sckpt.load_finished()

    def on_finished_loaded(self, message: FinishedLoaded) -> None:
        """Accounting answered ``f``: its finished jobs join the table while ``f`` is on."""
        if message.error:
            self.notify(
                printable(f"finished jobs from accounting: {message.error}"),
                severity="warning",
                markup=False,
            )
            return
        self.accounted = message.views
        if self.show_finished:
            self.refresh_view()

    def action_refresh(self) -> None:
        """``ctrl+r``: refresh now."""
        self.sckpt.refresh_now()


def _show_filter(box: Input, shown: bool) -> None:
    """Show or hide the filter box.  Hidden, it cannot take the focus: Textual moves the
    focus off a widget that cannot hold it (the jobs table while it is loading), and a
    hidden box that took it swallowed the keys (``q`` typed into the filter)."""
    box.display = shown
    box.can_focus = shown
