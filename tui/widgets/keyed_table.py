"""A DataTable that is updated in place, row by row, by key.

A refresh must not reset the operator's cursor, scroll position or selection, and must not
repaint ten thousand rows when three changed.  ``sync`` therefore removes the rows that
went away, adds the new ones, replaces only cells whose text changed, and reorders only when
the order differs; the cursor follows its row key, never its index.

At 10,000 rows DataTable's row-by-row API is the bottleneck, not the data: ``add_row`` and
``remove_row`` each do per-call bookkeeping (``remove_row`` renumbers every later row, so
removing many is quadratic), every change invalidates caches that are rebuilt with a pass
over all rows, and after rows are added DataTable measures every cell of every new row to
size auto-width columns (1.5 s of the first screen's 3 s).  This table's rows are always
one line high and its columns always have a fixed width (auto-width columns cost seconds,
see ``console_text.Column``), so ``sync`` writes DataTable's row structures directly, in
one pass per change, and the geometry that DataTable derives by summing row heights is
computed from the row index.  These use DataTable internals (``_data``, ``rows``,
``_row_locations``, ``_update_count``); ``tests/tui/test_keyed_table.py`` compares what the
DataTable holds against what was synced, so a Textual upgrade that changes them fails there.

``DataTable.update_cell`` repaints the whole table, even for a row scrolled out of sight;
over SSH that was a full screen of bytes for one changed elapsed time.  ``sync`` therefore
repaints only the visible rows whose cells changed (rows being added, removed or reordered
still repaint everything: they move rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Self, cast

from rich.text import Text
from textual._two_way_dict import TwoWayDict
from textual.coordinate import Coordinate
from textual.geometry import Region, Size
from textual.widgets import DataTable
from textual.widgets.data_table import Row, RowKey

from ..console_text import Column, columns_for

Rows = Iterable[tuple[str, dict[str, Text]]]
"""A table's content: (row key, cells by column key), in display order (read once)."""


