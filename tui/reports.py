"""What the console says of an action: its target's name, its outcome, the force question.

The action runner (``actions.py``) posts the facade's raw answers; the app turns them
into what an operator reads with these functions: a refusal with Slurm's error name, code
and message, ``requested`` with Slurm's detail, the summary of an action on marked rows
(``multi_target.summary``), the answers of ``x``, and the second question a vacate or
restart refused for lost work asks.  ``describe_target`` names a target as the
confirmations and that question do.
"""

from __future__ import annotations

from rich.text import Text
from sckpt.backend import operations, progress, rules
from sckpt.backend.each_target import Answer, NotAttempted
from sckpt.backend.errors import (
    AccessDenied,
    ControllerUnreachable,
    NeedsForce,
    NotRequeueable,
    SckptError,
    SlurmError,
)
from sckpt.backend.model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    JobState,
    JobView,
    StepId,
    job_step_id,
)

from .console_text import clock_time, literal, printable
from .multi_target import Outcome


def describe_target(
    target: StepId, job: JobView | None, *, many_clusters: bool, every_step: bool = True
) -> str:
    """``step 123.4 (name)`` or ``job 123 (name), every running step``; without
    ``every_step`` (a job-control verb acts on the job itself) ``job 123 (name)``.  ``job``
    is the target's job as last seen (None: not known); ``many_clusters``: ``-M`` chose
    several, so the cluster is named."""
    name = f" ({job.job.name})" if job is not None else ""
    if job is not None and target.array_task_id is None:  # an array task: 7_3, 7_3.0
        target = job_step_id(job.job, target.step, target.cluster)
    if target.cluster and many_clusters:
        name = f"{name} on cluster {target.cluster}"
    if target.is_whole_job:
        return f"job {target}{name}, every running step" if every_step else f"job {target}{name}"
    return f"step {target}{name}"


def refusal_message(operation: str, target: StepId, exc: SckptError) -> tuple[str, str]:
    """``("refused" | "failed", the sentence)`` for an action Slurm or sckpt did not do.

    A controller that did not answer refused nothing: the action failed (perhaps half-way;
    the error's hint then says what was done), so it is not called refused; nor is a
    target that was not asked at all (``NotAttempted``), whose words say so themselves.
    """
    if isinstance(exc, NotAttempted):
        return "not attempted", f"{operation} {target}: {exc}"
    verb = "failed" if isinstance(exc, ControllerUnreachable) else "refused"
    if isinstance(exc, SlurmError):
        message = f"{operation} {target} {verb}: {exc.name} ({exc.code}): {exc.message}"
        if exc.hint:
            message += f"; {exc.hint}"
    elif str(exc).startswith(f"{operation} {target} "):  # already says what and which
        message = str(exc)
    else:
        message = f"{operation} {target} {verb}: {exc}"
    return verb, message


def foreseen_refusal(
    operation: str, target: StepId, view: JobView | None, acting_user: str
) -> str | None:
    """Slurm's refusal of ``operation`` on ``target`` when the data already shows it, in
    the words of the refusal itself; None when it may act (or the data cannot tell).

    Why: ``r`` on a running job and ``v`` on another user's step took a form and a
    confirmation before Slurm's refusal.  Only what every engine refuses is foreseen: an
    operation that ``resumes`` a job (restart) while it still runs or is suspended
    (``rules.check_restart``; a ``job_level`` one is named by its job), and a checkpoint
    operation on another user's job when not root (the reference's check 2; for a whole job
    the controller lets SlurmUser in too, so user ``slurm`` is left to it).
    """
    op = operations.operation(operation)
    if view is None or op.kind != "checkpoint":
        return None
    job = view.job
    shown = target.whole_job if op.job_level else target
    try:
        # Whose job it is first, as the controller checks (check 2 before the job's state):
        # another user's running job is "not yours", not "still running".
        if acting_user not in ("root", job.user) and not (
            rules.is_job_level(shown) and acting_user == "slurm"
        ):
            raise AccessDenied(hint=rules.owner_hint(job, "root"))
        if op.resumes and job.state in (JobState.RUNNING, JobState.SUSPENDED):
            rules.check_restart(shown, job)
    except SlurmError as refused:
        return refusal_message(operation, shown, refused)[1]
    return None


