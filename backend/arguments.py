"""The operations' arguments: each one's rule and bounds, defined once.

``operations.py`` names the arguments an operation takes (``Argument``); this module says
what each may be.  ``RULES`` holds one ``ArgumentRule`` per argument: its check and the
value the facade uses when a caller leaves it out.  The facade checks every action's
arguments here (``check``), and the command line's option types (``cli/arguments.py``)
call the same functions on argv's text, so both accept exactly the same values and refuse
the rest with the same sentence (a ``UsageError`` saying what was expected).

Each check takes a Python value or the text a person typed (``"10"``, ``"now"``), so one
function serves both doors.  ``None`` stands for "not given" where an argument has a
default (max_wait and image_dir: the config's; begin_time: 0; error_msg and nodelist: "").
"""

from __future__ import annotations

import math
import re
import signal as signal_module
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from .control_chars import has_control
from .errors import UsageError
from .hostlist import expand_hostlist
from .model import MAX_TEXT
from .operations import Argument, Operation

MAX_WAIT_LIMIT = 65535
"""max_wait is a uint16_t in the checkpoint API."""
MAX_PATH = 4095
"""Longest image directory, in UTF-8 bytes (Linux's PATH_MAX less its NUL)."""
MAX_ERROR_CODE = 0xFFFFFFFF
"""error_code is a uint32_t in slurm_checkpoint_complete."""
MAX_ERROR_MSG = MAX_TEXT
"""Longest error message reported with ``complete``: ``model.MAX_TEXT``, what sckpt keeps
of any text."""
MAX_NODELIST = 4095
"""Longest node list ``tasks`` (and ``ls -w``) accepts, in characters."""
MAX_TIME = 0x7FFFFFFFFFFF
"""Latest begin time, in Unix seconds (far beyond any real date, and within time_t and
``datetime``)."""

_DIGITS = re.compile(r"[0-9]{1,20}")
_HOSTLIST = re.compile(r"[A-Za-z0-9_.\-\[\],]+")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?)?")


def shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for a message, cut at ``limit`` characters (escapes are ``repr``'s,
    so a control character never reaches the terminal)."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def validate_max_wait(value: object) -> int:
    """Seconds to wait for a checkpoint: a whole number 0..65535."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise UsageError(f"max_wait must be a whole number of seconds from 0 to {MAX_WAIT_LIMIT}")
    if isinstance(value, str):
        if not re.fullmatch(r"[0-9]{1,6}", value.strip()):
            shown = value if len(value) <= 20 else value[:17] + "..."
            raise UsageError(
                f"invalid max_wait {shown!r}: expected a whole number of seconds "
                f"from 0 to {MAX_WAIT_LIMIT}"
            )
        value = int(value)
    if not 0 <= value <= MAX_WAIT_LIMIT:
        raise UsageError(f"max_wait {value} out of range: expected 0 to {MAX_WAIT_LIMIT} seconds")
    return value


def validate_image_dir(value: object) -> str:
    """An absolute path, printable, without ``..`` components, at most 4095 bytes."""
    if not isinstance(value, str) or not value:
        raise UsageError("image_dir must be an absolute path such as /scratch/ckpt")
    shown = repr(value if len(value) <= 60 else value[:57] + "...")
    if has_control(value):  # C0, DEL and C1 (control_chars.CONTROL), as plain_text
        raise UsageError(f"image_dir {shown} contains control characters: expected a plain path")
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"image_dir {shown} is not valid UTF-8: expected a plain path") from None
    if not value.startswith("/"):
        raise UsageError(f"image_dir {shown} is relative: expected an absolute path")
    if ".." in value.split("/"):
        raise UsageError(f"image_dir {shown} contains '..': expected a path without it")
    if len(encoded) > MAX_PATH:
        raise UsageError(f"image_dir is {len(encoded)} bytes long: at most {MAX_PATH} allowed")
    return value


SIGNAL_FORMS = "a signal name or number, such as TERM, SIGUSR1 or 10"


def validate_signal(value: object) -> int | None:
    """``scancel --signal``'s value: a name (``USR1``, ``SIGUSR1``, any case) or a number
    of a signal this system has; None stays None (scancel's default: end the job)."""
    if value is None:
        return None
    if isinstance(value, signal_module.Signals):
        return int(value)
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        text = value.strip().upper()
        if text.isdigit() and len(text) <= 3:
            number = int(text)
        elif re.fullmatch(r"[A-Z0-9]{1,16}", text):
            found = signal_module.Signals.__members__.get(
                text if text.startswith("SIG") else f"SIG{text}"
            )
            number = int(found) if found is not None else None
    valid = {int(s) for s in signal_module.valid_signals()}
    if number is None or number not in valid:
        shown = repr(
            value if not isinstance(value, str) or len(value) <= 20 else value[:17] + "..."
        )
        raise UsageError(f"invalid signal {shown}: expected {SIGNAL_FORMS}")
    return number


def validate_flag(value: object, what: str = "flag") -> bool:
    """``stick``, ``force``: true or false (1 and 0 too, as C callers pass them)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise UsageError(f"{what} must be true or false")


def validate_begin_time(value: object, what: str = "begin_time") -> int:
    """When a checkpoint began: Unix seconds 0..``MAX_TIME`` (a whole number, its text, or a
    finite float, cut to seconds), ``now``, or a local ``YYYY-MM-DDTHH:MM[:SS]``; None is 0."""
    if value is None:
        return 0
    expected = "expected now, Unix seconds, or YYYY-MM-DDTHH:MM[:SS]"
    if isinstance(value, float) and math.isfinite(value) and 0 <= value <= MAX_TIME:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_TIME:
            raise UsageError(f"{what} {value} is out of range: expected 0 to {MAX_TIME}")
        return value
    if not isinstance(value, str):
        raise UsageError(f"{what} must be Unix seconds from 0 to {MAX_TIME}")
    text = value.strip()
    if text.lower() == "now":
        return int(time.time())
    if _DIGITS.fullmatch(text):
        if int(text) > MAX_TIME:
            raise UsageError(f"{what} {shown(value)} is out of range")
        return int(text)
    if _DATE.fullmatch(text):
        try:
            return int(datetime.fromisoformat(text).timestamp())
        except (ValueError, OverflowError, OSError):
            pass
    raise UsageError(f"invalid {what} {shown(value)}: {expected}")


def validate_error_code(value: object, what: str = "error_code") -> int:
    """A checkpoint error code to report: a whole number (or its text) 0..``MAX_ERROR_CODE``."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        number = int(value)
    if number is None or not 0 <= number <= MAX_ERROR_CODE:
        text = shown(value) if isinstance(value, str) else repr(value)
        raise UsageError(
            f"invalid {what} {text}: expected a whole number from 0 to {MAX_ERROR_CODE}"
        )
    return number


def validate_text(value: object, what: str) -> str:
    """Free text sckpt passes on or keeps: without NUL (Slurm keeps C strings), valid UTF-8,
    at most ``MAX_TEXT`` characters; None is ""."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UsageError(f"{what} must be text")
    if "\0" in value:
        raise UsageError(f"{what} contains a NUL character: expected plain text")
    if len(value) > MAX_TEXT:
        raise UsageError(f"{what} is {len(value)} characters long: at most {MAX_TEXT} allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} {shown(value)} is not valid UTF-8: expected plain text") from None
    return value


def validate_error_msg(value: object, what: str = "error_msg") -> str:
    """The message reported with an error code: text (``validate_text``) of at most
    ``MAX_ERROR_MSG`` characters.

    The command line also refuses every control character in what a person types
    (``cli/arguments.plain_text``); a program calling the facade may report a message
    of several lines, which the audit log and the console show escaped."""
    return validate_text(value, what)


def validate_nodelist(value: object, what: str = "node list") -> str:
    """A Slurm host list (``node[1-4],gpu7``) of at most ``MAX_NODELIST`` characters whose
    ranges expand (``hostlist.expand_hostlist``); None and "" are "" (every node)."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or len(value) > MAX_NODELIST or not _HOSTLIST.fullmatch(value):
        text = shown(value) if isinstance(value, str) else repr(value)
        raise UsageError(
            f"invalid {what} {text}: expected a Slurm host list such as node[1-4],gpu7"
        )
    expand_hostlist(value)
    return value


EVERY_AUTO = -1
"""``every``'s value for ``auto``: the interval follows Young and Daly's rule
(``checkpointing/policy.py``)."""
MIN_EVERY = 10
"""The shortest checkpoint interval: a checkpoint takes seconds, a shorter interval would
stop the program more than it runs."""
MAX_DURATION = 366 * 24 * 3600
MAX_RESTARTS_LIMIT = 10_000
DEFAULT_MTBF = 24 * 3600
"""Mean time between failures for ``--every auto`` when the config's ``[auto] mtbf`` is not
set: one a day, a pessimistic figure for one node (measure your site's, e.g. from the
controller's log of nodes set DOWN, and put it in the config)."""
DEFAULT_MAX_RESTARTS = 10
"""Requeues a before-end chain makes at most (Slurm's ``MaxBatchRequeue`` does not count
them): a program that never finishes must not requeue itself forever."""
DEFAULT_KEEP = 2
"""Complete image generations ``sckpt run`` keeps per task (config ``keep_images``;
``checkpointing/generations.py`` prunes the older ones)."""
MAX_KEEP = 100
"""The most generations ``keep_images`` may keep: each is a whole image of every task."""
DURATION_FORMS = "a duration such as 90s, 30m, 2h or 1h30m"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(?:[0-9]{1,9}[smhd]){1,4}")


def validate_duration(value: object, what: str) -> int:
    """A policy's duration: ``90``, ``90s``, ``30m``, ``2h``, ``1d``, ``1h30m`` (or whole
    seconds) -> seconds, 1 .. ``MAX_DURATION``.  Zero, negative and unit-less garbage are
    refused: a policy that fires constantly or never is a mistake, not a choice."""
    seconds: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str):
        text = value.strip().lower()
        if _DIGITS.fullmatch(text):
            seconds = int(text)
        elif _DURATION.fullmatch(text):
            seconds = sum(int(n) * _UNITS[u] for n, u in re.findall(r"([0-9]+)([smhd])", text))
    if seconds is None:
        raise UsageError(f"invalid {what} {_given(value)}: expected {DURATION_FORMS}")
    if seconds <= 0:
        raise UsageError(f"invalid {what} {_given(value)}: must be longer than zero")
    if seconds > MAX_DURATION:
        raise UsageError(f"invalid {what} {_given(value)}: at most 366 days")
    return seconds


