"""KeyedTable.sync when many rows leave at once: the table is refilled, not renumbered
row by row (quadratic in DataTable), and shows the same thing either way."""

from __future__ import annotations

import asyncio

from rich.text import Text
from sckpt.tui.console_text import JOB_COLUMNS
from sckpt.tui.widgets.keyed_table import KeyedTable
from textual.app import App, ComposeResult


class _Host(App[None]):
    def compose(self) -> ComposeResult:
        yield KeyedTable(JOB_COLUMNS, id="t")


def _rows(ids: range | list[int], tag: str = "x") -> list[tuple[str, dict[str, Text]]]:
    return [
        (str(i), {c.key: Text(str(i) if c.key == "id" else tag) for c in JOB_COLUMNS}) for i in ids
    ]


def _shown(table: KeyedTable) -> list[tuple[str, ...]]:
    """What the DataTable itself holds, row by row (not the sync bookkeeping)."""
    return [tuple(cell.plain for cell in table.get_row_at(i)) for i in range(table.row_count)]


def test_many_rows_leaving_keep_order_cells_and_cursor() -> None:
    async def run() -> None:
        app = _Host()
        async with app.run_test(size=(120, 30)) as pilot:
            table = app.query_one(KeyedTable)
            table.fit_columns(120)
            table.sync(_rows(range(600)))
            await pilot.pause()
            assert table.select_key("450")
            left = [i for i in range(600) if not 100 <= i < 100 + 150]
            expected = _rows(left, tag="y") + _rows([700, 701])  # changed cells, new rows
            table.sync(expected)
            await pilot.pause()
            assert table.row_keys_in_order == [key for key, _ in expected]
            assert _shown(table) == [
                tuple(cells[c.key].plain for c in table.shown) for _, cells in expected
            ]
            assert table.selected_key == "450"
            # The few-rows path keeps working on the refilled table.
            table.sync(expected[:-1])
            await pilot.pause()
            assert table.row_keys_in_order == [key for key, _ in expected[:-1]]
            assert table.selected_key == "450"

    asyncio.run(run())


def test_a_key_listed_twice_is_shown_once_and_paints() -> None:
    """Rows with a repeated key (Slurm listed a waiting srun as several steps with one id)
    give one row, the first, and the table still paints and moves its cursor."""

    async def run() -> None:
        app = _Host()
        async with app.run_test(size=(120, 30)) as pilot:
            table = app.query_one(KeyedTable)
            table.fit_columns(120)
            rows = _rows([1, 2, 3]) + _rows([3, 3], tag="dup") + _rows([4])
            table.sync(rows)
            await pilot.pause()
            assert table.row_keys_in_order == ["1", "2", "3", "4"]
            assert _shown(table)[2] == tuple(
                rows[2][1][c.key].plain for c in table.shown
            )  # the first of the three
            for _ in range(5):
                await pilot.press("down")
            await pilot.pause()
            assert table.selected_key == "4"
            assert "4" in "".join(line.text for line in table.render_lines(table.region))

    asyncio.run(run())
