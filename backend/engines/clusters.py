"""Several clusters in one console (``-M NAME,...|all``): one engine per cluster, one listing.

Why one engine per cluster: each engine keeps its own "no change since" times, views and
caches, so the one-RPC reuse of an unchanged listing (``LiveEngine.refresh``) stays per
cluster: an idle cluster costs its controller one REQUEST_JOB_INFO per refresh, whatever
the other clusters do.  Every engine is given its cluster's ``Binding``
(``Binding.on_cluster``, ``backend/libslurm``), which sends its calls to that cluster's
controller, as ``squeue -M`` does.

What this engine adds:

* ``snapshot`` lists every cluster and tags each job with its cluster (``JobView.cluster``);
  a cluster whose controller fails keeps its last jobs, tagged ``stale``, while the others
  stay fresh (``Snapshot.clusters`` says which is which).  Only when every cluster fails
  does the snapshot fail, and the facade marks the whole data stale as for one cluster.
  A cluster that failed is asked again only after a back-off (``RETRY_FIRST`` doubling up
  to ``RETRY_MAX``) or once ``ping`` found it answering: its calls share libslurm's one
  thread with the others' (libslurm chooses the controller through a global), so each
  attempt on a controller that does not answer delays every cluster's refresh by up to
  Slurm's MessageTimeout.
* every other call goes to the engine of the target's cluster (``StepId.cluster``); with
  one cluster chosen a target without a cluster is that cluster's, with several a target
  must name its cluster (``targets.on_cluster``, which ``Facade.act`` has already applied
  to an action's target: ``targets.resolve``).
"""

from __future__ import annotations

import abc
import contextlib
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ..errors import SckptError, UsageError, outage_text
from ..model import (
    AbleResult,
    ActionResult,
    ClusterFreshness,
    ClusterInfo,
    JobRecord,
    JobView,
    Snapshot,
    StepCheckpointEvent,
    StepId,
)
from ..operations import BY_NAME, NAMES
from ..targets import on_cluster
from .base import Engine

T = TypeVar("T")
C = TypeVar("C", bound=Engine)

RETRY_FIRST = 15.0
"""Seconds before a cluster that failed a refresh is listed again (doubling per failure)."""
RETRY_MAX = 120.0
"""Longest wait between two listings of a cluster that keeps failing."""


@dataclass(slots=True)
class _Part:
    """One cluster's engine and what the last snapshots left of it."""

    name: str
    engine: Engine
    views: tuple[JobView, ...] = ()
    """Its jobs, tagged with the cluster (and ``stale`` while it does not answer)."""
    tagged: dict[int, tuple[JobView, JobView]] = field(default_factory=dict)
    """Job id -> (the engine's view, the tagged one): an unchanged job keeps its tagged
    object, so the console skips it by identity as it does for one cluster."""
    freshness: ClusterFreshness = field(default_factory=lambda: ClusterFreshness(""))
    loaded: bool = False
    failures: int = 0
    retry_at: float = 0.0
    """Monotonic time before which a stale cluster is not listed again."""


def routed(name: str) -> Callable[..., Any]:
    """``ClustersEngine``'s method ``name`` (with ``Engine``'s signature where it has the
    method): the call goes to the engine of the target's cluster, given the target without
    its cluster and the arguments by name; an answer that names its target (``AbleResult``,
    ``ActionResult``) names the full one (``-M``'s cluster in it)."""

    def call(self: ClustersEngine, target: StepId, *args: Any, **kwargs: Any) -> Any:
        engine, inner, full = self._route(target)
        answer = getattr(engine, name)(inner, *args, **kwargs)
        return replace(answer, target=full) if isinstance(answer, _NAMING) else answer

    interface = getattr(Engine, name, None)
    if interface is None:
        call.__name__ = call.__qualname__ = name
        return call
    return functools.update_wrapper(call, interface, updated=())


_NAMING = (AbleResult, ActionResult)
"""Answers that name their target."""
ROUTED_READS = ("step_processes", "interconnect", "job_stdio")
"""The calls about one target that are not operations of the table."""


def _derived(cls: type[C]) -> type[C]:
    """``cls`` with ``routed`` for the reads about one target and every operation of the
    table (``operations.py``): no operation is listed here."""
    for name in (*ROUTED_READS, *NAMES):
        setattr(cls, name, routed(name))
    return abc.update_abstractmethods(cls)


