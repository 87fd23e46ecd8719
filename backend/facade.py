"""The one door to the backend: validation, read-only guard, audit log, engine choice.

The console and the command line call only this module.  It has one method per operation
(the nine checkpoint operations and the four job-control verbs) of the table in
``operations.py``, named for it and taking exactly its ``arguments``.  Every action (a
mutating operation) goes through ``act(name, target, **arguments)``, which the named
methods call, so a caller holding a table row dispatches with ``facade.act(op.name,
target, **values)``.  Each action:

1. **resolves** its target once (``targets.resolve``: parsed, an array task's job record
   looked up, its ``-M`` cluster named, the row's whole-job rule checked) into a
   ``ResolvedTarget`` that every later step only reads, and **validates** each argument
   the table gives the operation (``arguments.py``): a bad id or argument raises
   ``UsageError`` saying what was expected, and no engine is called;
2. for a mutating operation (its row's ``mutating``): refuses with ``ReadOnlyError`` in
   read-only mode (the engine is also wrapped in ``ReadOnlyEngine``, a second guard), then
   opens the audit log (``AuditLogError`` and no action when it cannot be opened and is
   required);
3. refuses a step where the row acts on a job (restart's ``job_level``: the controller's
   ESLURM_NOT_SUPPORTED, ``acting.perform``), else calls the engine, which applies
   Slurm's rules and raises typed ``SlurmError``s;
4. appends one JSON line to the audit log for every mutating attempt, allowed or refused.

``snapshot()`` never raises on a controller outage: it returns the last data it had,
marked ``stale`` with the time it was last fresh and the reason.

Engines are chosen by ``open_facade``:

* ``demo=True`` or ``engine="simulated"``: the simulated engine over an in-process
  ``SimulatedCluster``;
* ``native``: libslurm with the ``slurm_checkpoint_*`` symbols (Slurm <= 19.05);
* ``cooperative``: modern Slurm, signal/requeue plus the shared state store;
* ``live``: modern Slurm without the cooperative engine: listing works, checkpoint
  operations answer ESLURM_NOT_SUPPORTED ("not supported by this Slurm") after the
  job-state checks;
* ``-M NAME,...|all`` (``clusters``): one such engine per cluster registered in slurmdbd,
  put together by ``engines/clusters.py`` (targets then carry their cluster);
* ``auto`` (default): native if the binding reports the checkpoint symbols, else
  cooperative (``engines/registry.chosen``).  Without any Slurm configuration ``auto``
  fails with ``NoConfig`` whose hint names ``--demo``.

Each name is one factory of ``engines/registry.py`` (``FACTORIES``), given the settings and
the binding this module opened: libslurm's (``libslurm_binding``), a ``-M`` cluster's, or
the simulated controller's client.

Beside this module: ``arguments.py`` (each argument's rule), ``targets.py`` (ids),
``acting.py`` (an action's audit lines), ``accounting.py`` (history reads) and
``readonly.py`` (the engine-side guard).
"""

from __future__ import annotations

import os
import pwd
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import accounting, progress
from .acting import ActionLog, perform, printable
from .arguments import check as check_arguments
from .arguments import given_values
from .arrays import ArrayIndex, needs_listing
from .audit import AuditLog, monotonic
from .config import ENGINES, Settings, demo_audit_log_path, load_settings
from .engines.base import Engine
from .engines.registry import FACTORIES, EngineFactory
from .engines.registry import chosen as chosen_engine
from .errors import (
    AlreadyDone,
    AuditLogError,
    ControllerUnreachable,
    Disabled,
    InvalidJobId,
    JobPending,
    NoConfig,
    SckptError,
    SetupError,
    UsageError,
    outage_text,
)
from .job_output import OutputRead, acting_uid_to_check, read_output, stream_path
from .model import (
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
    StepId,
    StepProcesses,
)
from .operations import Operation
from .operations import operation as find_operation
from .readonly import ReadOnlyEngine, refusal
from .slurm_api import SlurmAPI
from .targets import resolve as resolve_target
from .targets import to_target

