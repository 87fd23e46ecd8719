"""The console's first snapshot, asked while the console's own code is still loading.

Why: on a real 10,000-job queue the first rows waited for two things one after the other:
importing Textual and the console (~130 ms on the bench machine) and then the first
listing (the controller's answer plus decoding it, ~140 ms).  The listing is a libslurm call
on the binding's own thread, which releases the GIL while it waits for slurmctld, so the
command line starts it (``start``) just before it imports the console, and the console's
refresh pipeline takes it (``claim``) as its first refresh instead of asking again: one
listing, as before, only sooner.  Only a controller's answer is worth starting early: the
demo's simulated cluster is Python, which shares the GIL with the imports (the command
line does not start it there).

After a fresh answer the cluster's facts (``Facade.info``, one more RPC the first refresh
would make next) are asked too; the facade keeps them.  The answer is exactly what
``Facade.snapshot`` returns (an outage is a stale snapshot, as always); an exception it
raises reaches the pipeline unchanged from ``claim``'s ``result``.
The thread is a daemon, so a quit never waits for a controller that does not answer.  No
Textual here: the command line imports this module before the console exists.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from typing import Protocol

from .errors import SckptError
from .model import ClusterInfo, Snapshot


class Snapshots(Protocol):
    """What is asked early: ``Facade.snapshot``, then ``Facade.info`` (which it keeps)."""

    def snapshot(self) -> Snapshot: ...

    @property
    def info(self) -> ClusterInfo: ...


class EarlySnapshot:
    """One ``snapshot()`` running on a daemon thread; ``result`` waits for it."""

    def __init__(self, source: Snapshots) -> None:
        self._done = threading.Event()
        self._snap: Snapshot | None = None
        self._error: BaseException | None = None
        self.duration = 0.0
        """Seconds the snapshot took (the pipeline's measure of a refresh)."""
        self.info: ClusterInfo | None = None
        """The cluster's facts, once asked after a fresh answer (the facade keeps them)."""
        threading.Thread(
            target=self._run, args=(source,), name="sckpt-first-snapshot", daemon=True
        ).start()

    def _run(self, source: Snapshots) -> None:
        started = time.monotonic()
        try:
            self._snap = source.snapshot()
        except BaseException as exc:  # handed to the waiting caller, re-raised there
            self._error = exc
        self.duration = time.monotonic() - started
        if self._snap is not None and not self._snap.stale:
            # The cluster's facts, which the first refresh asks right after a fresh
            # listing (one small RPC): the facade keeps them, so that ask is answered here.
            with contextlib.suppress(SckptError):
                self.info = source.info
        self._done.set()

    def result(self) -> Snapshot:
        """The snapshot, once taken (blocks until then); its exception if it raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._snap is not None
        return self._snap


_started: weakref.WeakKeyDictionary[Snapshots, EarlySnapshot] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def start(source: Snapshots) -> None:
    """Start ``source.snapshot()`` now, for the next ``claim(source)``."""
    with _lock:
        _started[source] = EarlySnapshot(source)


def claim(source: Snapshots) -> EarlySnapshot | None:
    """The snapshot ``start`` began for ``source``, once (None when none was started)."""
    with _lock:
        return _started.pop(source, None)
