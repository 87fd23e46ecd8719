"""Argument types for the command line: every value is checked while argv is parsed.

Each converter raises ``UsageError`` (exit code 2) with a sentence saying what was expected,
so a bad value stops the command before a facade is even opened: invalid input never
reaches an engine, Slurm, or the audit log.  Ids (``sckpt.backend.targets``) and every
operation's arguments (``sckpt.backend.arguments``) are the backend's own rules, so the
console, the facade and the command line accept exactly the same things; what the command
line adds is that typed text shows no control characters (``plain_text``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sckpt.backend.arguments import shown as _shown
from sckpt.backend.arguments import (
    validate_before_end,
    validate_begin_time,
    validate_error_code,
    validate_every,
    validate_image_dir,
    validate_max_wait,
    validate_nodelist,
    validate_signal,
    validate_text,
)
from sckpt.backend.control_chars import has_control
from sckpt.backend.errors import UsageError
from sckpt.backend.filters import require_checkpoint_words, require_valid
from sckpt.backend.hostlist import expand_hostlist
from sckpt.backend.model import JobState, StepId
from sckpt.backend.targets import parse_target, parse_targets

_DIGITS = re.compile(r"[0-9]{1,20}")


def target(text: str) -> StepId:
    """``JOB``, ``JOB.STEP``, ``JOB.batch``, ``JOB.extern``, ``JOB.interactive``, an array
    task ``ARRAY_TASK[.STEP]``."""
    return parse_target(text)


def targets(text: str) -> tuple[StepId, ...]:
    """``target``, or a range of array tasks (``123_[1-5]``, ``123_[1,4].0``): each."""
    return parse_targets(text)


def line_count(text: str) -> int:
    """``sckpt output --lines``: a whole number of lines, 0 or more (as tail -n)."""
    if not _DIGITS.fullmatch(text.strip()):
        raise UsageError(f"--lines: expected a number of lines (0 or more), got {_shown(text)}")
    return int(text)


def max_wait(text: str) -> int:
    """Seconds, 0..65535 (a uint16_t in the checkpoint API)."""
    return validate_max_wait(text)


def signal(text: str) -> int:
    """``--signal``: a signal name (``TERM``, ``SIGUSR1``, any case) or number, as scancel."""
    number = validate_signal(text)
    assert number is not None  # only None maps to None
    return number


def every(text: str) -> int:
    """``sckpt auto --every``: a duration (``90s``, ``30m``, ``2h``, at least 10 s) or
    ``auto`` (``arguments.EVERY_AUTO``)."""
    return validate_every(text, "--every")


def before_end(text: str) -> int:
    """``sckpt auto --before-end``: a duration (``10m``)."""
    return validate_before_end(text, "--before-end")


def image_dir(text: str) -> str:
    """An absolute path without ``..`` or control characters."""
    return validate_image_dir(text)


def error_code(text: str) -> int:
    """A checkpoint error code to report: a whole number 0..4294967295."""
    return validate_error_code(text, "error code")


def plain_text(text: str, what: str = "text") -> str:
    """Free text (an error message): printable, at most 1024 characters."""
    if has_control(text):
        raise UsageError(f"{what} {_shown(text)} contains control characters: expected plain text")
    return validate_text(text, what)


def error_msg(text: str) -> str:
    """The message reported with a checkpoint error code."""
    return plain_text(text, "error message")


def nodelist(text: str) -> str:
    """A Slurm host list such as ``node[1-4],gpu7`` (never empty on the command line)."""
    if not text:
        raise UsageError("invalid node list '': expected a Slurm host list such as node[1-4],gpu7")
    return validate_nodelist(text)


def node_names(text: str) -> frozenset[str]:
    """``ls -w``: a host list (``node[1-4],gpu7``), expanded to its node names."""
    return frozenset(expand_hostlist(nodelist(text)))


def begin_time(text: str) -> int:
    """When the checkpoint began: ``now``, Unix seconds, or ``YYYY-MM-DDTHH:MM[:SS]`` (local)."""
    return validate_begin_time(text, "begin time")


_STATE_WORDS: dict[str, JobState] = {}
for _state in JobState:
    _STATE_WORDS[_state.value.lower()] = _state
    _STATE_WORDS[_state.short.lower()] = _state


def states(text: str) -> frozenset[JobState]:
    """``R,PD``, ``running,pending`` or ``all`` (squeue's names and short codes, any case)."""
    chosen: set[JobState] = set()
    for word in text.split(","):
        key = word.strip().lower()
        if key == "all":
            chosen.update(JobState)
        elif key in _STATE_WORDS:
            chosen.add(_STATE_WORDS[key])
        else:
            names = ", ".join(s.value for s in JobState)
            raise UsageError(
                f"invalid job state {_shown(word)}: expected all, or any of {names} "
                "(or squeue's short codes such as R, PD, CD)"
            )
    return frozenset(chosen)


def names_for(option: str) -> Callable[[str], frozenset[str]]:
    """``names`` for ``option``, whose refusal names it (``ls -u ''`` did not say which)."""

    def named(text: str) -> frozenset[str]:
        try:
            return names(text)
        except UsageError as refused:
            raise UsageError(f"{option}: {refused}") from None

    return named


def job_targets(text: str) -> tuple[StepId, ...]:
    """``targets`` for a command that acts on whole jobs (hold, release, requeue): a text
    that is no id at all is refused naming the job forms only (``hold 12.`` suggested
    step forms).  A step is still parsed, so that its refusal can name its job."""
    try:
        return parse_targets(text)
    except UsageError:
        raise UsageError(
            f"invalid job id {_shown(text)}: expected JOB (for example 123), an array task "
            "123_4, tasks 123_[1-5], or an array's id"
        ) from None


def names(text: str) -> frozenset[str]:
    """A comma-separated list of user or partition names."""
    chosen = frozenset(part.strip() for part in text.split(",") if part.strip())
    if not chosen:
        raise UsageError("expected one or more names separated by commas")
    for name in chosen:
        plain_text(name, "name")
    return chosen


def job_ids(text: str) -> frozenset[str]:
    """A comma-separated list of job ids (``123,456``), as squeue ``-j`` takes them: an
    array's id (every task of it), an array task (``7_3``), or a job record's own id.
    Kept as the ids' text; ``listing.job_named`` matches them."""
    chosen: set[str] = set()
    for part in text.split(","):
        for step in parse_targets(part):
            if not step.is_whole_job:
                raise UsageError(f"invalid job id {_shown(part)}: expected a job id without a step")
            chosen.add(step.job_text)
    return frozenset(chosen)


def checkpoint_kinds(text: str) -> frozenset[str]:
    """``able,failed``: the checkpoint words a step must have (``filters.py``; ``in-progress``
    and ``error`` too)."""
    return require_checkpoint_words(plain_text(text, "checkpoint state"))


def filter_words(text: str) -> str:
    """A word of the console's filter language (``user:bob``, ``state:R``, free text): an
    unknown field is refused here, naming it and the known ones (``filters.py``)."""
    require_valid(plain_text(text, "filter"))
    return text


def job_id(text: str) -> StepId:
    """One job id without a step (``sckpt history JOB``), or an array task (``7_3``)."""
    step = parse_target(text)
    if not step.is_whole_job:
        raise UsageError(f"invalid job id {_shown(text)}: expected a job id without a step")
    return step


def since(text: str) -> str:
    """``--since``: a span back from now (``7d``, ``12h``) or a local date (and time).

    Checked here, kept as text: the facade measures a span back from its engine's clock
    (the simulated controller's in the demo), not this host's."""
    from sckpt.backend.history import parse_since

    parse_since(text)
    return text


def iterate_seconds(text: str) -> int:
    """``ls -i/--iterate``: seconds between two listings, 1 to a day (squeue's
    ``--iterate``)."""
    if not _DIGITS.fullmatch(text.strip()) or not 1 <= int(text) <= 86_400:
        raise UsageError(f"-i/--iterate: expected seconds from 1 to 86400, got {_shown(text)}")
    return int(text)


def limit(text: str) -> int:
    """``--limit``: how many records at most (1 to ``history.MAX_LIMIT``)."""
    from sckpt.backend.history import check_limit

    return check_limit(text)
