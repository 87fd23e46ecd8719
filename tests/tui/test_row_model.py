"""RowModel against a naive model: a plain list re-sorted after every change."""

from __future__ import annotations

import random
from dataclasses import dataclass

from sckpt.tui.widgets.row_model import RowModel


class Naive:
    def __init__(self) -> None:
        self.rows: dict[str, tuple[int, object]] = {}

    def order(self) -> list[str]:
        return [key for key, _ in sorted(self.rows.items(), key=lambda kv: (kv[1][0], kv[0]))]


def test_random_changes_match_a_naive_model() -> None:
    rng = random.Random(15)
    model, naive = RowModel(), Naive()
    keys = [f"k{i}" for i in range(300)]
    for round_ in range(2000):
        if round_ % 500 == 0:
            rows = [(k, rng.randint(0, 50), object()) for k in rng.sample(keys, 100)]
            model.reset(rows)
            naive.rows = {k: (s, d) for k, s, d in rows}
            continue
        before = naive.order()
        upserts = []
        for key in rng.sample(keys, rng.randint(0, 6)):
            old = naive.rows.get(key)
            if old is not None and rng.random() < 0.4:
                upserts.append((key, old[0], object()))  # new data, same place
            elif old is not None and rng.random() < 0.2:
                upserts.append((key, old[0], old[1]))  # nothing new at all
            else:
                upserts.append((key, rng.randint(0, 50), object()))
        removals = [
            k
            for k in rng.sample(keys, rng.randint(0, 3))
            if k not in dict.fromkeys(k for k, _, _ in upserts)
        ]
        change = model.apply(upserts, removals)
        for key in removals:
            naive.rows.pop(key, None)
        in_place = []
        for key, sort_key, data in upserts:
            old = naive.rows.get(key)
            if old is not None and old[0] == sort_key and old[1] is not data:
                in_place.append(key)
            naive.rows[key] = (sort_key, data)
        after = naive.order()
        assert list(model.keys()) == after
        assert len(model) == len(after) == change.length
        assert sorted(change.changed) == sorted(in_place)
        # Every line above the reported one shows what it showed before.
        first_moved = next(
            (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
            None if len(before) == len(after) else min(len(before), len(after)),
        )
        if first_moved is None:
            assert change.moved_from is None or before == after
        else:
            assert change.moved_from is not None and change.moved_from <= first_moved
        for index, key in enumerate(after):
            assert model.key_at(index) == key
            assert model.index_of(key) == index
            assert model.data_of(key) is naive.rows[key][1]


def test_sync_keeps_the_given_order_and_reports_in_place_changes() -> None:
    model = RowModel()
    a, b, c = object(), object(), object()
    model.sync([("x", a), ("y", b)])
    change = model.sync([("x", a), ("y", c)])
    assert change.changed == ("y",) and change.moved_from is None
    change = model.sync([("z", a), ("x", a), ("y", c)])
    assert list(model.keys()) == ["z", "x", "y"] and change.moved_from == 0
    assert model.sync([("z", a), ("x", a), ("y", c)]).empty
    assert model.slice(1, 10) == ["x", "y"]


def test_sync_keeps_a_row_whose_new_data_is_equal() -> None:
    """A job's steps arrive as new objects on every refresh that changed the job; a step
    that did not change must not count as changed (over SSH, a repainted line)."""

    @dataclass(frozen=True)
    class Step:
        name: str
        state: str

    model = RowModel()
    first = Step("batch", "RUNNING")
    model.sync([("b", first), ("e", Step("extern", "RUNNING"))])
    change = model.sync([("b", Step("batch", "RUNNING")), ("e", Step("extern", "COMPLETING"))])
    assert change.changed == ("e",)
    assert model.data_of("b") is first
