"""The small form before ``auto``: a step's automatic checkpoints (every, before end, off).

It says what the policy is now, and takes what changes: a field left empty stays as it is,
as ``sckpt auto`` without that option.  The values are checked with the backend's rules
(``arguments.validate_every``, ``validate_before_end``, ``check_policy_change``) before
the dialog closes, so a mistake is explained here and never reaches an engine.
"""

from __future__ import annotations

from sckpt.backend.arguments import (
    check_policy_change,
    validate_before_end,
    validate_every,
)
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Checkbox, Input, Label, Static

from ..console_text import literal
from ..params import ActionParams
from .form import ParamsForm


class PolicyForm(ParamsForm):
    """Every / before end / off for one ``auto``; Escape cancels."""

    def __init__(self, target: str, *, now: str) -> None:
        super().__init__()
        self.target = target
        self.now = now
        """The policy as the data last showed it, in words ("" when unknown)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="policy-form", classes="dialog"):
            title = literal(f"Automatic checkpoints of {self.target}", style="bold")
            yield Static(title, id="form-title")
            yield Static(literal(f"Now: {self.now or 'none'}", style="dim"), id="policy-now")
            yield Label("Every (90s, 30m, 2h or auto; empty: unchanged)")
            yield Input("", id="every", placeholder="30m")
            yield Label("Before end (10m; empty: unchanged)")
            yield Input("", id="before-end", placeholder="10m")
            yield Checkbox("Off: no automatic checkpoints", id="off")
            yield Static("", id="form-error")
            with Horizontal(classes="buttons"):
                yield Button("OK", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def params(self) -> ActionParams:
        """The form's values, validated (``UsageError`` says what is wrong)."""
        every_text = self.query_one("#every", Input).value.strip()
        end_text = self.query_one("#before-end", Input).value.strip()
        every = validate_every(every_text, "every") if every_text else None
        before_end = validate_before_end(end_text, "before end") if end_text else None
        off = self.query_one("#off", Checkbox).value
        check_policy_change({"every": every, "before_end": before_end, "off": off})
        return ActionParams(None, None, every=every, before_end=before_end, off=off)
