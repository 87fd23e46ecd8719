"""Typed errors that carry Slurm's code, its ESLURM name and a sentence a person can act on.

Every failure the UI or the command line can show is one of these.  ``SlurmError`` is the
base for anything Slurm (or an engine reproducing Slurm) refused; the other branches are
for sckpt's own refusals (bad input, read-only mode, audit log) and for "cannot talk to
Slurm at all".  ``error_for(code)`` maps a code to the right subclass; unknown codes get
the base class, as pygit2's ``check_error`` does.

Names and messages come from libslurm's ``slurm_strerror`` when the binding is loaded
(``register_strerror``); the small table below is only the fallback for the simulated
cluster and for machines without libslurm.
"""

from __future__ import annotations

import errno as _errno
import os
from collections.abc import Callable
from typing import ClassVar

# Slurm's numbers, identical in every release from 15.08 to 25.11 (see the reference).
SLURM_SUCCESS = 0
SLURM_ERROR = -1
SLURM_NO_CHANGE_IN_DATA = 1900
SLURM_COMMUNICATIONS_CONNECTION_ERROR = 1001
ESLURM_ACCESS_DENIED = 2002
ESLURM_DUPLICATE_JOB_ID = 2011
ESLURM_INVALID_JOB_ID = 2017
ESLURM_ALREADY_DONE = 2021
ESLURM_JOB_PENDING = 2024
ESLURM_NOT_SUPPORTED = 2036
ESLURM_DISABLED = 2037
ESLURM_JOB_SUSPENDED = 2077
ESLURM_JOB_NOT_FINISHED = 2088
ESLURM_USER_ID_MISSING = 2010
ESLURMD_JOB_NOTRUNNING = 4027
ESLURMD_STEP_SUSPENDED = 4028
ESLURM_BATCH_ONLY = 2039
"""19.05's value: the simulated controller's answer to a requeue of a job without a script."""
ESLURM_JOB_NOT_PENDING = 2073
"""19.05's value: updating a pending-only field of a job that is not pending."""
ESLURM_TRANSITION_STATE_NO_UPDATE = 2020
"""A signal other than SIGKILL to a job that is not running (scancel --signal on a pending job)."""
ESLURM_JOB_HELD = 2042
"""19.05's (and 22.05's) value: a priority change other than a release on a held job."""
ESLURM_JOB_FINISHED = 2084
"""19.05's (and 22.05's) value: scontrol hold/release of a job that has finished."""
ESLURM_DB_CONNECTION = 7000
"""Accounting (slurmdbd) is not configured or does not answer (19.05 to 26.05 alike)."""
EPERM = _errno.EPERM
ENOENT = _errno.ENOENT
EINVAL = _errno.EINVAL
EALREADY = _errno.EALREADY

# Fallback (name, message) for the codes sckpt reproduces without libslurm.
_FALLBACK: dict[int, tuple[str, str]] = {
    SLURM_SUCCESS: ("SLURM_SUCCESS", "No error"),
    SLURM_ERROR: ("SLURM_ERROR", "Unspecified error"),
    SLURM_NO_CHANGE_IN_DATA: (
        "SLURM_NO_CHANGE_IN_DATA",
        "Data has not changed since time specified",
    ),
    SLURM_COMMUNICATIONS_CONNECTION_ERROR: (
        "SLURM_COMMUNICATIONS_CONNECTION_ERROR",
        "Communication connection failure",
    ),
    ESLURM_ACCESS_DENIED: ("ESLURM_ACCESS_DENIED", "Access/permission denied"),
    ESLURM_DUPLICATE_JOB_ID: ("ESLURM_DUPLICATE_JOB_ID", "Duplicate job id"),
    ESLURM_INVALID_JOB_ID: ("ESLURM_INVALID_JOB_ID", "Invalid job id specified"),
    ESLURM_ALREADY_DONE: ("ESLURM_ALREADY_DONE", "Job/step already completing or completed"),
    ESLURM_JOB_PENDING: ("ESLURM_JOB_PENDING", "Job is pending execution"),
    ESLURM_NOT_SUPPORTED: (
        "ESLURM_NOT_SUPPORTED",
        "Requested operation not supported on this system",
    ),
    ESLURM_DISABLED: ("ESLURM_DISABLED", "Requested operation is presently disabled"),
    ESLURM_JOB_SUSPENDED: (
        "ESLURM_JOB_SUSPENDED",
        "Job is current suspended, requested operation disabled",
    ),
    ESLURM_JOB_NOT_FINISHED: ("ESLURM_JOB_NOT_FINISHED", "Job is not finished"),
    ESLURM_USER_ID_MISSING: ("ESLURM_USER_ID_MISSING", "Invalid user id"),
    ESLURMD_JOB_NOTRUNNING: ("ESLURMD_JOB_NOTRUNNING", "Job step not running"),
    ESLURMD_STEP_SUSPENDED: ("ESLURMD_STEP_SUSPENDED", "Job step is suspended"),
    ESLURM_BATCH_ONLY: ("ESLURM_BATCH_ONLY", "Only batch jobs are accepted or processed"),
    ESLURM_JOB_NOT_PENDING: ("ESLURM_JOB_NOT_PENDING", "Job is no longer pending execution"),
    ESLURM_TRANSITION_STATE_NO_UPDATE: (
        "ESLURM_TRANSITION_STATE_NO_UPDATE",
        "Job can not be altered now, try again later",
    ),
    ESLURM_JOB_HELD: ("ESLURM_JOB_HELD", "Job is in held state, pending scheduler release"),
    ESLURM_JOB_FINISHED: ("ESLURM_JOB_FINISHED", "Job has already finished"),
    ESLURM_DB_CONNECTION: ("ESLURM_DB_CONNECTION", "Unable to connect to database"),
}