def requested(operation: str, answer: Answer) -> str:
    """``create 12.0: requested`` and Slurm's detail, for one target that was accepted."""
    assert isinstance(answer.result, ActionResult)  # the console's operations all act
    detail = answer.result.detail
    if detail.startswith(WAITED_COMPLETED):  # the engine waited: not only "requested"
        rest = printable(detail[len(WAITED_COMPLETED) :])
        return f"{operation} {answer.target}: {progress.COMPLETED}{rest}"
    shown = f": {printable(detail)}" if detail else ""
    return f"{operation} {answer.target}: {progress.REQUESTED}{shown}"


WAITED_COMPLETED = "checkpoint completed"
"""How an engine that waits for the checkpoint itself (the cooperative one) begins the
detail of one that completed (``cli/output.py`` reads it the same way)."""


def still_disabled(target: StepId, counts: tuple[int, ...]) -> str:
    """The toast after an enable that left ``target`` disabled: why, with the counter
    when the engine reads it.  Slurm counts disables: each ``d`` adds one, each ``e`` takes
    one off, and the step is able only at 0 (``d d e`` leaves it disabled)."""
    highest = max(counts)
    if highest:
        more = "once more" if highest == 1 else f"{highest} more times"
        counter = f"its disable counter is {highest}; press e {more} to enable it"
    else:
        counter = "it was disabled more times than enabled"
    return (
        f"enable {target}: still disabled: {counter} "
        "(each d adds one to the counter, each e takes one off)"
    )


def outcome(operation: str, answer: Answer) -> Outcome:
    """One line of the summary of an action on marked rows."""
    if answer.error is not None:
        return Outcome(
            answer.target, False, refusal_message(operation, answer.target, answer.error)[1]
        )
    assert isinstance(answer.result, ActionResult)  # the console's operations all act
    detail = f": {answer.result.detail}" if answer.result.detail else ""
    return Outcome(answer.target, True, f"{progress.REQUESTED}{detail}")


def check_message(
    target: StepId, able: AbleResult | SckptError, error: CheckpointError | SckptError | None
) -> str:
    """``x``'s toast: ``12.0: able: yes; no error``, or Slurm's refusal and the last error."""
    if isinstance(able, SckptError):
        assert isinstance(able, SlurmError)
        able_msg = f"able: no, {able.name} ({able.code}): {able.message}"
    elif able.in_progress_since:
        able_msg = f"able: yes, a checkpoint began at {clock_time(able.in_progress_since)}"
    else:
        able_msg = "able: yes"
    if isinstance(error, SckptError):
        err_msg = f"error: {error}"
    elif error is not None and error.code:
        err_msg = f"error({error.code}): {error.message}"
    else:
        err_msg = "no error"
    return printable(f"{target}: {able_msg}; {err_msg}")


def force_question(operation: str, described: str, exc: NeedsForce) -> Text:
    """An operation refused because tasks would lose their work: which, and whether to act
    anyway (``described`` names the target), in the words of the operation's row
    (``operations.ForceWords``), so a new operation asks its own question."""
    words = operations.operation(operation).force_words
    for_good = isinstance(exc, NotRequeueable) and words.for_good
    question = Text()
    question.append(f"{operation.capitalize()} ", style="bold")
    question.append_text(literal(described, style="bold"))
    if for_good:  # the engine's reason (rules.requeue_refusal), as the command line says it
        question.append(f" anyway?\n\n{words.kept[:1].upper()}{words.kept[1:]} for now:\n")
    else:
        question.append(f" anyway?\n\n{words.unsaved}, {words.kept} for now:\n")
    for loss in exc.losses[:6] or (f"{exc.name} ({exc.code}): {exc.message}",):
        question.append(f"- {printable(loss)}\n")
    question.append(f"\nYes {words.for_good if for_good else words.anyway}")
    return question


def force_declined(operation: str, target: StepId) -> str:
    """What No to ``force_question`` leaves: the target as it was."""
    return f"{operation} {target} cancelled: {operations.operation(operation).force_words.kept}"
