"""Long passes on a worker thread give way to the thread that answers the operator's keys.

Why: CPython runs one thread's Python at a time (the GIL).  A thread that wants it back
waits until the holder drops it, which a thread running Python does only when asked to,
after ``sys.getswitchinterval()`` (5 ms).  A key's way to the screen crosses Textual's
event loop a dozen times (the app's queue, the focused widget's, each parent's as it
bubbles, the screen's update timer), and each crossing gives the GIL away (the loop's
``select``) and then waits up to 5 ms to have it back while a console refresh runs Python
on its worker thread: at 100,000 jobs, where a changed refresh is ~0.3 s of Python, a key
pressed during one took 50-70 ms to reach the screen (bench/README).  A shorter switch
interval made it worse: it slices the UI thread's own work as often as the refresh's.

So the UI thread *holds* the way when a key arrives (``hold``) and lets it go once the key
has been handled and the screen written (``release``), or after ``MAX_HOLD`` whatever
happens.  Long passes on a worker thread that ``yielding`` marks (the console's refresh)
walk their items through ``paced``, which calls ``give_way`` every ``PACE`` items: while
the way is held, that blocks, with the GIL released, until it is let go.  Anywhere else
(the command line, a thread not marked, nothing held) it costs one test per ``PACE`` items.
Process-wide, like the GIL it works around.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain, islice
from typing import TypeVar

T = TypeVar("T")

MAX_HOLD = 0.1
"""Seconds a hold lasts at most (a key whose release never comes: one an input field
took, a quit): a refresh is delayed by no more than this per key."""
PACE = 256
"""Items between two calls of ``give_way`` in ``paced`` (a few hundred microseconds of a
refresh's Python per item group at 100,000 jobs)."""


class _Way:
    """Holds counted (keys may overlap), each extending the deadline; released at zero."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.free = threading.Event()
        self.free.set()
        self.holds = 0
        self.until = 0.0
        self.local = threading.local()


_way = _Way()


def hold(seconds: float | None = None) -> None:
    """A key arrived (any thread): marked worker threads pause at their next ``give_way``
    until ``release`` or ``seconds`` (``MAX_HOLD``) from now."""
    with _way.lock:
        _way.holds += 1
        _way.until = time.monotonic() + (MAX_HOLD if seconds is None else seconds)
        _way.free.clear()


def release() -> None:
    """A key's screen update is written: one hold less (the way is free at none)."""
    with _way.lock:
        _way.holds = max(0, _way.holds - 1)
        if not _way.holds:
            _way.free.set()


def held() -> bool:
    """Whether a worker's ``give_way`` would pause now."""
    return not _way.free.is_set() and time.monotonic() < _way.until


def give_way() -> None:
    """On a thread ``yielding`` marks: wait (GIL released) while a key is being handled."""
    if _way.free.is_set() or not getattr(_way.local, "yields", False):
        return
    remaining = _way.until - time.monotonic()
    if remaining > 0:
        _way.free.wait(remaining)
    if not _way.free.is_set() and time.monotonic() >= _way.until:
        with _way.lock:  # expired: holds whose release never came are forgotten
            if time.monotonic() >= _way.until:
                _way.holds = 0
                _way.free.set()


@contextmanager
def yielding() -> Iterator[None]:
    """Mark the calling thread as one whose ``paced`` passes give way (a worker, never the
    UI thread: it would wait for itself)."""
    before = getattr(_way.local, "yields", False)
    _way.local.yields = True
    try:
        yield
    finally:
        _way.local.yields = before


def paced(items: Iterable[T], every: int = PACE) -> Iterator[T]:
    """``items`` unchanged, with ``give_way`` called before each ``every`` of them.

    The items are taken in groups by ``islice`` and chained in C, so an unheld pass pays
    one Python call per group, not per item.
    """
    source = iter(items)

    def group() -> tuple[T, ...]:
        give_way()
        return tuple(islice(source, every))

    stop: tuple[T, ...] = ()
    groups: Callable[[], tuple[T, ...]] = group
    return chain.from_iterable(iter(groups, stop))
