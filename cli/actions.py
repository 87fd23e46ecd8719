"""Running one checkpoint operation on each target in turn, and reporting each.

Slurm's refusals are outcomes, not exceptions: every target is reported (one line on stdout
or stderr, or one JSON document for all), and the worst exit code wins.  Once Slurm does not
answer for one target, the remaining ones are reported ``not attempted`` instead of each
waiting out the same timeout.

``--wait`` (create, vacate) then watches each target's checkpoint through the facade until
it is no longer in progress and reports its outcome in ``backend/progress.py``'s words
(``completed``, ``failed (28)``); Ctrl-C during the wait stops watching, never the
checkpoint.  ``restart --wait`` restarts every target first, then watches the jobs together
until each runs and its tasks said how they started (an array's tasks come back side by
side).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from sckpt.backend import progress
from sckpt.backend.checkpointing import wait_end
from sckpt.backend.each_target import NotAttempted, OneByOne
from sckpt.backend.errors import (
    CheckpointFailed,
    Disabled,
    InvalidJobId,
    JobSuspended,
    SckptError,
    WaitEnded,
)
from sckpt.backend.model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    CheckpointKind,
    JobState,
    StepId,
)
from sckpt.backend.operations import Operation, operation

from sckpt.exit_codes import EXIT_INTERRUPTED, EXIT_OK

from . import output, terminal
from .dependencies import WaitTiming
from .wait_progress import WaitProgress

if TYPE_CHECKING:
    from sckpt.backend.facade import Facade


class Interrupted(SckptError):
    """Ctrl-C while waiting for a checkpoint's outcome (exit code 130).

    Only the watching stopped: the checkpoint goes on, and the message says how to look
    at it later.
    """

    exit_code = EXIT_INTERRUPTED

    def __init__(self, operation: str, target: StepId) -> None:
        super().__init__(
            f"interrupted: stopped waiting; the {operation} of {target} goes on "
            f"(see 'sckpt error {target}')"
        )


class NotAttemptedInterrupted(SckptError):
    """A target after the one whose wait Ctrl-C stopped: nothing was asked for it.

    Not a line of its own on stderr (Ctrl-C's one line says it all); ``--json`` lists it.
    """

    exit_code = EXIT_INTERRUPTED

    def __init__(self) -> None:
        super().__init__("not attempted: interrupted (Ctrl-C) before this target")


ENDED = CheckpointKind.ENDED.value
"""``--wait``'s outcome when the step itself is gone (a vacate ends it): the code of its
checkpoint went with it (``Facade.checkpoint_progress``)."""


@dataclass
class Outcome:
    """What one target answered: a value, "disabled" (able's No), or an error.

    ``progress`` is where the request stands in ``backend/progress.py``'s words:
    ``requested`` for any mutating operation Slurm accepted, or with ``--wait`` the
    checkpoint's outcome; None for the others (``able``, ``error``, a refusal).
    """

    target: StepId
    operation: str
    value: AbleResult | CheckpointError | ActionResult | None = None
    disabled: Disabled | JobSuspended | None = None
    error: SckptError | None = None
    progress: str | None = None
    watched: bool = False
    """``--wait`` watched it after the answer (its line is the watch's, not the answer's)."""
    notes: tuple[str, ...] = ()
    """What else to tell the person (on stderr, and in ``--json``): tasks that did not
    resume after a restart, how each task started (``restart --wait``)."""
    label: str = ""
    """How the target is named when its id alone does not say it: an array's record of
    pending tasks is ``7_[3-20%2]`` as squeue writes it, not ``7``."""
    skipped: str = ""
    """Why the target was not acted on (not an error: exit 0), e.g. an array's pending
    tasks when its id named its running tasks too."""

    @property
    def name(self) -> str:
        return self.label or str(self.target)

    @property
    def exit_code(self) -> int:
        return self.error.exit_code if self.error is not None else EXIT_OK


def _call(
    asked: OneByOne,
    target: StepId,
    *,
    wait: bool,
    timing: WaitTiming,
    line: TextIO | None = None,
) -> Outcome:
    """One target's answer (``asked.answer``: one facade call, a refusal as the answer) as
    its outcome.

    With ``wait`` the checkpoint is then watched until it ends (``_wait_for_outcome``), at
    ``timing``'s pace, its progress shown on ``line`` (a terminal's stderr; None: silent);
    Slurm not answering a look stops the later targets as a refusal would (``asked.note``).
    """
    facade, op = asked.facade, asked.op
    answer = asked.answer(target)
    outcome = Outcome(target, op.name, value=answer.result)
    if answer.error is not None:
        return _refused(outcome, answer.error, op, wait=wait)
    try:
        if isinstance(outcome.value, ActionResult):
            waited = output.waited_completed(outcome.value)
            outcome.progress = progress.COMPLETED if waited else progress.REQUESTED
        if isinstance(outcome.value, AbleResult | ActionResult):
            outcome.notes = outcome.value.notes
        if wait and not op.resumes:  # a restart is watched by _resume_all
            shown = WaitProgress(op.name, target, line, clock=timing.monotonic)
            outcome.progress = _wait_for_outcome(facade, target, shown, timing)
            outcome.watched = True
            if outcome.progress == ENDED and not op.ends_step:  # a vacate ends its step
                outcome.error = _why_ended(facade, target)
            elif outcome.progress not in (progress.COMPLETED, ENDED):
                outcome.error = _failure(facade, target)
    except SckptError as refused:
        asked.note(refused)
        return _refused(outcome, refused, op, wait=wait)
    return outcome


def _refused(outcome: Outcome, refused: SckptError, op: Operation, *, wait: bool) -> Outcome:
    """``outcome`` with Slurm's (or sckpt's) refusal in it: able's No is an answer."""
    if isinstance(refused, Disabled | JobSuspended):
        # A suspended job's steps answer ESLURM_DISABLED and the job itself (a job-level
        # request) ESLURM_JOB_SUSPENDED: able says No for both, so 42 and 42.0 agree.
        if op.disabled_is_answer:
            outcome.disabled = refused
        else:
            outcome.error = refused
    elif isinstance(refused, CheckpointFailed):  # an engine that waited itself (cooperative)
        outcome.error = refused
        outcome.progress = progress.failed(refused.code) if wait else None
    else:
        outcome.error = refused
    return outcome