def validate_every(value: object, what: str = "every") -> int:
    """A checkpoint interval: ``auto`` (``EVERY_AUTO``) or a duration of at least
    ``MIN_EVERY`` seconds."""
    if value == EVERY_AUTO or (isinstance(value, str) and value.strip().lower() == "auto"):
        return EVERY_AUTO
    seconds = validate_duration(value, what)
    if seconds < MIN_EVERY:
        raise UsageError(f"invalid {what} {_given(value)}: at least {MIN_EVERY}s")
    return seconds


def validate_restarts(value: object, what: str = "max_restarts") -> int:
    """How many requeues a before-end chain may make: a whole number 1 .. 10000."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        number = int(value)
    if number is None or not 1 <= number <= MAX_RESTARTS_LIMIT:
        raise UsageError(
            f"invalid {what} {_given(value)}: expected a whole number from 1 to "
            f"{MAX_RESTARTS_LIMIT}"
        )
    return number


def describe_duration(seconds: int) -> str:
    """``1h30m``, ``90s``: a duration the way it is typed (``auto`` for ``EVERY_AUTO``)."""
    if seconds == EVERY_AUTO:
        return "auto"
    if seconds <= 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


class PolicyShape(Protocol):
    """What the words of a policy read: the record's ``protocol.AutoPolicy`` and the
    views' ``model.AutoCheckpoints`` alike."""

    @property
    def every(self) -> int: ...
    @property
    def auto(self) -> bool: ...
    @property
    def before_end(self) -> int: ...
    @property
    def max_restarts(self) -> int: ...


