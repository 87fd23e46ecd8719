"""The step detail: its job and the job's comment, checkpoint state, image dir, history,
processes and interconnect.

Processes and interconnect come from extra controller/slurmd calls, so they are loaded on
demand (when the detail opens, or on ``p``) by a worker and shown here when they arrive.
"""

from __future__ import annotations

from rich.text import Text
from sckpt.backend import history as records
from sckpt.backend.model import Interconnect, JobHistory, JobView, StepProcesses, StepView
from textual.widgets import Static

from ..console_text import (
    bounded,
    checkpoint_text,
    clock_time,
    date_time,
    error_text,
    literal,
)


class StepDetail(Static):
    """Everything sckpt knows about one step, as text."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self.job: JobView | None = None
        self.view: StepView | None = None
        self.processes: StepProcesses | str | None = None
        """Loaded processes, an error text, or None while not loaded."""
        self.interconnect: Interconnect | str | None = None
        self.job_history: JobHistory | str | None = None
        """The job's records from accounting, why they are not available, or None while
        being asked."""

    def show_step(self, job: JobView | None, view: StepView | None, now: float) -> None:
        """Show ``view`` (None: the step is gone from the controller's answer)."""
        self.job = job
        self.view = view
        self.update(self.render_detail(now))

    def render_detail(self, now: float) -> Text:
        """The detail text at time ``now``."""
        text = Text()
        view = self.view
        if view is None:
            text.append("The step is not in the controller's latest answer.", style="yellow")
            return text
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
            job = self.job.job
            line("Job", bounded(f"{job.job_id} {job.name} ({job.state.short})"))
            # The job's sbatch --comment: where sites note the project, a ticket, or "ask me
            # before cancelling" -- what an operator wants to read before acting.
            comment = self.job.job.comment
            line("Comment", bounded(comment) if comment else Text("(none)", style="dim"))
        line("Checkpoint", checkpoint_text(ckpt, now))
        err = error_text(ckpt.last_error)
        line("Last error", err if err.plain else Text("none", style="dim"))
        line(
            "Image dir",
            literal(ckpt.image_dir) if ckpt.image_dir else Text("(default)", style="dim"),
        )
        line(
            "Last checkpoint",
            date_time(ckpt.last_checkpoint_time)
            if ckpt.last_checkpoint_time
            else Text("never", style="dim"),
        )
        if ckpt.history:
            text.append("History\n", style="bold")
            for event in ckpt.history[-10:]:
                text.append(f"  {date_time(event.time)}  ")
                text.append_text(literal(f"{event.operation:<8} by {event.by}  code {event.code}"))
                if event.message:
                    text.append("  ")
                    text.append_text(bounded(event.message))
                if event.image_dir:
                    text.append("  ")
                    text.append_text(literal(event.image_dir, style="dim"))
                text.append("\n")
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
        text.append_text(self.render_history())
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


def _end_text(start: int, end: int) -> str:
    """A record's end: the time alone when it is the start's day, else date and time;
    ``running`` while it has none."""
    if not end:
        return "running"
    if start and date_time(start)[:10] == date_time(end)[:10]:
        return clock_time(end)
    return date_time(end)
