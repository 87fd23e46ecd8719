"""A table that renders only the lines on screen: Textual's Line API over a ``RowModel``.

A DataTable holds every row of the queue as Rich ``Text`` cells: each refresh costs
O(rows) on the UI thread, the garbage collector walks ~300,000 cell objects at 100,000
jobs, and a row added or removed repaints the whole table.  This table holds its
rows as data (``RowModel``: key, sort key and one object per row) and asks a ``render``
callback for a row's cells only when that row is painted, keeping the cells of recently
painted rows in a bounded cache.  A refresh hands it upserts and removals; it then repaints
only the visible lines that show something new:

- a row whose data changed in place: its line, if it is on screen;
- rows added, removed or moved at or above the last visible line: the lines from there down;
- anything below the view: nothing but the scrollbar.

Only public Textual API is used (``ScrollView``, ``render_line``, ``Strip``, ``LRUCache``,
``set_reactive``, the scrollbar's public attributes), so a Textual upgrade cannot silently
break it; ``tests/tui/test_row_table.py`` checks what is painted.

Every row is one line; the header line stays at the top while the rows scroll under it.
The cursor belongs to a row *key*: it stays on its row when rows come and go above it,
and the view never scrolls because of a refresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..console_text import Column, columns_for
from .row_model import ModelChange, RowModel, Upsert

Cells = dict[str, Text]
Render = Callable[[object, float], tuple[Cells, float]]
"""A row's data and the time → its cells by column key, and until when they hold."""

PADDING = 1
"""Blank cells each side of a column's text (DataTable's default, kept for the look)."""
CELL_CACHE = 512
"""Rows whose cells are kept: a few screens' worth, however long the queue."""


@dataclass(slots=True, eq=False)
class _Painted:
    """A row's cells as last rendered, for which data, and until when they hold.

    Not frozen: a row whose new data renders to the same cells takes the new data and
    keeps this object, which is what its cached line (strip) is keyed by."""

    data: object
    cells: Cells
    valid_until: float


@dataclass(frozen=True, slots=True, eq=False)
class _Override:
    """Cells ``set_cell`` put over a row, for as long as the row holds ``data``."""

    data: object
    cells: Cells


class _TableMessage(Message):
    """What the table's messages share: the table they come from, as their ``control``
    (so ``@on(RowTable.RowSelected, "#jobs")`` selects by the table's id)."""

    def __init__(self, table: RowTable) -> None:
        super().__init__()
        self.table = table

    @property
    def control(self) -> RowTable:
        return self.table


