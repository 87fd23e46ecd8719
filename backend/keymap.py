"""The console's actions and their default keys, as data the config can be checked against.

``[keys]`` in the config remaps a console action (``create = "ctrl+k"``).  The config is
read and validated in the backend, before any console exists (``sckpt ls`` reads the same
file), so the names it may use and the keys they have by default live here, without
Textual; the console's key table (``tui/keys.py``) takes its default keys from here and
adds the words.  The checkpoint operations' keys come from the operations table.

Pure data and one check: nothing but the standard library and the operations table.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from .operations import OPERATIONS

ACTION_DEFAULTS: Mapping[str, str] = {
    **{op.name: op.key for op in OPERATIONS if op.key is not None},
    "check": "x",
    "output": "o",
}
"""Actions on the selected job or step, on the console and the step screen."""
CONSOLE_DEFAULTS: Mapping[str, str] = {
    "filter": "slash",
    "sort": "s",
    "reverse": "S",
    "mine": "m",
    "finished": "f",
    "details": "enter",
    "switch": "tab",
    "refresh": "ctrl+r",
    "mark": "space",
    "layout": "l",
}
"""Keys of the full console only."""
STEP_DEFAULTS: Mapping[str, str] = {"back": "escape", "pids": "p"}
"""Keys of the step detail screen only."""
GLOBAL_DEFAULTS: Mapping[str, str] = {
    "help": "question_mark",
    "command_palette": "ctrl+p",
    "quit": "q",
}
"""Keys that work everywhere."""

SCREENS: tuple[tuple[str, tuple[Mapping[str, str], ...]], ...] = (
    ("console", (ACTION_DEFAULTS, CONSOLE_DEFAULTS, GLOBAL_DEFAULTS)),
    ("step screen", (ACTION_DEFAULTS, STEP_DEFAULTS, GLOBAL_DEFAULTS)),
)
"""The actions each screen offers at once: within one, no two may share a key."""
ACTIONS: tuple[str, ...] = tuple(
    sorted({*ACTION_DEFAULTS, *CONSOLE_DEFAULTS, *STEP_DEFAULTS, *GLOBAL_DEFAULTS})
)
"""Every action name ``[keys]`` may remap."""


def key_problem(keys: Mapping[str, str]) -> tuple[str, str] | None:
    """``(action, why)`` for the first override the console could not honour, else None.

    An unknown action (``creat``) would be ignored, and a key another action of the same
    screen keeps (``create = "v"`` while vacate is ``v``) would silently take it over;
    both are mistakes the file's author must hear about.
    """
    for action in sorted(keys):
        if action not in ACTIONS:
            close = difflib.get_close_matches(action, ACTIONS, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            return action, f"unknown console action: {hint}expected one of {', '.join(ACTIONS)}"
    for screen, tables in SCREENS:
        owner: dict[str, str] = {}
        for table in tables:
            for action, default in table.items():
                key = keys.get(action, default)
                other = owner.setdefault(key, action)
                if other != action:
                    remapped = action if action in keys else other
                    taken = other if remapped == action else action
                    return remapped, (
                        f"{key!r} is already {taken}'s key on the {screen}: give {taken} "
                        "another key too, or choose a free one"
                    )
    return None
