"""The one door to the backend: validation, read-only guard, audit log, engine choice.

The console and the command line call only this module.  It has one method per operation
(the nine checkpoint operations and the four job-control verbs) of the table in
``operations.py``, named for it and taking exactly its
``arguments``, so callers dispatch with ``getattr(facade, op.name)(target, **values)``.
Each call:

1. **validates** its input (``targets.py``): a bad id or argument raises ``UsageError``
   saying what was expected, and no engine is called;
2. for a mutating operation (``operations.MUTATING``): refuses with ``ReadOnlyError`` in
   read-only mode (the engine is also wrapped in ``ReadOnlyEngine``, a second guard), then
   opens the audit log (``AuditLogError`` and no action when it cannot be opened and is
   required);
3. calls the engine, which applies Slurm's rules and raises typed ``SlurmError``s;
4. appends one JSON line to the audit log for every mutating attempt, allowed or refused.

``snapshot()`` never raises on a controller outage: it returns the last data it had,
marked ``stale`` with the time it was last fresh and the reason.

Engines are chosen by ``open_facade``:

* ``demo=True`` or ``engine="simulated"``: the in-process ``SimulatedCluster``;
* ``native``: libslurm with the ``slurm_checkpoint_*`` symbols (Slurm <= 19.05);
* ``cooperative``: modern Slurm, signal/requeue plus the shared state store;
* ``live``: modern Slurm without the cooperative engine: listing works, checkpoint
  operations answer ESLURM_NOT_SUPPORTED ("not supported by this Slurm") after the
  job-state checks;
* ``-M NAME,...|all`` (``clusters``): one such engine per cluster registered in slurmdbd,
  put together by ``engines/clusters.py`` (targets then carry their cluster);
* ``auto`` (default): native if the binding reports the checkpoint symbols, else
  cooperative when it is available, else live.  Without any Slurm configuration ``auto``
  fails with ``NoConfig`` whose hint names ``--demo``.

Engine registry (how the cooperative engine plugs in): an engine module calls
``register_engine(name, factory)`` at import time, where ``factory(request: EngineRequest)
-> Engine`` (``EngineRequest`` is defined in ``engines/base.py``, so that engines never import
the facade).  When a name is not registered yet, ``open_facade`` imports
``sckpt.backend.engines.<name>`` (which registers itself, or defines a module-level
``create_engine(request)``) and looks again.  ``auto`` asks for ``cooperative`` this way, so
the cooperative engine needs no change here: it only has to exist.
"""

from __future__ import annotations

import importlib
import math
import os
import pwd
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from . import history as history_rules
from . import progress
from .arrays import ArrayIndex, needs_listing
from .audit import AuditLog, AuditReservation, monotonic
from .config import ENGINES, Settings, demo_audit_log_path, load_settings
from .engines.base import Engine, EngineRequest
from .errors import (
    AlreadyDone,
    AuditLogError,
    ControllerUnreachable,
    Disabled,
    InvalidJobId,
    JobPending,
    NoConfig,
    NothingMatched,
    SckptError,
    SetupError,
    UsageError,
    identify,
    outage_text,
)
from .job_output import OutputRead, acting_uid_to_check, read_output, stream_path
from .model import (
    MAX_TEXT,
    STEP_BATCH,
    STEP_EXTERN,
    STEP_INTERACTIVE,
    WHOLE_JOB,
    AbleResult,
    ActionResult,
    CheckpointError,
    CheckpointKind,
    ClusterInfo,
    FinishedJobs,
    Interconnect,
    JobHistory,
    JobStdio,
    ResumeState,
    Snapshot,
    StepCheckpointEvent,
    StepId,
    StepProcesses,
)
from .operations import operation as find_operation
from .readonly import ReadOnlyEngine, refusal

if TYPE_CHECKING:
    from .engines.simulated import SimulatedCluster
from .targets import (
    MAX_JOB_ID,
    MAX_STEP,
    TARGET_FORMS,
    parse_target,
    require_whole_job,
    validate_image_dir,
    validate_max_wait,
    validate_signal,
)

MAX_ERROR_CODE = 0xFFFFFFFF
MAX_ERROR_MSG = MAX_TEXT
MAX_NODELIST = 65536
MAX_TIME = 2**63 - 1

Target = str | StepId
_BY_TASK_NAME = frozenset({"hold", "release"})
"""Operations that reach an array task still pending in its array's record by its name
(``slurm_update_job2`` with ``7_5``, as scontrol); the others need a record of its own."""


# ---------------------------------------------------------------------- engine registry


class EngineFactory(Protocol):
    def __call__(self, request: EngineRequest) -> Engine: ...


