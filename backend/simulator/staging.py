"""A big simulated cluster built in two parts: its first jobs at once, the rest on demand.

Why: at 100,000 jobs the demo's console waited for the whole population (~2 s of CPU, then
the engine's snapshot of all of it) before its first rows (bench/README, issue 34).  Its
first screen shows the top of the job list by id, and those are the first jobs generated.
So ``SimulatedCluster(first_part=N)`` generates the first N jobs, lists them, and leaves the
rest -- the other jobs (the same generator stream, continued: the same draws in the same
order), the accounting past, the demo's touches and arrays, the listing of everything -- to
``Staging.finish``, which the console runs on a thread once its first screen is painted.

Until then only the reads the console allowed (``allow_part``) are answered from the first
part: the job and step listing (the first part's, unchanged until the whole is listed) and
the able/error probes of its steps.  Every other call into the controller finishes the
build first, or waits for the thread finishing it (``ready``): ``sckpt --demo ls``, an
action, accounting and the tests' oracle see the complete cluster.  The controller's clock
stands still while it is built (``Timeline.tick`` applies nothing and does not move
``ClusterState.now`` while ``building``), as it does during a build in one go, so the
cluster is the same either way (``tests/simulator/test_staging.py``); only the listing's
change counter is further on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

DEMO_FIRST_PART = 2_000
"""How many jobs the demo builds before the rest (when it has more): far more rows than a
terminal shows (about four in five are listed by default), for ~30 ms of work."""


class Staging:
    """Whether the cluster is still being built, and the rest of its build."""

    def __init__(self) -> None:
        self._rest: Callable[[], None] | None = None
        self._lock = threading.Lock()
        """Held while the rest is built: a call that needs the whole cluster waits on it."""
        self.building = False
        """True from the first part's listing until the rest's jobs, past and touches exist
        (the clock stands still meanwhile; the demo's arrays are submitted after it)."""
        self.first_part = 0
        """How many jobs the first part's listing holds (0: the cluster was built whole)."""
        self.part_ok = False
        """The console allowed its listing and probes to be answered from the first part."""

    def defer(self, rest: Callable[[], None], first_part: int) -> None:
        """The first ``first_part`` jobs exist and are listed; ``rest`` builds the others."""
        self._rest = rest
        self.first_part = first_part
        self.building = True

    @property
    def pending(self) -> bool:
        """The rest is not built yet (``finish`` has not run to its end)."""
        return self._rest is not None

    def allow_part(self) -> None:
        """The console's listing and probes may be answered from the first part."""
        self.part_ok = True

    def finish(self) -> None:
        """Build the rest now, once; a caller arriving meanwhile waits until it is built."""
        with self._lock:
            rest = self._rest
            if rest is not None:  # else built already (perhaps by the caller it waited for)
                rest()
                self._rest = None

    def ready(self, *, part: bool = False) -> None:
        """Before a call into the controller: the whole cluster built, unless ``part`` (a
        read the console may have answered from the first part) and it allowed that."""
        if self._rest is not None and not (part and self.part_ok):
            self.finish()
