"""``?``: every key the current screen answers to, with what it does.

Built from the same key table as the footer and the palette (``keys.py``) and from the
bindings actually in force, so remapped keys show their new key and read-only mode
leaves the mutating actions out.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keys import ACTION_KEYS, KeySpec


class HelpScreen(ModalScreen[None]):
    """A table of keys; any of Escape, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(
        self, sections: list[tuple[str, list[tuple[str, KeySpec]]]], read_only: bool
    ) -> None:
        super().__init__()
        self.sections = sections
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 1), expand=False)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("what")
        for title, entries in self.sections:
            if not entries:
                continue
            table.add_row(Text(title, style="underline"), "")
            for key, spec in entries:
                table.add_row(Text(key), Text(spec.help))
        if self.read_only:
            off = [spec.id for spec in ACTION_KEYS if spec.mutating]
            table.add_row(
                "",
                Text(f"READ-ONLY: {', '.join(off[:-1])} and {off[-1]} are off", style="yellow"),
            )
        with VerticalScroll(id="help", classes="dialog"):
            yield Static(Text("Keys", style="bold"))
            yield Static(table, id="help-table")

    def action_close(self) -> None:
        self.dismiss(None)
