"""The console's footer: the keys of the screen that fit one line, the essential ones kept.

Textual's ``Footer`` lays its keys out left to right and lets the last ones fall off the
line: at 80 columns ``? Help`` and ``q Quit`` (and ``p Pids`` on the step screen) were
cut, the very keys a new operator looks for, and the command-palette hint, docked over
the overflow, left a stray character after it (``^p palettep``).  This footer decides
what the line holds instead: when every key does not fit, it leaves out the least needed
ones (``KEEP_FIRST``: help and quit are never left out, then the screen's own keys, then
the checkpoint verbs; the palette hint goes first), keeping the order of the others.
What is left out is still in ``?`` and the palette.

It reads the screen's bindings (``Screen.active_bindings``, so remapped keys show their
new key and read-only hides the mutating ones) whenever Textual says they changed, and
repaints only when the line's content changes.  A click on a key presses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

KEEP_FIRST: tuple[str, ...] = (
    "help",
    "quit",
    "back",
    "pids",
    "create",
    "vacate",
    "enable",
    "disable",
    "check",
    "filter",
    "restart",
)
"""Binding ids in the order they are kept when the line is short; any other key comes
after these (in the order shown), and the palette hint last of all.  ``d`` undoes ``e``
and ``x`` reads what they did, so at 60 columns they stay and ``/`` and ``r`` (a restart
of a vacated job, rarer) give way first."""

PALETTE_ACTIONS = frozenset({"command_palette", "app.command_palette"})
GAP = 1
"""Blank cells between two keys."""


@dataclass(frozen=True, slots=True)
class FooterEntry:
    """One key on the line: what to press, how it is written, and what it does."""

    key: str
    display: str
    description: str
    enabled: bool
    rank: int
    """Lower is kept longer (``KEEP_FIRST``)."""

    @property
    def width(self) -> int:
        return len(self.display) + 1 + len(self.description)


def fit(
    entries: list[FooterEntry], palette: FooterEntry | None, width: int
) -> tuple[list[FooterEntry], FooterEntry | None]:
    """The entries that fit ``width`` cells (in their order) and the palette hint if it
    fits after them: the highest ranks are left out first."""

    def needed(kept: list[FooterEntry], hint: FooterEntry | None) -> int:
        total = sum(e.width for e in kept) + GAP * max(0, len(kept) - 1)
        if hint is not None:
            total += GAP + 1 + hint.width  # a gap and the separator before the hint
        return total

    kept = list(entries)
    if needed(kept, palette) <= width:
        return kept, palette
    for entry in sorted(entries, key=lambda e: e.rank, reverse=True):
        if needed(kept, None) <= width:
            break
        kept.remove(entry)
    return kept, None


class KeyFooter(Widget):
    """One line of keys at the bottom of a screen."""

    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        width: 100%;
        background: $footer-background;
        color: $footer-foreground;
        & > .keyfooter--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .keyfooter--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .keyfooter--separator {
            color: $foreground 20%;
        }
    }
    """

    COMPONENT_CLASSES = {"keyfooter--key", "keyfooter--description", "keyfooter--separator"}

    def __init__(
        self, *, offered: Callable[[str], bool] | None = None, id: str | None = None
    ) -> None:
        """``offered``: whether the screen offers a binding (by id) at the moment; one it
        does not (the actions of a step that does not exist) is left off the line."""
        super().__init__(id=id)
        self.offered = offered
        self._entries: tuple[list[FooterEntry], FooterEntry | None] = ([], None)
        self._spans: list[tuple[int, int, str]] = []
        """(start, end, key) of each key as last rendered, for clicks."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._entries = self.entries()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[Any]) -> None:
        entries = self.entries()
        if entries != self._entries:
            self._entries = entries
            self.refresh()

    def update_keys(self) -> None:
        """Read the screen's keys again (the screen's offer changed)."""
        self._bindings_changed(self.screen)

    def entries(self) -> tuple[list[FooterEntry], FooterEntry | None]:
        """Every key the screen shows now, in its order, and the palette hint."""
        rank = {binding_id: index for index, binding_id in enumerate(KEEP_FIRST)}
        shown: list[FooterEntry] = []
        palette: FooterEntry | None = None
        seen: set[str] = set()
        for key, active in self.screen.active_bindings.items():
            binding = active.binding
            if binding.action in PALETTE_ACTIONS:
                palette = FooterEntry(
                    key, self.app.get_key_display(binding), "palette", True, len(rank) + 1
                )
                continue
            if not binding.show or binding.action in seen:
                continue
            if self.offered is not None and not self.offered(binding.id or binding.action):
                continue
            seen.add(binding.action)
            shown.append(
                FooterEntry(
                    key,
                    self.app.get_key_display(binding),
                    binding.description,
                    active.enabled,
                    rank.get(binding.id or "", len(rank)),
                )
            )
        return shown, palette

    def render(self) -> Text:
        width = self.size.width
        entries, palette = self._entries
        kept, hint = fit(entries, palette, width)
        key_style = self.get_component_rich_style("keyfooter--key")
        description_style = self.get_component_rich_style("keyfooter--description")
        text = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, str]] = []
        for index, entry in enumerate(kept):
            if index:
                text.append(" " * GAP)
            start = text.cell_len
            style = key_style if entry.enabled else key_style + Style(dim=True)
            text.append(entry.display, style=style)
            text.append(" ")
            text.append(entry.description, style=description_style)
            spans.append((start, text.cell_len, entry.key))
        if hint is not None:
            text.append(" " * max(GAP, width - text.cell_len - hint.width - 1))
            text.append("▏", style=self.get_component_rich_style("keyfooter--separator"))
            start = text.cell_len
            text.append(hint.display, style=key_style)
            text.append(" ")
            text.append(hint.description, style=description_style)
            spans.append((start, text.cell_len, hint.key))
        self._spans = spans
        return text

    def on_click(self, event: events.Click) -> None:
        """A click on a key presses it, as on Textual's footer."""
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
