"""The step detail: its job and the job's comment, checkpoint state, image dir, history,
processes and interconnect.

Processes and interconnect come from extra controller/slurmd calls, so they are loaded on
demand (when the detail opens, or on ``p``) by a worker and shown here when they arrive.

Times are relative and absolute, with the zone (``12 min ago (2026-11-24 17:03:12 UTC)``):
an operator over SSH may not know the cluster's zone, and "17:03" alone does not say how
long ago that was.  The relative parts move with the clock (``tick``).
"""

from __future__ import annotations

from collections.abc import Callable

import humanize
from rich.text import Text
from sckpt.backend import history as records
from sckpt.backend import progress
from sckpt.backend.arguments import describe_policy
from sckpt.backend.model import (
    RUN_BY,
    TIME_UNLIMITED,
    AutoCheckpoints,
    CheckpointKind,
    CheckpointState,
    Interconnect,
    Job,
    JobHistory,
    JobView,
    StepId,
    StepProcesses,
    StepView,
)
from textual.widgets import Static

from ..console_text import (
    bounded,
    checkpoint_text,
    clock_time,
    compact_duration,
    date_time,
    error_text,
    job_left,
    literal,
    moment,
    outcome_text,
)
from ..outcomes import Shown

START_NOTES_SHOWN = 4
"""Tasks whose start ("resumed from generation 3 ...") the detail lists; a count of the rest."""


COORDINATOR_WORDS = {
    "step": ", one coordinator per step",
    "task": ", one coordinator per task",
}
"""What the detail adds to the checkpointer for ``sckpt run --transparent --coordinator``."""


Line = Callable[[str, Text | str], None]
"""Appends one labelled line to the detail (``render_detail``'s ``line``)."""