_strerror_hook: Callable[[int], tuple[str, str] | None] | None = None


def register_strerror(hook: Callable[[int], tuple[str, str] | None]) -> None:
    """Let the libslurm binding supply names and messages (``slurm_strerror``)."""
    global _strerror_hook
    _strerror_hook = hook


def describe(code: int) -> tuple[str, str]:
    """Return ``(name, message)`` for a Slurm or errno code.

    Order: libslurm when loaded, then sckpt's table, then the C library's errno names.
    """
    if _strerror_hook is not None:
        found = _strerror_hook(code)
        if found is not None:
            return found
    if code in _FALLBACK:
        return _FALLBACK[code]
    if 0 < code < 1000:
        return _errno.errorcode.get(code, f"E{code}"), os.strerror(code)
    return f"SLURM_{code}", f"Slurm error {code}"


class SckptError(Exception):
    """Base of every error sckpt shows to a person.

    ``exit_code`` follows the command line's contract: 1 Slurm refused, 2 bad usage or
    input, 3 cannot reach Slurm or the shim is unavailable.
    """

    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class SlurmError(SckptError):
    """Slurm (or an engine following Slurm's rules) refused: code, ESLURM name, message."""

    code: int
    name: str
    expected_code: ClassVar[int | None] = None

    def __init__(self, code: int | None = None, message: str | None = None, hint: str = "") -> None:
        if code is None:
            code = self.expected_code if self.expected_code is not None else SLURM_ERROR
        name, default_message = describe(code)
        self.code = code
        self.name = name
        super().__init__(message or default_message, hint)

    def __str__(self) -> str:
        text = f"{self.name} ({self.code}): {self.message}"
        return f"{text}; {self.hint}" if self.hint else text


class AccessDenied(SlurmError):
    """The caller is neither the job's owner nor root (nor SlurmUser where allowed)."""

    expected_code = ESLURM_ACCESS_DENIED


class PermissionRefused(SlurmError):
    """EPERM, as the controller's restart path answers a non-owner."""

    expected_code = EPERM


class InvalidJobId(SlurmError):
    """No such job, or no such step in it."""

    expected_code = ESLURM_INVALID_JOB_ID


class JobPending(SlurmError):
    """The job has not started yet."""

    expected_code = ESLURM_JOB_PENDING


class JobSuspended(SlurmError):
    """The job is suspended (whole-job requests)."""

    expected_code = ESLURM_JOB_SUSPENDED


class AlreadyDone(SlurmError):
    """The job has completed, failed or been cancelled."""

    expected_code = ESLURM_ALREADY_DONE


class JobNotFinished(SlurmError):
    """Restart of a job that is still known and not finished."""

    expected_code = ESLURM_JOB_NOT_FINISHED


class Disabled(SlurmError):
    """Checkpoints are disabled for the step (counter above zero, or suspended step)."""

    expected_code = ESLURM_DISABLED


class NotSupported(SlurmError):
    """This Slurm, engine or step cannot do the operation; ``hint`` says why."""

    expected_code = ESLURM_NOT_SUPPORTED


class AlreadyInProgress(SlurmError):
    """EALREADY: a checkpoint of this step is already running."""

    expected_code = EALREADY


class InvalidArgument(SlurmError):
    """EINVAL from Slurm (for instance a mismatching saved job record)."""

    expected_code = EINVAL


class NoSuchImage(SlurmError):
    """ENOENT: the saved job record or image to restart from is missing."""

    expected_code = ENOENT


class CheckpointFailed(SlurmError):
    """The checkpoint was asked for and did not complete: the recorded code and message.

    Not a refusal: the request went out and a task answered with an error (or ended, or
    max_wait passed).  ``hint`` names each task that failed and why.
    """


class WaitEnded(SlurmError):
    """A ``--wait`` (create, vacate, restart) that ended because its step or job ended before
    the checkpoint (or the restart) did: exit 4.  ``JobCancelled`` (5) and ``JobRequeued``
    (6) say which when it was that.  Not a timeout: nothing more can come of the request,
    so waiting on would be waiting for ever (a cancelled job's wrapper cannot report)."""

    expected_code = ESLURM_ALREADY_DONE
    exit_code = 4


class JobCancelled(WaitEnded):
    """The job was cancelled while its checkpoint (or restart) was awaited."""

    exit_code = 5


