"""What the console screen and the step screen share: the action keys and their flow.

An action key works on ``selected_target()`` (a step, or the whole job where the reference
allows it).  create/vacate/restart open the parameter form; vacate and restart then ask
for confirmation naming the target and what will happen; enable/disable act at once.
The call itself runs in a worker thread on the app (``SckptApp.run_operation``), because
the facade may block on libslurm.  In read-only mode the keys stay bound but hidden, and
say "read-only" instead of acting (the backend guard would refuse anyway).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.text import Text
from sckpt.backend import rules
from sckpt.backend.model import StepId
from textual.binding import BindingsMap
from textual.screen import Screen

from ..console_text import literal
from ..dialogs.confirm import Confirm
from ..dialogs.form import ActionForm, ActionParams
from ..keys import ACTION_KEYS, bindings, hide_mutating

if TYPE_CHECKING:
    from ..app import SckptApp

_WHAT = {
    "vacate": "checkpoint it, then terminate it (its tasks are killed after the checkpoint)",
    "restart": "resubmit it from its saved checkpoint under the same job id",
}


class TargetScreen(Screen[None]):
    """A screen with a selected target and the six action keys."""

    BINDINGS = bindings(ACTION_KEYS)

    def __init__(self, *, read_only: bool, name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self.read_only = read_only
        if read_only:
            # Hide (never unbind) the mutating keys: pressing one still says "read-only".
            # Textual has no public per-instance ``show`` switch; rebuilding this screen's
            # own BindingsMap from its bindings is the smallest way to get one.
            self._bindings = BindingsMap([hide_mutating(b) for _, b in self._bindings])

    @property
    def sckpt(self) -> SckptApp:
        """The app, typed."""
        return cast("SckptApp", self.app)

    def selected_target(self) -> StepId | None:
        """The step (or whole job) the action keys act on; None when nothing is selected."""
        raise NotImplementedError

    def refresh_view(self) -> None:
        """Show the app's latest data (called after every refresh that changed something)."""

    # ------------------------------------------------------------------ actions

    def _target_or_warn(self, operation: str) -> StepId | None:
        if self.read_only:
            self.notify(
                f"read-only: {operation} is not allowed "
                "(started with --read-only or read_only = true)",
                title="read-only",
                severity="warning",
                markup=False,
            )
            return None
        target = self.selected_target()
        if target is None:
            self.notify("select a job or a step first", severity="warning", markup=False)
        return target

    def action_create(self) -> None:
        """``c``: form, then create."""
        self._with_form("create")

    def action_vacate(self) -> None:
        """``v``: form, confirmation, then vacate."""
        self._with_form("vacate")

    def action_restart(self) -> None:
        """``r``: form, confirmation, then restart (always the whole job)."""
        self._with_form("restart")

    def action_enable(self) -> None:
        """``e``: enable (decrement the disable counter)."""
        target = self._target_or_warn("enable")
        if target is not None:
            self.sckpt.run_operation("enable", target, None)

    def action_disable(self) -> None:
        """``d``: disable (increment the disable counter)."""
        target = self._target_or_warn("disable")
        if target is not None:
            self.sckpt.run_operation("disable", target, None)

    def action_check(self) -> None:
        """``x``: ask able and error again for the selected row (read-only allowed)."""
        target = self.selected_target()
        if target is None:
            self.notify("select a job or a step first", severity="warning", markup=False)
            return
        self.sckpt.run_check(target)

    def _with_form(self, operation: str) -> None:
        target = self._target_or_warn(operation)
        if target is None:
            return
        if operation == "restart" and not rules.is_job_level(target):
            target = StepId(target.job_id)
        settings = self.sckpt.settings

        def formed(params: ActionParams | None) -> None:
            if params is None:
                return
            if operation not in _WHAT:
                self.sckpt.run_operation(operation, target, params)
                return
            question = Text()
            question.append(f"{operation.capitalize()} ", style="bold")
            question.append_text(literal(self.sckpt.describe_target(target), style="bold"))
            question.append(f"?\n\nThis will {_WHAT[operation]}.")
            if params.image_dir:
                question.append("\nImage dir: ")
                question.append_text(literal(params.image_dir))
            if params.stick:
                question.append("\nIt will stick to the nodes it used before.")

            def confirmed(answer: bool | None) -> None:
                if answer:
                    self.sckpt.run_operation(operation, target, params)
                else:
                    self.notify(f"{operation} {target} cancelled", markup=False)

            self.app.push_screen(Confirm(question), confirmed)

        self.app.push_screen(
            ActionForm(
                operation, str(target), max_wait=settings.max_wait, image_dir=settings.image_dir
            ),
            formed,
        )
