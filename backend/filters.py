"""The job filter language, one home for the console's ``/`` box and ``sckpt ls FILTER``.

A filter is whitespace-separated terms that must all match (AND): free text, or
``field:value`` with a field of ``FILTER_FIELDS`` (or an alias: ``u:``, ``part:``, ...).
Parsing never raises: an unknown field is reported in ``Filter.errors`` (the console shows
it in the app; the command line refuses it with ``require_valid``, exit 2), and a filter
with errors matches no job, rather than silently dropping the bad term and showing every
job.  Pure: the standard library and the model only.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import UsageError
from .model import JobState, JobView

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


@dataclass(frozen=True, slots=True)
class Filter:
    """A parsed filter: every term must match (AND); a term is free text or field:value.

    Free text matches as a case-insensitive substring of the id, user, name, partition,
    state, nodes or checkpoint summary.  ``state:`` matches squeue's short code exactly
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


def matches(flt: Filter, view: JobView, ckpt: str) -> bool:
    """Whether a job passes the filter; ``ckpt`` is its checkpoint summary as the caller
    shows it (the console's cell, the command line's CKPT column), so ``ckpt:`` matches
    the words on the screen."""
    if flt.errors:
        return False
    j = view.job
    values = {
        "id": j.label if j.array_job_id else str(j.job_id),
        "user": j.user.lower(),
        "name": j.name.lower(),
        "partition": j.partition.lower(),
        "nodes": j.nodes.lower(),
        "ckpt": ckpt.lower(),
    }
    for field, value in flt.terms:
        if field == "state":
            if not _state_matches(j.state, value):
                return False
        elif field == "id":  # squeue's id (7_3) or the record's own (9)
            if not (values["id"].startswith(value) or str(j.job_id).startswith(value)):
                return False
        elif field:
            if value not in values[field]:
                return False
        elif not (any(value in v for v in values.values()) or _state_matches(j.state, value)):
            return False
    return True