class StepDetail(Static):
    """Everything sckpt knows about one step, as text."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self.job: JobView | None = None
        self.view: StepView | None = None
        self.target: StepId | None = None
        self.missing = False
        self.seen = False
        self.shown: Shown | None = None
        """What this console requested of the step's checkpoint, and what became of it."""
        self.processes: StepProcesses | str | None = None
        """Loaded processes, an error text, or None while not loaded."""
        self.interconnect: Interconnect | str | None = None
        self._text: Text | None = None
        self.reports_last_checkpoint = False
        """Whether the engine records when a step last checkpointed (the cooperative
        store does; Slurm 19.05's API reports only one in progress): else no time is not
        "never"."""
        self.job_history: JobHistory | str | None = None
        """The job's records from accounting, why they are not available, or None while
        being asked."""

    def show_step(
        self,
        job: JobView | None,
        view: StepView | None,
        now: float,
        *,
        target: StepId | None = None,
        missing: bool = False,
        seen: bool = False,
        shown: Shown | None = None,
    ) -> None:
        """Show ``view`` of ``target``; None: not in the data (``missing``: the data is
        loaded, so the step does not exist -- or has ended, when it was ``seen``)."""
        self.job = job
        self.view = view
        self.target = target
        self.missing = missing
        self.seen = seen
        self.shown = shown
        self.tick(now)

    def tick(self, now: float) -> None:
        """Repaint when the text changed (its relative times move with the clock)."""
        text = self.render_detail(now)
        if text != self._text:
            self._text = text
            self.update(text)

    def render_detail(self, now: float) -> Text:
        """The detail text at time ``now``: the step, its job, its checkpoint, then what is
        loaded on demand (processes, interconnect, the job's accounting records)."""
        text = Text()
        view = self.view
        if view is None:
            return self._absent()
        step, ckpt = view.step, view.checkpoint

        def line(label: str, value: Text | str) -> None:
            text.append(f"{label:<18}", style="bold")
            text.append_text(value if isinstance(value, Text) else literal(value))
            text.append("\n")

        line("Step", Text(str(step.step_id), style="bold"))
        line("Name", bounded(step.name))
        line("State", literal(step.state))
        line("User", literal(step.user))
        line("Nodes", literal(step.nodes))
        line("Tasks / CPUs", f"{step.num_tasks} / {step.num_cpus}")
        if self.job is not None:
            _job_lines(self.job.job, now, line)
        if step.start_time:
            line("Started", moment(step.start_time, now))
        self._checkpoint_lines(ckpt, step.user, now, line)
        if ckpt.history:
            text.append_text(_history_text(ckpt, now))
        text.append_text(self._processes_text())
        text.append_text(self._interconnect_text())
        text.append_text(self.render_history())
        return text

    def _checkpoint_lines(self, ckpt: CheckpointState, user: str, now: float, line: Line) -> None:
        """The step's checkpoint: its state (and why it is unknown), what this console
        requested, the last error, image and checkpoint, and the automatic policy."""
        line("Checkpoint", _state_text(ckpt, now))
        unknown = ckpt.kind is CheckpointKind.UNKNOWN
        if unknown:
            line("Why unknown", _unknown_reason(ckpt, user))
        if self.shown is not None:
            # What this console requested, and what became of it (until the state changes).
            requested = Text(f"{self.shown.operation}: ")
            requested.append_text(outcome_text(self.shown.word))
            when = "requested" if self.shown.word == progress.REQUESTED else "seen"
            requested.append(f", {when} {moment(self.shown.at, now)}")
            line("Requested here", requested)
        err = error_text(ckpt.last_error)
        not_told = Text(CheckpointKind.UNKNOWN.value, style="dim")
        line("Last error", err if err.plain else not_told if unknown else Text("none", style="dim"))
        line(
            "Image dir",
            literal(ckpt.image_dir) if ckpt.image_dir else Text("(default)", style="dim"),
        )
        line("Last checkpoint", self._last_checkpoint(ckpt, now, unknown))
        if ckpt.checkpointer:
            line(
                "Checkpointer",
                literal(ckpt.checkpointer + COORDINATOR_WORDS.get(ckpt.coordinator, "")),
            )
        if ckpt.image_bytes or ckpt.checkpoint_seconds:
            size = humanize.naturalsize(ckpt.image_bytes) if ckpt.image_bytes else "size unknown"
            took = f", took {ckpt.checkpoint_seconds:.1f} s" if ckpt.checkpoint_seconds else ""
            if took and ckpt.slowest_task >= 0:
                took += f" (slowest: task {ckpt.slowest_task})"
            line("Last image", f"{size}{took}")
        if ckpt.outside:
            # DMTCP restores none of these at restart (peers.py): say so before it matters.
            line("Not restored", _listed(ckpt.outside, lambda _w: "yellow", "more"))
        self._auto_lines(ckpt.auto, now, line)
        if ckpt.start_notes:
            # How each task of this run started: resumed from which image, or from zero
            # and why (a restart whose image was missing, checkpointing off).
            line("Tasks started", _listed(ckpt.start_notes, _fresh_style, "more tasks"))

    def _processes_text(self) -> Text:
        """``Processes``: the step's pids per node as slurmd reports them, once loaded."""
        text = Text()
        text.append("Processes         ", style="bold")
        procs = self.processes
        if procs is None:
            text.append("loading…\n", style="dim")
        elif isinstance(procs, str):
            text.append_text(literal(procs, style="red"))
            text.append("\n")
        else:
            if procs.proctrack_type:
                text.append_text(literal(procs.proctrack_type, style="dim"))
            text.append("\n")
            if not procs.nodes:
                text.append("  (no processes)\n", style="dim")
            for node in procs.nodes:
                text.append("  ")
                text.append_text(literal(node.node, style="bold"))
                text.append(": " + (" ".join(str(p) for p in node.pids) or "-") + "\n")
        return text

    def _interconnect_text(self) -> Text:
        """``Interconnect``: the switch plugin and the step's network, once loaded."""
        text = Text()
        text.append("Interconnect      ", style="bold")
        net = self.interconnect
        if net is None:
            text.append("loading…", style="dim")
        elif isinstance(net, str):
            text.append_text(literal(net, style="red"))
        else:
            text.append_text(literal(net.switch_type or "none"))
            text.append("  network ")
            text.append_text(literal(net.network) if net.network else Text("(none)", style="dim"))
        text.append("\n")
        return text

    def _auto_lines(self, auto: AutoCheckpoints | None, now: float, line: Line) -> None:
        """The step's automatic checkpoints (``sckpt run --every/--before-end``, ``sckpt
        auto``): the policy in the words ``sckpt auto`` answers with, when the next one is
        due (moving with the clock), the job's restarts (Slurm's own count) and why its
        requeue chain ended.  Nothing for a step without a policy."""
        restarts = self.job.job.restart_count if self.job is not None else 0
        if auto is None:
            if restarts:
                line("Restarts", str(restarts))
            return
        words = describe_policy(auto) or "off"
        if auto.set_by and auto.set_by != RUN_BY:  # an operator's sckpt auto changed it
            words += f" (set by {auto.set_by})"
        line("Automatic", literal(words, style="" if auto.active else "dim"))
        if auto.next_due:
            due = auto.next_due - now
            when = moment(auto.next_due, now)
            line("Next checkpoint", when if due >= 0 else f"due now, {when}")
        if auto.before_end and auto.end_time:
            line("Job ends", moment(auto.end_time, now))
        line("Restarts", str(restarts))
        if auto.chain_end:
            line("Chain ended", bounded(auto.chain_end, style="yellow"))

    def _last_checkpoint(self, ckpt: CheckpointState, now: float, unknown: bool) -> Text:
        """When the step last checkpointed, or what is known of it: ``never`` only where
        the engine records it; else the last one this console saw end, or ``not
        reported``."""
        if ckpt.last_checkpoint_time:
            return Text(moment(ckpt.last_checkpoint_time, now))
        if unknown:
            return Text(CheckpointKind.UNKNOWN.value, style="dim")
        shown = self.shown
        if shown is not None and shown.word == progress.COMPLETED:
            return Text(f"{shown.operation} completed, seen {moment(shown.at, now)}")
        if self.reports_last_checkpoint or ckpt.checkpointer:
            return Text("never", style="dim")
        return Text("not reported (Slurm's API reports only one in progress)", style="dim")

    def _absent(self) -> Text:
        """The step is not in the data: loading, not found, or ended -- named, and why
        no key acts on it."""
        text = Text()
        name = f"step {self.target}" if self.target is not None else "the step"
        if not self.missing:
            text.append(f"Loading {name}…", style="dim")
            return text
        title = f"{name.capitalize()} {'has ended' if self.seen else 'not found'}"
        text.append(title, style="bold yellow")
        text.append("\n\n")
        job = self.job
        if self.seen:
            text.append("It is no longer in the controller's answer.")
        elif job is None:
            job_id = self.target.job_text if self.target is not None else "?"
            text.append(f"The controller lists no job {job_id}: the number may be wrong, ")
            text.append("or the job ended and was purged.")
        else:
            text.append_text(literal(f"Job {job.job.label} ({job.job.name}, "))
            text.append(f"{job.job.state.short}) ")
            steps = [str(s.step.step_id) for s in job.steps]
            if steps:
                text.append("has the steps ")
                text.append_text(literal(", ".join(steps)))
                text.append(".")
            else:
                text.append("has no steps.")
        text.append("\n\nNo action applies here.  Esc goes back to the console.")
        return text

    def render_history(self) -> Text:
        """``Job history``: one line per accounting record (run, state, exit code, start,
        end, nodes), oldest first; its absence in one dim line."""
        text = Text()
        text.append("Job history       ", style="bold")
        found = self.job_history
        if found is None:
            text.append("loading…", style="dim")
            return text
        if isinstance(found, str):
            text.append_text(literal(found, style="dim"))
            return text
        count = len(found.records)
        text.append(f"{count} record{'s' if count != 1 else ''} in accounting", style="dim")
        if found.truncated:
            text.append(f" (the newest {found.limit})", style="dim")
        for index, r in enumerate(found.records):
            label = records.run_label(found.skipped + index, r)
            text.append(f"\n  {label:<10} ")
            text.append_text(literal(f"{records.state_text(r):<15} {records.exit_text(r):<5} "))
            text.append(date_time(r.start_time) if r.start_time else "-")
            text.append(" → ")
            text.append(_end_text(r.start_time, r.end_time))
            text.append("  ")
            text.append_text(literal(r.nodes, style="dim"))
        return text