def _wait_for_outcome(
    facade: Facade, target: StepId, shown: WaitProgress, timing: WaitTiming
) -> str:
    """Ask where ``target``'s checkpoint stands until it is no longer in progress, saying
    so on the progress line meanwhile (erased before returning, Ctrl-C included)."""
    try:
        while True:
            word = facade.checkpoint_progress(target)
            if word != progress.IN_PROGRESS:
                return word
            shown.show(word)
            timing.sleep(timing.poll_seconds)
    finally:
        shown.done()


REGISTER_GRACE_SECONDS = 30.0
"""How long a restarted job may run before ``restart --wait`` says that none of its tasks
registered under ``sckpt run`` (the state directory may be unusable: see its stderr)."""


Resumed = tuple[str, tuple[str, ...], SckptError | None]
"""What watching one restarted job came to: the progress word, its tasks' words, and an
error when not every task resumed (``NotResumed``)."""


@dataclass
class _ResumeWatch:
    """One restarted job being watched until it runs and its tasks said how they started.

    Each ``look`` is one question to the facade; the words are final once two looks a
    second apart agree (tasks register one by one).
    """

    target: StepId
    started: float
    running_since: float = 0.0
    last: tuple[str, ...] | None = None
    seen_active: bool = False
    """The job was seen pending or running again: a finished state after that is its end,
    where one before it may be the listing from before the requeue took effect."""

    def look(self, facade: Facade, timing: WaitTiming) -> Resumed | None:
        """One look: the outcome once there is one, else None (look again later)."""
        try:
            state = facade.resume_state(self.target)
        except InvalidJobId:  # no longer listed: it ended (squeue lists active jobs only)
            return ENDED, self.last or (), _resume_ended(self.target, None)
        now = timing.monotonic()
        if state.state.is_finished:
            if self.seen_active or now - self.started > REGISTER_GRACE_SECONDS:
                return ENDED, state.notes, _resume_ended(self.target, state.state)
            return None
        if self.running_since and state.state == JobState.PENDING:  # requeued meanwhile
            return ENDED, state.notes, _resume_ended(self.target, state.state)
        self.seen_active = True
        if state.state == JobState.RUNNING:
            self.running_since = self.running_since or now
            if state.notes and state.notes == self.last:
                if state.resumed:
                    return progress.RUNNING, state.notes, None
                return progress.RUNNING, state.notes, NotResumed(state.notes)
            if not state.notes and now - self.running_since > REGISTER_GRACE_SECONDS:
                return progress.RUNNING, (), NotResumed(())
        if now > self.started + progress.RESUME_WAIT_SECONDS:
            return state.state.value.lower(), state.notes, NotResumed(state.notes, waited=True)
        self.last = state.notes
        return None


