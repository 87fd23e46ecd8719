"""What the facade adds around an engine's action: its audit lines, the refusal of a step
where a row acts on a job (restart's ``job_level``), and ``complete``'s check that the
report matched a checkpoint.

``Facade.act`` (``facade.py``) resolves an action's target once (``targets.resolve``),
validates its arguments, refuses it in read-only mode, reserves its audit line, acts
(``perform``: the row's refusals, then the engine) and writes the line; the lines
themselves are written here, by ``ActionLog``: one per attempt, allowed or refused, with
Slurm's code, its ESLURM name and message, how long the attempt took and who asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from . import history as history_rules
from . import rules
from .audit import AuditLog, AuditReservation, monotonic
from .engines.base import Engine
from .errors import AuditLogError, NothingMatched, SckptError, identify
from .model import ActionResult, StepId
from .targets import ResolvedTarget


class ActionLog:
    """Writes the audit lines of one facade's actions; remembers the last failure to."""

    def __init__(self, audit: AuditLog, engine_name: str, acting_user: Callable[[], str]) -> None:
        self.audit = audit
        self.engine_name = engine_name
        self.acting_user = acting_user
        """Who acts, asked when a line is written (known without asking a controller)."""
        self.last_problem = ""
        """The latest audit-log failure that did not refuse an action ("" when none)."""

    def outcome(
        self,
        reservation: AuditReservation,
        operation: str,
        target: StepId,
        args: Mapping[str, Any],
        outcome: BaseException | None,
        started: float,
    ) -> str:
        """Write the line of an attempt (``outcome`` None: it succeeded); the problem
        writing it, "" when it was written."""
        record = self._record(operation, str(target), args, outcome, started)
        if target.cluster:  # -M: which cluster's controller was asked
            record["cluster"] = target.cluster
        if isinstance(outcome, SckptError) and outcome.hint:
            # sckpt's account of the failure, e.g. what an action had done before it failed
            # ("vacate half done: the checkpoint finished ..."): the auditor needs it too.
            record["hint"] = outcome.hint
        return self._write(reservation, record)

    def refusal(
        self,
        operation: str,
        target: str,
        args: Mapping[str, Any],
        refused: SckptError,
        started: float,
        *,
        cluster: str = "",
    ) -> None:
        """Audit a refusal made before acting; a log failure never hides the refusal."""
        try:
            reservation = self.audit.reserve()
        except AuditLogError as exc:
            self.last_problem = exc.message
            return
        record = self._record(operation, target, args, refused, started)
        if cluster:
            record["cluster"] = cluster
        self._write(reservation, record)

    def _record(
        self,
        operation: str,
        target: str,
        args: Mapping[str, Any],
        outcome: BaseException | None,
        started: float,
    ) -> dict[str, Any]:
        code, name, message = result_fields(outcome)
        return self.audit.record(
            engine=self.engine_name,
            operation=operation,
            target=target,
            arguments=args,
            code=code,
            name=name,
            message=message,
            duration=monotonic() - started,
            acting_user=self.acting_user(),
        )

    def _write(self, reservation: AuditReservation, record: dict[str, Any]) -> str:
        problem = self.audit.write(reservation, record)
        if problem:
            self.last_problem = problem
        return problem


def perform(
    engine: Engine, operation: str, target: ResolvedTarget, args: Mapping[str, Any]
) -> ActionResult:
    """The engine's ``operation`` on the resolved target, its arguments by name.

    A ``job_level`` target that is not the job or its batch step (restart of ``12.0``) is
    refused before any engine is asked, with the controller's answer
    (``rules.check_job_level``, ESLURM_NOT_SUPPORTED): the one place that rule is applied,
    after read-only mode's refusal (``Facade.act``) and audited as the engine's would be.

    For a target that ``matches_checkpoint`` (``complete`` on one step), a report of
    success (error code 0) whose begin time names no checkpoint in progress raises
    ``NothingMatched``: Slurm answers success and did nothing.  A report of an error is
    kept by Slurm whatever the begin time (the step's last error): it did something, and
    is not asked about.  The checkpoint in progress is asked with ``able`` just before,
    of an engine that ``runs_checkpoints`` only: one that does not (``LiveEngine``) is
    asked nothing but the report, so its own refusal is the answer; when ``able`` is
    refused (a disabled step), Slurm's answer stands.
    """
    step = target.step
    if target.job_level:
        rules.check_job_level(operation, step)
    act: Callable[..., ActionResult] = getattr(engine, operation)
    if not (target.matches_checkpoint and engine.runs_checkpoints) or args["error_code"]:
        return act(step, **args)
    try:
        began: int | None = engine.able(step).in_progress_since
    except SckptError:
        began = None
    result = act(step, **args)
    begin_time = args["begin_time"]
    if began is None or (began and began == begin_time):
        return result
    asked = (
        f"in progress began at {history_rules.date_text(begin_time)}"
        if begin_time
        else "was named (no --begin-time)"
    )
    if began:
        hint = (
            f"the checkpoint in progress began at {history_rules.date_text(began)}: "
            f"--begin-time {began} names it"
        )
    else:
        hint = f"no checkpoint of {step} is in progress: 'sckpt able {step}' says when one is"
    raise NothingMatched(
        f"nothing matched: no checkpoint of {step} {asked}, so none was completed", hint
    )


def result_fields(outcome: BaseException | None) -> tuple[int | None, str, str]:
    """(code, name, message) for the audit line."""
    if outcome is None:
        return 0, "SLURM_SUCCESS", "accepted"
    code, name = identify(outcome)
    if isinstance(outcome, KeyboardInterrupt):
        return code, name, "interrupted (Ctrl-C) while Slurm was asked; it may have acted"
    return code, name, outcome.message if isinstance(outcome, SckptError) else str(outcome)


def printable(args: Mapping[str, Any]) -> dict[str, Any]:
    """Raw (unvalidated) arguments made safe for JSON and short."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        if value is None or isinstance(value, bool | int | float):
            out[key] = value if not isinstance(value, float) or math.isfinite(value) else str(value)
        else:
            text = repr(value)
            out[key] = text if len(text) <= 200 else text[:197] + "..."
    return out