class JobRequeued(WaitEnded):
    """Someone else requeued the job while its checkpoint was awaited."""

    exit_code = 6


class NeedsForce(SlurmError):
    """Refused because tasks would lose their work; the operation's ``force`` overrides.

    ``losses`` names each task or step that would go on without an image and why, for a
    person to decide on (the console asks once more); ``hint`` says the same for the
    command line.  Nothing was changed.
    """

    def __init__(
        self,
        code: int | None = None,
        message: str | None = None,
        hint: str = "",
        losses: tuple[str, ...] = (),
    ) -> None:
        super().__init__(code, message, hint)
        self.losses = losses


class UnsafeVacate(NeedsForce):
    """Vacate refused because it would end tasks that have no image.

    The code is the failed checkpoint's (or ESLURM_NOT_SUPPORTED for steps not under
    ``sckpt run``).  Nothing was ended.
    """


class NotRequeueable(UnsafeVacate):
    """Vacate refused because Slurm cannot requeue the job (it has no batch script): ending
    it would end it for good, since restart brings a job back by a requeue.  The code is
    the controller's own answer to such a requeue, ESLURM_BATCH_ONLY.  Nothing was done;
    ``force`` ends its steps anyway (after their checkpoint)."""

    expected_code = ESLURM_BATCH_ONLY


class UnsafeRestart(NeedsForce):
    """Restart refused because a task's recorded image is missing or unreadable: that task
    would start from zero.  The code is the image's (ENOENT, EACCES ...).  The job stays
    as it was (held, or finished)."""


class ControllerUnreachable(SlurmError):
    """slurmctld (or a slurmd) did not answer; the data shown may be stale."""

    exit_code = 3
    expected_code = SLURM_COMMUNICATIONS_CONNECTION_ERROR


class AccountingUnavailable(SlurmError):
    """Slurm's accounting (slurmdbd) is not configured here, or does not answer.

    Job history and finished jobs come only from it; everything else works without it.
    The message says which of the two it is, the hint how to get it.
    """

    exit_code = 3
    expected_code = ESLURM_DB_CONNECTION


class SetupError(SckptError):
    """sckpt cannot talk to Slurm at all on this machine (exit code 3)."""

    exit_code = 3


class NoConfig(SetupError):
    """No slurm.conf (SLURM_CONF, default path, or configless) could be found."""


class ShimUnavailable(SetupError):
    """The cffi shim could not be built or loaded (headers, compiler, version mismatch)."""


class UsageError(SckptError):
    """Bad input: ids, numbers, paths, options, config. Refused before any engine call."""

    exit_code = 2


class ConfigError(UsageError):
    """The configuration file is invalid; the message names the key and the expected form."""


class ReadOnlyError(SckptError):
    """A mutating operation was refused because read-only mode is on."""

    exit_code = 1


class AuditLogError(SckptError):
    """The audit log could not be written, so (by default) the action was refused."""

    exit_code = 1


class NothingMatched(SckptError):
    """``complete`` named no checkpoint in progress, so nothing was completed.

    Slurm's API answers success all the same (it keeps the reported error code): a script
    that checked only the exit status took a typo in ``--begin-time`` for a completed
    checkpoint.  Exit 1, as for a refusal."""

    exit_code = 1


def identify(error: BaseException) -> tuple[int | None, str]:
    """``(code, name)`` of any error, for the records that name every outcome the same way.

    Slurm's refusals have their code and ESLURM name; sckpt's own have no code (None) and
    a name of their kind (``READ_ONLY``, ``USAGE``, else the class name).  The audit log and
    the command line's ``--json`` both use it, so a refusal is named alike in both.
    """
    if isinstance(error, SlurmError):
        return error.code, error.name
    if isinstance(error, ReadOnlyError):
        return None, "READ_ONLY"
    if isinstance(error, UsageError):
        return None, "USAGE"
    if isinstance(error, NothingMatched):
        return None, "NOTHING_MATCHED"
    return None, type(error).__name__


_BY_CODE: dict[int, type[SlurmError]] = {
    cls.expected_code: cls
    for cls in (
        AccessDenied,
        PermissionRefused,
        InvalidJobId,
        JobPending,
        JobSuspended,
        AlreadyDone,
        JobNotFinished,
        Disabled,
        NotSupported,
        AlreadyInProgress,
        InvalidArgument,
        NoSuchImage,
        ControllerUnreachable,
    )
    if cls.expected_code is not None
}


def error_for(code: int, message: str | None = None, hint: str = "") -> SlurmError:
    """Build the typed error for a Slurm or errno code (unknown codes: ``SlurmError``)."""
    return _BY_CODE.get(code, SlurmError)(code, message, hint)


def outage_text(exc: BaseException) -> str:
    """Why a refresh failed, message first (a header that truncates keeps the useful part)."""
    if isinstance(exc, SlurmError):
        text = f"{exc.message} ({exc.name})"
        return f"{text}; {exc.hint}" if exc.hint else text
    return str(exc) or type(exc).__name__
