"""What the console screen and the step screen share: the action keys and their flow.

An action key works on ``selected_target()`` (a step, or the whole job where the reference
allows it).  Every operation key runs one action, ``operation(NAME)``, driven by the
operations table (``backend/operations.py``): an operation that takes arguments
(create/vacate/restart) opens the parameter form (``auto``: the policy form, every / before
end / off, then acts at once), and one with a ``confirm`` text (vacate,
restart, and the job-control verbs cancel/hold/release/requeue, which have no form) asks
for confirmation naming the target and what will happen; enable and disable act at once,
by decision: they end, stop and resubmit nothing, and each undoes the other (the disable
counter goes up and down), so a question would only slow down the one pair of keys that
cannot lose work.  Their help line and the README say so.
The call itself runs in a worker thread (``SckptApp.run_operation``, ``actions.py``),
because the facade may block on libslurm.  In read-only mode the keys stay bound but hidden, and
say "read-only" instead of acting (the backend guard would refuse anyway).
"""

from __future__ import annotations

from functools import partial
from typing import ClassVar, TypeVar, cast

from rich.text import Text
from sckpt.backend import operations, rules
from sckpt.backend.arguments import describe_policy
from sckpt.backend.model import JobView, StepId
from textual.binding import Binding
from textual.screen import ModalScreen, Screen

from .. import multi_target, reports
from ..console_text import literal, printable
from ..context import ScreenContext
from ..dialogs.confirm import Confirm
from ..dialogs.form import ActionForm
from ..dialogs.help import ACTIONS, Sections
from ..dialogs.policy_form import PolicyForm
from ..keys import ACTION_KEYS, bindings, hide_mutating
from ..messages import FreshnessChanged, InfoChanged
from ..params import ActionParams
from ..widgets.header import StatusHeader