if TYPE_CHECKING:
    from .libslurm.binding import Binding
    from .simulator import SimulatedCluster

Target = str | StepId


def current_user() -> str:
    """The real user running sckpt (the simulated engine's default acting user)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


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
        # mypy cannot see the methods readonly._derived sets from the interface
        guard = ReadOnlyEngine(engine) if read_only else None  # type: ignore[abstract]
        self._engine: Engine = guard if guard is not None else engine
        self.engine_name: str = engine.name
        self.audit = (
            audit
            if audit is not None
            else AuditLog(self.settings.audit_log, self.settings.audit_required)
        )
        self._log = ActionLog(self.audit, self.engine_name, self._acting_user)
        self._lock = threading.Lock()
        self._info: ClusterInfo | None = None
        self._last: Snapshot | None = None
        self._stale = False
        self._closed = False

    @property
    def last_audit_problem(self) -> str:
        """The latest audit-log failure that did not refuse an action ("" when none)."""
        return self._log.last_problem

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
        if self.simulated_cluster is not None or not self._raw_engine.waits_on_controller:
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
        return self._raw_engine.cluster_names

    @property
    def engine(self) -> Engine:
        """The engine behind the facade (wrapped in ``ReadOnlyEngine`` in read-only mode)."""
        return self._engine

    @property
    def simulated_cluster(self) -> SimulatedCluster | None:
        """The ``SimulatedCluster`` behind the demo's engine (test hooks), else None."""
        from .engines.simulated import SimulatedEngine  # light: no simulator imported

        engine = self._raw_engine
        return engine.simulator if isinstance(engine, SimulatedEngine) else None

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

    def resolve(self, target: object, *, label: bool = False) -> StepId:
        """``target`` as a job record: an array task typed as ``7_3`` looked up in the
        listing (``arrays.py``; ``InvalidJobId`` when no record holds it); with ``label``,
        a record that is an array task also gets its array names (what the audit log and
        the answers show), from the listing at hand.  An action's target is resolved
        further, once: ``targets.resolve`` (``act``)."""
        step = to_target(target)
        return self._record(step, label=label)

    def _record(self, step: StepId, pending_ok: bool = False, *, label: bool = True) -> StepId:
        """The job record ``step`` (parsed) names: ``resolve``'s lookup, and the one
        ``targets.resolve`` is given for an action (``pending_ok``: a pending array task
        stays named by its array, ``arrays.py``)."""
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
        names its job: steps of a batch job write to the job's files; with ``-M``, on the
        target's cluster)."""
        return self._engine.job_stdio(self.resolve(target).whole_job)

    def read_output(
        self, stdio: JobStdio, stream: str = "stdout", offset: int | None = None
    ) -> OutputRead:
        """The tail of the job's ``stream`` (None ``offset``) or what was appended after
        ``offset``, read as the acting user would (never raises: ``problem`` says why not)."""
        uid = self._raw_engine.caller_uid
        return read_output(
            stream_path(stdio, stream),
            offset,
            state=stdio.state,
            as_uid=acting_uid_to_check(uid) if uid is not None else None,
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

    def ask(self, name: str, target: Target) -> AbleResult | CheckpointError:
        """Run the reading operation ``name`` of the table (``able``, ``error``) on
        ``target``: with ``act`` for the others, the front ends' one way to run an
        operation they hold by name."""
        if find_operation(name).mutating:
            raise ValueError(f"{name} acts: call Facade.act")
        read: Callable[[Target], AbleResult | CheckpointError] = getattr(self, name)
        return read(target)

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
        return accounting.job_history(self._engine, self.resolve(target), since, limit, self._last)

    def finished_jobs(
        self, since: int | str | None = None, limit: int | str | None = None
    ) -> FinishedJobs:
        """Jobs that ended since ``since`` (default ``FINISHED_SINCE`` ago), newest first,
        at most ``limit``, from accounting; the console asks when a person presses ``f``."""
        return accounting.finished_jobs(self._engine, since, limit)

    # ---------------------------------------------------------- acting

    def act(self, name: str, target: object, **values: Any) -> ActionResult:
        """Run the mutating operation ``name`` of the table on ``target``: the one way to
        act (``able`` and ``error`` only read: their methods ask the engine directly).

        ``values`` are the operation's arguments (``Operation.arguments``), each checked by
        its rule (``arguments.py``); one left out takes its default (max_wait and
        image_dir: the config's).  The action is refused in read-only mode and audited,
        allowed or refused.
        """
        op = find_operation(name)
        if not op.mutating:
            raise ValueError(f"{name} only reads: call Facade.{name}, not act")
        started = monotonic()
        shown = str(target) if isinstance(target, StepId | str) else repr(target)
        try:
            resolved = resolve_target(target, op, self.clusters, self._record)
            args = self._with_defaults(op, check_arguments(op, values))
        except UsageError as exc:
            raw = printable(given_values(op, values))
            self._log.refusal(name, shown[:200], raw, exc, started)
            raise
        step = resolved.step
        if self.read_only:
            refused = refusal(name, step)
            self._log.refusal(name, str(step), args, refused, started, cluster=step.cluster)
            raise refused
        reservation = self.audit.reserve()  # AuditLogError here: nothing was done
        try:
            result = perform(self._engine, name, resolved, args)
        except SckptError as exc:
            problem = self._log.outcome(reservation, name, step, args, exc, started)
            if problem:
                exc.hint = f"{exc.hint}; {problem}" if exc.hint else problem
            raise
        except BaseException as exc:  # Ctrl-C too: the request may have gone out (a
            # cooperative create waits for its outcome here), so it must be in the log
            self._log.outcome(reservation, name, step, args, exc, started)
            raise
        problem = self._log.outcome(reservation, name, step, args, None, started)
        if problem:
            if self.audit.required:
                raise AuditLogError(
                    f"{name} {step} WAS DONE ({result.detail or 'accepted'}), "
                    f"but its audit line could not be written: {problem}",
                    "the action is not in the audit log; record it by hand",
                )
            detail = f"{result.detail}; " if result.detail else ""
            result = replace(result, detail=f"{detail}audit log not written: {problem}")
        return result

    def _with_defaults(self, op: Operation, args: dict[str, Any]) -> dict[str, Any]:
        """Checked arguments with the config's max_wait and image_dir where none was given
        (a row with ``own_image_dir`` takes "" for "each step's own image dir")."""
        if "max_wait" in args and args["max_wait"] is None:
            args["max_wait"] = self.settings.max_wait
        if "image_dir" in args and args["image_dir"] is None:
            args["image_dir"] = self.settings.image_dir
            if op.own_image_dir and args["image_dir"] is None:
                args["image_dir"] = ""
        return args

    # The named methods: one per operation of the table, with exactly its arguments.

    def create(
        self, target: Target, max_wait: int | str | None = None, image_dir: str | None = None
    ) -> ActionResult:
        """Checkpoint and continue (defaults: the config's max_wait and image_dir)."""
        return self.act("create", target, max_wait=max_wait, image_dir=image_dir)

    def vacate(
        self,
        target: Target,
        max_wait: int | str | None = None,
        image_dir: str | None = None,
        force: bool = False,
    ) -> ActionResult:
        """Checkpoint, then terminate the step (``force``: even where tasks have no image)."""
        return self.act("vacate", target, max_wait=max_wait, image_dir=image_dir, force=force)

    def restart(
        self,
        target: Target,
        stick: bool = False,
        image_dir: str | None = None,
        force: bool = False,
    ) -> ActionResult:
        """Resume a checkpointed job under the same id (``stick``: on the same nodes;
        ``force``: even where a task's image is missing, which then starts from zero)."""
        return self.act("restart", target, stick=stick, image_dir=image_dir, force=force)

    def enable(self, target: Target) -> ActionResult:
        """Decrement the step's disable counter (never below zero)."""
        return self.act("enable", target)

    def disable(self, target: Target) -> ActionResult:
        """Increment the step's disable counter."""
        return self.act("disable", target)

    def complete(
        self,
        target: Target,
        begin_time: int | None = 0,
        error_code: int = 0,
        error_msg: str | None = "",
    ) -> ActionResult:
        """Report a finished checkpoint; only the highest error code is kept."""
        return self.act(
            "complete", target, begin_time=begin_time, error_code=error_code, error_msg=error_msg
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
        return self.act(
            "tasks",
            target,
            begin_time=begin_time,
            image_dir=image_dir,
            max_wait=max_wait,
            nodelist=nodelist,
        )

    def auto(
        self,
        target: Target,
        every: int | str | None = None,
        before_end: int | str | None = None,
        off: bool = False,
    ) -> ActionResult:
        """Change a running step's automatic checkpoints: ``every`` (a duration, or
        ``auto``), ``before_end`` (a duration), each left out unchanged; ``off`` clears
        the policy."""
        return self.act("auto", target, every=every, before_end=before_end, off=off)

    # The job-control verbs: the controller's rules, sckpt's guard and audit log.

    def cancel(self, target: Target, signal: int | str | None = None) -> ActionResult:
        """End the job or step as scancel does; ``signal`` (a name or number): only send
        it, as ``scancel --signal``."""
        return self.act("cancel", target, signal=signal)

    def hold(self, target: Target) -> ActionResult:
        """Hold a job (whole job only), as scontrol hold."""
        return self.act("hold", target)

    def release(self, target: Target) -> ActionResult:
        """Release a held job (whole job only), as scontrol release."""
        return self.act("release", target)

    def requeue(self, target: Target) -> ActionResult:
        """Requeue a batch job (whole job only), as scontrol requeue."""
        return self.act("requeue", target)

    def close(self) -> None:
        """Release the engine (threads, libslurm); safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._engine.close()

    def wrap_engine(self, wrap: Callable[[Engine], Engine]) -> None:
        """Put ``wrap(engine)`` between the facade and the engine it calls, read-only guard
        included: how a test or a bench sees every call that reaches the engine, without
        reaching inside the facade."""
        self._engine = wrap(self._engine)

    def __enter__(self) -> Facade:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _acting_user(self) -> str:
        """Who the engine acts as, without asking the controller (it may be down)."""
        named = self._raw_engine.acting_user
        if named is not None:
            return named
        info = self._info
        return info.acting_user if info is not None else ""


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
    binding: SlurmAPI
    if chosen == "simulated":
        binding = _simulated_client(settings, as_user, cluster, clock)
        if audit is None and (demo or cluster is None):  # the user's demo, not a test's cluster
            audit = AuditLog(demo_audit_log_path(settings.audit_log), settings.audit_required)
    else:
        if as_user is not None:
            raise UsageError(
                f"--as-user works only on the simulated cluster (engine {chosen!r}): "
                "on a real cluster run sckpt as that user"
            )
        binding = _opened_binding()
    factory = FACTORIES[chosen_engine(chosen, binding)]
    engine_obj = (
        factory(settings, binding)
        if clusters is None
        else _per_cluster(factory, settings, clusters)
    )
    return Facade(engine_obj, settings, read_only=ro, audit=audit)


def _check_user_name(name: object) -> None:
    import re

    if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_.\-]{0,31}\$?", name):
        raise UsageError(f"invalid user name {name!r}: expected a login name such as alice or root")


def _simulated_client(
    settings: Settings, as_user: str | None, cluster: Any, clock: Callable[[], float] | None
) -> SlurmAPI:
    """The simulated controller's client for the acting user (``--as-user``, else the
    login name): a fresh demo cluster from the settings, or the test's ``cluster``."""
    from .simulator import DEMO_FIRST_PART, SimulatedCluster, demo_users_for

    user = as_user if as_user is not None else current_user()
    if as_user is not None:
        _check_demo_user(as_user, cluster)
    if cluster is None:
        cluster = SimulatedCluster(
            seed=settings.demo_seed,
            n_jobs=settings.demo_jobs,
            clock=clock,
            users=demo_users_for(user),
            output_dir=_demo_output_dir(),
            arrays=True,
            first_part=DEMO_FIRST_PART,  # the rest when first needed (simulator/staging.py)
        )
    client: SlurmAPI = cluster.connect(user)
    return client


def _check_demo_user(name: str, cluster: Any) -> None:
    """Refuse ``--as-user NAME`` for a user the simulated cluster does not have.

    Why: the demo gives the acting user alice's jobs so that a login name owns some; an
    explicit ``--as-user zed`` took that slot too and showed alice's jobs as zed's.  The
    names it has are its users, root and SlurmUser (and the login name, which is the
    default and takes alice's place)."""
    from .simulator import DEMO_USERS
    from .simulator.catalog import SLURM_USER

    users = [c.name for c in cluster.users] if cluster is not None else list(DEMO_USERS)
    known = [*users, "root", SLURM_USER]
    if name in known or name == current_user():
        return
    raise UsageError(
        f"--as-user {name}: the simulated cluster has no user {name!r}; "
        f"its users are {', '.join(known)}"
    )


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
    _remove_on_signals(path)
    return path


def _remove_on_signals(path: str) -> None:
    """Remove ``path`` also when the process ends by SIGHUP or SIGTERM, then end as that
    signal would have ended it.

    Why: ``atexit`` runs only on a normal exit, and both signals' default action ends the
    process at once, so a console that hung up or an ``output -f`` stopped by ``kill`` left
    its demo directory in /tmp.  A handler the process already had (one it set itself) is
    called afterwards instead; outside the main thread nothing is installed.
    """
    import shutil
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGHUP, signal.SIGTERM):
        before = signal.getsignal(signum)
        if before is signal.SIG_IGN:
            continue  # nohup: the signal does not end the process, atexit will run

        def removed(got: int, frame: object, before: object = before) -> None:
            shutil.rmtree(path, ignore_errors=True)
            if callable(before):
                before(got, frame)
                return
            signal.signal(got, signal.SIG_DFL)
            os.kill(os.getpid(), got)

        signal.signal(signum, removed)