_FACTORIES: dict[str, EngineFactory] = {}
_ENGINE_MODULES = {"cooperative": "sckpt.backend.checkpointing.engine"}
"""Engines whose module is not ``sckpt.backend.engines.<name>``."""
_REGISTRY_LOCK = threading.Lock()


def register_engine(name: str, factory: EngineFactory) -> None:
    """Make ``name`` available to ``open_facade`` (engine modules call this on import)."""
    with _REGISTRY_LOCK:
        _FACTORIES[name] = factory


def engine_factory(name: str) -> EngineFactory | None:
    """The factory for ``name``: registered, or found by importing its module; else None."""
    with _REGISTRY_LOCK:
        found = _FACTORIES.get(name)
    if found is not None:
        return found
    where = _ENGINE_MODULES.get(name, f"sckpt.backend.engines.{name}")
    try:
        module = importlib.import_module(where)
    except ModuleNotFoundError as exc:
        if exc.name == where:
            return None
        raise
    with _REGISTRY_LOCK:
        found = _FACTORIES.get(name)
    if found is None and callable(getattr(module, "create_engine", None)):
        found = module.create_engine
    return found


def current_user() -> str:
    """The real user running sckpt (the simulated engine's default acting user)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


# ---------------------------------------------------------------------- validation


def to_target(value: object) -> StepId:
    """A ``StepId`` from user text or a ``StepId``; ``UsageError`` for anything else."""
    if isinstance(value, StepId):
        job_id, step = value.job_id, value.step
        if (
            not isinstance(job_id, int)
            or isinstance(job_id, bool)
            or not isinstance(step, int)
            or isinstance(step, bool)
        ):
            raise UsageError(f"invalid step id {value!r}: expected {TARGET_FORMS}")
        if not 0 < job_id <= MAX_JOB_ID and not value.unresolved:
            raise UsageError(f"invalid job id {job_id}: expected a number from 1 to {MAX_JOB_ID}")
        if step not in (WHOLE_JOB, STEP_BATCH, STEP_EXTERN, STEP_INTERACTIVE) and not (
            0 <= step <= MAX_STEP
        ):
            raise UsageError(f"invalid step number {step}: expected 0 to {MAX_STEP}")
        return value
    if isinstance(value, str):
        return parse_target(value)
    raise UsageError(f"invalid target of type {type(value).__name__}: expected {TARGET_FORMS}")


def _whole(value: object, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{what} must be a whole number from {low} to {high}")
    if not low <= value <= high:
        raise UsageError(f"{what} {value} out of range: expected {low} to {high}")
    return value


def _begin_time(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value >= 0:
        return int(value)
    return _whole(value, "begin_time (Unix seconds)", 0, MAX_TIME)


def _stick(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise UsageError("stick must be true or false")


def _error_msg(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UsageError("error_msg must be text")
    if "\0" in value:
        raise UsageError("error_msg contains a NUL character: expected plain text")
    if len(value) > MAX_ERROR_MSG:
        raise UsageError(f"error_msg is {len(value)} characters long: at most {MAX_ERROR_MSG}")
    return value


def _nodelist(value: object) -> str:
    from .hostlist import expand_hostlist

    if value is None or value == "":
        return ""
    if not isinstance(value, str) or len(value) > MAX_NODELIST:
        raise UsageError("nodelist must be a node list such as node[1-4],gpu01")
    expand_hostlist(value)
    return value.strip()


# ---------------------------------------------------------------------- the facade


class Facade:
    """Validated, guarded, audited access to one engine.  Safe to call from threads."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings | None = None,
        *,
        read_only: bool = False,
        audit: AuditLog | None = None,
    ) -> None:
        self.settings = settings if settings is not None else Settings()
        self.read_only = read_only
        self._raw_engine = engine
        self._engine: Engine = ReadOnlyEngine(engine) if read_only else engine
        self.engine_name: str = engine.name
        self.audit = (
            audit
            if audit is not None
            else AuditLog(self.settings.audit_log, self.settings.audit_required)
        )
        self._lock = threading.Lock()
        self._info: ClusterInfo | None = None
        self._last: Snapshot | None = None
        self._stale = False
        self._closed = False
        self.last_audit_problem = ""
        """The latest audit-log failure that did not refuse an action ("" when none)."""

    # ---------------------------------------------------------- reading

    @property
    def info(self) -> ClusterInfo:
        """Cluster name, Slurm version, engine, acting user, switch/proctrack, read-only."""
        with self._lock:
            if self._info is not None:
                return self._info
            base = self._engine.cluster_info()
            info = replace(base, engine=self.engine_name, read_only=self.read_only)
            if info.cluster_name:  # "" = controller not reached yet: ask again next time
                self._info = info
            return info

    def known_info(self) -> ClusterInfo:
        """``info`` without waiting for a controller: what is known, else a placeholder.

        For the console's UI thread: ``info`` asks slurmctld on first use, which waits up to
        Slurm's MessageTimeout when the controller is down or paused.  Engines without a
        libslurm binding, and the in-process simulated controller, answer from memory, so
        they are asked.
        """
        known = self._info
        if known is not None:
            return known
        if self.simulated_cluster is not None or getattr(self._raw_engine, "binding", None) is None:
            return self.info
        return ClusterInfo(
            cluster_name="",
            slurm_version="",
            engine=self.engine_name,
            acting_user=self._acting_user(),
            read_only=self.read_only,
        )

    @property
    def clusters(self) -> tuple[str, ...]:
        """The clusters ``-M`` chose (``engines/clusters.py``); () without ``-M``."""
        names = getattr(self._raw_engine, "cluster_names", ())
        return tuple(names)

    @property
    def engine(self) -> Engine:
        """The engine behind the facade (wrapped in ``ReadOnlyEngine`` in read-only mode)."""
        return self._engine

    @property
    def simulated_cluster(self) -> Any:
        """The ``SimulatedCluster`` behind the demo's engine (test hooks), else None."""
        return getattr(getattr(self._raw_engine, "binding", None), "cluster", None)

    def snapshot(self) -> Snapshot:
        """Jobs, steps and checkpoint states; on failure the last data, marked stale.

        ``changed`` is True when anything the UI shows changed, including the switch
        between fresh and stale.
        """
        try:
            snap = self._engine.snapshot()
        except Exception as exc:  # any failure of the source: show the last data, stale
            reason = outage_text(exc)
            with self._lock:
                last = self._last
                changed = not self._stale
                self._stale = True
            if last is None:
                return Snapshot(
                    jobs=(),
                    taken_at=0.0,
                    changed=changed,
                    stale=True,
                    stale_since=0.0,
                    error=reason,
                )
            return replace(
                last, changed=changed, stale=True, stale_since=last.taken_at, error=reason
            )
        with self._lock:
            if self._stale and not snap.changed:
                snap = replace(snap, changed=True)
            self._stale = False
            self._last = snap
        return snap

    # ---------------------------------------------------------- array targets

    def resolve(self, target: object, *, label: bool = False, pending_ok: bool = False) -> StepId:
        """``target`` as a job record: an array task typed as ``7_3`` looked up in the
        listing (``arrays.py``; ``InvalidJobId`` when no record holds it); with ``label``,
        a record that is an array task also gets its array names (what the audit log and
        the answers show), from the listing at hand."""
        step = to_target(target)
        if step.unresolved:
            return self._array_index(step, fresh=True).resolve(step, pending_ok=pending_ok)
        if label and step.array_task_id is None and self._last is not None:
            return self._array_index(step, fresh=False).resolve(step)
        return step

    def expand_targets(self, targets: Sequence[Target]) -> list[StepId]:
        """Typed targets as scontrol reads them, in order: an array's id names each of its
        records (``7`` -> ``7_1``, ``7_2``, ``7_[3-50%2]``), an array task its own record.
        Asks for a listing only when a target needs one (``arrays.needs_listing``)."""
        steps = [to_target(t) for t in targets]
        if not any(needs_listing(step) for step in steps):
            return steps
        out: list[StepId] = []
        for step in steps:
            out.extend(self._array_index(step, fresh=True).expand(step))
        return out

    def _array_index(self, target: StepId, *, fresh: bool) -> ArrayIndex:
        """The arrays of the latest listing (asked for when there is none yet and
        ``fresh``), on the target's cluster."""
        last = self._last
        if last is None and fresh:
            last = self.snapshot()
            if last.stale and not last.jobs:
                raise ControllerUnreachable(hint=f"cannot look up {target}: {last.error}")
        jobs = (
            v.job
            for v in (last.jobs if last is not None else ())
            if not target.cluster or v.cluster == target.cluster
        )
        return ArrayIndex(jobs)

    def ping(self) -> bool:
        """Whether the controller answers one small request now (never raises).

        The console asks this once per interval while its data is stale, instead of a full
        listing: a controller that came back is noticed at the next ping, and one that
        still does not answer is asked no more than that.
        """
        try:
            self._engine.ping()
        except Exception:  # any failure means "not answering"; the snapshot says why
            return False
        return True

    def step_processes(self, target: Target) -> StepProcesses:
        """The step's processes per node (its proctrack container)."""
        return self._engine.step_processes(self.resolve(target))

    def job_stdio(self, target: Target) -> JobStdio:
        """Where the job's output and error go, as ``scontrol show job`` says (a step
        names its job: steps of a batch job write to the job's files)."""
        return self._engine.job_stdio(StepId(self.resolve(target).job_id))

    def read_output(
        self, stdio: JobStdio, stream: str = "stdout", offset: int | None = None
    ) -> OutputRead:
        """The tail of the job's ``stream`` (None ``offset``) or what was appended after
        ``offset``, read as the acting user would (never raises: ``problem`` says why not)."""
        uid = getattr(getattr(self._raw_engine, "binding", None), "caller_uid", None)
        return read_output(
            stream_path(stdio, stream),
            offset,
            state=stdio.state,
            as_uid=acting_uid_to_check(uid) if isinstance(uid, int) else None,
        )

    def interconnect(self, target: Target) -> Interconnect:
        """The switch plugin in use and the step's network request."""
        return self._engine.interconnect(self.resolve(target))

    def able(self, target: Target) -> AbleResult:
        """Whether checkpoints can be issued (``Disabled`` when not); not audited."""
        return self._engine.able(self.resolve(target))

    def error(self, target: Target) -> CheckpointError:
        """The step's last checkpoint error (code 0 when none); not audited."""
        return self._engine.error(self.resolve(target))

    def resume_state(self, target: Target) -> ResumeState:
        """One look at a restarted job (``restart --wait``): its state, and how each task
        of its steps started, as the engine knows it (the cooperative engine: from each
        wrapper's registration).  ``InvalidJobId`` when the job is not listed."""
        step = self.resolve(target)
        for view in self.snapshot().jobs:
            if view.job.job_id != step.job_id or (step.cluster and view.cluster != step.cluster):
                continue
            notes = tuple(
                f"{s.step.step_id} {note}" for s in view.steps for note in s.checkpoint.start_notes
            )
            fresh = any("resumed from" not in note for note in notes)
            return ResumeState(step, view.job.state, notes, resumed=not fresh)
        raise InvalidJobId(hint=f"job {step.job_id} is not in the queue")

    def checkpoint_progress(self, target: Target) -> str:
        """Where ``target``'s checkpoint stands, in ``progress.py``'s words: ``in
        progress``, ``completed`` or ``failed (<code>)``; ``ended`` when the step is gone
        (a vacate ends it, and Slurm keeps checkpoint state on the step's record).

        One look, for whoever watches a checkpoint it requested (``--wait``, the console's
        toast).  ``able`` says whether one runs (``Began at``); once none does, ``error``
        holds its result (Slurm resets it when a checkpoint starts).  While checkpoints are
        disabled ``able`` cannot tell, so it is ``in progress`` unless ``error`` already
        shows a failure.  Other refusals (no answer) are raised.
        """
        step = self.resolve(target)
        try:
            running = bool(self._engine.able(step).in_progress_since)
        except Disabled:
            running = not self._engine.error(step).code
        except (InvalidJobId, AlreadyDone, JobPending):  # pending: vacate requeued it held
            return CheckpointKind.ENDED.value
        if running:
            return progress.IN_PROGRESS
        try:
            code = self._engine.error(step).code
        except (InvalidJobId, AlreadyDone):
            return CheckpointKind.ENDED.value
        return progress.COMPLETED if not code else progress.failed(code)

    # ---------------------------------------------------------- accounting

    def history(
        self,
        target: Target,
        since: int | str | None = None,
        limit: int | str | None = None,
    ) -> JobHistory:
        """Every accounting record of a job (one per requeue or restart), oldest first, and
        its steps' checkpoint events where the engine keeps them; not audited.

        Bounded: records since ``since`` (Unix seconds or ``parse_since`` text; default
        ``HISTORY_SINCE`` ago), at most ``limit`` (the newest).  Only a person's question
        calls this: never the refresh.  ``AccountingUnavailable`` without slurmdbd;
        ``InvalidJobId`` when accounting has no record of the job in the window.
        """
        step = self.resolve(target)
        if not step.is_whole_job:
            raise UsageError(f"history of {step}: name the job (JOB), not a step")
        start = self._since(since, history_rules.HISTORY_SINCE)
        most = history_rules.check_limit(history_rules.HISTORY_LIMIT if limit is None else limit)
        found = history_rules.oldest_first(self._engine.job_records(step.job_id, start))
        if not found:
            raise InvalidJobId(
                message=f"accounting has no record of job {step.job_id} since "
                + history_rules.date_text(start),
                hint="look further back with --since, or check the job id",
            )
        kept = found[-most:]
        last = found[-1]
        events = self._engine.checkpoint_events(step.job_id, last.work_dir, last.uid)
        if not events:
            events = self._snapshot_events(step.job_id)
        return JobHistory(
            job_id=step.job_id,
            cluster=last.cluster,
            records=kept,
            checkpoints=events,
            since=start,
            limit=most,
            truncated=len(found) > most,
            skipped=len(found) - len(kept),
        )

    def finished_jobs(
        self, since: int | str | None = None, limit: int | str | None = None
    ) -> FinishedJobs:
        """Jobs that ended since ``since`` (default ``FINISHED_SINCE`` ago), newest first,
        at most ``limit``, from accounting; the console asks when a person presses ``f``."""
        start = self._since(since, history_rules.FINISHED_SINCE)
        most = history_rules.check_limit(history_rules.FINISHED_LIMIT if limit is None else limit)
        found = history_rules.newest_ended_first(self._engine.finished_jobs(start))
        return FinishedJobs(
            records=found[:most],
            since=start,
            limit=most,
            truncated=len(found) > most,
            taken_at=self._engine.now(),
        )

    def _since(self, value: int | str | None, default_span: int) -> int:
        if value is None:
            return max(0, int(self._engine.now()) - default_span)
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise UsageError(f"invalid since {value}: Unix seconds from 0")
            return value
        return history_rules.parse_since(value, now=self._engine.now())

    def _snapshot_events(self, job_id: int) -> tuple[StepCheckpointEvent, ...]:
        """The job's steps' checkpoint events in the last snapshot (engines that keep them
        on the step, as the simulated controller does), oldest first."""
        last = self._last
        if last is None:
            return ()
        found = [
            StepCheckpointEvent(view.step.step_id, event)
            for job in last.jobs
            if job.job.job_id == job_id
            for view in job.steps
            for event in view.checkpoint.history
        ]
        return tuple(sorted(found, key=lambda e: (e.event.time, e.step_id)))

    # ---------------------------------------------------------- acting

    def create(
        self, target: Target, max_wait: int | str | None = None, image_dir: str | None = None
    ) -> ActionResult:
        """Checkpoint and continue (defaults: the config's max_wait and image_dir)."""
        return self._act(
            "create",
            target,
            {"max_wait": max_wait, "image_dir": image_dir},
            lambda a: {"max_wait": self._max_wait(a), "image_dir": self._image_dir(a)},
            lambda e, t, a: e.create(t, a["max_wait"], a["image_dir"]),
        )

    def vacate(
        self,
        target: Target,
        max_wait: int | str | None = None,
        image_dir: str | None = None,
        force: bool = False,
    ) -> ActionResult:
        """Checkpoint, then terminate the step (``force``: even where tasks have no image)."""
        return self._act(
            "vacate",
            target,
            {"max_wait": max_wait, "image_dir": image_dir, "force": force},
            lambda a: {
                "max_wait": self._max_wait(a),
                "image_dir": self._image_dir(a),
                "force": a["force"] is True,
            },
            lambda e, t, a: e.vacate(t, a["max_wait"], a["image_dir"], a["force"]),
        )

    def restart(
        self,
        target: Target,
        stick: bool = False,
        image_dir: str | None = None,
        force: bool = False,
    ) -> ActionResult:
        """Resume a checkpointed job under the same id (``stick``: on the same nodes;
        ``force``: even where a task's image is missing, which then starts from zero)."""
        return self._act(
            "restart",
            target,
            {"stick": stick, "image_dir": image_dir, "force": force},
            lambda a: {
                "stick": _stick(a["stick"]),
                "image_dir": self._image_dir(a),
                "force": a["force"] is True,
            },
            lambda e, t, a: e.restart(t, a["stick"], a["image_dir"], a["force"]),
        )

    def enable(self, target: Target) -> ActionResult:
        """Decrement the step's disable counter (never below zero)."""
        return self._act("enable", target, {}, lambda a: {}, lambda e, t, a: e.enable(t))

    def disable(self, target: Target) -> ActionResult:
        """Increment the step's disable counter."""
        return self._act("disable", target, {}, lambda a: {}, lambda e, t, a: e.disable(t))

    def complete(
        self,
        target: Target,
        begin_time: int | None = 0,
        error_code: int = 0,
        error_msg: str | None = "",
    ) -> ActionResult:
        """Report a finished checkpoint; only the highest error code is kept."""
        return self._act(
            "complete",
            target,
            {"begin_time": begin_time, "error_code": error_code, "error_msg": error_msg},
            lambda a: {
                "begin_time": _begin_time(a["begin_time"]),
                "error_code": _whole(a["error_code"], "error_code", 0, MAX_ERROR_CODE),
                "error_msg": _error_msg(a["error_msg"]),
            },
            _complete_matching,
        )

    def tasks(
        self,
        target: Target,
        begin_time: int | None = 0,
        image_dir: str | None = None,
        max_wait: int | str | None = None,
        nodelist: str | None = None,
    ) -> ActionResult:
        """Ask the step's tasks on ``nodelist`` (default: all its nodes) to checkpoint."""
        return self._act(
            "tasks",
            target,
            {
                "begin_time": begin_time,
                "image_dir": image_dir,
                "max_wait": max_wait,
                "nodelist": nodelist,
            },
            lambda a: {
                "begin_time": _begin_time(a["begin_time"]),
                "image_dir": self._image_dir(a) or "",
                "max_wait": self._max_wait(a),
                "nodelist": _nodelist(a["nodelist"]),
            },
            lambda e, t, a: e.tasks(
                t, a["begin_time"], a["image_dir"], a["max_wait"], a["nodelist"]
            ),
        )

    # The job-control verbs: the controller's rules, sckpt's guard and audit log.

    def cancel(self, target: Target, signal: int | str | None = None) -> ActionResult:
        """End the job or step as scancel does; ``signal`` (a name or number): only send
        it, as ``scancel --signal``."""
        return self._act(
            "cancel",
            target,
            {"signal": signal},
            lambda a: {"signal": validate_signal(a["signal"])},
            lambda e, t, a: e.cancel(t, a["signal"]),
        )

    def hold(self, target: Target) -> ActionResult:
        """Hold a job (whole job only), as scontrol hold."""
        return self._act("hold", target, {}, lambda a: {}, lambda e, t, a: e.hold(t))

    def release(self, target: Target) -> ActionResult:
        """Release a held job (whole job only), as scontrol release."""
        return self._act("release", target, {}, lambda a: {}, lambda e, t, a: e.release(t))

    def requeue(self, target: Target) -> ActionResult:
        """Requeue a batch job (whole job only), as scontrol requeue."""
        return self._act("requeue", target, {}, lambda a: {}, lambda e, t, a: e.requeue(t))

    def close(self) -> None:
        """Release the engine (threads, libslurm); safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._engine.close()

    def __enter__(self) -> Facade:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ---------------------------------------------------------- internals

    def _max_wait(self, args: Mapping[str, Any]) -> int:
        value = args["max_wait"]
        return self.settings.max_wait if value is None else validate_max_wait(value)

    def _image_dir(self, args: Mapping[str, Any]) -> str | None:
        value = args["image_dir"]
        if value is None:
            return self.settings.image_dir
        return validate_image_dir(value)

    def _act(
        self,
        operation: str,
        raw_target: object,
        raw_args: dict[str, Any],
        validate: Callable[[Mapping[str, Any]], dict[str, Any]],
        call: Callable[[Engine, StepId, dict[str, Any]], ActionResult],
    ) -> ActionResult:
        """Validate, guard, audit and run one mutating operation."""
        started = monotonic()
        shown = str(raw_target) if isinstance(raw_target, StepId | str) else repr(raw_target)
        try:
            target = self._engine.resolve_target(
                self.resolve(raw_target, label=True, pending_ok=operation in _BY_TASK_NAME)
            )
            if find_operation(operation).whole_job:
                require_whole_job(operation, target)
            args = validate(raw_args)
        except UsageError as exc:
            self._audit_refusal(operation, shown[:200], _printable(raw_args), exc, started)
            raise
        if self.read_only:
            refused = refusal(operation, target)
            self._audit_refusal(
                operation, str(target), args, refused, started, cluster=target.cluster
            )
            raise refused
        reservation = self.audit.reserve()  # AuditLogError here: nothing was done
        try:
            result = call(self._engine, target, args)
        except SckptError as exc:
            problem = self._write(reservation, operation, target, args, exc, started)
            if problem:
                exc.hint = f"{exc.hint}; {problem}" if exc.hint else problem
            raise
        except BaseException as exc:  # Ctrl-C too: the request may have gone out (a
            # cooperative create waits for its outcome here), so it must be in the log
            self._write(reservation, operation, target, args, exc, started)
            raise
        problem = self._write(reservation, operation, target, args, None, started)
        if problem:
            if self.audit.required:
                raise AuditLogError(
                    f"{operation} {target} WAS DONE ({result.detail or 'accepted'}), "
                    f"but its audit line could not be written: {problem}",
                    "the action is not in the audit log; record it by hand",
                )
            detail = f"{result.detail}; " if result.detail else ""
            result = replace(result, detail=f"{detail}audit log not written: {problem}")
        return result

    def _write(
        self,
        reservation: AuditReservation,
        operation: str,
        target: StepId,
        args: Mapping[str, Any],
        outcome: BaseException | None,
        started: float,
    ) -> str:
        code, name, message = _result_fields(outcome)
        record = self.audit.record(
            engine=self.engine_name,
            operation=operation,
            target=str(target),
            arguments=args,
            code=code,
            name=name,
            message=message,
            duration=monotonic() - started,
            acting_user=self._acting_user(),
        )
        if target.cluster:  # -M: which cluster's controller was asked
            record["cluster"] = target.cluster
        if isinstance(outcome, SckptError) and outcome.hint:
            # sckpt's account of the failure, e.g. what an action had done before it failed
            # ("vacate half done: the checkpoint finished ..."): the auditor needs it too.
            record["hint"] = outcome.hint
        problem = self.audit.write(reservation, record)
        if problem:
            self.last_audit_problem = problem
        return problem

    def _audit_refusal(
        self,
        operation: str,
        target: str,
        args: Mapping[str, Any],
        refused: SckptError,
        started: float,
        *,
        cluster: str = "",
    ) -> None:
        """Audit a refusal made before acting; a log failure never hides the refusal."""
        try:
            reservation = self.audit.reserve()
        except AuditLogError as exc:
            self.last_audit_problem = exc.message
            return
        code, name, message = _result_fields(refused)
        record = self.audit.record(
            engine=self.engine_name,
            operation=operation,
            target=target,
            arguments=args,
            code=code,
            name=name,
            message=message,
            duration=monotonic() - started,
            acting_user=self._acting_user(),
        )
        if cluster:
            record["cluster"] = cluster
        problem = self.audit.write(reservation, record)
        if problem:
            self.last_audit_problem = problem

    def _acting_user(self) -> str:
        """Who the engine acts as, without asking the controller (it may be down)."""
        named = getattr(self._raw_engine, "acting_user", None)
        if isinstance(named, str):
            return named
        info = self._info
        return info.acting_user if info is not None else ""


def _complete_matching(engine: Engine, target: StepId, args: Mapping[str, Any]) -> ActionResult:
    """``complete``; a report of success (error code 0) whose begin time names no checkpoint
    in progress raises ``NothingMatched``: Slurm answers success and did nothing.

    A report of an error is kept by Slurm whatever the begin time (the step's last error):
    it did something, and is not asked about.  The checkpoint in progress is asked with
    ``able`` just before; when ``able`` is refused (a disabled step), Slurm's answer stands.
    A whole job (JOB) is not asked either: what ``able`` answers for one differs between
    Slurm 19.05 (the batch step's record) and the cooperative engine (every step).
    """
    begin_time = args["begin_time"]
    began: int | None = None
    if not args["error_code"] and not target.is_whole_job:
        try:
            began = engine.able(target).in_progress_since
        except SckptError:
            began = None
    result = engine.complete(target, begin_time, args["error_code"], args["error_msg"])
    if began is None or (began and began == begin_time):
        return result
    asked = (
        f"in progress began at {history_rules.date_text(begin_time)}"
        if begin_time
        else "was named (no --begin-time)"
    )
    if began:
        hint = (
            f"the checkpoint in progress began at {history_rules.date_text(began)}: "
            f"--begin-time {began} names it"
        )
    else:
        hint = f"no checkpoint of {target} is in progress: 'sckpt able {target}' says when one is"
    raise NothingMatched(
        f"nothing matched: no checkpoint of {target} {asked}, so none was completed", hint
    )


def _result_fields(outcome: BaseException | None) -> tuple[int | None, str, str]:
    """(code, name, message) for the audit line."""
    if outcome is None:
        return 0, "SLURM_SUCCESS", "accepted"
    code, name = identify(outcome)
    if isinstance(outcome, KeyboardInterrupt):
        return code, name, "interrupted (Ctrl-C) while Slurm was asked; it may have acted"
    return code, name, outcome.message if isinstance(outcome, SckptError) else str(outcome)


def _printable(args: Mapping[str, Any]) -> dict[str, Any]:
    """Raw (unvalidated) arguments made safe for JSON and short."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        if value is None or isinstance(value, bool | int | float):
            out[key] = value if not isinstance(value, float) or math.isfinite(value) else str(value)
        else:
            text = repr(value)
            out[key] = text if len(text) <= 200 else text[:197] + "..."
    return out


# ---------------------------------------------------------------------- opening


def open_facade(
    settings: Settings | None = None,
    demo: bool = False,
    read_only: bool | None = None,
    as_user: str | None = None,
    engine: str | None = None,
    *,
    cluster: Any = None,
    clock: Callable[[], float] | None = None,
    audit: AuditLog | None = None,
    clusters: str | None = None,
) -> Facade:
    """Build the facade the user asked for.

    ``engine`` None -> ``settings.engine``; ``demo=True`` -> simulated.  ``read_only``
    None -> ``settings.read_only``.  ``as_user`` is for the simulated cluster only (default:
    the current user; ``"root"`` acts as operator).  Tests may pass a prebuilt
    ``cluster`` (``SimulatedCluster``), a ``clock`` for a fresh one (``ManualClock``), and
    an ``AuditLog``.  ``clusters`` is ``-M``'s ``NAME,...`` or ``all``: one engine per
    cluster registered in slurmdbd, as one (``engines/clusters.py``); real clusters only.
    """
    if settings is None:
        settings = load_settings()
    chosen = engine if engine is not None else settings.engine
    if chosen not in ENGINES:
        raise UsageError(f"unknown engine {chosen!r}: expected one of {', '.join(ENGINES)}")
    if demo or cluster is not None:
        chosen = "simulated"
    ro = settings.read_only if read_only is None else bool(read_only)
    if as_user is not None:
        _check_user_name(as_user)
    if clusters is not None and chosen == "simulated":
        raise UsageError("-M/--clusters needs real clusters registered in slurmdbd, not --demo")
    if chosen == "simulated":
        engine_obj = _simulated(settings, as_user, cluster, clock)
        if audit is None and (demo or cluster is None):  # the user's demo, not a test's cluster
            audit = AuditLog(demo_audit_log_path(settings.audit_log), settings.audit_required)
    else:
        if as_user is not None:
            raise UsageError(
                f"--as-user works only on the simulated cluster (engine {chosen!r}): "
                "on a real cluster run sckpt as that user"
            )
        engine_obj = _real_engine(chosen, settings, clusters)
    return Facade(engine_obj, settings, read_only=ro, audit=audit)


def _check_user_name(name: object) -> None:
    import re

    if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_.\-]{0,31}\$?", name):
        raise UsageError(f"invalid user name {name!r}: expected a login name such as alice or root")


def _simulated(
    settings: Settings, as_user: str | None, cluster: Any, clock: Callable[[], float] | None
) -> Engine:
    from .engines.simulated import SimulatedCluster, demo_users_for

    user = as_user if as_user is not None else current_user()
    if cluster is None:
        cluster = SimulatedCluster(
            seed=settings.demo_seed,
            n_jobs=settings.demo_jobs,
            clock=clock,
            users=demo_users_for(user),
            output_dir=_demo_output_dir(),
            arrays=True,
        )
    return simulated_engine(cluster, user)


def _demo_output_dir() -> str:
    """A directory of this process's own for the demo's job output files, removed at exit
    (each demo process simulates its cluster afresh: nothing in it outlives the process)."""
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    path = tempfile.mkdtemp(prefix="sckpt-demo-output-")
    Path(path).chmod(0o755)  # read as the demo's acting user, whoever that is
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def simulated_engine(cluster: SimulatedCluster, user: str) -> Engine:
    """The demo's engine: the native engine, as on a real Slurm 19.05, acting as ``user``
    over the in-process controller (named "simulated" in the header and the audit log)."""
    from .engines.demo import DemoEngine

    return DemoEngine(cluster, user)


def load_binding() -> Any:
    """The libslurm binding (``sckpt.backend.libslurm.get_binding()``), or a SetupError."""
    try:
        libslurm = importlib.import_module("sckpt.backend.libslurm")
    except ImportError as exc:
        raise SetupError(f"the libslurm binding cannot be imported: {exc}") from None
    getter = getattr(libslurm, "get_binding", None)
    if getter is None:
        raise SetupError("the libslurm binding is not available in this build (no get_binding)")
    return getter()


def _has_checkpoint_api(binding: Any) -> bool:
    for attr in ("has_checkpoint", "HAS_CHECKPOINT", "has_checkpoint_api"):
        value = getattr(binding, attr, None)
        if value is not None:
            return bool(value() if callable(value) else value)
    return False


def _real_engine(chosen: str, settings: Settings, clusters: str | None = None) -> Engine:
    try:
        binding = load_binding()
    except NoConfig as exc:
        if not exc.hint:
            exc.hint = "no Slurm configured here; run `sckpt --demo` for the simulated cluster"
        raise
    if clusters is not None:
        from .engines.clusters import ClustersEngine

        routes = binding.clusters(clusters)
        if not routes:
            raise SetupError(f"-M {clusters}: slurmdbd knows no cluster")
        return ClustersEngine(
            [
                (route.name, _engine_for(chosen, settings, binding.on_cluster(route)))
                for route in routes
            ]
        )
    return _engine_for(chosen, settings, binding)


def _engine_for(chosen: str, settings: Settings, binding: Any) -> Engine:
    """The engine ``chosen`` names (``auto``: by what the binding offers) over ``binding``."""
    request = EngineRequest(settings=settings, binding=binding)
    if chosen == "auto":
        if _has_checkpoint_api(binding):
            chosen = "native"
        else:
            chosen = "cooperative" if engine_factory("cooperative") is not None else "live"
    factory = engine_factory(chosen)
    if factory is None:
        raise SetupError(
            f"the {chosen} engine is not available in this installation",
            'use engine = "auto" or --demo',
        )
    return factory(request)