def describe_policy(policy: PolicyShape) -> str:
    """``every 30m, before end 10m (at most 10 restarts)``; "" for no policy.  The one
    wording of a policy: the step's history, ``sckpt auto``'s answer, the console's detail."""
    parts = []
    if policy.auto:
        now = f" (now {describe_duration(policy.every)})" if policy.every else ""
        parts.append(f"every auto{now}")
    elif policy.every:
        parts.append(f"every {describe_duration(policy.every)}")
    if policy.before_end:
        parts.append(
            f"before end {describe_duration(policy.before_end)} "
            f"(at most {policy.max_restarts or DEFAULT_MAX_RESTARTS} restarts)"
        )
    return ", ".join(parts)


def _given(value: object) -> str:
    return shown(value) if isinstance(value, str) else repr(value)


def validate_before_end(value: object, what: str = "before_end") -> int:
    """How long before the job's end its tasks are checkpointed: a duration."""
    return validate_duration(value, what)


def check_policy_change(values: Mapping[str, Any]) -> None:
    """``auto``'s arguments together: ``off`` alone, or a new ``every`` and/or
    ``before_end`` (each left out stays as it is); ``UsageError`` for neither or both,
    since "change nothing" and "clear it and set it" are mistakes, not requests."""
    changes = values.get("every") is not None or values.get("before_end") is not None
    if values.get("off") and changes:
        raise UsageError("off clears the policy: give it alone, without every or before_end")
    if not values.get("off") and not changes:
        raise UsageError(
            "say what to change: every (--every 30m|auto), before_end (--before-end 10m) "
            "or off (--off)"
        )


@dataclass(frozen=True, slots=True)
class ArgumentRule:
    """How one argument is checked, and its value when a caller leaves it out."""

    check: Callable[[Any], Any]
    """Returns the value as engines take it, or raises ``UsageError``."""
    default: Any
    """What a caller that does not give the argument means (None: the config's value,
    for max_wait and image_dir)."""


def _optional(check: Callable[[object], Any]) -> Callable[[object], Any]:
    """``check`` for an argument whose None means "the config's value"."""
    return lambda value: None if value is None else check(value)


RULES: Mapping[Argument, ArgumentRule] = {
    "max_wait": ArgumentRule(_optional(validate_max_wait), None),
    "image_dir": ArgumentRule(_optional(validate_image_dir), None),
    "stick": ArgumentRule(lambda value: validate_flag(value, "stick"), False),
    "force": ArgumentRule(lambda value: validate_flag(value, "force"), False),
    "begin_time": ArgumentRule(validate_begin_time, 0),
    "error_code": ArgumentRule(validate_error_code, 0),
    "error_msg": ArgumentRule(validate_error_msg, ""),
    "nodelist": ArgumentRule(validate_nodelist, None),
    "signal": ArgumentRule(validate_signal, None),
    "every": ArgumentRule(_optional(validate_every), None),
    "before_end": ArgumentRule(_optional(validate_before_end), None),
    "off": ArgumentRule(lambda value: validate_flag(value, "off"), False),
}
"""Every argument of the operations table (``operations.ARGUMENTS``, in its order), with
its rule (``tests/backend/test_arguments.py`` checks that none is missing).  For ``auto``
a left-out ``every`` or ``before_end`` (None) means "unchanged"."""

TOGETHER: Mapping[str, Callable[[Mapping[str, Any]], None]] = {"auto": check_policy_change}
"""The rule an operation's checked arguments must meet together, by operation name."""


def check(op: Operation, given: Mapping[str, object]) -> dict[str, Any]:
    """``op``'s arguments checked, in the table's order, each left out one at its default;
    ``UsageError`` for the first bad one.  An argument ``op`` does not take is a caller's
    bug (``TypeError``, as a Python call with an unknown keyword)."""
    unknown = set(given) - set(op.arguments)
    if unknown:
        raise TypeError(f"{op.name}() got unexpected arguments: {', '.join(sorted(unknown))}")
    out: dict[str, Any] = {
        name: RULES[name].check(given.get(name, RULES[name].default)) for name in op.arguments
    }
    together = TOGETHER.get(op.name)
    if together is not None:
        together(out)
    return out


def given_values(op: Operation, given: Mapping[str, object]) -> dict[str, Any]:
    """``op``'s arguments as the caller gave them (defaults filled in), before any check:
    what an audit line of a refusal shows."""
    return {name: given.get(name, RULES[name].default) for name in op.arguments}