def simulated_engine(
    cluster: SimulatedCluster, user: str, settings: Settings | None = None
) -> Engine:
    """The simulated engine (``--demo``'s): the native engine, as on a real Slurm 19.05,
    acting as ``user`` over the in-process controller (named "simulated" in the header
    and the audit log)."""
    return FACTORIES["simulated"](settings or Settings(), cluster.connect(user))


def libslurm_binding() -> Binding:
    """The process's libslurm binding (``sckpt.backend.libslurm.get_binding()``, which
    loads it once), or a SetupError when the binding cannot be imported.

    Not ``libslurm.binding.load_binding``, which builds a new ``Binding`` every call."""
    try:
        from . import libslurm
    except ImportError as exc:
        raise SetupError(f"the libslurm binding cannot be imported: {exc}") from None
    return libslurm.get_binding()


def _opened_binding() -> Binding:
    """``libslurm_binding``, its ``NoConfig`` naming ``--demo``."""
    try:
        return libslurm_binding()
    except NoConfig as exc:
        if not exc.hint:
            exc.hint = "no Slurm configured here; run `sckpt --demo` for the simulated cluster"
        raise


def _per_cluster(factory: EngineFactory, settings: Settings, clusters: str) -> Engine:
    """``-M``: one engine per cluster slurmdbd knows of ``clusters``, each over its own
    cluster's binding, put together (``engines/clusters.py``)."""
    from .engines.clusters import ClustersEngine

    binding = _opened_binding()
    routes = binding.clusters(clusters)
    if not routes:
        raise SetupError(f"-M {clusters}: slurmdbd knows no cluster")
    return ClustersEngine(  # type: ignore[abstract]  # clusters._derived sets its methods
        [(route.name, factory(settings, binding.on_cluster(route))) for route in routes]
    )
