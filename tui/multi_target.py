"""One action on several marked rows: the question that lists them, and the summary after.

The console marks rows with space; an action key then acts on every marked target, after
one confirmation naming each (at most ``LISTED`` lines, then how many more), and reports
each target's outcome in one notification: what was requested, and what was refused with
Slurm's name, code and message.  Each target goes through the facade on its own, so the
read-only guard refuses and the audit log records each one, as for a single target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text
from sckpt.backend import operations, progress, rules
from sckpt.backend.model import StepId

from .console_text import literal, printable

LISTED = 8
"""Targets named one per line in the confirmation (the dialog must fit 80x24)."""
REPORTED = 10
"""Targets reported one per line in the notification after the action."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one target's request came to: accepted (with Slurm's detail) or why not."""

    target: StepId
    ok: bool
    text: str


def targets_for(operation: str, marked: Sequence[StepId]) -> list[StepId]:
    """The marked targets as ``operation`` takes them: a whole-job verb (hold, release,
    requeue; restart as the single-target form does) acts on each marked row's job, once
    per job, in marking order."""
    op = operations.operation(operation)
    seen: dict[StepId, None] = {}
    for target in marked:
        job_level = op.whole_job or (op.job_level and not rules.is_job_level(target))
        seen.setdefault(StepId(target.job_id) if job_level else target, None)
    return list(seen)


def question(operation: str, targets: Sequence[StepId], describe: Callable[[StepId], str]) -> Text:
    """``Hold 3 targets?`` then one line per target (its name), then what will happen."""
    op = operations.operation(operation)
    text = Text()
    text.append(f"{operation.capitalize()} {len(targets)} targets?\n", style="bold")
    for target in targets[:LISTED]:
        text.append("- ")
        text.append_text(literal(describe(target)))
        text.append("\n")
    if len(targets) > LISTED:
        text.append(f"- … and {len(targets) - LISTED} more\n", style="dim")
    what = op.confirm or op.summary
    if what:
        text.append(f"\nThis will {what}" if op.confirm else f"\n{what}")
        text.append(" for each." if op.confirm else "")
    return text


def summary(operation: str, outcomes: Sequence[Outcome]) -> tuple[str, bool]:
    """The notification after the action: a count, then one line per target; and whether
    any failed (the notification is then an error)."""
    failed = [o for o in outcomes if not o.ok]
    head = (
        f"{operation} on {len(outcomes)} targets: "
        f"{len(outcomes) - len(failed)} {progress.REQUESTED}, {len(failed)} refused or failed"
    )
    lines = [head]
    # Failures first: with many targets the notification shows REPORTED lines, and what
    # went wrong is what the operator must read.
    ordered = failed + [o for o in outcomes if o.ok]
    for outcome in ordered[:REPORTED]:
        mark = "ok  " if outcome.ok else "FAIL"
        lines.append(printable(f"{mark} {outcome.target}: {outcome.text}"))
    if len(ordered) > REPORTED:
        lines.append(f"… and {len(ordered) - REPORTED} more (each is in the audit log)")
    return "\n".join(lines), bool(failed)
