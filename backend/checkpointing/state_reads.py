"""The state files a console's refresh reads, and what it keeps of them between refreshes.

Every refresh asks the record of each running step (``CooperativeEngine.checkpoint_state``,
every 2 s by default): on a 10,000-job queue with 50 running jobs that was most of the idle
console's CPU.  So a refresh (``batch``) walks to each state directory once
(``store.RefreshWalks``), a step's ``StepStore`` is made once, and a file is parsed again
only when its bytes changed.  Each file is still opened and read on every refresh: a stat
is not enough, a rewrite can reuse the inode, size and time stamp.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..model import StepId
from .protocol import StepRecord
from .store import RefreshWalks, StepStore

CACHE_LIMIT = 20_000
"""Parsed state files (and stores) kept for refreshes (cleared when exceeded: ended jobs')."""


class StateReads:
    """The stores, parsed records and directory walks of the refreshes of one engine."""

    def __init__(self) -> None:
        self._parsed: dict[Path, tuple[bytes, StepRecord]] = {}
        """Records are never mutated once kept here."""
        self._stores: dict[tuple[Path, StepId, int], StepStore] = {}
        self._walks = RefreshWalks()

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """One refresh: each state directory walked once until the block ends."""
        return self._walks.batch()

    def store(self, directory: Path, step: StepId, owner: int) -> StepStore:
        """The ``StepStore`` of ``step`` in ``directory`` (its paths made once)."""
        key = (directory, step, owner)
        found = self._stores.get(key)
        if found is None:
            if len(self._stores) > CACHE_LIMIT:
                self._stores.clear()
            found = self._stores[key] = StepStore(directory, step, owner=owner)
        return found

    def record(self, store: StepStore) -> StepRecord | None:
        """``store.read()``, parsed again only when the file's bytes changed."""
        raw = store.read_raw(self._walks)
        if raw is None:
            self._parsed.pop(store.path, None)
            return None
        hit = self._parsed.get(store.path)
        if hit is not None and hit[0] == raw:
            return hit[1]
        rec = store.parse(raw)
        if len(self._parsed) > CACHE_LIMIT:
            self._parsed.clear()
        self._parsed[store.path] = (raw, rec)
        return rec
