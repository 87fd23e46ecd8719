"""A table's rows as data: keys kept in order by a sort key, and what each row holds.

The console's jobs table can hold 100,000 rows and receives a few changes per refresh.
Keeping the rows here (two small objects per row, no cell text) and applying a refresh as
a list of upserts and removals costs O(changes x log rows), so the UI thread's share of a
refresh does not grow with the queue.  Rows are ordered by (sort key, row key) in a
``SortedList`` (sortedcontainers: the well-kept pure-Python sorted list, O(log n) insert,
remove and positional lookup), so equal sort keys keep a stable order.

Nothing here knows Textual: ``RowTable`` turns rows into lines, and the tests drive this
model alone against a naive list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sortedcontainers import SortedList

Upsert = tuple[str, Any, object]
"""(row key, sort key, data): sort keys of one model must compare with each other."""


@dataclass(frozen=True, slots=True)
class ModelChange:
    """What an ``apply`` changed, so the table repaints no more than that."""

    changed: tuple[str, ...]
    """Rows that kept their place and hold new data."""
    moved_from: int | None
    """The lowest index at which rows were added, removed or moved (None: none were);
    every row from there down is now on another line."""
    length: int

    @property
    def empty(self) -> bool:
        return not self.changed and self.moved_from is None


class RowModel:
    """Row keys in sort order, each with its sort key and data."""

    def __init__(self) -> None:
        self._order: SortedList[tuple[Any, str]] = SortedList()
        """(sort key, row key) pairs."""
        self._rows: dict[str, tuple[Any, object]] = {}
        """Row key → (sort key, data)."""

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def reset(self, rows: Iterable[Upsert]) -> None:
        """Hold exactly ``rows`` (a new view); a key given twice keeps its first row."""
        table: dict[str, tuple[Any, object]] = {}
        for key, sort_key, data in rows:
            if key not in table:
                table[key] = (sort_key, data)
        self._rows = table
        self._order = SortedList((sort_key, key) for key, (sort_key, _) in table.items())

    def apply(self, upserts: Iterable[Upsert], removals: Iterable[str] = ()) -> ModelChange:
        """Add or replace ``upserts`` and drop ``removals``; O(changes x log rows).

        An upsert with the row's current sort key and data object changes nothing; one
        with a new data object and the same sort key changes the row in place.
        """
        rows = self._rows
        order = self._order
        changed: list[str] = []
        moved: int | None = None

        def moved_at(index: int) -> None:
            nonlocal moved
            moved = index if moved is None else min(moved, index)

        for key in removals:
            found = rows.pop(key, None)
            if found is not None:
                pair = (found[0], key)
                moved_at(order.index(pair))
                order.remove(pair)
        for key, sort_key, data in upserts:
            found = rows.get(key)
            if found is not None:
                if found[0] == sort_key:
                    if found[1] is not data:
                        rows[key] = (sort_key, data)
                        changed.append(key)
                    continue
                pair = (found[0], key)
                moved_at(order.index(pair))
                order.remove(pair)
            rows[key] = (sort_key, data)
            order.add((sort_key, key))
            moved_at(order.index((sort_key, key)))
        return ModelChange(tuple(changed), moved, len(rows))

    def sync(self, rows: Iterable[tuple[str, object]]) -> ModelChange:
        """Hold exactly ``rows``, given in display order (their position is the sort key).

        For small tables (a job's steps): O(rows).  A row whose new data equals what it
        holds keeps its object and counts as unchanged: a job's steps come as new objects
        whenever the job changed, and repainting its unchanged steps was, over SSH, most
        of an idle console's bytes on a busy cluster.
        """
        held = self._rows
        wanted: dict[str, tuple[int, object]] = {}
        for position, (key, data) in enumerate(rows):
            if key not in wanted:
                found = held.get(key)
                if found is not None and found[1] is not data and found[1] == data:
                    data = found[1]
                wanted[key] = (position, data)
        removals = [key for key in self._rows if key not in wanted]
        return self.apply(
            ((key, position, data) for key, (position, data) in wanted.items()), removals
        )

    # ------------------------------------------------------------------ reading

    def index_of(self, key: str) -> int | None:
        """The row's line in the table (0 = first row), or None."""
        found = self._rows.get(key)
        if found is None:
            return None
        return int(self._order.index((found[0], key)))

    def key_at(self, index: int) -> str:
        """The row key on line ``index``; IndexError past the end."""
        if index < 0:
            raise IndexError(index)
        return str(self._order[index][1])

    def data_of(self, key: str) -> object:
        """What row ``key`` holds; KeyError when there is no such row."""
        return self._rows[key][1]

    def slice(self, start: int, stop: int) -> Sequence[str]:
        """The row keys on lines ``start`` to ``stop`` (exclusive)."""
        return [key for _, key in self._order[max(0, start) : max(0, stop)]]

    def keys(self) -> Iterator[str]:
        """Every row key, in order (O(rows): for tests and small tables)."""
        return (key for _, key in self._order)