class TargetScreen(Screen[None]):
    """A screen with a selected target and the six action keys."""

    BINDINGS = bindings(ACTION_KEYS)

    read_only: ClassVar[bool] = False
    """True in the read-only variant (``in_mode``): mutating keys hidden, and refused."""

    HELP_SECTIONS: ClassVar[Sections] = ((ACTIONS, ACTION_KEYS),)
    """The sections of ``?``'s help on this screen (``dialogs/help.py`` assembles it)."""

    @property
    def sckpt(self) -> ScreenContext:
        """The app, as screens see it (``context.ScreenContext``)."""
        return cast(ScreenContext, self.app)

    def on_mount(self) -> None:
        """Headers show the freshness the app already knows, and tick every second."""
        self.show_freshness()
        self.set_interval(1.0, self.tick_headers)

    def show_freshness(self) -> None:
        """Every header of this screen shows the app's freshness (fresh, late or stale)."""
        freshness = self.sckpt.freshness
        now = self.sckpt.now()
        for header in self.query(StatusHeader):
            header.clusters = freshness.clusters
            if freshness.stale:
                header.show_stale(freshness.last_fresh or now, freshness.error, now)
            elif freshness.loaded:
                header.show_fresh(freshness.last_fresh, now)

    def tick_headers(self) -> None:
        """The "updated N s ago" parts move with the clock."""
        now = self.sckpt.now()
        for header in self.query(StatusHeader):
            header.tick(now)

    def on_freshness_changed(self, message: FreshnessChanged) -> None:
        self.show_freshness()

    def on_info_changed(self, message: InfoChanged) -> None:
        now = self.sckpt.now()
        for header in self.query(StatusHeader):
            header.info = message.info
            header.tick(now)

    def selected_target(self) -> StepId | None:
        """The step (or whole job) the action keys act on; None when nothing is selected."""
        raise NotImplementedError

    def no_target(self) -> str:
        """Why an action key found nothing to act on."""
        return "select a job or a step first"

    def offers(self, binding_id: str) -> bool:
        """Whether the key ``binding_id`` is offered now (in the footer): every key, on a
        screen whose target exists."""
        return True

    def refresh_view(self) -> None:
        """Show the app's latest data (called after every refresh that changed something)."""

    def refresh_outcomes(self) -> None:
        """A checkpoint was requested here: show its rows' new words (``outcomes.py``)."""
        self.refresh_view()

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
            self.notify(self.no_target(), severity="warning", markup=False)
            return None
        foreseen = reports.foreseen_refusal(
            operation, target, self.sckpt.job(target), self.sckpt.info.acting_user
        )
        if foreseen is not None:  # at once, not after a form and a confirmation
            self.notify(printable(foreseen), title="refused", severity="error", markup=False)
            return None
        return target

    def action_operation(self, name: str) -> None:
        """An operation's key: the form first when it takes what the form asks (max wait,
        image dir, stick), then the confirmation when the operation has one; else act at once.

        One action for every operation (its binding runs ``operation('create')`` ...), so a
        key given to an operation in the operations table needs no method here.  The
        job-control verbs (cancel, hold, release, requeue) ask no form: the confirmation
        names the target, and cancel ends it as scancel does (no signal is chosen here).
        """
        op = operations.operation(name)
        marked = self.marked_targets()
        if marked:
            self._act_on_marked(name, marked)
            return
        if set(op.arguments) & FORM_ARGUMENTS:
            self._with_form(name)
            return
        if set(op.arguments) & POLICY_ARGUMENTS:
            self._with_policy_form(name)
            return
        target = self._target_or_warn(name)
        if target is None:
            return
        if op.whole_job:
            target = target.whole_job
        if op.confirm:
            self._confirm_then_run(name, target, None)
        else:
            self.sckpt.run_operation(name, target, None)

    # ------------------------------------------------------------------ several targets

    def marked_targets(self) -> list[StepId]:
        """Rows marked for an action on several targets (the console's space); none here."""
        return []

    def clear_marks(self) -> None:
        """Forget the marks (an action on them was started, or Escape)."""

    def _act_on_marked(self, name: str, marked: list[StepId]) -> None:
        """An operation key with rows marked: the form once (when the operation has one),
        then one confirmation listing every target, then each through the facade.

        In read-only mode the key is refused here, as for one target (the marks stay):
        the backend guard, which would refuse each target too, is for what runs past the
        UI -- so marked rows make no audit lines that one selected row would not.
        """
        targets = multi_target.targets_for(name, marked)
        op = operations.operation(name)
        if self.read_only:
            self._target_or_warn(name)
            return
        describe = partial(self.sckpt.describe_target, every_step=op.on_every_step)

        def confirm(params: ActionParams | None) -> None:
            def confirmed(answer: bool | None) -> None:
                if answer:
                    self.clear_marks()
                    self.sckpt.run_operation(name, targets, params)
                else:
                    self.notify(
                        f"{name} on {len(targets)} targets: not done (answered No)",
                        markup=False,
                    )

            self.app.push_screen(Confirm(multi_target.question(name, targets, describe)), confirmed)

        takes = set(op.arguments)
        if not takes & (FORM_ARGUMENTS | POLICY_ARGUMENTS):
            confirm(None)
            return
        settings = self.sckpt.settings

        def formed(params: ActionParams | None) -> None:
            if params is not None:
                confirm(params)

        label = f"{len(targets)} targets: {', '.join(map(str, targets[:4]))}"
        if len(targets) > 4:
            label += ", …"
        form: ModalScreen[ActionParams | None] = (
            PolicyForm(label, now="")
            if takes & POLICY_ARGUMENTS
            else ActionForm(name, label, max_wait=settings.max_wait, image_dir=settings.image_dir)
        )
        self.app.push_screen(form, formed)

    def action_check(self) -> None:
        """``x``: ask able and error again for the selected row (read-only allowed)."""
        target = self.selected_target()
        if target is None:
            self.notify(self.no_target(), severity="warning", markup=False)
            return
        self.sckpt.run_check(target)

    def action_output(self) -> None:
        """``o``: the selected job's output file (read-only allowed: it changes nothing)."""
        target = self.selected_target()
        if target is None:
            self.notify("select a job or a step first", severity="warning", markup=False)
            return
        self.sckpt.open_output(target)

    def _with_form(self, operation: str) -> None:
        target = self._target_or_warn(operation)
        if target is None:
            return
        if operations.operation(operation).job_level and not rules.is_job_level(target):
            target = target.whole_job
        settings = self.sckpt.settings
        what = operations.operation(operation).confirm

        def formed(params: ActionParams | None) -> None:
            if params is None:
                return
            if not what:
                self.sckpt.run_operation(operation, target, params)
                return
            self._confirm_then_run(operation, target, params)

        self.app.push_screen(
            ActionForm(
                operation, str(target), max_wait=settings.max_wait, image_dir=settings.image_dir
            ),
            formed,
        )

    def _with_policy_form(self, operation: str) -> None:
        """``auto``: the policy form (what the policy is now, what changes), then act;
        no confirmation, as for enable and disable: it ends nothing, and ``a`` again
        undoes it."""
        target = self._target_or_warn(operation)
        if target is None:
            return

        def formed(params: ActionParams | None) -> None:
            if params is not None:
                self.sckpt.run_operation(operation, target, params)

        now = policy_now(self.sckpt.job(target), target)
        self.app.push_screen(PolicyForm(str(target), now=now), formed)

    def _confirm_then_run(
        self, operation: str, target: StepId, params: ActionParams | None
    ) -> None:
        """Ask whether to run ``operation`` on ``target`` (named, with what will happen and
        what the form set); run it on Yes, say it was not done on No."""
        op = operations.operation(operation)
        question = Text()
        question.append(f"{operation.capitalize()} ", style="bold")
        described = self.sckpt.describe_target(target, every_step=op.on_every_step)
        question.append_text(literal(described, style="bold"))
        question.append(f"?\n\nThis will {op.confirm}.")
        if params is not None and params.image_dir:
            question.append("\nImage dir: ")
            question.append_text(literal(params.image_dir))
        if params is not None and params.stick:
            question.append("\nIt will stick to the nodes it used before.")

        def confirmed(answer: bool | None) -> None:
            if answer:
                self.sckpt.run_operation(operation, target, params)
            else:
                self.notify(f"{operation} {target}: not done (answered No)", markup=False)

        self.app.push_screen(Confirm(question), confirmed)