class RowTable(ScrollView, can_focus=True):
    """Rows keyed by a string, in a ``RowModel``'s order, rendered line by line."""

    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        &:focus {
            background-tint: $foreground 5%;
            & > .rowtable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .rowtable--header {
                background-tint: $foreground 5%;
            }
        }
        & > .rowtable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .rowtable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .rowtable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .rowtable--marked {
            text-style: bold;
            color: $accent;
        }
    }
    """

    COMPONENT_CLASSES = {"rowtable--header", "rowtable--cursor", "rowtable--marked"}

    BINDINGS = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]

    class RowHighlighted(_TableMessage):
        """The cursor is on another row (a key, a click, or its row went away)."""

        def __init__(self, table: RowTable, key: str | None) -> None:
            super().__init__(table)
            self.key = key

    class RowSelected(_TableMessage):
        """Enter (or a click on the cursor's row) on a row."""

        def __init__(self, table: RowTable, key: str) -> None:
            super().__init__(table)
            self.key = key

    class HeaderSelected(_TableMessage):
        """A click on a column's label."""

        def __init__(self, table: RowTable, column: str) -> None:
            super().__init__(table)
            self.column = column

    def __init__(
        self,
        columns: Sequence[Column],
        *,
        render: Render,
        clock: Callable[[], float],
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.all_columns: tuple[Column, ...] = tuple(columns)
        """Every column this table can show; ``shown`` is the subset that fits."""
        self.shown: tuple[Column, ...] = columns_for(self.all_columns, 80)
        self._shown_widths = {c.key: c.width or 0 for c in self.shown}
        self._fit_width = 80
        """The width ``fit_columns`` was last given (the terminal's)."""
        self._wanted: dict[str, int] = {}
        """The widest cell painted in each column: a cut column widens into spare room."""
        self._refit_pending = False
        self.model = RowModel()
        self._render_row = render
        self._clock = clock
        self._painted: LRUCache[str, _Painted] = LRUCache(CELL_CACHE)
        self._strips: LRUCache[tuple[object, ...], Strip] = LRUCache(CELL_CACHE)
        self._overrides: dict[str, _Override] = {}
        """Cells set by ``set_cell``, shown until the row's data object changes."""
        self.marked: frozenset[str] = frozenset()
        """Rows marked for an action on several targets (space): a ``*`` and bold."""
        self._cursor_key: str | None = None
        self._cursor_index = 0
        """Where the cursor was last (its line when its row goes away)."""

    # ------------------------------------------------------------------ reading

    @property
    def row_count(self) -> int:
        return len(self.model)

    @property
    def selected_key(self) -> str | None:
        """The row key under the cursor, or None when the table is empty."""
        return self._cursor_key

    @property
    def cursor_row(self) -> int:
        """The cursor's line (0 = first row)."""
        if self._cursor_key is None:
            return 0
        index = self.model.index_of(self._cursor_key)
        return self._cursor_index if index is None else index

    @property
    def row_keys_in_order(self) -> list[str]:
        """The row keys, top to bottom (O(rows): for tests and small tables)."""
        return list(self.model.keys())

    def cells_of(self, key: str) -> Cells | None:
        """What row ``key`` shows now (rendered if it was not), by column key."""
        if key not in self.model:
            return None
        return self._cells(key)

    # ------------------------------------------------------------------ changing rows

    def apply(self, upserts: Iterable[Upsert], removals: Iterable[str] = ()) -> ModelChange:
        """Add, replace and remove rows; repaint only the visible lines that changed."""
        before = len(self.model)
        change = self.model.apply(upserts, removals)
        self._after(change, before)
        return change

    def reset(self, rows: Iterable[Upsert]) -> None:
        """Hold exactly ``rows`` (a new filter or sort): repaint every visible line."""
        before = len(self.model)
        self.model.reset(rows)
        self._after(ModelChange((), 0, len(self.model)), before)

    def sync(self, rows: Iterable[tuple[str, object]]) -> ModelChange:
        """Hold exactly ``rows``, in the given order (for small tables)."""
        before = len(self.model)
        change = self.model.sync(rows)
        self._after(change, before)
        return change

    def set_cell(self, key: str, column: str, value: Text) -> None:
        """Show ``value`` in one cell (``x`` asked Slurm again) until the row changes."""
        if key not in self.model:
            return
        data = self.model.data_of(key)
        before = self._overrides.get(key)
        cells = dict(before.cells) if before is not None and before.data is data else {}
        cells[column] = value
        self._overrides[key] = _Override(data, cells)
        self._refresh_rows([key])

    def set_marked(self, keys: Iterable[str]) -> None:
        """Mark exactly ``keys`` (the others lose their mark); repaints what changed."""
        marked = frozenset(keys)
        changed = marked ^ self.marked
        self.marked = marked
        self._refresh_rows(changed)

    def refresh_expired(self, late: float = 0.0) -> None:
        """Repaint visible rows whose cells no longer hold (an elapsed time turned over)
        ``late`` seconds ago or more.

        Why ``late``: a row repainted by a clock tick and again by the next refresh is
        two lines of bytes over SSH where one would do.  A clock tick that leaves rows to
        the refresh due within ``late`` seconds (and repaints them itself only if none
        came) writes a busy job's row once per refresh, not three times per two seconds.
        """
        deadline = self._clock() - late
        expired = []
        for key in self._visible_keys():
            painted = self._painted.get(key)
            if painted is not None and deadline >= painted.valid_until:
                expired.append(key)
        self._refresh_rows(expired)

    def _after(self, change: ModelChange, before: int) -> None:
        """Repaint what ``change`` moved or changed on screen (``before``: rows before it).

        Lines past the last row, before and after the change, were blank and stay blank:
        they are not repainted (over SSH each is a line of bytes).
        """
        if change.empty and self._cursor_key is not None:
            return
        overridden = [key for key in change.changed if self._overrides.pop(key, None)]
        self._update_size()
        if change.moved_from is not None:
            top = int(self.scroll_y)
            bottom = min(top + self._body_height(), max(before, change.length))
            if change.moved_from < bottom:
                first = max(change.moved_from, top)
                self.refresh(Region(0, 1 + first - top, self.size.width, bottom - first))
        self._refresh_rows(overridden)
        self._refresh_rows(self._shown_differently(change.changed))
        self._follow_cursor()

    def _follow_cursor(self) -> None:
        """After a change: keep the cursor on its row, or on its line if the row left."""
        model = self.model
        key = self._cursor_key
        index = model.index_of(key) if key is not None else None
        if index is not None:
            before, self._cursor_index = self._cursor_index, index
            top = int(self.scroll_y)
            if index != before and top <= before < top + max(1, self._body_height()):
                # A sort or new rows moved it: a cursor that was on screen stays on
                # screen (the steps pane follows it, so it was off-screen while its
                # steps were shown); one scrolled away from on purpose is left there.
                self._scroll_to_row(index)
            return
        if not len(model):
            # Rows that come after an empty table (another job's steps) are new: the
            # cursor starts on the first, not on the line the old cursor was on (it put
            # the next action on ``JOB.extern`` of a job never looked at).
            self._cursor_index = 0
            if key is not None:
                self._cursor_key = None
                self.post_message(self.RowHighlighted(self, None))
            return
        index = min(self._cursor_index, len(model) - 1)
        self._set_cursor(index, scroll=False)

    # ------------------------------------------------------------------ geometry

    def _body_height(self) -> int:
        """Lines available for rows (the header takes one)."""
        return max(0, self.size.height - 1)

    def _visible_keys(self) -> Sequence[str]:
        top = int(self.scroll_y)
        return self.model.slice(top, top + self._body_height())

    def _update_size(self) -> None:
        """The scrollable size: one line per row plus the header.

        ``virtual_size`` is a layout reactive: assigning it lays out and repaints the whole
        screen (over SSH, a screen of bytes for one job that ended).  When only the row
        count changed and the scrollbar stays as it is, it is set without that, and the
        scrollbar (public attributes) and the scroll position are updated directly.
        """
        width = sum((c.width or 0) + 2 * PADDING for c in self.shown)
        size = Size(min(width, max(self.size.width, 1)), len(self.model) + 1)
        if size == self.virtual_size:
            return
        needs_bar = size.height > self.container_size.height
        if (
            not self.is_mounted
            or not self.container_size.height
            or size.width != self.virtual_size.width
            or needs_bar != self.show_vertical_scrollbar
        ):
            self.virtual_size = size
            return
        self.set_reactive(RowTable.virtual_size, size)
        if needs_bar:
            bar = self.vertical_scrollbar
            bar.window_virtual_size = size.height
            bar.window_size = self.container_size.height
            bar.refresh()
        if self.scroll_y > self.max_scroll_y:
            self.scroll_to(y=self.max_scroll_y, animate=False)

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Show another layout (``l``, ``[columns]``): these columns, fitted to the width the
        table was last given; the rows are painted again from their data."""
        self.all_columns = tuple(columns)
        self._wanted = {}
        self._painted.clear()
        self.shown = ()
        self.fit_columns(self._fit_width)

    def fit_columns(self, width: int) -> bool:
        """Show the columns that fit ``width``, a column whose text was cut widened when
        the line has room to spare; repaint only when that changes anything."""
        self._fit_width = width
        wanted = columns_for(self.all_columns, width, self._wanted)
        if wanted == self.shown:
            return False
        self.shown = wanted
        self._shown_widths = {c.key: c.width or 0 for c in wanted}
        self._strips.clear()
        self._update_size()
        self.refresh()
        return True

    def _note_widths(self, cells: Cells) -> None:
        """Remember how wide ``cells`` are; a cell wider than its shown column asks for the
        columns to be fitted again (after this paint: never in the middle of one)."""
        wanted = self._wanted
        cut = False
        for column in self.all_columns:
            cell = cells.get(column.key)
            if cell is None or column.width is None:
                continue
            width = cell.cell_len
            if width > wanted.get(column.key, 0):
                wanted[column.key] = width
                cut = cut or width > self._shown_widths.get(column.key, width)
        if cut and not self._refit_pending:
            self._refit_pending = True
            self.call_later(self._refit)

    def _refit(self) -> None:
        self._refit_pending = False
        self.fit_columns(self._fit_width)

    def on_resize(self, event: events.Resize) -> None:
        self._strips.clear()
        self._update_size()
        self.refresh()

    # ------------------------------------------------------------------ painting

    def _paint(self, key: str) -> tuple[_Painted, _Override | None]:
        """The row's cells (rendered again only if its data changed or they expired),
        and the cells ``set_cell`` put over them, if any."""
        data = self.model.data_of(key)
        painted = self._painted.get(key)
        now = self._clock()
        if painted is None or painted.data is not data or now >= painted.valid_until:
            cells, valid_until = self._rendered(data, now)
            painted = self._remember(key, _Painted(data, cells, valid_until))
        override = self._overrides.get(key)
        if override is None:
            return painted, None
        if override.data is not data:
            del self._overrides[key]
            return painted, None
        return painted, override

    def _rendered(self, data: object, now: float) -> tuple[Cells, float]:
        """The ``render`` callback's cells for ``data``, their widths noted."""
        cells, valid_until = self._render_row(data, now)
        self._note_widths(cells)
        return cells, valid_until

    def _cells(self, key: str) -> Cells:
        painted, override = self._paint(key)
        return painted.cells if override is None else {**painted.cells, **override.cells}

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            header = self.get_component_rich_style("rowtable--header")
            header_key: tuple[object, ...] = ("header", width, self.shown, base, header)
            strip = self._strips.get(header_key)
            if strip is None:
                labels = {c.key: Text(c.label) for c in self.shown}
                strip = self._line(labels, base + header, width, base)
                self._strips[header_key] = strip
            return strip
        index = int(self.scroll_y) + y - 1
        if index >= len(self.model):
            return Strip.blank(width, base)
        row_key = self.model.key_at(index)
        painted, override = self._paint(row_key)
        style = base
        mark = row_key in self.marked
        if mark:
            style = style + self.get_component_rich_style("rowtable--marked")
        if row_key == self._cursor_key:
            style = style + self.get_component_rich_style("rowtable--cursor")
        # The key holds the painted cells themselves (compared by identity): a strip
        # can never be taken for other cells that happen to reuse a freed id.
        key: tuple[object, ...] = (row_key, painted, override, width, self.shown, style, mark)
        strip = self._strips.get(key)
        if strip is None:
            cells = painted.cells if override is None else {**painted.cells, **override.cells}
            strip = self._line(cells, style, width, base, mark=mark)
            self._strips[key] = strip
        return strip

    def _line(
        self, cells: Cells, style: Style, width: int, base: Style, *, mark: bool = False
    ) -> Strip:
        """One line: each shown column's cell, padded, cut to its width; a marked row
        has ``*`` in its first padding cell (visible without colour too)."""
        line = Text(style=style, end="", no_wrap=True)
        pad = " " * PADDING
        for index, column in enumerate(self.shown):
            cell_width = column.width or 0
            cell = cells.get(column.key)
            text = cell.copy() if cell is not None else Text()
            text.truncate(cell_width, overflow="ellipsis")
            line.append("*" + pad[1:] if mark and index == 0 else pad)
            if text.justify == "right":
                line.append(" " * (cell_width - text.cell_len))
                line.append_text(text)
            else:
                line.append_text(text)
                line.append(" " * (cell_width - text.cell_len))
            line.append(pad)
        # Rich leaves a plain part's style None; Textual's filters (NO_COLOR's monochrome)
        # read every segment's style, so each gets one.
        null = Style.null()
        segments = [
            Segment(text, style or null, control)
            for text, style, control in line.render(self.app.console)
        ]
        strip = Strip(segments, line.cell_len)
        return strip.crop_extend(0, width, base).simplify()

    def _shown_differently(self, keys: Iterable[str]) -> list[str]:
        """Of rows whose data changed, those whose cells on screen change too.

        A row's data is often new while what it shows is not (a step's run time moved in
        a column too narrow to show, a job's record changed in a field without a
        column): its cells are rendered again, compared with those painted, and when
        equal the row keeps its painted cells -- and its line, which is not repainted
        (over SSH, a line of bytes for nothing).  Only rows on screen that were painted
        are compared; others are rendered when they are painted.
        """
        now = self._clock()
        top = int(self.scroll_y)
        bottom = top + self._body_height()
        repaint = []
        for key in keys:
            index = self.model.index_of(key)
            if index is None or not top <= index < bottom:
                continue  # off screen: rendered afresh whenever it is painted
            painted = self._painted.get(key)
            if painted is None or now >= painted.valid_until:
                repaint.append(key)
                continue
            data = self.model.data_of(key)
            cells, valid_until = self._rendered(data, now)
            if cells == painted.cells:
                painted.data = data
                painted.valid_until = valid_until
            else:
                self._remember(key, _Painted(data, cells, valid_until))
                repaint.append(key)
        return repaint

    def _remember(self, key: str, painted: _Painted) -> _Painted:
        """Keep ``painted`` as the row's cells.  Textual's ``LRUCache.set`` keeps the old
        value of a key it holds, so the old one is dropped first (else every paint of a
        changed row rendered it again, and its lines were never taken from the cache)."""
        self._painted.discard(key)
        self._painted[key] = painted
        return painted

    def _refresh_rows(self, keys: Iterable[str]) -> None:
        """Repaint the lines of ``keys`` that are on screen."""
        top = int(self.scroll_y)
        bottom = top + self._body_height()
        for key in keys:
            index = self.model.index_of(key)
            if index is not None and top <= index < bottom:
                self.refresh(Region(0, 1 + index - top, self.size.width, 1))

    # ------------------------------------------------------------------ cursor

    def select_key(self, key: str, *, scroll: bool = True) -> bool:
        """Put the cursor on row ``key``; False when there is no such row."""
        index = self.model.index_of(key)
        if index is None:
            return False
        self._set_cursor(index, scroll=scroll)
        return True

    def move_cursor(self, *, row: int, scroll: bool = True) -> None:
        """Put the cursor on line ``row`` (clamped to the rows there are)."""
        if len(self.model):
            self._set_cursor(max(0, min(row, len(self.model) - 1)), scroll=scroll)

    def _set_cursor(self, index: int, *, scroll: bool) -> None:
        old = self._cursor_key
        key = self.model.key_at(index)
        self._cursor_key = key
        self._cursor_index = index
        if old != key:
            self._refresh_rows([k for k in (old, key) if k is not None])
            self.post_message(self.RowHighlighted(self, key))
        if scroll:
            self._scroll_to_row(index)

    def _scroll_to_row(self, index: int) -> None:
        top = int(self.scroll_y)
        height = max(1, self._body_height())
        if index < top:
            self.scroll_to(y=index, animate=False)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False)

    def _step(self, delta: int) -> None:
        if not len(self.model):
            return
        if self._cursor_key is None:
            self._set_cursor(0, scroll=True)
            return
        self.move_cursor(row=self.cursor_row + delta)

    def action_cursor_up(self) -> None:
        self._step(-1)

    def action_cursor_down(self) -> None:
        self._step(1)

    def action_page_up(self) -> None:
        self._step(-max(1, self._body_height() - 1))

    def action_page_down(self) -> None:
        self._step(max(1, self._body_height() - 1))

    def action_first(self) -> None:
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self.move_cursor(row=len(self.model) - 1)

    def action_select_cursor(self) -> None:
        if self._cursor_key is not None:
            self.post_message(self.RowSelected(self, self._cursor_key))

    def on_focus(self) -> None:
        self._refresh_rows([self._cursor_key] if self._cursor_key else [])

    def on_blur(self) -> None:
        self._refresh_rows([self._cursor_key] if self._cursor_key else [])

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            x = 0
            for column in self.shown:
                x += (column.width or 0) + 2 * PADDING
                if offset.x < x:
                    self.post_message(self.HeaderSelected(self, column.key))
                    return
            return
        index = int(self.scroll_y) + offset.y - 1
        if index >= len(self.model):
            return
        if self.model.key_at(index) == self._cursor_key or event.chain > 1:
            self._set_cursor(index, scroll=True)
            self.post_message(self.RowSelected(self, self.model.key_at(index)))
        else:
            self._set_cursor(index, scroll=True)
