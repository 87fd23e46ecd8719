"""``?``: every key the current screen answers to, with what it does.

Built from the same key table as the footer and the palette (``keys.py``) and from the
bindings actually in force, so remapped keys show their new key and read-only mode
leaves the mutating actions out.

It fits an 80x24 terminal: each key takes one line (the key column is as narrow as the
longest key, not as the section titles, so no description wraps at 80 columns), the
title is on the border, and the keys that work everywhere (help, palette, quit) share
one line at the bottom, not a section below the fold, as the job-control verbs share one
(``KeySpec.group``).  A smaller terminal scrolls it, with its scrollbar showing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keys import ACTION_KEYS, GLOBAL_KEYS, KeySpec

Entries = list[tuple[str, KeySpec]]
"""(key as written, its spec) of one section."""

ACTIONS = "Actions"
"""The section whose keys are also listed by name (``create``, ``vacate`` ...)."""

Sections = Sequence[tuple[str, tuple[KeySpec, ...]]]
"""A screen's help: titled groups of keys (``HELP_SECTIONS`` on the screens)."""


class HelpScreen(ModalScreen[None]):
    """A table of keys; any of Escape, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(
        self,
        sections: list[tuple[str, Entries]],
        read_only: bool,
        everywhere: Entries | None = None,
    ) -> None:
        """``sections``: titled tables of keys; ``everywhere``: the keys of every screen,
        shown on one line after them."""
        super().__init__()
        self.sections = sections
        self.read_only = read_only
        self.everywhere = everywhere or []

    def compose(self) -> ComposeResult:
        width = max((len(key) for _, entries in self.sections for key, _ in entries), default=1)
        parts: list[RenderableType] = []
        for title, entries in self.sections:
            if not entries:
                continue
            parts.append(Text(title, style="underline"))
            # Actions by the names the footer, the CLI and scontrol use (create, vacate ...).
            named = title == ACTIONS
            table = Table(box=None, show_header=False, padding=(0, 1), expand=False)
            table.add_column("key", style="bold", no_wrap=True, min_width=width, max_width=width)
            if named:
                table.add_column("name", no_wrap=True, style="italic")
            table.add_column("what")
            grouped: dict[str, Text] = {}
            for key, spec in entries:
                if not spec.group:
                    cells = (Text(key), Text(spec.id), Text(spec.help))
                    table.add_row(*(cells if named else (cells[0], cells[2])))
                    continue
                line = grouped.get(spec.group)
                if line is None:
                    line = grouped[spec.group] = Text(spec.group, style="italic")
                line.append("  ")
                line.append(key, style="bold")
                line.append(f" {spec.id}")
            parts.append(table)
            parts.extend(Text(" ").append_text(line) for line in grouped.values())
        if self.read_only:
            off = [spec.id for spec in ACTION_KEYS if spec.mutating]
            parts.append(
                Text(f"READ-ONLY: {', '.join(off[:-1])} and {off[-1]} are off", style="yellow")
            )
        if self.everywhere:
            line = Text("Everywhere", style="underline")
            for key, spec in self.everywhere:
                line.append("  ")
                line.append(key, style="bold")
                line.append(f" {spec.help}")
            parts.append(line)
        box = VerticalScroll(id="help", classes="dialog")
        box.border_title = "Keys"
        box.border_subtitle = "Esc closes"
        with box:
            yield Static(Group(*parts), id="help-table")

    def action_close(self) -> None:
        self.dismiss(None)


def key_label(key: str, spec: KeySpec) -> str:
    """How a key is written in the help: ``/`` and ``?`` rather than their names."""
    if key == spec.key and spec.key_display:
        return spec.key_display
    return {
        "slash": "/",
        "question_mark": "?",
        "escape": "Esc",
        "enter": "Enter",
        "tab": "Tab",
    }.get(key, key)


def plain_help(sections: Sections) -> HelpScreen:
    """The help of a screen whose keys are all offered (the output view): every key of
    every section, as the key table writes it."""
    return HelpScreen(
        [(title, [(key_label(s.key, s), s) for s in specs]) for title, specs in sections], False
    )


def screen_help(
    sections: Sections,
    *,
    read_only: bool,
    offers: Callable[[str], bool],
    active_bindings: Mapping[str, ActiveBinding],
) -> HelpScreen:
    """The help of a screen with a target: the keys it ``offers`` now, each under the key
    bound to it now (a remapped key shows its new key), without the mutating ones in
    read-only mode; the keys that work everywhere on one line at the bottom."""
    active = {b.binding.id: key for key, b in active_bindings.items() if b.binding.id}

    def entries(specs: tuple[KeySpec, ...]) -> Entries:
        out = []
        for spec in specs:
            if (read_only and spec.mutating) or not offers(spec.id):
                continue
            key = active.get(spec.id, spec.key) if spec.bound else spec.key
            out.append((key_label(key, spec), spec))
        return out

    return HelpScreen(
        [(title, entries(specs)) for title, specs in sections], read_only, entries(GLOBAL_KEYS)
    )
