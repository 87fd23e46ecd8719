"""A worker's long pass gives way while a key is handled (``backend/give_way.py``).

What is observable: the items a ``paced`` pass hands out (all, in order, whatever the
group size), and how far a pass on a marked worker thread has got while a hold is on
(it stops at a group boundary and goes on once released or expired).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sckpt.backend import give_way

LONG = 60.0
"""A hold that outlasts any test: only ``release`` ends it."""


@pytest.fixture(autouse=True)
def _free_way() -> Iterator[None]:
    yield
    while give_way.held():
        give_way.release()


@pytest.mark.parametrize("count", [0, 1, 3, 4, 5, 12, 1000])
def test_a_paced_pass_hands_out_every_item_in_order(count: int) -> None:
    items = [object() for _ in range(count)]
    assert list(give_way.paced(items, every=4)) == items
    assert list(give_way.paced(iter(items), every=4)) == items
    assert list(give_way.paced(items)) == items


class _Worker(threading.Thread):
    """A marked worker walking ``count`` items in groups of ``every``; ``seen`` grows per
    item, ``started`` is set just before its pass."""

    def __init__(self, count: int, every: int) -> None:
        super().__init__(daemon=True)
        self.count = count
        self.every = every
        self.seen: list[int] = []
        self.started = threading.Event()

    def run(self) -> None:
        with give_way.yielding():
            self.started.set()
            for item in give_way.paced(range(self.count), every=self.every):
                self.seen.append(item)


def test_a_marked_worker_stops_at_a_group_boundary_while_held_and_goes_on_when_released() -> None:
    give_way.hold(LONG)
    worker = _Worker(12, 4)
    worker.start()
    assert worker.started.wait(10)
    worker.join(0.3)
    assert worker.is_alive() and worker.seen == []  # held before its first group
    give_way.release()
    worker.join(10)
    assert not worker.is_alive() and worker.seen == list(range(12))


def test_overlapping_holds_keep_the_way_until_each_is_released() -> None:
    give_way.hold(LONG)
    give_way.hold(LONG)
    give_way.release()
    assert give_way.held()
    worker = _Worker(8, 4)
    worker.start()
    assert worker.started.wait(10)
    worker.join(0.3)
    assert worker.is_alive() and worker.seen == []
    give_way.release()
    assert not give_way.held()
    worker.join(10)
    assert worker.seen == list(range(8))


def test_a_hold_never_released_ends_by_itself() -> None:
    # A key an input field kept never releases: the worker goes on after the hold's time,
    # and the way is free again (the forgotten hold is not counted any more).
    give_way.hold(0.2)
    worker = _Worker(8, 4)
    worker.start()
    worker.join(30)
    assert not worker.is_alive() and worker.seen == list(range(8))
    assert not give_way.held()


def test_an_unmarked_thread_never_waits() -> None:
    # The UI thread (and the command line) walks the same passes: waiting there for its
    # own release would stall it until the hold ends.
    give_way.hold(LONG)
    assert list(give_way.paced(range(10), every=2)) == list(range(10))
    assert give_way.held()
