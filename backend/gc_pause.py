"""Pausing Python's cyclic garbage collector while many records are built.

Why: the simulated cluster, its listing and the engines' views are frozen records and
tuples with no reference cycles.  Building hundreds of thousands of them with the collector
running makes it walk the young objects again and again (and, after ``gc.freeze``, run full
collections over everything made since): at 100,000 jobs that was half of the cluster's
generation and half of the first snapshot (0.6 of 1.2 s).  Reference counting still frees
them; cyclic garbage made meanwhile is collected once the collector runs again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FREEZE_FROM = 10_000
"""From this many jobs built in one go, what was built is moved out of the collector's sight
(``freeze_built``)."""


@contextmanager
def cyclic_gc_paused(pause: bool = True) -> Iterator[None]:
    """The cyclic GC off inside the block (``pause`` False: left as it is), and back on
    after it if it was on before.  A block nested in another, or running in another thread
    meanwhile, finds it off and leaves it to the outer one to turn back on."""
    enabled = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause and enabled:
            gc.enable()


def freeze_built(count: int) -> None:
    """After a paused build of ``count`` jobs' records: from ``FREEZE_FROM`` on, hide
    everything that exists from the cyclic GC (``gc.freeze``; still freed by reference
    counting).  Else the first collections after the pause walk the hundreds of thousands
    of young records two or three times as they age (0.4 s after the demo's first snapshot
    at 100,000 jobs, in whatever runs next)."""
    if count >= FREEZE_FROM:
        gc.freeze()
