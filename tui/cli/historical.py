"""scontrol's historical checkpoint syntax, for admins' muscle memory and old scripts.

``sckpt checkpoint <op> <jobid>[.<stepid>] [MaxWait=N] [ImageDir=DIR] [StickToNodes]`` is
translated here into the same request the modern commands build, so both paths share one
validation and one facade call.  The matching rules are scontrol 19.05's:

* the ``checkpoint`` keyword itself matches case-insensitively from 2 letters (``ch``);
* operations match case-insensitively by prefix, ``able`` and ``disable`` from 1 letter, the
  others from 2, tried in scontrol's order (so ``re`` is ``requeue``, ``res`` is ``restart``);
* ``MaxWait=`` and ``ImageDir=`` are case-insensitive keys (create, vacate); restart takes
  ``StickToNodes`` (any case, abbreviated to no less than ``Stick``) and ``ImageDir=``.

Where scontrol was lax, sckpt is strict, because lax parsing is how bad input reaches Slurm:
``MaxWait=abc`` is refused (scontrol silently sent 0), an option the operation does not take is
refused, and so is anything after the step id of ``able``/``error``/``enable``/``disable``.

``requeue`` is refused with a pointer to what to run instead: no engine offers the 19.05
``slurm_checkpoint_requeue`` (checkpoint a batch job, wait for it to end, requeue it
*pending*); the nearest sckpt operations (``vacate JOB.batch``, then ``restart JOB``) leave the
job held in between, and silently changing what an old script does would be worse than
stopping it with a clear message.  The undocumented test operation ``complete`` (scontrol sent
an invented error code) is refused the same way in favour of ``sckpt complete``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sckpt.backend.errors import UsageError

CHECKPOINT_KEYWORD = "checkpoint"
CHECKPOINT_KEYWORD_MIN = 2

# scontrol 19.05's order and minimum prefix lengths (order matters: "re" is requeue).
_OPS: tuple[tuple[str, int], ...] = (
    ("able", 1),
    ("complete", 2),
    ("disable", 1),
    ("enable", 2),
    ("create", 2),
    ("requeue", 2),
    ("vacate", 2),
    ("restart", 2),
    ("error", 2),
)

OP_FORMS = "able, disable, enable, create, vacate, restart or error"


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


def is_checkpoint_keyword(word: str) -> bool:
    """Whether ``word`` names scontrol's ``checkpoint`` command (``ch``, ``CHECK``, ...)."""
    return _prefix_match(word, CHECKPOINT_KEYWORD, CHECKPOINT_KEYWORD_MIN)


def match_operation(word: str) -> str:
    """Resolve an abbreviated, any-case operation name the way scontrol did."""
    for name, minimum in _OPS:
        if _prefix_match(word, name, minimum):
            return name
    shown = word if len(word) <= 20 else word[:17] + "..."
    raise UsageError(f"invalid checkpoint operation {shown!r}: expected {OP_FORMS}")


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
    operation = match_operation(words[0])
    if len(words) < 2:
        raise UsageError(f"checkpoint {operation} needs a job id: <jobid>[.<stepid>]")
    target, args = words[1], words[2:]
    if operation == "requeue":
        raise UsageError(
            "checkpoint requeue is not offered by sckpt (no engine can requeue a job pending "
            "after its checkpoint): run 'sckpt vacate JOB.batch', then 'sckpt restart JOB'"
        )
    if operation == "complete":
        raise UsageError(
            "checkpoint complete was scontrol's test-only operation: run "
            "'sckpt complete TARGET --error-code N --error-msg TEXT'"
        )
    max_wait: str | None = None
    image_dir: str | None = None
    stick = False
    for arg in args:
        image = _key_value(arg, "ImageDir")
        wait = _key_value(arg, "MaxWait")
        if operation in ("create", "vacate", "restart") and image is not None:
            image_dir = image
        elif operation in ("create", "vacate") and wait is not None:
            max_wait = wait
        elif operation == "restart" and _prefix_match(arg, "sticktonodes", 5):
            stick = True
        else:
            takes = {
                "create": "MaxWait=N and ImageDir=DIR",
                "vacate": "MaxWait=N and ImageDir=DIR",
                "restart": "StickToNodes and ImageDir=DIR",
            }.get(operation, "no options")
            raise UsageError(
                f"invalid input {_shown(arg)} for checkpoint {operation}: it takes {takes}"
            )
    return HistoricalRequest(
        operation=operation, target=target, max_wait=max_wait, image_dir=image_dir, stick=stick
    )
