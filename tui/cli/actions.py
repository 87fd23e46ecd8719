"""Running one checkpoint operation on each target in turn, and reporting each.

Slurm's refusals are outcomes, not exceptions: every target is reported (one line on stdout
or stderr, or one JSON document for all), and the worst exit code wins.  Once Slurm does not
answer for one target, the remaining ones are reported ``not attempted`` instead of each
waiting out the same timeout.
"""

from __future__ import annotations

import argparse
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sckpt.backend.errors import Disabled, SckptError, UsageError
from sckpt.backend.model import AbleResult, ActionResult, CheckpointError, StepId

from . import output
from .exit_codes import EXIT_OK, EXIT_UNREACHABLE

if TYPE_CHECKING:
    from sckpt.backend.facade import Facade


class NotAttempted(SckptError):
    """A target skipped because Slurm did not answer for an earlier one (exit code 3)."""

    exit_code = EXIT_UNREACHABLE

    def __init__(self, cause: SckptError) -> None:
        super().__init__(f"not attempted: Slurm did not answer for an earlier target ({cause})")


@dataclass
class Outcome:
    """What one target answered: a value, "disabled" (able's No), or an error."""

    target: StepId
    operation: str
    value: AbleResult | CheckpointError | ActionResult | None = None
    disabled: Disabled | None = None
    error: SckptError | None = None

    @property
    def exit_code(self) -> int:
        return self.error.exit_code if self.error is not None else EXIT_OK


def _call(facade: Facade, operation: str, target: StepId, args: argparse.Namespace) -> Outcome:
    """One facade call for one target; Slurm's refusals become the outcome, not an exception."""
    outcome = Outcome(target, operation)
    try:
        if operation == "able":
            outcome.value = facade.able(target)
        elif operation == "error":
            outcome.value = facade.error(target)
        elif operation == "create":
            outcome.value = facade.create(target, max_wait=args.max_wait, image_dir=args.image_dir)
        elif operation == "vacate":
            outcome.value = facade.vacate(
                target,
                max_wait=args.max_wait,
                image_dir=args.image_dir,
                force=getattr(args, "force", False),  # the historical syntax has no --force
            )
        elif operation == "restart":
            outcome.value = facade.restart(target, stick=args.stick, image_dir=args.image_dir)
        elif operation == "enable":
            outcome.value = facade.enable(target)
        elif operation == "disable":
            outcome.value = facade.disable(target)
        elif operation == "complete":
            outcome.value = facade.complete(
                target,
                begin_time=args.begin_time or 0,
                error_code=args.error_code,
                error_msg=args.error_msg,
            )
        elif operation == "tasks":
            outcome.value = facade.tasks(
                target,
                begin_time=args.begin_time or 0,
                image_dir=args.image_dir,
                max_wait=args.max_wait,
                nodelist=args.nodelist,
            )
        else:  # pragma: no cover - the parser only offers ACTIONS
            raise UsageError(f"unknown operation {operation!r}")
    except Disabled as refused:
        if operation != "able":
            outcome.error = refused
        else:
            outcome.disabled = refused
    except SckptError as refused:
        outcome.error = refused
    return outcome


def _outcome_text(outcome: Outcome, *, prefix: bool, historical: bool) -> str | None:
    """The stdout line for a successful outcome (None: print nothing, as scontrol did)."""
    lead = f"{outcome.target}: " if prefix else ""
    value = outcome.value
    if outcome.operation == "able":
        assert value is None or isinstance(value, AbleResult)
        return lead + output.able_line(value)
    if isinstance(value, CheckpointError):
        return lead + output.error_line(value)
    if isinstance(value, ActionResult):
        return None if historical else output.action_line(value)
    return None


def _outcome_json(outcome: Outcome) -> dict[str, Any]:
    data: dict[str, Any] = {
        "target": str(outcome.target),
        "operation": outcome.operation,
        "ok": outcome.error is None,
    }
    value = outcome.value
    if outcome.error is not None:
        data["error"] = output.error_json(outcome.error)
    elif outcome.operation == "able":
        assert value is None or isinstance(value, AbleResult)
        since = value.in_progress_since if value is not None else 0
        data.update(
            able=value is not None,
            in_progress=bool(since),
            in_progress_since=since,
            began_at=output.format_time(since) if since else None,
            text=output.able_line(value),
        )
        if outcome.disabled is not None:
            data["disabled"] = output.error_json(outcome.disabled)
    elif isinstance(value, CheckpointError):
        data.update(
            error_code=value.code,
            error_name=value.name,
            error_message=value.message,
            text=output.error_line(value),
        )
    elif isinstance(value, ActionResult):
        data.update(
            detail=value.detail,
            per_step=[{"step": str(step), "code": code} for step, code in value.per_step],
            text=output.action_line(value),
        )
    return data


def run_actions(
    facade: Facade,
    operation: str,
    targets: Sequence[StepId],
    args: argparse.Namespace,
    *,
    as_json: bool,
    historical: bool,
) -> int:
    """Act on each target in turn, report each, and return the worst exit code."""
    outcomes = []
    unreachable: SckptError | None = None
    for target in targets:
        if unreachable is not None:
            # Slurm did not answer the previous target: do not make the user wait out the
            # same timeout once per remaining target.
            outcome = Outcome(target, operation, error=NotAttempted(unreachable))
        else:
            outcome = _call(facade, operation, target, args)
            if outcome.exit_code == EXIT_UNREACHABLE:
                unreachable = outcome.error
        outcomes.append(outcome)
        if outcome.error is not None:
            if args.debug:
                traceback.print_exception(outcome.error)
            named = str(outcome.error).startswith(f"{operation} {target}")
            prefix = "" if named else f"{operation} {target}: "
            output.to_stderr(output.failure_line(prefix, outcome.error))
        elif not as_json:
            line = _outcome_text(outcome, prefix=len(targets) > 1, historical=historical)
            if line is not None:
                output.to_stdout(line)
    code = max((o.exit_code for o in outcomes), default=EXIT_OK)
    if as_json:
        output.to_stdout(
            output.dumps(
                {
                    "operation": operation,
                    "engine": facade.engine_name,
                    "read_only": facade.read_only,
                    "exit_code": code,
                    "results": [_outcome_json(o) for o in outcomes],
                }
            )
        )
    return code
