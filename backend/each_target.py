"""One operation on several targets, in turn: one facade call each, refusals as answers.

Both front ends act on several targets at once: the command line on the ids it was given
(``sckpt create 12.0 13.0``, an array's tasks), the console on its marked rows.  Each
target goes through the facade on its own, so the read-only guard refuses and the audit
log records each one as for a single target, and Slurm's refusal of one is that target's
answer, not an exception that loses the others.  Once Slurm does not answer for one
target, the remaining ones are answered ``NotAttempted`` instead of each waiting out the
same timeout.  The rule is written here once; each front end only says what the answers
came to (``cli/actions.py``, ``tui/actions.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ControllerUnreachable, SckptError
from .model import AbleResult, ActionResult, CheckpointError, StepId
from .operations import Operation

if TYPE_CHECKING:
    from .facade import Facade


class NotAttempted(SckptError):
    """A target skipped because Slurm did not answer for an earlier one (exit code 3)."""

    exit_code = ControllerUnreachable.exit_code

    def __init__(self, cause: SckptError) -> None:
        super().__init__(f"not attempted: Slurm did not answer for an earlier target ({cause})")


@dataclass(frozen=True, slots=True)
class Answer:
    """What the facade answered for one target: its result, or why not (never both)."""

    target: StepId
    result: AbleResult | CheckpointError | ActionResult | None = None
    error: SckptError | None = None


class OneByOne:
    """``op`` with ``values`` on targets in turn, each asked of ``facade`` on its own.

    ``answer`` makes the call (``Facade.act`` for an operation that acts, ``Facade.ask``
    for one that reads) and turns a refusal into the answer.  Slurm not answering, for a
    call or for what a front end asked after it (``note``: a ``--wait``'s look), makes
    every later target ``NotAttempted`` without a call.
    """

    def __init__(self, facade: Facade, op: Operation, values: Mapping[str, Any]) -> None:
        self.facade = facade
        self.op = op
        self.values = dict(values)
        self.unreachable: SckptError | None = None
        """The first error that said Slurm did not answer (exit code 3), if any."""

    def answer(self, target: StepId) -> Answer:
        """One facade call for ``target`` (none once Slurm stopped answering)."""
        if self.unreachable is not None:
            return Answer(target, error=NotAttempted(self.unreachable))
        try:
            if self.op.mutating:
                result: AbleResult | CheckpointError | ActionResult = self.facade.act(
                    self.op.name, target, **self.values
                )
            else:
                result = self.facade.ask(self.op.name, target)
        except SckptError as refused:
            self.note(refused)
            return Answer(target, error=refused)
        return Answer(target, result=result)

    def note(self, error: SckptError | None) -> None:
        """An error met for a target after its answer: if Slurm did not answer it, the
        later targets are not attempted either."""
        is_unreachable = error is not None and error.exit_code == NotAttempted.exit_code
        if is_unreachable and self.unreachable is None:
            self.unreachable = error

    def each(self, targets: Iterable[StepId]) -> list[Answer]:
        """``answer`` for each of ``targets``, in order."""
        return [self.answer(target) for target in targets]
