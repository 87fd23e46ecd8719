"""A DataTable that is updated in place, row by row, by key.

A refresh must not reset the operator's cursor, scroll position or selection, and must not
repaint ten thousand rows when three changed.  ``sync`` therefore removes the rows that
went away, adds the new ones, calls ``update_cell`` only for cells whose text changed, and
reorders only when the order differs; the cursor follows its row key, never its index.

``DataTable.update_cell`` repaints the whole table, even for a row scrolled out of sight;
over SSH that was a full screen of bytes for one changed elapsed time.  ``sync`` therefore
holds those whole-table refreshes back and repaints only the visible rows whose cells
changed (rows being added, removed or reordered still repaint everything: they move rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Self

from rich.text import Text
from textual.geometry import Region
from textual.widgets import DataTable

from ..console_text import Column, columns_for

REBUILD_AFTER = 100
"""More rows than this leaving in one sync refill the table instead (see ``_rebuild``)."""


class KeyedTable(DataTable[Text]):
    """Rows keyed by a string id (the ``id`` column's text), kept in a given order."""

    _hold_full_refresh = False
    """True while ``update_cell`` runs inside ``sync``: its whole-table refresh is replaced
    by repainting the changed rows that are visible.  (A class default: DataTable's own
    ``__init__`` already calls ``refresh``.)"""

    def __init__(self, columns: Sequence[Column], *, id: str | None = None) -> None:
        super().__init__(
            id=id, cursor_type="row", zebra_stripes=False, cursor_foreground_priority="renderable"
        )
        self.all_columns: tuple[Column, ...] = tuple(columns)
        """Every column this table can show; ``shown`` is the subset that fits."""
        self.shown: tuple[Column, ...] = ()
        self._cells: dict[str, dict[str, Text]] = {}
        """What each row currently displays, by row key then column key."""
        self._order: list[str] = []
        """Row keys in display order."""

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        """Textual's refresh, except the whole-table one ``update_cell`` asks for in ``sync``."""
        if self._hold_full_refresh and not regions and not layout and not recompose:
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    # ------------------------------------------------------------------ columns

    def fit_columns(self, width: int) -> bool:
        """Show the columns that fit ``width``; rebuild only when that set changes."""
        wanted = columns_for(self.all_columns, width)
        if wanted == self.shown:
            return False
        selected = self.selected_key
        self.clear(columns=True)
        self.shown = wanted
        for column in wanted:
            self.add_column(column.label, width=column.width, key=column.key)
        for key in self._order:
            cells = self._cells[key]
            self.add_row(*(cells[c.key] for c in wanted), key=key)
        self._restore(selected)
        return True

    # ------------------------------------------------------------------ rows

    @property
    def selected_key(self) -> str | None:
        """The row key under the cursor, or None when the table is empty."""
        if not self._order or not self.is_valid_row_index(self.cursor_row):
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    @property
    def row_keys_in_order(self) -> list[str]:
        """The displayed row keys, top to bottom."""
        return list(self._order)

    def cells_of(self, key: str) -> dict[str, Text] | None:
        """What row ``key`` currently shows (by column key)."""
        return self._cells.get(key)

    def sync(self, rows: Sequence[tuple[str, dict[str, Text]]]) -> int:
        """Make the table show ``rows`` (in that order); return how many cells changed."""
        selected = self.selected_key
        wanted = {key for key, _ in rows}
        leaving = [k for k in self._order if k not in wanted]
        if len(leaving) > REBUILD_AFTER:
            return self._rebuild(rows, selected, len(leaving))
        before = set(self._cells)
        changed = 0
        for key in leaving:
            self.remove_row(key)
            del self._cells[key]
            changed += 1
        shown_keys = [c.key for c in self.shown]
        updated: list[str] = []
        for key, cells in rows:
            old = self._cells.get(key)
            if old is None:
                self.add_row(*(cells[c] for c in shown_keys), key=key)
                changed += 1
            elif old is not cells:  # the same dict means the same row: nothing to compare
                for column in shown_keys:
                    if old.get(column) != cells[column]:
                        self._hold_full_refresh = True
                        try:
                            self.update_cell(key, column, cells[column])
                        finally:
                            self._hold_full_refresh = False
                        changed += 1
                        updated.append(key)
            self._cells[key] = cells
        order = [key for key, _ in rows]
        current = [k for k in self._order if k in wanted] + [k for k in order if k not in before]
        if order != current:
            position = {key: i for i, key in enumerate(order)}
            self.sort("id", key=lambda cell: position[cell.plain])
        self._order = order
        self._refresh_visible_rows(updated)
        self._restore(selected)
        return changed

    def _refresh_visible_rows(self, keys: Iterable[str]) -> None:
        """Repaint the rows of ``keys`` that are on screen (rows are one line high).

        ``refresh_row`` itself skips rows out of view, but finding a row's place costs a
        pass over the rows above it; the cheap window test here keeps that to the few
        visible ones even when thousands of rows changed.
        """
        top = int(self.scroll_y) - 1
        bottom = top + self.size.height + 2
        visible = set()
        for key in keys:
            index = self.get_row_index(key)
            if top <= index <= bottom:
                visible.add(index)
        for index in sorted(visible):
            self.refresh_row(index)

    def _rebuild(
        self, rows: Sequence[tuple[str, dict[str, Text]]], selected: str | None, left: int
    ) -> int:
        """Refill the table when many rows leave at once.

        ``DataTable.remove_row`` renumbers every row after the removed one, so removing
        many rows one by one is quadratic: 670 of 9,000 rows took 12 s of the UI thread
        (the soak test's log), refilling all 8,330 took 1.9 s.  The cursor stays on its
        row and the view keeps its scroll offset (restored once the new height is known).
        """
        scroll_y = self.scroll_y
        self.clear()
        shown_keys = [c.key for c in self.shown]
        for key, cells in rows:
            self.add_row(*(cells[c] for c in shown_keys), key=key)
        self._cells = dict(rows)
        self._order = [key for key, _ in rows]
        self._restore(selected)
        self.call_after_refresh(self.scroll_to, y=scroll_y, animate=False)
        return left + len(rows)

    def set_cell(self, key: str, column: str, value: Text) -> None:
        """Change one cell (for instance after ``x`` asked Slurm again)."""
        cells = self._cells.get(key)
        if cells is None:
            return
        cells[column] = value
        if column in {c.key for c in self.shown}:
            self._hold_full_refresh = True
            try:
                self.update_cell(key, column, value)
            finally:
                self._hold_full_refresh = False
            self._refresh_visible_rows([key])

    def select_key(self, key: str, *, scroll: bool = True) -> bool:
        """Put the cursor on row ``key``; False when there is no such row."""
        if key not in self._cells:
            return False
        self.move_cursor(row=self.get_row_index(key), scroll=scroll)
        return True

    def _restore(self, selected: str | None) -> None:
        """Keep the cursor on the row it was on (by key) without scrolling the view."""
        if selected is not None and selected in self._cells:
            index = self.get_row_index(selected)
            if index != self.cursor_row:
                self.move_cursor(row=index, scroll=False)
