"""The small form before create, vacate and restart: max_wait, image dir, stick.

Prefilled from the config file (``max_wait``, ``image_dir``); the values are checked with
the same validators as the command line before the dialog closes, so bad input is
explained in the dialog and never reaches Slurm.
"""

from __future__ import annotations

from sckpt.backend import operations
from sckpt.backend.arguments import validate_image_dir, validate_max_wait
from sckpt.backend.errors import UsageError
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static

from ..console_text import literal
from ..params import ActionParams


class ParamsForm(ModalScreen[ActionParams | None]):
    """What every operation's form does alike: the first field has the focus, Escape and
    Cancel close it with None, Enter and OK close it with ``params()`` once they pass the
    backend's checks, and a ``UsageError`` is shown in ``#form-error`` instead."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def on_mount(self) -> None:
        self.query(Input).first().focus()
        for box in self.query(Input):
            box.cursor_blink = self.app.animation_level != "none"

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def _submit(self) -> None:
        try:
            params = self.params()
        except UsageError as exc:
            self.query_one("#form-error", Static).update(literal(exc.message, style="red"))
            return
        self.dismiss(params)

    def params(self) -> ActionParams:
        """The form's values, validated (``UsageError`` says what is wrong)."""
        raise NotImplementedError


class ActionForm(ParamsForm):
    """Parameters for one create / vacate / restart; Escape cancels."""

    def __init__(
        self, operation: str, target: str, *, max_wait: int, image_dir: str | None
    ) -> None:
        super().__init__()
        self.operation = operation
        self.takes = operations.operation(operation).arguments
        """The operation's arguments (the table's): the form asks for those it has a field for."""
        self.target = target
        self.default_max_wait = max_wait
        self.default_image_dir = image_dir or ""

    def compose(self) -> ComposeResult:
        with Vertical(id="form", classes="dialog"):
            title = literal(f"{self.operation.capitalize()} {self.target}", style="bold")
            yield Static(title, id="form-title")
            if "max_wait" in self.takes:
                yield Label("Max wait (seconds)")
                yield Input(str(self.default_max_wait), id="max-wait", restrict=r"[0-9]*")
            yield Label("Image dir (empty: the step's own)")
            yield Input(self.default_image_dir, id="image-dir", placeholder="/scratch/ckpt")
            if "stick" in self.takes:
                yield Checkbox("Stick to the same nodes", id="stick")
            yield Static("", id="form-error")
            with Horizontal(classes="buttons"):
                yield Button("OK", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def params(self) -> ActionParams:
        """The form's values, validated (``UsageError`` says what is wrong)."""
        max_wait: int | None = None
        if "max_wait" in self.takes:
            raw = self.query_one("#max-wait", Input).value.strip()
            max_wait = validate_max_wait(raw) if raw else None
        image = self.query_one("#image-dir", Input).value.strip()
        image_dir = validate_image_dir(image) if image else None
        stick = "stick" in self.takes and self.query_one("#stick", Checkbox).value
        return ActionParams(max_wait, image_dir, stick)
