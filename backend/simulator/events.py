"""Time: the clock the simulated controller reads and the events that wait for it.

Every call first applies the events due by now (``Timeline.tick``), in time order, so the
outcome does not depend on how often anyone looks.  The timeline knows when things happen,
not what they do: each part of the controller registers the kinds it handles
(``Timeline.on``): ``lifecycle.Lifecycle`` jobs arriving, starting, ending and being
forgotten after MinJobAge; ``checkpoint_runs.CheckpointRuns`` checkpoints ending;
``autopolicy.AutoPolicies`` automatic checkpoints coming due.  After the events, the demo's
output files grow (``output.py``).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable

from .catalog import APPS
from .clock import EventQueue
from .output import DemoOutput
from .records import JobRec
from .state import ClusterState

Handler = Callable[[float, JobRec | None, int, int], bool]
"""What an event does: (when, its job's record if still known, step, token) -> whether it
changed anything (a stale event changes nothing)."""


class Timeline:
    """The events to come, applied in time order as the clock moves."""

    def __init__(self, state: ClusterState, output: DemoOutput | None) -> None:
        self.state = state
        self.output = output
        self._events = EventQueue()
        self._handlers: dict[str, weakref.WeakMethod[Handler]] = {}
        self.push = self._events.push
        """``EventQueue.push``: (when, kind, job id, step, token)."""

    def on(self, kind: str, handler: Handler) -> None:
        """Events of ``kind`` are ``handler``'s (each kind has one: a method of the part
        that registers it).  Held weakly: the parts hold the timeline, and a cycle back
        would keep a dropped cluster's records for the cyclic GC, which never sees a big
        one's (``gc_pause.freeze_built``); the cluster holds its parts."""
        self._handlers[kind] = weakref.WeakMethod(handler)

    def tick(self) -> None:
        """Apply every event due by now, in time order (none while the cluster is still
        being built: its clock stands still then, as during a build in one go)."""
        state = self.state
        if state.staging.building:
            return
        now = state.clock()
        if now > state.now:
            state.now = now
        due = self._events.pop_due
        jobs = state.jobs
        handlers = self._handlers
        while (event := due(now)) is not None:
            when, _seq, kind, job_id, step, token = event
            handler = handlers[kind]()
            if handler is not None and handler(when, jobs.get(job_id), step, token):
                state.version += 1
        if self.output is not None:
            for job_id in self.output.known:
                self.write_output(job_id)

    def write_output(self, job_id: int) -> None:
        """Bring the job's demo output file up to now (made when first asked for)."""
        rec = self.state.jobs.get(job_id)
        if rec is None or self.output is None:
            return
        with contextlib.suppress(OSError):  # the demo's directory is gone: no output
            self.output.update(rec.job, APPS[rec.app][1], int(self.state.now))