RESUME_WAIT_ENDED = "restart --wait stopped waiting for its tasks to say how they started"


def _resume_ended(target: StepId, state: JobState | None) -> WaitEnded:
    """``restart --wait``'s end when the restarted job ended (None: no longer listed), or
    was cancelled, before its tasks said how they started (exit 4, or 5 when cancelled)."""
    ended = wait_end.ended_by_state(target.job_id, state)
    ended.hint = RESUME_WAIT_ENDED
    return ended


def _why_ended(facade: Facade, target: StepId) -> WaitEnded:
    """``create --wait`` watched a step that is gone (an engine that does not wait itself):
    which end it was, from the job's state (exit 4, 5 cancelled, 6 requeued)."""
    try:
        state: JobState | None = facade.resume_state(
            StepId(target.job_id, cluster=target.cluster)
        ).state
    except InvalidJobId:
        state = None
    if state == JobState.RUNNING:
        return WaitEnded(message=f"step {target} ended", hint=wait_end.STOPPED)
    return wait_end.ended_by_state(target.job_id, state)


def _wait_for_resumes(
    facade: Facade, targets: Sequence[StepId], timing: WaitTiming
) -> list[Resumed | None]:
    """Watch restarted jobs together until each runs and its tasks said how they started.

    Together, not one after another: the tasks of an array (``restart 123 --wait``) come
    back side by side, and watching them in turn made the last one wait for every other
    one's registration first.  Each round looks once at each job still watched.  Returns
    each target's outcome in order; on Ctrl-C, None for those still watched (the restarts
    go on: only the watching stopped).
    """
    watches = {index: _ResumeWatch(t, timing.monotonic()) for index, t in enumerate(targets)}
    results: list[Resumed | None] = [None] * len(targets)
    try:
        while watches:
            for index, watch in list(watches.items()):
                found = watch.look(facade, timing)
                if found is not None:
                    results[index] = found
                    del watches[index]
            if watches:
                timing.sleep(timing.poll_seconds)
    except KeyboardInterrupt:
        pass  # the caller reports the targets still watched as interrupted
    return results


def _resume_all(
    facade: Facade,
    op: Operation,
    targets: Sequence[StepId],
    values: Mapping[str, Any],
    timing: WaitTiming,
) -> list[Outcome]:
    """``restart --wait``: restart each target in turn, then watch the restarted ones
    together (``_wait_for_resumes``).

    As for any operation, once Slurm does not answer for one target the others are not
    attempted, and Ctrl-C stops: a restart already made goes on and is reported as no
    longer watched, a target not reached yet is not attempted.
    """
    outcomes: list[Outcome] = []
    asked = OneByOne(facade, op, values)
    interrupted = False
    for target in targets:
        if interrupted:
            outcomes.append(Outcome(target, op.name, error=NotAttemptedInterrupted()))
            continue
        try:
            outcome = _call(asked, target, wait=False, timing=timing)
        except KeyboardInterrupt:
            outcome = Outcome(target, op.name, error=Interrupted(op.name, target))
            outcome.progress = progress.IN_PROGRESS
            interrupted = True
        outcomes.append(outcome)
    restarted = [o for o in outcomes if o.error is None]
    found: list[Resumed | None] = [None] * len(restarted)
    if not interrupted:
        found = _wait_for_resumes(facade, [o.target for o in restarted], timing)
    for outcome, resumed in zip(restarted, found, strict=True):
        if resumed is None:
            outcome.error = Interrupted(op.name, outcome.target)
            outcome.progress = progress.IN_PROGRESS
        else:
            outcome.progress, outcome.notes, outcome.error = resumed
    return outcomes