def _job_lines(job: Job, now: float, line: Line) -> None:
    """The step's job as ``scontrol show job`` tells it before acting: its comment, what it
    holds, time left, scheduling and where it runs."""
    line("Job", bounded(f"{job.label} {job.name} ({job.state.short})"))
    # The job's sbatch --comment: where sites note the project, a ticket, or "ask me
    # before cancelling" -- what an operator wants to read before acting.
    comment = job.comment
    line("Comment", bounded(comment) if comment else Text("(none)", style="dim"))
    # squeue -O tres-alloc's: what the job holds (asked for, before it started)
    line("Resources", bounded(job.tres) if job.tres else Text("(unknown)", style="dim"))
    # What scontrol show job tells before acting: time left, scheduling, where.
    line("Job time", _job_time(job, now))
    sched = f"priority {job.priority}, QOS {job.qos or '(none)'}"
    if job.state_reason:
        sched += f", reason {job.state_reason}"
    if job.dependency:
        sched += f", waits on {job.dependency}"
    line("Scheduling", bounded(sched))
    line("Work dir", bounded(job.work_dir) if job.work_dir else Text("-", style="dim"))


def _history_text(ckpt: CheckpointState, now: float) -> Text:
    """``History``: the step's last ten checkpoint events, newest last."""
    text = Text()
    text.append("History\n", style="bold")
    for event in ckpt.history[-10:]:
        text.append(f"  {moment(event.time, now)}  ")
        cause = f" ({event.cause})" if event.cause else ""
        text.append_text(literal(f"{event.operation:<8}{cause} by {event.by}  code {event.code}"))
        if event.message:
            text.append("  ")
            text.append_text(bounded(event.message))
        if event.image_dir:
            text.append("  ")
            text.append_text(literal(event.image_dir, style="dim"))
        text.append("\n")
    return text


