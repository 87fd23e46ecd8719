"""scontrol's historical checkpoint syntax, for admins' muscle memory and old scripts.

``sckpt checkpoint <op> <jobid>[.<stepid>] [MaxWait=N] [ImageDir=DIR] [StickToNodes]`` is
translated here into the same request the modern commands build, so both paths share one
validation and one facade call.  The matching rules are scontrol 19.05's:

* the ``checkpoint`` keyword itself matches case-insensitively from 2 letters (``ch``);
* operations match case-insensitively by prefix, ``able`` and ``disable`` from 1 letter, the
  others from 2, tried in scontrol's order (so ``re`` is ``requeue``, ``res`` is ``restart``):
  each operation's prefix length and place in that order are its ``scontrol`` entry in the
  operations table (``backend/operations.py``); only ``requeue``, not an sckpt operation, is
  named here;
* ``MaxWait=`` and ``ImageDir=`` are case-insensitive keys, ``StickToNodes`` a word (any case,
  abbreviated to no less than ``Stick``); an operation takes those of its table
  ``arguments`` (create and vacate: MaxWait and ImageDir; restart: StickToNodes and ImageDir).

Where scontrol was lax, sckpt is strict, because lax parsing is how bad input reaches Slurm:
``MaxWait=abc`` is refused (scontrol silently sent 0), an option the operation does not take is
refused, and so is anything after the step id of ``able``/``error``/``enable``/``disable``.

``requeue`` is refused with a pointer to what to run instead: no engine offers the 19.05
``slurm_checkpoint_requeue`` (checkpoint a batch job, wait for it to end, requeue it
*pending*); the nearest sckpt operations (``vacate JOB``, then ``restart JOB``) leave the
job held in between, and silently changing what an old script does would be worse than
stopping it with a clear message.  The undocumented test operation ``complete`` (scontrol sent
an invented error code) is refused the same way in favour of ``sckpt complete``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from sckpt.backend.errors import UsageError
from sckpt.backend.operations import OPERATIONS, Argument, ScontrolName, operation

CHECKPOINT_KEYWORD = "checkpoint"
CHECKPOINT_KEYWORD_MIN = 2

_REQUEUE = "requeue"
"""scontrol's one checkpoint operation that is not among sckpt's nine (refused, see above)."""
_REQUEUE_NAME = ScontrolName(prefix=2, rank=5)

_REFUSED = {
    _REQUEUE: (
        "checkpoint requeue is not offered by sckpt (no engine can requeue a job pending "
        "after its checkpoint): run 'sckpt vacate JOB', then 'sckpt restart JOB'"
    ),
    "complete": (
        "checkpoint complete was scontrol's test-only operation: run "
        "'sckpt complete TARGET --error-code N --error-msg TEXT'"
    ),
}
"""scontrol names that are recognised, then refused with what to run instead."""

_NAMES: tuple[tuple[str, ScontrolName], ...] = tuple(
    sorted(
        [(_REQUEUE, _REQUEUE_NAME)]
        + [(op.name, op.scontrol) for op in OPERATIONS if op.scontrol is not None],
        key=lambda named: named[1].rank,
    )
)
"""Every name scontrol knew, in its order of comparison (the table's ``scontrol`` ranks)."""
_OFFERED = tuple((name, scontrol) for name, scontrol in _NAMES if name not in _REFUSED)

OP_FORMS = ", ".join(name for name, _ in _OFFERED[:-1]) + " or " + _OFFERED[-1][0]
"""The operations the historical form runs, as the error for an unknown one lists them."""

_KEYWORDS: dict[Argument, str] = {
    "max_wait": "MaxWait=N",
    "image_dir": "ImageDir=DIR",
    "stick": "StickToNodes",
}
"""The arguments the historical form names, and how (it cannot express the others)."""
_STICK_MIN = 5
"""``StickToNodes`` may be abbreviated to no less than ``Stick``."""


@dataclass(frozen=True)
class HistoricalRequest:
    """One ``sckpt checkpoint ...`` line, translated to a modern operation and its options."""

    operation: str
    target: str
    max_wait: str | None = None
    image_dir: str | None = None
    stick: bool = False


def _prefix_match(word: str, name: str, minimum: int) -> bool:
    """scontrol's ``strncasecmp(word, name, MAX(len(word), minimum)) == 0``."""
    return len(word) >= minimum and name.startswith(word.lower())


def prefix_rule() -> str:
    """How short each offered operation may be typed (``able, disable from 1 letter; ...``)."""
    by_length: dict[int, list[str]] = {}
    for name, scontrol in _OFFERED:
        by_length.setdefault(scontrol.prefix, []).append(name)
    rules = [f"{', '.join(names)} from {length}" for length, names in sorted(by_length.items())]
    rules[0] += " letter" if min(by_length) == 1 else " letters"
    return "; ".join(rules)


def is_checkpoint_keyword(word: str) -> bool:
    """Whether ``word`` names scontrol's ``checkpoint`` command (``ch``, ``CHECK``, ...)."""
    return _prefix_match(word, CHECKPOINT_KEYWORD, CHECKPOINT_KEYWORD_MIN)


def match_operation(word: str) -> str:
    """Resolve an abbreviated, any-case operation name the way scontrol did.

    A word scontrol would not take still gets an answer that helps: the names it begins
    (``e``: ambiguous, enable or error; ``v``: too short for vacate), else the close
    spellings difflib finds (``craete``: create), else every operation.
    """
    for name, scontrol in _NAMES:
        if _prefix_match(word, name, scontrol.prefix):
            return name
    shown = word if len(word) <= 20 else word[:17] + "..."
    lowered = word.lower()
    begun = [(name, scontrol) for name, scontrol in _NAMES if lowered and name.startswith(lowered)]
    if len(begun) > 1:
        why = "ambiguous: " + ", ".join(name for name, _ in begun)
    elif begun:
        name, scontrol = begun[0]
        why = f"too short: type at least {name[: scontrol.prefix]!r} for {name}"
    else:
        close = difflib.get_close_matches(lowered, [name for name, _ in _NAMES], n=3)
        why = f"did you mean {' or '.join(close)}?" if close else f"expected {OP_FORMS}"
    raise UsageError(f"invalid checkpoint operation {shown!r}: {why}")


def _key_value(arg: str, key: str) -> str | None:
    """The value of ``Key=value`` with a case-insensitive key, else None."""
    prefix = key + "="
    if arg[: len(prefix)].lower() == prefix.lower():
        return arg[len(prefix) :]
    return None


def _shown(arg: str) -> str:
    return repr(arg if len(arg) <= 40 else arg[:37] + "...")


def parse_historical(words: list[str]) -> HistoricalRequest:
    """Translate ``<op> <jobid>[.<stepid>] [args...]`` (the words after ``checkpoint``)."""
    if not words:
        raise UsageError(
            "checkpoint needs an operation and a job id: "
            "sckpt checkpoint <op> <jobid>[.<stepid>] [MaxWait=N] [ImageDir=DIR] [StickToNodes]"
        )
    name = match_operation(words[0])
    if len(words) < 2:
        raise UsageError(f"checkpoint {name} needs a job id: <jobid>[.<stepid>]")
    target, args = words[1], words[2:]
    if name in _REFUSED:
        raise UsageError(_REFUSED[name])
    takes = [argument for argument in operation(name).arguments if argument in _KEYWORDS]
    max_wait: str | None = None
    image_dir: str | None = None
    stick = False
    for arg in args:
        image = _key_value(arg, "ImageDir")
        wait = _key_value(arg, "MaxWait")
        if "image_dir" in takes and image is not None:
            image_dir = image
        elif "max_wait" in takes and wait is not None:
            max_wait = wait
        elif "stick" in takes and _prefix_match(arg, "sticktonodes", _STICK_MIN):
            stick = True
        else:
            described = " and ".join(_KEYWORDS[argument] for argument in takes) or "no options"
            raise UsageError(
                f"invalid input {_shown(arg)} for checkpoint {name}: it takes {described}"
            )
    return HistoricalRequest(
        operation=name, target=target, max_wait=max_wait, image_dir=image_dir, stick=stick
    )
