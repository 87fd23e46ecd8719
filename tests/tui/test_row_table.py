"""RowTable in a real (headless) Textual app: what it paints, where its cursor goes."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from sckpt.tui.console_text import Column, columns_for
from sckpt.tui.widgets.row_table import RowTable
from textual.app import App, ComposeResult
from textual.strip import Strip

COLUMNS = (Column("id", "Id", 8), Column("name", "Name", None))


class Row:
    """A row's data: a new object means a changed row."""

    def __init__(self, name: str) -> None:
        self.name = name


class TableApp(App[None]):
    COLUMNS: tuple[Column, ...] = COLUMNS

    def __init__(self, rows: int) -> None:
        super().__init__()
        self.rendered: list[str] = []
        self.messages: list[tuple[str, str | None]] = []
        self.start = rows

    def render_row(self, data: object, now: float) -> tuple[dict[str, Text], float]:
        assert isinstance(data, Row)
        self.rendered.append(data.name)
        return {"id": Text(data.name.split()[0]), "name": Text(data.name)}, float("inf")

    def compose(self) -> ComposeResult:
        yield RowTable(self.COLUMNS, render=self.render_row, clock=lambda: 0.0, id="t")

    def on_mount(self) -> None:
        table = self.query_one(RowTable)
        table.fit_columns(self.size.width)
        table.reset((str(i), i, Row(f"{i} row")) for i in range(self.start))
        table.focus()

    def on_row_table_row_highlighted(self, event: RowTable.RowHighlighted) -> None:
        self.messages.append(("highlighted", event.key))

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        self.messages.append(("selected", event.key))

    def on_row_table_header_selected(self, event: RowTable.HeaderSelected) -> None:
        self.messages.append(("header", event.column))


def lines(table: RowTable) -> list[str]:
    return [Strip.join([table.render_line(y)]).text for y in range(table.size.height)]


def count_paints(table: RowTable) -> list[int]:
    """Record the lines Textual asks the table to paint."""
    painted: list[int] = []
    render_line = table.render_line

    def spy(y: int) -> Strip:
        painted.append(y)
        return render_line(y)

    table.render_line = spy  # type: ignore[method-assign]
    return painted


async def test_only_visible_rows_are_rendered_at_100000_rows() -> None:
    app = TableApp(100_000)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(RowTable)
        assert table.row_count == 100_000
        assert len(set(app.rendered)) <= 11  # the lines under the header, not the queue
        assert lines(table)[0].split() == ["Id", "Name"]
        assert lines(table)[1].split()[:2] == ["0", "0"]
        app.rendered.clear()
        # Three rows change: one on screen, two far below; one row is added far below.
        table.apply(
            [
                ("3", 3, Row("3 new")),
                ("5000", 5000, Row("5000 x")),
                ("90000", 90000, Row("90000 x")),
                ("100000", 100000, Row("100000 n")),
            ]
        )
        await pilot.pause()
        assert app.rendered == ["3 new"]
        assert "3 new" in lines(table)[4]


async def test_a_row_removed_out_of_view_repaints_no_visible_line() -> None:
    app = TableApp(200)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(RowTable)
        painted = count_paints(table)
        table.apply([], ["150", "160"])
        table.apply([("500", 500, Row("500 new"))])
        await pilot.pause()
        assert painted == []
        assert table.row_count == 199
        table.apply([], ["2"])  # on screen: lines from there down move up
        await pilot.pause()
        assert painted and min(painted) == 3  # header and rows 0-1 stay as they were
        assert lines(table)[3].split()[0] == "3"


async def test_blank_lines_below_the_rows_are_not_repainted() -> None:
    app = TableApp(5)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(RowTable)
        painted = count_paints(table)
        table.apply([], ["2"])  # rows 3-4 move up; line 5 (row 4's) becomes blank
        await pilot.pause()
        assert sorted(set(painted)) == [3, 4, 5]
        painted.clear()
        table.apply([("9", 9, Row("9 new"))])  # a row added at the end: its line only
        await pilot.pause()
        assert sorted(set(painted)) == [5]


async def test_a_changed_row_that_shows_the_same_cells_is_not_repainted() -> None:
    app = TableApp(5)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(RowTable)
        painted = count_paints(table)
        table.apply([("1", 1, Row("1 row")), ("2", 2, Row("2 new"))])  # new data objects
        await pilot.pause()
        assert sorted(set(painted)) == [3]  # row 2's line only: row 1 shows what it showed
        assert lines(table)[3].split()[:2] == ["2", "2"]


async def test_a_changed_row_is_rendered_once_however_often_it_is_painted() -> None:
    app = TableApp(5)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(RowTable)
        table.apply([("2", 2, Row("2 new"))])
        for _ in range(3):
            table.refresh()  # what a resize, a scroll back or a cursor move repaint
            await pilot.pause()
        assert app.rendered.count("2 new") == 1