class NotResumed(SckptError):
    """``restart --wait``: the job runs (or not yet), but not every task resumed."""

    def __init__(self, notes: tuple[str, ...], waited: bool = False) -> None:
        if waited:
            message = (
                f"the job did not run again within {progress.RESUME_WAIT_SECONDS} s "
                "(it may still be waiting for resources: see squeue)"
            )
        elif notes:
            fresh = [n for n in notes if "resumed from" not in n]
            message = "not every task resumed: " + "; ".join(fresh[:6])
        else:
            message = (
                f"the job runs, but no task registered under `sckpt run` within "
                f"{REGISTER_GRACE_SECONDS:.0f} s: checkpointing is off for it (see the job's "
                "stderr)"
            )
        super().__init__(message)


def _failure(facade: Facade, target: StepId) -> CheckpointFailed:
    """The recorded error of a checkpoint that ended with one, as ``CheckpointFailed``."""
    recorded = facade.error(target)
    return CheckpointFailed(
        recorded.code,
        recorded.message or None,
        hint=f"the checkpoint did not complete: {output.error_line(recorded)}",
    )


def _engine_said_it(outcome: Outcome, value: ActionResult) -> bool:
    """Whether the engine's own answer is the last word: it waited for the checkpoint and
    says it completed, and ``--wait`` did not watch on (``create completed``, ``vacate
    ended``: the watch's line, as without an engine that waits)."""
    return output.waited_completed(value) and not outcome.watched


def _outcome_text(outcome: Outcome, *, prefix: bool, historical: bool) -> str | None:
    """The stdout line for a successful outcome (None: print nothing, as scontrol did)."""
    lead = f"{outcome.name}: " if prefix else ""
    value = outcome.value
    if isinstance(value, AbleResult) or outcome.disabled is not None:
        return lead + output.able_line(value if isinstance(value, AbleResult) else None)
    if isinstance(value, CheckpointError):
        return lead + output.error_line(value)
    if isinstance(value, ActionResult):
        if historical:
            return None
        if outcome.progress in (None, progress.REQUESTED) or _engine_said_it(outcome, value):
            return output.action_line(value, outcome.label)
        return _watched_line(outcome)
    return None


def _watched_line(outcome: Outcome) -> str:
    """``--wait``'s line once the watching ended (``42.0: create completed``); a restart's
    also says what each task was to resume from (the answer's detail)."""
    assert outcome.progress is not None
    line = output.outcome_line(outcome.target, outcome.operation, outcome.progress)
    value = outcome.value
    if isinstance(value, ActionResult) and operation(value.operation).resumes and value.detail:
        line += f": {output.clean(value.detail)}"
    return line


def _outcome_json(outcome: Outcome) -> dict[str, Any]:
    data: dict[str, Any] = {
        "target": outcome.name,
        "operation": outcome.operation,
        "ok": outcome.error is None,
    }
    if outcome.skipped:  # nothing was asked of Slurm: ok, and says why
        data.update(acted=False, skipped=outcome.skipped)
    if outcome.target.cluster:  # -M NAME: the cluster whose controller was asked
        data["cluster"] = outcome.target.cluster
    if outcome.progress is not None:
        data["outcome"] = outcome.progress
    if outcome.notes:
        data["notes"] = list(outcome.notes)
    value = outcome.value
    if outcome.error is not None:
        data["error"] = output.error_json(outcome.error)
    elif isinstance(value, AbleResult) or outcome.disabled is not None:
        able = value if isinstance(value, AbleResult) else None
        since = able.in_progress_since if able is not None else 0
        data.update(
            able=able is not None,
            in_progress=bool(since),
            in_progress_since=since,
            began_at=output.format_time(since) if since else None,
            text=output.able_line(able),
        )
        if outcome.disabled is not None:
            data["disabled"] = output.error_json(outcome.disabled)
    elif isinstance(value, CheckpointError):
        data.update(
            error_code=value.code,
            error_name=value.name,
            error_message=value.message,
            text=output.error_line(value),
        )
    elif isinstance(value, ActionResult):
        data.update(
            detail=value.detail,
            per_step=[
                {"step": str(output.named_like(step, value.target)), "code": code}
                for step, code in value.per_step
            ],
            text=output.action_line(value, outcome.label)
            if outcome.progress in (None, progress.REQUESTED) or _engine_said_it(outcome, value)
            else output.outcome_line(value.target, value.operation, outcome.progress),
        )
    return data