class KeyedTable(DataTable[Text]):
    """Rows keyed by a string id (the ``id`` column's text), kept in a given order."""

    _hold_full_refresh = False
    """True while ``update_cell`` runs inside ``set_cell``: its whole-table refresh is
    replaced by repainting the row if it is visible.  (A class default: DataTable's own
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
        self._row_keys: dict[str, RowKey] = {}
        """DataTable's key object of each row (made once per row, not once per sync)."""

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        """Textual's refresh, except the whole-table one ``update_cell`` asks for in
        ``set_cell``."""
        if self._hold_full_refresh and not regions and not layout and not recompose:
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    # ------------------------------------------------------------------ geometry
    # Every row is one line high: DataTable's sums over the rows above become the index.

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """The scrollable size, without measuring cells (no column is auto-width)."""
        if any(column.auto_width for column in self.columns.values()):
            super()._update_dimensions(new_rows)
            return
        width = sum(column.get_render_width(self) for column in self.columns.values())
        header = self.header_height if self.show_header else 0
        size = Size(width + self._row_label_column_width, len(self.rows) + header)
        if size == self.virtual_size:
            return
        if size.width != self.virtual_size.width or not self.container_size:
            self.virtual_size = size
            return
        # Only the row count changed.  ``virtual_size`` is a layout reactive: setting it
        # lays out and repaints the whole screen (the steps table changes height on most
        # cursor moves, the jobs table on most changed refreshes).  Only this widget's
        # scrollbars depend on it; a scrollbar that appears or goes still lays out.
        self.set_reactive(KeyedTable.virtual_size, size)
        self._scroll_update(size)
        self.refresh()

    @property
    def _total_row_height(self) -> int:
        return len(self.rows)

    def _get_offsets(self, y: int) -> tuple[RowKey, int]:
        """The row on line ``y`` of the table (DataTable builds a list of every line)."""
        if self.show_header:
            if y < self.header_height:
                return self._header_row_key, y
            y -= self.header_height
        row_key = self._row_locations.get_key(y)
        if row_key is None:
            raise LookupError(f"Y coord {y!r} is greater than total height")
        return row_key, 0

    def _row_y(self, row_index: int) -> int:
        return row_index + (self.header_height if self.show_header else 0)

    def _get_row_region(self, row_index: int) -> Region:
        if not self.is_valid_row_index(row_index):
            return Region(0, 0, 0, 0)
        width = sum(c.get_render_width(self) for c in self.columns.values())
        width += self._row_label_column_width
        return Region(0, self._row_y(row_index), max(self.size.width, width), 1)

    def _get_cell_region(self, coordinate: Coordinate) -> Region:
        if not self.is_valid_coordinate(coordinate):
            return Region(0, 0, 0, 0)
        row_index, column_index = coordinate
        columns = self.ordered_columns
        x = sum(c.get_render_width(self) for c in columns[:column_index])
        x += self._row_label_column_width
        width = columns[column_index].get_render_width(self)
        return Region(x, self._row_y(row_index), width, 1)

    # ------------------------------------------------------------------ columns

    def fit_columns(self, width: int) -> bool:
        """Show the columns that fit ``width``; rebuild only when that set changes."""
        wanted = columns_for(self.all_columns, width)
        if wanted == self.shown:
            return False
        selected = self.selected_key
        rows = [(key, self._cells[key]) for key in self._order]
        self.clear(columns=True)
        self.shown = wanted
        for column in wanted:
            self.add_column(column.label, width=column.width, key=column.key)
        self.sync(rows)
        self._restore(selected)
        return True

    # ------------------------------------------------------------------ rows

    def clear(self, columns: bool = False) -> Self:
        """DataTable's clear, and this table's own record of its rows with it."""
        self._cells, self._order, self._row_keys = {}, [], {}
        return super().clear(columns=columns)

    @property
    def selected_key(self) -> str | None:
        """The row key under the cursor, or None when the table is empty."""
        if not self._order or not self.is_valid_row_index(self.cursor_row):
            return None
        return self._order[self.cursor_row]

    @property
    def row_keys_in_order(self) -> list[str]:
        """The displayed row keys, top to bottom."""
        return list(self._order)

    def cells_of(self, key: str) -> dict[str, Text] | None:
        """What row ``key`` currently shows (by column key)."""
        return self._cells.get(key)

    def sync(self, rows: Rows) -> int:
        """Make the table show ``rows`` (in that order); return how many cells changed.

        One pass over ``rows``: a row whose cells are the very same dict as last time is
        skipped without comparing (the console's cell cache hands back the same dict for
        an unchanged job); DataTable's row structures are then written in bulk.  DataTable
        keeps the caller's cells dict itself as the row's data (it looks cells up by
        ``ColumnKey``, which hashes and compares like the column's key string): a second
        dict per row was ~15 MB at 33,000 rows.
        """
        selected = self.selected_key
        was_empty = not self._order
        current = self._cells
        # Typed by ColumnKey; str keys are found by ColumnKey lookups (see above).
        data = cast(dict[RowKey, dict[str, Text]], self._data)
        table_rows = self.rows
        row_keys = self._row_keys
        shown = [c.key for c in self.shown]
        cells_now: dict[str, dict[str, Text]] = {}
        order: list[str] = []
        updated: list[str] = []
        changed = 0
        added = False
        for key, cells in rows:
            if key in cells_now:
                # A key twice would leave DataTable with fewer rows than the order lists
                # and crash the next paint; the first one is shown.  (Slurm once listed a
                # waiting srun as several steps with one id.)
                continue
            cells_now[key] = cells
            order.append(key)
            old = current.get(key)
            if old is None:
                row_key = row_keys.get(key)
                if row_key is None:
                    row_key = row_keys[key] = RowKey(key)
                table_rows[row_key] = Row(row_key, 1)
                data[row_key] = cells  # shared, see below
                changed += 1
                added = True
            elif old is not cells:  # the same dict means the same row: nothing to compare
                before = changed
                for name in shown:
                    if old.get(name) != cells[name]:
                        changed += 1
                if changed != before:
                    data[row_keys[key]] = cells
                    updated.append(key)
        leaving = [key for key in self._order if key not in cells_now]
        for key in leaving:
            row_key = row_keys.pop(key)
            del table_rows[row_key]
            del data[row_key]
            changed += 1
        moved = added or leaving or order != self._order
        self._cells = cells_now
        self._order = order
        if not changed and not moved:
            return 0
        # Every DataTable cache is keyed by this count: one bump per sync, not per cell.
        # What the render caches hold for older counts can never be used again; dropped
        # now rather than left to their LRU bounds (thousands of rendered cells, which
        # the garbage collector then walks on every full collection).
        self._update_count += 1
        for cache in (
            self._row_render_cache,
            self._cell_render_cache,
            self._row_renderable_cache,
            self._line_cache,
        ):
            cache.clear()
        if moved:
            self._row_locations = TwoWayDict({row_keys[key]: i for i, key in enumerate(order)})
            self._update_dimensions(())
            self.cursor_coordinate = self.cursor_coordinate  # clamped to the new row count
            self.hover_coordinate = self.hover_coordinate
            self.refresh()
            if was_empty and order and self.show_cursor:
                self._highlight_cursor()  # what DataTable.add_row does for the first row
        else:
            self._refresh_visible_rows(updated)
        self._restore(selected)
        return changed

    def _refresh_visible_rows(self, keys: Iterable[str]) -> None:
        """Repaint the rows of ``keys`` that are on screen (rows are one line high)."""
        top = int(self.scroll_y) - 1
        bottom = top + self.size.height + 2
        locations = self._row_locations
        for key in keys:
            index = locations.get(self._row_keys[key])
            if index is not None and top <= index <= bottom:
                self.refresh_row(index)

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