async def test_cursor_follows_its_row_and_home_end_page_keys() -> None:
    app = TableApp(100)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(RowTable)
        for _ in range(5):
            await pilot.press("down")
        assert table.selected_key == "5" and table.cursor_row == 5
        table.apply([("-1", -1, Row("-1 above")), ("-2", -2, Row("-2 above"))])
        await pilot.pause()
        assert table.selected_key == "5" and table.cursor_row == 7
        assert table.scroll_y == 0  # a refresh never scrolls the view
        table.apply([], ["5"])  # its row goes: the cursor stays on its line
        await pilot.pause()
        assert table.selected_key == "6" and ("highlighted", "6") in app.messages
        await pilot.press("end")
        assert table.selected_key == "99" and table.scroll_y > 0
        await pilot.press("home")
        assert table.selected_key == "-2" and table.scroll_y == 0
        await pilot.press("pagedown")
        assert table.cursor_row == 10
        await pilot.press("enter")
        assert app.messages[-1] == ("selected", table.selected_key)


async def test_clicks_and_set_cell() -> None:
    app = TableApp(20)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(RowTable)
        await pilot.click(RowTable, offset=(15, 0))
        assert app.messages[-1] == ("header", "name")
        await pilot.click(RowTable, offset=(3, 4))
        assert table.selected_key == "3" and app.messages[-1] == ("highlighted", "3")
        await pilot.click(RowTable, offset=(3, 4))
        assert app.messages[-1] == ("selected", "3")
        table.set_cell("3", "name", Text("checked"))
        await pilot.pause()
        assert "checked" in lines(table)[4]
        cells: Any = table.cells_of("3")
        assert cells["name"].plain == "checked"
        table.apply([("3", 3, Row("3 later"))])  # the row changed: its own cells again
        await pilot.pause()
        assert "3 later" in lines(table)[4]


async def test_fit_columns_and_resize() -> None:
    app = TableApp(5)
    async with app.run_test(size=(40, 8)) as pilot:
        await pilot.pause()
        table = app.query_one(RowTable)
        narrow = lines(table)[1]
        await pilot.resize_terminal(100, 8)
        table.fit_columns(100)
        await pilot.pause()
        assert len(lines(table)[1]) == 100 and lines(table)[1].startswith(narrow.rstrip()[:5])


async def test_no_color_renders(monkeypatch: Any) -> None:
    # NO_COLOR makes Textual filter every segment's style: none may be missing.
    monkeypatch.setenv("NO_COLOR", "1")
    app = TableApp(30)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        table = app.query_one(RowTable)
        assert all(segment.style is not None for segment in table.render_line(2))
        await pilot.press("down", "down")
        await pilot.pause()
        assert "2 row" in lines(table)[3] and "NoneType" not in str(app.return_value)


def test_columns_for_widens_cut_columns_into_the_spare_width() -> None:
    columns = (
        Column("id", "Id", 6),
        Column("name", "Name", 8),
        Column("where", "Where", 8),
        Column("rest", "Rest", None, room=20),
    )
    # Nothing to spare at 60 columns: the flexible column is below its room.
    narrow = {c.key: c.width for c in columns_for(columns, 50, {"name": 18})}
    assert narrow["name"] == 8
    wide = {c.key: c.width for c in columns_for(columns, 120, {"name": 18, "where": 11})}
    assert wide["name"] == 18 and wide["where"] == 11 and wide["id"] == 6
    assert wide["rest"] == 120 - (6 + 18 + 11 + 3 * 2) - 4 - 2  # what is left, padded
    # Not enough for both: the smaller need is met, the rest shared.
    tight = {c.key: c.width for c in columns_for(columns, 70, {"name": 40, "where": 10})}
    assert tight["where"] == 10 and tight["rest"] == 20
    assert sum(tight[k] or 0 for k in ("id", "name", "where", "rest")) + 8 + 4 <= 70


class LongNames(TableApp):
    COLUMNS = (Column("id", "Id", 8), Column("name", "Name", 4), Column("x", "X", None, room=5))

    def render_row(self, data: object, now: float) -> tuple[dict[str, Text], float]:
        assert isinstance(data, Row)
        return {"id": Text(data.name.split()[0]), "name": Text(f"{data.name} is long")}, 1e18


async def test_a_cut_column_widens_into_spare_width_once_painted() -> None:
    app = LongNames(3)
    async with app.run_test(size=(60, 8)) as pilot:
        table = app.query_one(RowTable)
        await pilot.pause()
        await pilot.pause()
        assert "0 row is long" in lines(table)[1]
        widths = {c.key: c.width for c in table.shown}
        assert widths["name"] == len("0 row is long")
        await pilot.resize_terminal(20, 8)
        table.fit_columns(20)
        await pilot.pause()
        assert "0 row is long" not in lines(table)[1]  # no room: cut