FORM_ARGUMENTS = frozenset({"max_wait", "image_dir", "stick"})
"""The arguments the parameter form asks for; an operation taking none of them has no form."""
POLICY_ARGUMENTS = frozenset({"every", "before_end", "off"})
"""The arguments the policy form asks for (``auto``)."""


def policy_now(job: JobView | None, target: StepId) -> str:
    """The target's automatic checkpoints in words, as the data last showed them: one
    step's, or a whole job's (its steps that have one) when they share one; "" when
    unknown or none."""
    if job is None:
        return ""
    words = {
        describe_policy(view.checkpoint.auto)
        for view in job.steps
        if view.checkpoint.auto is not None
        and (target.is_whole_job or view.step.step_id.step == target.step)
    }
    return words.pop() if len(words) == 1 else "differs between its steps" if words else ""


S = TypeVar("S", bound=TargetScreen)

_READ_ONLY: dict[type[TargetScreen], type[TargetScreen]] = {}


def in_mode(screen: type[S], *, read_only: bool) -> type[S]:
    """``screen``, or in read-only mode its variant whose mutating keys are hidden.

    The hidden keys stay bound, so pressing one still says "read-only".  Textual binds keys
    per class (a subclass's ``BINDINGS`` override its bases' for the same key) and has no
    public per-instance switch, so the variant is a subclass, made once per screen class.
    """
    if not read_only:
        return screen
    variant = _READ_ONLY.get(screen)
    if variant is None:
        hidden = [hide_mutating(b) for b in bindings(ACTION_KEYS) if isinstance(b, Binding)]
        namespace = {"BINDINGS": hidden, "read_only": True, "__doc__": screen.__doc__}
        variant = _READ_ONLY[screen] = type(screen.__name__, (screen,), namespace)
    return cast("type[S]", variant)
