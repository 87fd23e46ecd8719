"""Running one checkpoint operation on each target in turn, and reporting each.

Slurm's refusals are outcomes, not exceptions: every target is reported (one line on stdout
or stderr, or one JSON document for all), and the worst exit code wins.  Once Slurm does not
answer for one target, the remaining ones are reported ``not attempted`` instead of each
waiting out the same timeout.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sckpt.backend.errors import Disabled, SckptError
from sckpt.backend.model import AbleResult, ActionResult, CheckpointError, StepId
from sckpt.backend.operations import Operation

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


def _call(facade: Facade, op: Operation, target: StepId, values: Mapping[str, Any]) -> Outcome:
    """One facade call for one target; Slurm's refusals become the outcome, not an exception.

    The facade has one method per operation, named for it and taking exactly the table's
    ``arguments`` (``backend/operations.py``), so the call is found by name.
    """
    outcome = Outcome(target, op.name)
    try:
        outcome.value = getattr(facade, op.name)(target, **values)
    except Disabled as refused:
        if op.disabled_is_answer:
            outcome.disabled = refused
        else:
            outcome.error = refused
    except SckptError as refused:
        outcome.error = refused
    return outcome


def _outcome_text(outcome: Outcome, *, prefix: bool, historical: bool) -> str | None:
    """The stdout line for a successful outcome (None: print nothing, as scontrol did)."""
    lead = f"{outcome.target}: " if prefix else ""
    value = outcome.value
    if isinstance(value, AbleResult) or outcome.disabled is not None:
        return lead + output.able_line(value if isinstance(value, AbleResult) else None)
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
    elif isinstance(value, AbleResult) or outcome.disabled is not None:
        able = value if isinstance(value, AbleResult) else None
        since = able.in_progress_since if able is not None else 0
        data.update(
            able=able is not None,
            in_progress=bool(since),
            in_progress_since=since,
            began_at=output.format_time(since) if since else None,
            text=output.able_line(able),
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
    op: Operation,
    targets: Sequence[StepId],
    values: Mapping[str, Any],
    *,
    as_json: bool,
    historical: bool,
    debug: bool,
) -> int:
    """Act on each target in turn, report each, and return the worst exit code.

    ``values`` are the operation's keyword arguments (those of ``op.arguments`` given; the
    facade's defaults stand for the others).
    """
    operation = op.name
    outcomes = []
    unreachable: SckptError | None = None
    for target in targets:
        if unreachable is not None:
            # Slurm did not answer the previous target: do not make the user wait out the
            # same timeout once per remaining target.
            outcome = Outcome(target, operation, error=NotAttempted(unreachable))
        else:
            outcome = _call(facade, op, target, values)
            if outcome.exit_code == EXIT_UNREACHABLE:
                unreachable = outcome.error
        outcomes.append(outcome)
        _report(
            outcome, several=len(targets) > 1, as_json=as_json, historical=historical, debug=debug
        )
    return _finish(outcomes, operation, facade.engine_name, facade.read_only, as_json=as_json)


def report_unopened(
    op: Operation,
    targets: Sequence[StepId],
    failure: SckptError,
    *,
    read_only: bool,
    as_json: bool,
    debug: bool,
) -> int:
    """Report ``failure`` (no facade could be opened: no Slurm, no shim) as each target's.

    A script reading ``--json`` gets its document, with the error object, as when Slurm
    stops answering midway: the first target carries the error, the others are ``not
    attempted``.  ``engine`` is null (none was opened).
    """
    outcomes = [
        Outcome(target, op.name, error=failure if not index else NotAttempted(failure))
        for index, target in enumerate(targets)
    ]
    for outcome in outcomes:
        _report(outcome, several=len(targets) > 1, as_json=as_json, historical=False, debug=debug)
    return _finish(outcomes, op.name, None, read_only, as_json=as_json)


def _report(
    outcome: Outcome, *, several: bool, as_json: bool, historical: bool, debug: bool
) -> None:
    """One target's line: the failure on stderr, else (without ``--json``) the answer."""
    if outcome.error is not None:
        if debug:
            traceback.print_exception(outcome.error)
        named = str(outcome.error).startswith(f"{outcome.operation} {outcome.target}")
        prefix = "" if named else f"{outcome.operation} {outcome.target}: "
        output.to_stderr(output.failure_line(prefix, outcome.error))
    elif not as_json:
        line = _outcome_text(outcome, prefix=several, historical=historical)
        if line is not None:
            output.to_stdout(line)


def _finish(
    outcomes: list[Outcome], operation: str, engine: str | None, read_only: bool, *, as_json: bool
) -> int:
    """The worst exit code; with ``--json``, the one document for every target first."""
    code = max((o.exit_code for o in outcomes), default=EXIT_OK)
    if as_json:
        output.to_stdout(
            output.dumps(
                {
                    "operation": operation,
                    "engine": engine,
                    "read_only": read_only,
                    "exit_code": code,
                    "results": [_outcome_json(o) for o in outcomes],
                }
            )
        )
    return code