@_derived
class ClustersEngine(Engine):
    """The engines of several clusters as one (see the module's docstring)."""

    def __init__(
        self,
        engines: Sequence[tuple[str, Engine]],
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not engines:
            raise UsageError("-M/--clusters: no cluster chosen")
        self._parts = {
            name: _Part(name, engine, freshness=ClusterFreshness(name)) for name, engine in engines
        }
        first = engines[0][1]
        self.name = first.name
        self.binding = getattr(first, "binding", None)
        """The first cluster's binding (the demo's simulated controller is reached
        through it: ``Facade.simulated_cluster``)."""
        self._monotonic = monotonic
        self._views: tuple[JobView, ...] = ()
        self._taken_at = 0.0

    @property
    def writes_allowed(self) -> bool:
        """Read-only mode (``ReadOnlyEngine`` sets it False) reaches every cluster's engine."""
        return all(part.engine.writes_allowed for part in self._parts.values())

    @writes_allowed.setter
    def writes_allowed(self, allowed: bool) -> None:
        for part in self._parts.values():
            part.engine.writes_allowed = allowed

    # Read from the first engine when asked (not copied at start): an engine a test builds
    # may be a stand-in that has only what the test uses.
    @property
    def waits_on_controller(self) -> bool:  # type: ignore[override]
        """The clusters' engines are of one kind: as the first one's."""
        return self._first.waits_on_controller

    @property
    def runs_checkpoints(self) -> bool:  # type: ignore[override]
        """As the first one's (auto makes native or cooperative: both do)."""
        return self._first.runs_checkpoints

    @property
    def caller_uid(self) -> int | None:  # type: ignore[override]
        """One user runs sckpt: the first engine's."""
        return self._first.caller_uid

    @property
    def _first(self) -> Engine:
        return next(iter(self._parts.values())).engine

    @property
    def cluster_names(self) -> tuple[str, ...]:
        return tuple(self._parts)

    @property
    def acting_user(self) -> str:
        """Who every cluster's controller sees (one user runs sckpt)."""
        return self._first.acting_user or ""

    # ------------------------------------------------------------------ targets

    def _route(self, target: StepId) -> tuple[Engine, StepId, StepId]:
        """(the cluster's engine, the target as that engine knows it, the full target).
        An action's target comes resolved, its cluster named (``targets.resolve``); a read's
        or a direct caller's is given its cluster here, by the same rule (``on_cluster``)."""
        full = on_cluster(target, self.cluster_names)
        return self._parts[full.cluster].engine, replace(full, cluster=""), full

    # ------------------------------------------------------------------ reading

    def cluster_info(self) -> ClusterInfo:
        """The first answering cluster's facts, named for every chosen cluster; a cluster
        known to be down is not asked (it would wait out its MessageTimeout again)."""
        parts = [part for part in self._parts.values() if not part.freshness.stale]
        infos = [part.engine.cluster_info() for part in parts or self._parts.values()]
        known = next((i for i in infos if i.cluster_name), infos[0])
        return replace(
            known,
            cluster_name=",".join(self._parts) if known.cluster_name else "",
            engine=self.name,
        )

    def snapshot(self) -> Snapshot:
        changed = False
        last_error: BaseException | None = None
        for part in self._parts.values():
            if part.freshness.stale and self._monotonic() < part.retry_at:
                last_error = last_error or RuntimeError(part.freshness.error)
                continue
            try:
                snap = part.engine.snapshot()
            except Exception as exc:  # this cluster's outage: the others go on
                last_error = exc
                changed = self._failed(part, exc) or changed
                continue
            changed = self._answered(part, snap) or changed
        parts = self._parts.values()
        if all(part.freshness.stale for part in parts):
            assert last_error is not None
            raise last_error
        if changed or not self._views:
            self._views = tuple(view for part in parts for view in part.views)
        fresh = [part.freshness.last_fresh for part in parts if not part.freshness.stale]
        self._taken_at = max(fresh, default=self._taken_at)
        return Snapshot(
            jobs=self._views,
            taken_at=self._taken_at,
            changed=changed,
            clusters=tuple(part.freshness for part in parts),
        )

    def _answered(self, part: _Part, snap: Snapshot) -> bool:
        """A cluster's fresh snapshot: tag its jobs; True when what it shows changed."""
        was_stale = part.freshness.stale
        part.failures = 0
        part.retry_at = 0.0
        part.freshness = ClusterFreshness(part.name, False, snap.taken_at, "")
        if not (snap.changed or was_stale or not part.loaded):
            return False
        part.loaded = True
        part.views = self._tag(part, snap.jobs, stale=False)
        return True

    def _failed(self, part: _Part, exc: BaseException) -> bool:
        """A cluster's refresh failed: keep its jobs, marked stale; True when it was fresh."""
        part.failures += 1
        backoff = min(RETRY_FIRST * 2 ** (part.failures - 1), RETRY_MAX)
        part.retry_at = self._monotonic() + backoff
        was_stale = part.freshness.stale
        part.freshness = ClusterFreshness(
            part.name, True, part.freshness.last_fresh, outage_text(exc)
        )
        if was_stale:
            return False
        part.views = self._tag(part, [inner for inner, _ in part.tagged.values()], stale=True)
        return True

    def _tag(self, part: _Part, views: Sequence[JobView], *, stale: bool) -> tuple[JobView, ...]:
        """The engine's views with the cluster (and ``stale``) on them; a view tagged
        before keeps its tagged object."""
        before = part.tagged
        tagged: dict[int, tuple[JobView, JobView]] = {}
        for view in views:
            old = before.get(view.job.job_id)
            if old is None or old[0] is not view or old[1].stale != stale:
                old = (view, JobView(view.job, view.steps, cluster=part.name, stale=stale))
            tagged[view.job.job_id] = old
        part.tagged = tagged
        return tuple(t for _, t in tagged.values())

    def ping(self) -> float:
        """Ask the clusters that are down (else the first one): each that answers may be
        listed at once; raises when none answers."""
        parts = [part for part in self._parts.values() if part.freshness.stale]
        took: float | None = None
        error: BaseException | None = None
        for part in parts or list(self._parts.values())[:1]:
            try:
                answered = part.engine.ping()
            except Exception as exc:  # this one does not answer: try the others
                error = exc
                continue
            part.retry_at = 0.0
            took = answered if took is None else took
        if took is None:
            assert error is not None
            raise error
        return took

    # ------------------------------------------------------------------ accounting

    def job_records(self, job_id: int, since: int, until: int = 0) -> tuple[JobRecord, ...]:
        """Every cluster's records of ``job_id`` (``sacct -M a,b -j JOB``: job ids repeat
        across clusters, each record names its cluster)."""
        return self._from_each(lambda e: e.job_records(job_id, since, until))

    def finished_jobs(self, since: int, until: int = 0) -> tuple[JobRecord, ...]:
        return self._from_each(lambda e: e.finished_jobs(since, until))

    def checkpoint_events(
        self, job_id: int, work_dir: str, uid: int
    ) -> tuple[StepCheckpointEvent, ...]:
        """The state store is found by the job's directory: any cluster's engine reads it."""
        return next(iter(self._parts.values())).engine.checkpoint_events(job_id, work_dir, uid)

    def _from_each(self, ask: Callable[[Engine], tuple[JobRecord, ...]]) -> tuple[JobRecord, ...]:
        """The records of every cluster that answers; the first failure when none does."""
        found: list[JobRecord] = []
        failure: SckptError | None = None
        for part in self._parts.values():
            try:
                found.extend(ask(part.engine))
            except SckptError as exc:
                failure = failure or exc
        if failure is not None and not found:
            raise failure
        return tuple(found)

    # Calls about one target (``ROUTED_READS`` and every operation of the table) go to its
    # cluster's engine, the target as that engine knows it (``_derived``, ``routed``).

    def __getattr__(self, name: str) -> Any:
        """An operation a row added after this class was made (a test's): routed too."""
        if name.startswith("_") or name not in BY_NAME:
            raise AttributeError(name)
        return routed(name).__get__(self)

    def close(self) -> None:
        for part in self._parts.values():
            with contextlib.suppress(SckptError):
                part.engine.close()