def run_actions(
    facade: Facade,
    op: Operation,
    targets: Sequence[StepId],
    values: Mapping[str, Any],
    *,
    as_json: bool,
    historical: bool,
    debug: bool,
    wait: bool = False,
    timing: WaitTiming | None = None,
) -> int:
    """Act on each target in turn, report each, and return the worst exit code.

    ``values`` are the operation's keyword arguments (those of ``op.arguments`` given; the
    facade's defaults stand for the others).  ``wait``: watch each checkpoint until it
    ends (at ``timing``'s pace) and report its outcome; Ctrl-C then stops the watching
    (exit 130), not the checkpoint, and the targets not reached yet are reported ``not
    attempted``.
    """
    timing = timing if timing is not None else WaitTiming()
    operation = op.name
    outcomes = []
    interrupted = False
    typed = list(targets)
    targets = _expanded(facade, typed)
    if wait and op.resumes:  # restart --wait: every restart first, then watched together
        outcomes = _resume_all(facade, op, targets, values, timing)
        for outcome in outcomes:
            _report(
                outcome,
                several=len(targets) > 1,
                as_json=as_json,
                historical=historical,
                debug=debug,
            )
        return _finish(outcomes, operation, facade.engine_name, facade.read_only, as_json=as_json)
    pending = _pending_records(facade, op, typed, targets)
    line = sys.stderr if wait and not as_json and terminal.stderr_is_terminal() else None
    asked = OneByOne(facade, op, values)  # once Slurm does not answer, the rest are not tried
    for target in targets:
        label, skip = pending.get(target, ("", ""))
        if skip:
            outcome = Outcome(target, operation, label=label, skipped=skip)
        elif interrupted:
            outcome = Outcome(target, operation, error=NotAttemptedInterrupted())
        else:
            try:
                outcome = _call(asked, target, wait=wait, timing=timing, line=line)
            except KeyboardInterrupt:
                if not wait:
                    raise  # main's "sckpt: interrupted", exit 130
                outcome = Outcome(target, operation, error=Interrupted(operation, target))
                outcome.progress = progress.IN_PROGRESS
                interrupted = True
        outcome.label = outcome.label or label
        outcomes.append(outcome)
        _report(
            outcome, several=len(targets) > 1, as_json=as_json, historical=historical, debug=debug
        )
    return _finish(outcomes, operation, facade.engine_name, facade.read_only, as_json=as_json)


def _pending_records(
    facade: Facade, op: Operation, typed: Sequence[StepId], targets: Sequence[StepId]
) -> dict[StepId, tuple[str, str]]:
    """The array records of pending tasks among ``targets``: each one's squeue name, and,
    for a checkpoint operation on an array id that also named running tasks, why it is
    not acted on.

    Why: ``create 7`` with tasks 1 and 2 running acted on them and then reported
    ESLURM_JOB_PENDING naming ``7`` (exit 1): the pending tasks have no steps to act on.
    They are now named ``7_[3-20%2]`` and said to be left as they are, which is no error
    (exit 0); an array with no task running still gets Slurm's refusal (exit 1), as there
    is then nothing the command did.  Job-control verbs act on that record (hold, release,
    cancel the pending tasks), so for them it is only named."""
    if not any(t.is_whole_job and not t.unresolved for t in typed):
        return {}  # only a job id can name an array's pending record
    try:
        jobs = {(v.cluster, v.job.job_id): v.job for v in facade.snapshot().jobs}
    except SckptError:
        return {}
    found: dict[StepId, tuple[str, str]] = {}
    running = {t.array_job_id for t in targets if t.array_task_id is not None}
    for target in targets:
        job = jobs.get((target.cluster, target.job_id))
        if job is None or job.state is not JobState.PENDING or not job.array_task_str:
            continue
        skip = ""
        if op.kind == "checkpoint" and job.array_job_id in running:
            skip = (
                f"not acted on: its {job.array_task_count or 'pending'} tasks are still "
                "pending (no steps until each starts)"
            )
        found[target] = (job.label, skip)
    return found


