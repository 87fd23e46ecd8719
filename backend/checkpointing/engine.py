"""The cooperative engine: the nine checkpoint operations on Slurm 20.02 and later.

Slurm no longer checkpoints anything, so the work is shared with the application: a step
launched under ``sckpt run`` (``wrapper.py``) registers itself in a per-step state
file on the shared filesystem (``store.py``, ``protocol.py``), and this engine maps each operation
onto that file and onto the libslurm primitives that remain (through the binding only):

======== ==================================================================================
able     job-state checks, then the step's state file: ESLURM_DISABLED while the disable
         counter is above zero, else the start time of a checkpoint in progress (0: none)
error    the highest code reported for the last checkpoint, with its message
enable   decrement the counter (never below zero) / disable: increment it
create   record the request (who, when, image dir, max_wait), wake the wrapper with
         ``slurm_signal_job_step(SIGURG)``, wait up to max_wait for every task to report;
         a timeout is recorded as ETIME
vacate   create, then end the step: a batch job is requeued held (``slurm_requeue`` with
         JOB_REQUEUE_HOLD) after every registered step was checkpointed, so restart can bring
         it back; a job Slurm cannot requeue (no batch script: ``rules.requeue_refusal``)
         is refused before anything is sent, ESLURM_BATCH_ONLY, unless forced: then its
         steps get SIGTERM (``slurm_kill_job_step``) and it is gone for good
restart  whole job only: release the held job (or requeue a finished batch job), start it
         now, pinned to its previous nodes with ``stick``; each wrapper then hands
         SLURM_RESTART_DIR (its last complete image) to the program
complete the program's (or an operator's) report: highest code kept; ends the checkpoint
         whose start time it names
tasks    ask the step's tasks on the named nodes to checkpoint (no wait)
auto     the step's automatic-checkpoint policy, set in its record (``policy.py``); task
         0's wrapper carries it out (``autopilot.py``)
======== ==================================================================================

The reference's checks come first and in its order (no such job, access, pending, suspended,
done, no such step: ``rules.check_target``, the simulated controller's too); only then does
the state file decide.  A step without a state file answers ESLURM_NOT_SUPPORTED with the reason.

Access: the acting user is the process's real uid; only the job's owner and root pass
(SlurmUser too for whole-job requests).  The controller enforces the same for signals,
requeue and release, and the state file's permissions (0644, owned by the job's user)
enforce it for the counter.

Waiting: create and vacate block the calling thread (the facade's worker) for at most
max_wait seconds while polling the state file; the engine's lock is not held meanwhile, so
refreshes and other operations go on.  max_wait 0 means "no limit" as in the simulated
engine; a console that dies while waiting leaves the deadline in the file, and whoever
looks next (console or wrapper) records the timeout.  Every wait (these, and restart's
settling) reads the engine's ``clock`` and passes on its ``sleep``, both injected: a test
gives a fake pair and no wait is real time in it (tests/backend/test_engine_time.py).
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .. import rules
from ..engines.live import LiveEngine
from ..errors import (
    ESLURM_BATCH_ONLY,
    ESLURM_INVALID_JOB_ID,
    ESLURM_NOT_SUPPORTED,
    CheckpointFailed,
    InvalidJobId,
    NotRequeueable,
    NotSupported,
    SckptError,
    UnsafeRestart,
    error_for,
)
from ..hostlist import expand_hostlist
from ..model import (
    STEP_BATCH,
    STEP_EXTERN,
    AbleResult,
    ActionResult,
    CheckpointError,
    CheckpointKind,
    CheckpointState,
    Job,
    JobState,
    Snapshot,
    Step,
    StepCheckpointEvent,
    StepId,
    StepView,
)
from ..slurm_api import SlurmAPI
from . import policy, wait_end
from .access import image_dir_problem
from .protocol import (
    DEFAULT_WAKE,
    StepRecord,
    StoreError,
    image_leaf,
    state_dir_for,
)
from .records import (
    NOT_UNDER_RUN,
    blocked_refusal,
    blocked_tasks,
    column,
    current_tasks,
    cut_refusal,
    job_records,
    named,
    not_restored,
    resume_plan,
    start_notes,
    step_outcome,
    task_failures,
    typed,
    unprotected_refusal,
    unregistered,
    unregistered_job,
    unregistered_step,
    vacate_failed,
)
from .restart import images_under, release_and_start, wait_settled
from .state_reads import StateReads
from .store import ImageIndex, StepStore, job_stores

WAIT_POLL = 0.05


@dataclass(frozen=True)
class _Target:
    """One step an operation acts on, with its state file and the record read from it."""

    step: Step
    store: StepStore
    record: StepRecord


class CooperativeEngine(LiveEngine):
    """Checkpoints through ``sckpt run`` wrappers, the shared state store and libslurm.

    Listing, the acting user and the reference's checks come from ``LiveEngine``.
    """

    name = "cooperative"
    runs_checkpoints = True
    volatile_states = True
    """State files change while Slurm's job list does not: the running jobs' views are
    rebuilt on every snapshot (``states_due``)."""

    def __init__(
        self,
        binding: SlurmAPI,
        state_dir: str | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(binding, clock)
        self._state_dir = state_dir
        self._clock = clock
        self._sleep = sleep
        """How every wait here passes (create's and vacate's, restart's settling): with
        ``clock``, what a test drives (a fake sleep moves a fake clock on)."""
        self._reads = StateReads()
        """What the snapshots read of the state files (``state_reads.py``)."""
        self._due_for: tuple[Job, ...] | None = None
        self._due_ids: set[int] = set()
        """``states_due`` for the job listing ``_due_for``."""

    def snapshot(self) -> Snapshot:
        """``LiveEngine.snapshot``, its state files read with one walk per directory."""
        with self._lock, self._reads.batch():
            return super().snapshot()

    def states_due(self) -> set[int] | None:
        """The jobs whose steps' columns come from state files: those whose own state does
        not decide the column (``rules.column_for_job``), i.e. running ones.  Worked out
        once per job listing; a pending or finished job's column follows from the
        listing alone."""
        jobs = self._jobs
        if self._due_for is not jobs:
            self._due_ids = {j.job_id for j in jobs if rules.column_for_job(j) is None}
            self._due_for = jobs
        return self._due_ids

    def checkpoint_events(
        self, job_id: int, work_dir: str, uid: int
    ) -> tuple[StepCheckpointEvent, ...]:
        """Each step's checkpoint history from its state file (the store outlives the job:
        a finished or requeued job's files stay next to its working directory)."""
        if not work_dir and not self._state_dir:
            return ()
        found: list[StepCheckpointEvent] = []
        try:
            stores = job_stores(state_dir_for(work_dir, self._state_dir), job_id, owner=uid)
        except StoreError:
            return ()  # unreadable or untrusted: the history shows what can be believed
        for store in stores:
            try:
                rec = store.read()
            except StoreError:
                continue  # unreadable or untrusted: the history shows what can be believed
            if rec is not None:
                found.extend(StepCheckpointEvent(store.step, e) for e in rec.events())
        return tuple(sorted(found, key=lambda e: (e.event.time, e.step_id)))

    def _state_dir_of(self, job: Job) -> Path:
        return state_dir_for(job.work_dir, self._state_dir)

    def _store(self, job: Job, step: StepId) -> StepStore:
        return StepStore(self._state_dir_of(job), step, owner=job.uid)

    def _look(self, job_id: int) -> tuple[Job | None, tuple[Step, ...]]:
        """A fresh listing's ``job_id`` and its steps (``restart.Look``)."""
        with self._lock:
            self.refresh()
            return self._by_job.get(job_id), self._steps_by_job.get(job_id, ())

    def step_views(self, job: Job, steps: Sequence[Step]) -> tuple[StepView, ...]:
        """Each step's ``checkpoint_state``, a running job's state directory worked out
        once for all its steps (and not at all for the other jobs: most of a queue)."""
        if not steps or rules.column_for_job(job) is not None:
            return super().step_views(job, steps)
        directory = self._state_dir_of(job)
        return tuple(StepView(step, self._step_state(job, step, directory)) for step in steps)

    def checkpoint_state(self, job: Job, step: Step) -> CheckpointState:
        """A step's checkpoint column: from the job's state, then from its state file."""
        return self._step_state(job, step, None)

    def _step_state(self, job: Job, step: Step, directory: Path | None) -> CheckpointState:
        """``checkpoint_state``; ``directory``: the job's (``_state_dir_of``), when known."""
        by_job = rules.column_for_job(job)
        if by_job is not None:
            return CheckpointState(by_job[0], reason=by_job[1])
        if step.step_id.step == STEP_EXTERN:
            return CheckpointState(
                CheckpointKind.NOT_SUPPORTED, reason="the extern step runs no program"
            )
        if self.caller_uid not in (None, 0, job.uid):  # as able and error: nothing (issue 34)
            return rules.not_asked(job)
        if directory is None:
            directory = self._state_dir_of(job)
        store = self._reads.store(directory, step.step_id, job.uid)
        try:
            rec = self._reads.record(store)
        except StoreError as exc:
            return CheckpointState(CheckpointKind.UNKNOWN, reason=exc.message)
        return column(rec, job) or unregistered(step, store.path, self._clock())

    def _checks(self, target: StepId, *, suspended_ok: bool = False) -> Job:
        """The reference's checks 1-6 (``LiveEngine.check_target``), on fresh data."""
        job, _steps = self.check_target(target, suspended_ok=suspended_ok)
        return job

    def _targets(self, job: Job, target: StepId) -> list[_Target]:
        """Steps to act on: the named one, or every running step under ``sckpt run``."""
        steps = list(self._steps_by_job.get(job.job_id, []))
        if target.is_whole_job:
            registered = [
                t
                for s in steps
                if s.state == "RUNNING" and s.step_id.step != STEP_EXTERN
                if (t := self._registered(job, s)) is not None
            ]
            if not registered:
                running = [(s, self._store(job, s.step_id).path) for s in steps]
                raise unregistered_job(job, running, self._clock())
            return registered
        for s in steps:
            if s.step_id.step == target.step:
                t = self._registered(job, s)
                if t is None:
                    raise unregistered_step(s, self._store(job, s.step_id).path, self._clock())
                return [t]
        raise InvalidJobId(hint=f"job {job.job_id} has no running step {target.step_text}")

    def _registered(self, job: Job, step: Step) -> _Target | None:
        """The step with its record when a task of this run of the job registered it."""
        store = self._store(job, step.step_id)
        try:
            rec = store.read()
        except StoreError as exc:
            raise typed(exc) from None
        if rec is None or not current_tasks(rec, job):
            return None
        return _Target(step, store, rec)

    @staticmethod
    def _refuse_blocked(job: Job, targets: Iterable[_Target]) -> None:
        """Refuse before anything is sent when a task's program does not catch its signal.

        Sending it would kill the program (SIGUSR1's default action), or do nothing.  The
        wrapper looks again right before sending; this is the refusal a person sees first.
        """
        blocked = [
            (t.step.step_id, task, why)
            for t in targets
            for task, why in blocked_tasks(t.record, job)
        ]
        if blocked:
            raise blocked_refusal(blocked)

    def _unprotected_steps(self, job: Job, targets: Iterable[_Target]) -> list[Step]:
        """Steps a requeue of ``job`` would end that are not under ``sckpt run``."""
        named = {t.step.step_id.step for t in targets}
        return [
            s
            for s in self._steps_by_job.get(job.job_id, [])
            if s.state == "RUNNING"
            and s.step_id.step not in (STEP_BATCH, STEP_EXTERN)
            and s.step_id.step not in named
            and self._registered(job, s) is None
        ]

    def _update(self, t: _Target, change: Callable[[StepRecord], Any]) -> Any:
        """A locked store update; its failure as the error a person sees (``records.typed``)."""
        try:
            return t.store.update(change)
        except StoreError as exc:
            raise typed(exc) from None

    def _check_image_dir(
        self, job: Job, targets: Iterable[_Target], image_dir: str | None, *, write: bool
    ) -> None:
        """Refuse an image dir the job's owner cannot write (or, for restart, read).

        The job's tasks write and read the images as that user; finding out only after the
        request (or, for vacate, after the step ended) would be too late.
        """
        if not image_dir:
            return
        places = [
            Path(image_dir) / image_leaf(named(job, t.step.step_id), t.record.name) for t in targets
        ] or [Path(image_dir)]
        for place in places:
            code, why = image_dir_problem(str(place), job.uid, write=write)
            if code:
                verb = "write images to" if write else "read images from"
                raise error_for(
                    code, hint=f"job {job.job_id}'s tasks cannot {verb} {image_dir}: {why}"
                )

    # ------------------------------------------------------------------ reads
    def able(self, target: StepId) -> AbleResult:
        job = self._checks(target)
        starts: list[int] = []
        codes: list[tuple[StepId, int]] = []
        notes: list[str] = []
        targets = self._targets(job, target)
        self._refuse_blocked(job, targets)
        for t in targets:
            rec = self._expire(t)
            codes.append((t.step.step_id, rules.able_code(rec.disable_count)))
            if rec.in_progress is not None:
                starts.append(rec.in_progress.start)
            if job.restart_count:  # after a restart: say which tasks did not resume
                notes += [
                    f"{t.step.step_id} {note}"
                    for note in start_notes(current_tasks(rec, job))
                    if "resumed from" not in note
                ]
        rules.raise_highest(target, codes)
        return AbleResult(target, min(starts) if starts else 0, tuple(notes))

    def _expire(self, t: _Target) -> StepRecord:
        """Read a record, recording a timeout first when its request is past the deadline."""
        rec = t.store.read()
        if rec is None:
            raise NotSupported(hint=NOT_UNDER_RUN)
        req = rec.in_progress
        if req is not None and req.deadline and self._clock() >= req.deadline:
            if not self.writes_allowed:  # read-only: say it timed out, write nothing
                rec.expire(int(self._clock()))
                return rec
            with contextlib.suppress(StoreError):
                t.store.update(lambda r: r.expire(int(self._clock())))
            rec = t.store.read() or rec
        return rec

    def error(self, target: StepId) -> CheckpointError:
        job = self._checks(target)
        return rules.worst_error(
            self._expire(t).checkpoint_error() for t in self._targets(job, target)
        )

    # ------------------------------------------------------------------ counter
    def enable(self, target: StepId) -> ActionResult:
        return self._counter(target, "enable", rules.enabled)

    def disable(self, target: StepId) -> ActionResult:
        return self._counter(target, "disable", rules.disabled)

    def _counter(self, target: StepId, operation: str, count: Callable[[int], int]) -> ActionResult:
        job = self._checks(target)
        codes = []
        for t in self._targets(job, target):

            def change(rec: StepRecord) -> None:
                rec.disable_count = n = count(rec.disable_count)
                rec.log(operation, self.caller_name, 0, f"counter {n}", clock=self._clock)

            self._update(t, change)
            codes.append((t.step.step_id, 0))
        return rules.aggregate(target, operation, codes)

    # ------------------------------------------------------------------ policy
    def auto(
        self, target: StepId, every: int | None, before_end: int | None, off: bool
    ) -> ActionResult:
        """Change each target step's policy in its record, under its lock: task 0's wrapper
        reads it again on its next turn (every ``--poll``), and the next interval
        checkpoint is due one interval from now."""
        job = self._checks(target)
        targets = self._targets(job, target)
        if before_end and job.start_time and job.end_time > job.start_time:
            policy.check_before_end_limit(before_end, job.end_time - job.start_time, job.job_id)
        change = partial(
            policy.set_by_operator,
            every=every,
            before_end=before_end,
            off=off,
            by=self.caller_name,
            now=int(self._clock()),
        )
        words = {str(t.step.step_id): str(self._update(t, change)) for t in targets}
        codes = [(t.step.step_id, 0) for t in targets]
        shared = set(words.values())
        detail = (
            shared.pop() if len(shared) == 1 else "; ".join(f"{k}: {w}" for k, w in words.items())
        )
        return rules.aggregate(target, "auto", codes, detail)

    # ------------------------------------------------------------------ checkpoints
    def _begin(
        self,
        job: Job,
        targets: Iterable[_Target],
        operation: str,
        max_wait: int,
        image_dir: str | None,
        hosts: set[str] | None = None,
    ) -> list[tuple[_Target, int, str]]:
        """Record a request in each step; per step: (target, code, request id), or for a
        refused step (target, code, why: disabled, or a checkpoint still running, which
        includes a program still writing the image of an earlier, expired request)."""
        out = []
        now = int(self._clock())
        for t in targets:

            def change(rec: StepRecord, t: _Target = t) -> tuple[int, str, str]:
                leaf = image_leaf(named(job, t.step.step_id), rec.name)
                leaf_dir = str(Path(image_dir) / leaf) if image_dir else ""
                if (
                    rec.in_progress is not None
                    and rec.in_progress.deadline
                    and now >= rec.in_progress.deadline
                ):
                    rec.expire(now)
                refused, why = rec.refusal()
                if refused:
                    return refused, why, ""
                tasks = current_tasks(rec, job)
                why = cut_refusal(rec, job, tasks, hosts)
                if why:
                    return ESLURM_NOT_SUPPORTED, why, ""
                req = rec.begin_request(self.caller_name, leaf_dir, max_wait, operation, now)
                req.pending = sorted(x.procid for x in tasks if hosts is None or x.host in hosts)
                if not req.pending:
                    rec.in_progress = None
                    return ESLURM_INVALID_JOB_ID, "", ""
                wake = next((x.wake for x in tasks if x.procid in req.pending), DEFAULT_WAKE)
                return 0, req.request_id, wake

            code, request_id, wake = self._update(t, change)
            out.append((t, code, request_id))
            if code == 0:
                # Best effort: a lost or refused signal only delays the wrapper's next poll.
                with contextlib.suppress(SckptError, KeyError):
                    self.binding.signal_step(t.step.step_id, int(signal.Signals[wake]))
        return out

    def _wait(self, job: Job, started: list[tuple[_Target, int, str]], max_wait: int) -> str:
        """Wait until each request is closed (or its deadline passes); say how it ended.
        A job or step that goes away meanwhile ends it (``wait_end.end_if_over``)."""
        begin = looked = self._clock()
        pending = [(t, rid) for t, code, rid in started if code == 0]
        while pending:
            if self._clock() - looked >= wait_end.LOOK_EVERY:
                looked = self._clock()
                stores = [(t.store, rid) for t, rid in pending]
                wait_end.end_if_over(self._look, job, stores, self._sleep, self._clock)
            still = []
            for t, rid in pending:
                try:
                    rec = t.store.read()
                except StoreError:
                    continue
                req = rec.in_progress if rec is not None else None
                if req is not None and req.request_id == rid:
                    if req.deadline and self._clock() >= req.deadline:
                        with contextlib.suppress(StoreError):
                            t.store.update(lambda r: r.expire(int(self._clock())))
                        continue
                    still.append((t, rid))
            pending = still
            if pending:
                self._sleep(WAIT_POLL)
        took = self._clock() - begin
        outcomes = []
        failed = False
        for t, code, _rid in started:
            if code:
                continue
            rec = t.store.read()
            if rec is None:
                continue
            code, said = step_outcome(rec, job)
            failed = failed or bool(code)
            outcomes.append(f"{t.step.step_id}: {said}")
        verb = "ended" if failed else "completed"
        return f"checkpoint {verb} after {took:.1f}s; " + "; ".join(outcomes)

    @staticmethod
    def _refuse(target: StepId, operation: str, started: list[tuple[_Target, int, str]]) -> None:
        """Raise the refusal when a step refused to start (one step: with its words, such
        as when the checkpoint still running began); nothing when every step started."""
        codes = [(t.step.step_id, code) for t, code, _ in started]
        if any(code for _sid, code in codes):
            why = next(w for _t, code, w in started if code) if len(started) == 1 else ""
            rules.raise_highest(target, codes, hint=why)

    def _checkpoint(
        self, target: StepId, operation: str, max_wait: int, image_dir: str | None
    ) -> tuple[list[tuple[StepId, int]], str, tuple[str, ...]]:
        job = self._checks(target)
        targets = self._targets(job, target)
        self._refuse_blocked(job, targets)
        self._check_image_dir(job, targets, image_dir, write=True)
        started, detail, failures = self._run(job, target, targets, operation, max_wait, image_dir)
        if failures:
            code, message, hint = self._failed(job, failures)
            raise CheckpointFailed(code, message, hint=hint)
        # Whole job: the steps that could were checkpointed; the highest refusal is reported.
        codes = [(t.step.step_id, code) for t, code, _ in started]
        rules.raise_highest(target, codes)
        return codes, detail, not_restored([(t.step.step_id, t.store) for t in targets], job)

    def _run(
        self,
        job: Job,
        target: StepId,
        targets: list[_Target],
        operation: str,
        max_wait: int,
        image_dir: str | None,
        refuse_if: Callable[[Iterable[int]], bool] = all,
    ) -> tuple[list[tuple[_Target, int, str]], str, list[tuple[int, str, str]]]:
        """The shape create and vacate share: start the request in each step, refuse when
        ``refuse_if`` the steps' codes (create: all refused; vacate, which must not end a
        step that was not checkpointed: any, once the others are over), wait, and return
        what started, how it ended and each task whose checkpoint did not complete."""
        started = self._begin(job, targets, operation, max_wait, image_dir)
        if refuse_if(code for _t, code, _ in started):
            self._wait(job, started, max_wait)  # nothing to wait for when none started
            self._refuse(target, operation, started)
        detail = self._wait(job, started, max_wait)
        failures = task_failures((t.step.step_id, t.store) for t, code, _ in started if not code)
        return started, detail, failures

    def _failed(
        self, job: Job, failures: list[tuple[int, str, str]]
    ) -> tuple[int, str | None, str]:
        """The first failure's code and message, and the hint naming them all; a job that
        went away meanwhile raises that instead (it explains them better)."""
        wait_end.end_if_over(self._look, job, [], self._sleep)
        code, message, _who = failures[0]
        return (
            code,
            message or None,
            "the checkpoint did not complete: " + "; ".join(f[2] for f in failures[:6]),
        )

    def create(self, target: StepId, max_wait: int, image_dir: str | None) -> ActionResult:
        codes, detail, notes = self._checkpoint(target, "create", max_wait, image_dir)
        per_step = tuple(codes) if target.is_whole_job else ()
        return ActionResult(target, "create", detail, per_step, notes)

    def vacate(
        self, target: StepId, max_wait: int, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        """Checkpoint, then end: never without an image unless ``force``.

        Refused before anything is sent when Slurm cannot requeue the job (no batch script:
        ending it would end it for good, ``NotRequeueable``), when a task's program does not
        catch its signal, or when the requeue of a batch job would end steps that are not
        under ``sckpt run``; after the checkpoint, when any task's did not complete (the job
        keeps running).  ``force`` goes on in each case and says what restart will start
        without an image, or that it cannot bring the job back.
        """
        job = self._checks(target)
        targets, unrequeueable = self._vacate_targets(job, target, force)
        if not force:
            self._refuse_blocked(job, targets)
        self._check_image_dir(job, targets, image_dir, write=True)
        # Ending a step that is disabled (a critical section) or already checkpointing would
        # lose work: refuse the whole vacate before anything starts.
        precheck = []
        for t in targets:
            rec = self._expire(t)
            code = rules.checkpoint_code(rec.disable_count, rec.in_progress is not None)
            precheck.append((t.step.step_id, code))
        rules.raise_highest(target, precheck)
        lost = self._unprotected(job, targets, force) if job.batch else []
        _started, detail, failures = self._run(
            job, target, targets, "vacate", max_wait, image_dir, refuse_if=any
        )
        if failures and not force:
            code, message, hint = self._failed(job, failures)
            raise vacate_failed(job, code, message, hint, failures)
        lost += [f[2] for f in failures]
        for t in targets:
            with contextlib.suppress(SckptError):
                self._update(t, lambda r: setattr(r, "job_nodes", job.nodes))
        if job.batch:
            detail += self._requeue_held(job, targets)
        else:
            detail += self._end_steps(targets, unrequeueable)
        if lost:
            detail += "; forced: restart will start without an image for " + "; ".join(lost[:6])
        return ActionResult(target, "vacate", detail)

    def _vacate_targets(self, job: Job, target: StepId, force: bool) -> tuple[list[_Target], str]:
        """The steps a vacate checkpoints (a batch job's requeue ends every step: all of
        its registered ones), and why Slurm cannot requeue the job ("" when it can);
        refused when there is nothing to checkpoint, or, unless ``force``, nothing to
        restart afterwards."""
        try:
            targets = self._targets(job, target)
        except NotSupported as exc:
            if force:
                exc.hint += (
                    "; --force cannot help: it lets vacate end tasks whose checkpoint did not "
                    "complete, and here there is nothing under `sckpt run` to checkpoint "
                    "(`sckpt requeue` or `sckpt cancel` end it without an image)"
                )
            raise
        unrequeueable = rules.requeue_refusal(job)
        if unrequeueable and not force:
            # Ending it (SIGTERM) would end it for good: its images could never be used.
            raise NotRequeueable(
                hint=f"{unrequeueable}: a vacate would end it for good; nothing was done; "
                "`sckpt create` saves an image and leaves it running; --force ends it anyway",
                losses=(f"{unrequeueable}: a vacate would end it for good",),
            )
        if job.batch and not target.is_whole_job:
            # The requeue ends every step: checkpoint the other registered ones too.
            with contextlib.suppress(SckptError):
                named = {t.step.step_id.step for t in targets}
                targets += [
                    t
                    for t in self._targets(job, StepId(job.job_id))
                    if t.step.step_id.step not in named
                ]
        return targets, unrequeueable

    def _unprotected(self, job: Job, targets: list[_Target], force: bool) -> list[str]:
        """What the requeue of batch ``job`` would end without an image (steps not under
        ``sckpt run``): refused unless ``force``, else said in the answer."""
        plain = self._unprotected_steps(job, targets)
        if plain and not force:
            raise unprotected_refusal(job, plain)
        return [f"{s.step_id} ({s.name}): not under sckpt run" for s in plain]

    def _requeue_held(self, job: Job, targets: list[_Target]) -> str:
        """End a checkpointed batch job by requeueing it held; what the answer adds."""
        try:
            self.binding.requeue(job.job_id, hold=True)
        except SckptError as exc:
            self._half_done(targets, f"job {job.job_id} was not requeued", exc)
            raise
        settled = ""
        try:
            wait_settled(self._look, job.job_id, clock=self._clock, sleep=self._sleep)
        except SckptError as exc:  # requeued (Slurm said so); only the watching failed
            settled = f"; its end could not be watched ({exc.message})"
        for t in targets:
            with contextlib.suppress(SckptError):
                self._update(t, lambda r: setattr(r, "ended_at", self._clock()))
        return f"; job {job.label} requeued and held (restart brings it back){settled}"

    def _end_steps(self, targets: list[_Target], unrequeueable: str) -> str:
        """End the checkpointed steps of a job Slurm cannot requeue (forced): SIGTERM."""
        ended: list[StepId] = []
        for t in targets:
            try:
                self.binding.kill_step(t.step.step_id, int(signal.SIGTERM))
            except SckptError as exc:
                done = f" ({', '.join(map(str, ended))} ended)" if ended else ""
                self._half_done(targets, f"{t.step.step_id} was not ended{done}", exc)
                raise
            ended.append(t.step.step_id)
        return f"; step ended (SIGTERM); forced: {unrequeueable}"

    def _half_done(self, targets: list[_Target], what: str, exc: SckptError) -> None:
        """A vacate whose checkpoint finished but whose ending failed: say what is known.

        Each step's state file gets a history line (the checkpoint's own outcome is already
        there: its ``done`` line and image), and the error's hint says what was done before
        it, so the caller's message and the audit line never read as a plain refusal or as a
        success.  Whether Slurm applied a request that timed out is not known: "not ended"
        means "not confirmed".
        """
        images = []
        for t in targets:
            with contextlib.suppress(StoreError):
                rec = t.store.read()
                err = rec.checkpoint_error() if rec is not None else None
                if rec is not None and err is not None and not err.code and rec.last_image:
                    images.append(f"{t.step.step_id} image {sorted(rec.last_image.values())[0]}")
                elif err is not None and err.code:
                    images.append(f"{t.step.step_id} checkpoint error({err.code})")
        reason = f"{exc.message} ({getattr(exc, 'name', type(exc).__name__)})"
        line = f"vacate half done: checkpoint finished, but {what}: {reason}"
        code = getattr(exc, "code", 1) or 1
        for t in targets:
            with contextlib.suppress(SckptError):
                self._update(
                    t, lambda r: r.log("vacate", self.caller_name, code, line, clock=self._clock)
                )
        saved = "; ".join(images) or "no image recorded"
        known = (
            f"vacate half done: the checkpoint finished ({saved}), but {what}; "
            "it keeps running unless Slurm applied the request before failing: check "
            "squeue, then vacate again"
        )
        exc.hint = f"{known}; {exc.hint}" if exc.hint else known

    def restart(
        self, target: StepId, stick: bool, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        """Restart in the reference's order (``rules.check_restart`` and
        ``rules.check_saved_record``; a step was refused before: ``acting.perform``): not
        finished, no image (ENOENT), before anything changes; but whose job it is first
        (ESLURM_ACCESS_DENIED, as for every checkpoint command; the reference: EPERM last).

        "Finished" is wider here: a vacated job waits held in PENDING for its restart.
        Then every task's last image is looked at where its record says (``records.resume_plan``):
        one that is missing or unreadable refuses the restart, naming the task and the path,
        unless ``force``; the answer says which tasks resume from which generation and which
        start from zero.
        """
        job = self._restartable(target)
        records, index = self._restart_images(target, job, image_dir)
        plan = resume_plan(job, records, index)
        lost = [why for code, why in plan if code]
        if lost and not force:
            code = next(code for code, _why in plan if code)
            raise UnsafeRestart(
                code,
                f"job {job.label} cannot resume every task: " + "; ".join(lost[:6]),
                "nothing was changed; restore the image, or restart --force and those tasks "
                "start from the beginning",
                losses=tuple(lost),
            )
        images = [rec for _s, rec in records if rec.last_image]
        nodes = next((r.job_nodes for r in images if r.job_nodes), job.nodes)
        pinned = any(r.pinned_nodes for _s, r in records)
        if stick and nodes:
            self.binding.set_required_nodes(job.job_id, nodes)
        elif pinned:
            self.binding.set_required_nodes(job.job_id, "")
        unrecorded = self._mark_restarted(records, nodes if stick else "", stick, lost)
        release_and_start(self._look, self.binding, job, records, self._clock, self._sleep)
        where = f" on {nodes}" if stick and nodes else ""
        resumes = [why for code, why in plan if not code]
        said = "; ".join(
            [*resumes[:6], *(f"starts from zero: {w}" for w in lost[:6]), *unrecorded[:6]]
        )
        return ActionResult(target, "restart", f"job {job.label} released{where}; {said}")

    def _restartable(self, target: StepId) -> Job:
        """The job to restart, on fresh data, after the checks that need no state file."""
        with self._lock:
            self.refresh()
            job = self._by_job.get(target.job_id)
        if job is None:  # its state files cannot be found: the record is missing
            raise rules.no_record(
                target, "(Slurm forgets ended jobs after MinJobAge, and where their images are)"
            )
        rules.check_owner(target, job, self.caller())  # before its state (issue 34)
        waiting = job.state == JobState.PENDING and job.held
        rules.check_restart(target, job, ended=job.state.is_finished or waiting)
        unrequeueable = rules.requeue_refusal(job)
        if unrequeueable:
            raise error_for(ESLURM_BATCH_ONLY, hint=unrequeueable)
        return job

    def _restart_images(
        self, target: StepId, job: Job, image_dir: str | None
    ) -> tuple[list[tuple[StepStore, StepRecord]], ImageIndex]:
        """The job's step records and image index, refused (ENOENT) when no image is
        recorded, or none is found under the operator's ``image_dir``: those found there
        become each step's last image first."""
        records = job_records(self._state_dir_of(job), job, strict=True)
        chosen: list[tuple[StepStore, str, dict[str, str]]] = []
        if image_dir:
            self._check_image_dir(job, [], image_dir, write=False)
            # Resume from the operator's directory: every image found there, or refuse
            # (ENOENT) before anything changes.
            chosen = images_under(job, records, image_dir)
            where = f"(no image) under {image_dir}"
            have_images = bool(chosen)
        else:
            where = (
                "(no checkpoint image recorded in its state files: vacate or create one first, "
                "e.g. `sckpt vacate JOB`)"
            )
            have_images = any(rec.last_image for _s, rec in records)
        rules.check_saved_record(
            target,
            where,
            job.job_id if have_images else None,
            job.uid,
            job.user,
            self.caller(),
        )
        directory = self._state_dir_of(job)
        index = ImageIndex(directory, job.job_id, owner=job.uid)
        if chosen:
            for store, name, found in chosen:

                def point(r: StepRecord, found: dict[str, str] = found) -> None:
                    r.last_image = dict(found)

                store.update(point)
                if name:  # the wrappers find images by step name
                    index.remember(name, found)
            records = job_records(self._state_dir_of(job), job, strict=True)
        return records, index

    def _mark_restarted(
        self, records: list[tuple[StepStore, StepRecord]], pinned: str, stick: bool, lost: list[str]
    ) -> list[str]:
        """Record the restart in each step's history; what could not be recorded (the
        restart goes on: its answer says what is missing)."""
        forced = f"; forced: {'; '.join(lost[:6])}" if lost else ""

        def mark(r: StepRecord) -> None:
            r.pinned_nodes = pinned
            r.log("restart", self.caller_name, 0, f"stick={int(stick)}{forced}", clock=self._clock)

        unrecorded = []
        for store, _rec in records:
            try:
                store.update(mark)
            except StoreError as exc:
                unrecorded.append(f"{store.step}'s record not updated: {exc.message}")
        return unrecorded

    def complete(
        self, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        job = self._checks(target, suspended_ok=True)  # as job_step_checkpoint_comp
        codes = []
        for t in self._targets(job, target):

            def change(rec: StepRecord) -> None:
                rec.keep_highest(error_code, error_msg)
                rec.log("complete", self.caller_name, error_code, error_msg, clock=self._clock)
                req = rec.in_progress
                if req is not None and begin_time == req.start:
                    req.pending = []
                    rec.in_progress = None
                    if not error_code:
                        rec.last_image_time = int(self._clock())

            self._update(t, change)
            codes.append((t.step.step_id, 0))
        return rules.aggregate(target, "complete", codes)

    def tasks(
        self, target: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> ActionResult:
        job = self._checks(target)
        targets = self._targets(job, target)
        wanted = set(expand_hostlist(nodelist)) if nodelist else None
        if wanted is not None:
            for t in targets:
                nodes = expand_hostlist(t.step.nodes)
                if rules.tasks_code(nodes, wanted):
                    hint = rules.tasks_hint(t.step.step_id, nodes, wanted, t.step.nodes)
                    raise InvalidJobId(hint=hint)
        self._check_image_dir(job, targets, image_dir, write=True)
        started = self._begin(job, targets, "tasks", max_wait, image_dir or None, hosts=wanted)
        self._refuse(target, "tasks", started)
        codes = [(t.step.step_id, code) for t, code, _ in started]
        return rules.aggregate(target, "tasks", codes, f"nodes {nodelist or 'all'}")

    def close(self) -> None:
        """The binding is process-wide and closed by its owner; nothing to release here."""
