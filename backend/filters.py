"""The job filter language, one home for the console's ``/`` box and ``sckpt ls FILTER``.

A filter is whitespace-separated terms that must all match (AND): free text, or
``field:value`` with a field of ``FILTER_FIELDS`` (or an alias: ``u:``, ``part:``, ...).
Parsing never raises: an unknown field is reported in ``Filter.errors`` (the console shows
it in the app; the command line refuses it with ``require_valid``, exit 2), and a filter
with errors matches no job, rather than silently dropping the bad term and showing every
job.  Pure: the standard library and the model only.

``ckpt:`` matches the checkpoint *states* of a job's steps (``CHECKPOINT_WORDS``), never the
text of a cell: the console cuts its summary (``1 dis``) and ``ls`` spells it out (``1
disabled``), and one filter must select the same jobs in both.  ``ls --ckpt`` takes the
same words.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import UsageError
from .model import CheckpointKind, JobState, JobView, StepView

FILTER_FIELDS = ("id", "user", "name", "partition", "state", "nodes", "ckpt")
_FIELD_ALIASES = {
    "job": "id",
    "jobid": "id",
    "u": "user",
    "n": "name",
    "p": "partition",
    "part": "partition",
    "s": "state",
    "st": "state",
    "node": "nodes",
    "checkpoint": "ckpt",
}


FAILED = "failed"
"""The word for a step whose last checkpoint failed (its last error code is not 0), as
``progress.py`` words an outcome (``failed (28)``); ``error`` is read as the same."""

CHECKPOINT_WORDS = (*(kind.value for kind in CheckpointKind), FAILED)
"""What ``ckpt:`` and ``ls --ckpt`` match: a step's checkpoint kind, or ``failed``."""

_CKPT_ALIASES = {"error": FAILED, "errors": FAILED, "fail": FAILED}


def step_checkpoint_words(step: StepView) -> frozenset[str]:
    """A step's checkpoint words: its kind (``in_progress``), and ``failed`` when its last
    checkpoint failed, whatever its kind now (a step that failed is often ``able`` again)."""
    words = {step.checkpoint.kind.value}
    if step.checkpoint.failed_code:
        words.add(FAILED)
    return frozenset(words)


def job_checkpoint_words(view: JobView) -> frozenset[str]:
    """A job's checkpoint words: its steps' (each kind present, ``failed`` when one failed);
    a job without steps is ``pending`` or ``ended`` as its summary says, else nothing."""
    if not view.steps:
        if view.job.state is JobState.PENDING:
            return frozenset({CheckpointKind.PENDING.value})
        if view.job.state.is_finished:
            return frozenset({CheckpointKind.ENDED.value})
        return frozenset()
    words: set[str] = set()
    for step in view.steps:
        words |= step_checkpoint_words(step)
    return frozenset(words)


def checkpoint_word(text: str) -> str:
    """One checkpoint word as typed (``in-progress``, ``in progress``, ``dis``, ``error``),
    normalised for matching: lower case, ``_`` between words, aliases resolved."""
    word = text.strip().lower().replace("-", "_").replace(" ", "_")
    return _CKPT_ALIASES.get(word, word)


def checkpoint_word_matches(words: frozenset[str], typed: str) -> bool:
    """Whether a typed word names one of ``words``: a prefix of it (``dis`` = disabled,
    ``in`` = in_progress, ``err`` = failed), never a substring (``able`` is not ``disabled``)."""
    value = checkpoint_word(typed)
    named = words | {alias for alias, word in _CKPT_ALIASES.items() if word in words}
    return bool(value) and any(word.startswith(value) for word in named)


def _names_a_checkpoint_word(typed: str) -> bool:
    """Whether ``ckpt:typed`` can match anything: the start of a checkpoint word or alias.
    Why: ``ckpt:bogus`` matched no job and read as "no jobs match" where ``--ckpt bogus``
    is refused; both now refuse a word that names no state."""
    return checkpoint_word_matches(frozenset(CHECKPOINT_WORDS), typed)


def require_checkpoint_words(text: str) -> frozenset[str]:
    """``ls --ckpt able,failed``: each word whole (or an alias); anything else is bad input."""
    chosen: set[str] = set()
    for raw in text.split(","):
        word = checkpoint_word(raw)
        if word not in CHECKPOINT_WORDS:
            raise UsageError(
                f"invalid checkpoint state {raw.strip()!r}: expected any of "
                f"{', '.join(CHECKPOINT_WORDS)}"
            )
        chosen.add(word)
    return frozenset(chosen)


@dataclass(frozen=True, slots=True)
class Filter:
    """A parsed filter: every term must match (AND); a term is free text or field:value.

    Free text matches as a case-insensitive substring of the id, user, name, partition,
    state, nodes, or (by prefix) a checkpoint word.  ``state:`` matches squeue's short code exactly
    (``R``, ``PD``) or a prefix of the long name (``run``).  Unknown fields are reported in
    ``errors``.
    """

    terms: tuple[tuple[str, str], ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms and not self.errors


def parse_filter(text: str) -> Filter:
    """Split a filter's text into terms (whitespace separated, all lower-cased)."""
    terms: list[tuple[str, str]] = []
    errors: list[str] = []
    for raw in text.split():
        word = raw.lower()
        field, sep, value = word.partition(":")
        if sep and field:
            field = _FIELD_ALIASES.get(field, field)
            if field not in FILTER_FIELDS:
                errors.append(
                    f"unknown field {field!r} in filter: expected one of {', '.join(FILTER_FIELDS)}"
                )
                continue
            if field == "ckpt" and value and not _names_a_checkpoint_word(value):
                errors.append(
                    f"invalid checkpoint state {value!r} in filter: expected any of "
                    f"{', '.join(CHECKPOINT_WORDS)} (or the start of one)"
                )
                continue
            if value:
                terms.append((field, value))
        else:
            terms.append(("", word))
    return Filter(tuple(terms), tuple(errors))


def require_valid(text: str) -> Filter:
    """``parse_filter`` for the command line: an unknown field is bad input (exit 2)."""
    parsed = parse_filter(text)
    if parsed.errors:
        raise UsageError(parsed.errors[0])
    return parsed


def _state_matches(state: JobState, value: str) -> bool:
    return value == state.short.lower() or state.value.lower().startswith(value)


def matches(flt: Filter, view: JobView) -> bool:
    """Whether a job passes the filter: the one test behind the console's ``/`` and ``sckpt
    ls FILTER``.  ``ckpt:`` (and free text) match the job's checkpoint words by prefix."""
    if flt.errors:
        return False
    j = view.job
    values = {
        "id": j.label if j.array_job_id else str(j.job_id),
        "user": j.user.lower(),
        "name": j.name.lower(),
        "partition": j.partition.lower(),
        "nodes": j.nodes.lower(),
    }
    ckpt = job_checkpoint_words(view)
    for field, value in flt.terms:
        if field == "state":
            if not _state_matches(j.state, value):
                return False
        elif field == "id":  # squeue's id (7_3) or the record's own (9)
            if not (values["id"].startswith(value) or str(j.job_id).startswith(value)):
                return False
        elif field == "ckpt":
            if not checkpoint_word_matches(ckpt, value):
                return False
        elif field:
            if value not in values[field]:
                return False
        elif not (
            any(value in v for v in values.values())
            or _state_matches(j.state, value)
            or checkpoint_word_matches(ckpt, value)
        ):
            return False
    return True