def _expanded(facade: Facade, targets: Sequence[StepId]) -> list[StepId]:
    """The targets as scontrol reads them (``7`` = every record of array 7, ``7_3`` its
    task's record: ``Facade.expand_targets``).  A target that cannot be looked up stays
    as typed: acting on it raises the same refusal, reported (and audited) as its own."""
    out: list[StepId] = []
    for target in targets:
        try:
            out.extend(facade.expand_targets([target]))
        except SckptError:
            out.append(target)
    return out


def report_unopened(
    op: Operation,
    targets: Sequence[StepId],
    failure: SckptError,
    *,
    read_only: bool,
    as_json: bool,
    debug: bool,
) -> int:
    """Report ``failure`` (no facade could be opened: no Slurm, no shim) as each target's.

    A script reading ``--json`` gets its document, with the error object, as when Slurm
    stops answering midway: the first target carries the error, the others are ``not
    attempted``.  ``engine`` is null (none was opened).
    """
    outcomes = [
        Outcome(target, op.name, error=failure if not index else NotAttempted(failure))
        for index, target in enumerate(targets)
    ]
    for outcome in outcomes:
        _report(outcome, several=len(targets) > 1, as_json=as_json, historical=False, debug=debug)
    return _finish(outcomes, op.name, None, read_only, as_json=as_json)


def _report(
    outcome: Outcome, *, several: bool, as_json: bool, historical: bool, debug: bool
) -> None:
    """One target's line: the failure on stderr, else (without ``--json``) the answer.

    A request Slurm accepted whose checkpoint then failed (or whose wait did not end) has
    both: where it stands on stdout (``failed (28)``, ``requested``), the error on stderr.
    """
    if outcome.error is not None:
        if debug:
            traceback.print_exception(outcome.error)
        if isinstance(outcome.error, Interrupted):
            output.to_stderr(output.failure_line("", outcome.error))
            return
        if isinstance(outcome.error, NotAttemptedInterrupted):
            return
        if not as_json and outcome.progress is not None:
            output.to_stdout(_watched_line(outcome))
        named = str(outcome.error).startswith(f"{outcome.operation} {outcome.target}")
        prefix = "" if named else f"{outcome.operation} {outcome.name}: "
        output.to_stderr(output.failure_line(prefix, outcome.error))
    elif not as_json:
        line = _outcome_text(outcome, prefix=several, historical=historical)
        if line is not None:
            output.to_stdout(line)
    if not as_json:
        for note in outcome.notes:
            output.to_stderr(f"sckpt: {outcome.operation} {outcome.name}: {output.clean(note)}")
        if outcome.skipped:
            output.to_stderr(f"sckpt: {outcome.operation} {outcome.name}: {outcome.skipped}")


def _finish(
    outcomes: list[Outcome], operation: str, engine: str | None, read_only: bool, *, as_json: bool
) -> int:
    """The worst exit code; with ``--json``, the one document for every target first."""
    code = max((o.exit_code for o in outcomes), default=EXIT_OK)
    if as_json:
        output.to_stdout(
            output.dumps(
                {
                    "operation": operation,
                    "engine": engine,
                    "read_only": read_only,
                    "exit_code": code,
                    "results": [_outcome_json(o) for o in outcomes],
                }
            )
        )
    return code
