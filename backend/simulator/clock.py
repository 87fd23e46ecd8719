"""Simulated time: the clock the controller reads and the queue of what happens when.

The cluster reads an injectable clock (``time.time`` for the demo, ``ManualClock`` for the
tests: it only moves when told to).  Events (a job's start or end, a checkpoint's end, a new
submission, MinJobAge's purge) wait in ``EventQueue`` and are applied lazily on every call,
in time order (``events.Timeline``), so the outcome does not depend on how often anyone
looks.
"""

from __future__ import annotations

import heapq

DEMO_EPOCH = 1_780_000_000.0
"""2026-05-28 20:26:40 UTC: the start of ``ManualClock`` unless told otherwise."""


class ManualClock:
    """A clock that moves only when told to: deterministic tests and screenshots."""

    def __init__(self, start: float = DEMO_EPOCH) -> None:
        self._now = float(start)

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward (never backward: Slurm's times never go back)."""
        if seconds < 0:
            raise ValueError("a ManualClock only moves forward")
        self._now += seconds


Event = tuple[float, int, str, int, int, int]
"""(when, order of pushing, kind, job id, step number, token)."""


class EventQueue:
    """What will happen and when, earliest first (pushed in the same second: in order).

    Kinds: ``arrive`` (a new submission), ``start`` and ``end`` of a job, ``purge`` (the
    controller forgets a finished job), ``ckpt_done`` (a checkpoint ends).  ``token`` is
    the job's (or step's checkpoint's) token when it was pushed: an event whose token is
    no longer current is stale and is dropped when it comes due.
    """

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._seq = 0

    def push(self, when: float, kind: str, job_id: int, step: int = 0, token: int = 0) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, kind, job_id, step, token))

    def pop_due(self, now: float) -> Event | None:
        """The earliest event due by ``now`` (taken off the queue), else None."""
        heap = self._heap
        if heap and heap[0][0] <= now:
            return heapq.heappop(heap)
        return None