def _fresh_style(note: str) -> str:
    """A task that did not resume from its image stands out."""
    return "" if "resumed from" in note else "yellow"


def _listed(items: tuple[str, ...], style: Callable[[str], str], more: str) -> Text:
    """The first ``START_NOTES_SHOWN`` items, one per line under the value column, then
    ``… N <more>`` for the rest."""
    out = Text()
    for index, item in enumerate(items[:START_NOTES_SHOWN]):
        if index:
            out.append("\n" + " " * 18)
        out.append_text(bounded(item, style=style(item)))
    if len(items) > START_NOTES_SHOWN:
        out.append(f"\n{'':18}… {len(items) - START_NOTES_SHOWN} {more}", style="dim")
    return out


def _job_time(job: Job, now: float) -> Text:
    """``ran 3h55m of 28h00m, 24h04m left`` (squeue's TIME, %l and %L), the left part
    coloured as the console's Left column."""
    text = Text(f"ran {compact_duration(job.time_used(now))}")
    if job.time_limit is None:
        return text
    if job.time_limit == TIME_UNLIMITED:
        text.append(", no time limit")
        return text
    text.append(f" of {compact_duration(job.time_limit * 60)}, ")
    if job.state.is_finished:
        text.append("ended")
        return text
    left = job_left(job, now)
    text.append_text(left)
    text.append(" left")
    return text


def _unknown_reason(state: CheckpointState, owner: str) -> Text:
    """Why the checkpoint state is ``unknown``: the engine's reason, else the usual one."""
    if state.reason:
        return literal(state.reason)
    return literal(f"not asked: the controller answers only {owner} (the owner) or root")


def _state_text(state: CheckpointState, now: float) -> Text:
    """The checkpoint line: the column's words, and for one in progress since when."""
    if state.kind is CheckpointKind.IN_PROGRESS and state.in_progress_since:
        return Text(
            f"{progress.IN_PROGRESS}, began {moment(state.in_progress_since, now)}",
            style="bold cyan",
        )
    if state.kind is CheckpointKind.STARTING and state.reason:
        return Text(state.reason, style="cyan")  # "starting: ... not registered ... yet"
    return checkpoint_text(state, now)


def _end_text(start: int, end: int) -> str:
    """A record's end: the time alone when it is the start's day, else date and time;
    ``running`` while it has none."""
    if not end:
        return "running"
    if start and date_time(start)[:10] == date_time(end)[:10]:
        return clock_time(end)
    return date_time(end)
