"""The console's columns as data: which exist, the preset layouts, and the config's check.

``[columns]`` in the config chooses the jobs table's columns and their order (``jobs =
["id", "user", "state", "start", "checkpoint"]``) and the steps table's (``steps = [...]``);
the console's ``l`` key cycles through that choice and the presets of ``LAYOUTS``.  The
config is read in the backend before any console exists, so the names live here, without
Textual; the console (``tui/console_text.py``) gives each its header and width.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

JOB_COLUMN_KEYS: tuple[str, ...] = (
    "id",
    "user",
    "name",
    "partition",
    "state",
    "elapsed",
    "left",
    "limit",
    "end",
    "priority",
    "qos",
    "start",
    "nodes",
    "steps",
    "tres",
    "checkpoint",
)
"""Every column of the jobs table (``cluster`` is added in front with ``-M``): ``start``
is a pending job's expected start (squeue ``--start``) or a started job's start;
``tres`` its resources (squeue ``-O tres-alloc``: allocated, else requested); ``left``,
``limit``, ``end``, ``priority`` and ``qos`` squeue's ``%L %l %e %Q %q``."""
STEP_COLUMN_KEYS: tuple[str, ...] = (
    "id",
    "name",
    "state",
    "tasks",
    "nodes",
    "checkpoint",
    "error",
)
"""Every column of the steps table."""

LAYOUTS: Mapping[str, tuple[str, ...]] = {
    "default": (
        "id",
        "user",
        "name",
        "partition",
        "state",
        "elapsed",
        "nodes",
        "steps",
        "checkpoint",
    ),
    "queue": ("id", "user", "name", "partition", "state", "start", "nodes", "checkpoint"),
    "resources": ("id", "user", "name", "state", "elapsed", "tres", "nodes", "checkpoint"),
    "time": ("id", "user", "name", "state", "elapsed", "limit", "left", "checkpoint"),
}
"""The jobs table's preset layouts, in the order ``l`` cycles through them: sckpt's own,
the queue (when pending jobs will start), what each job asked for or holds, and its time
(Elapsed and Left, squeue's %L: what an operator reads before vacating)."""
CONFIG_LAYOUT = "config"
"""The name the console gives the config's own ``[columns] jobs`` layout (cycled first)."""
COLUMNS_TABLE = "columns"
COLUMNS_TABLES: Mapping[str, tuple[str, ...]] = {"jobs": JOB_COLUMN_KEYS, "steps": STEP_COLUMN_KEYS}
"""``[columns]``'s keys and the column names each may list."""


def columns_problem(table: str, value: object) -> str | None:
    """Why ``[columns] TABLE = VALUE`` cannot be shown, in one sentence, or None.

    A list of known column names, each once, with ``id`` among them (the row's name: an
    action on a row needs to say which job it is); unknown names get a close match."""
    known = COLUMNS_TABLES[table]
    example = ", ".join(f'"{k}"' for k in LAYOUTS["queue" if table == "jobs" else "default"][:4])
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return f"expected a list of column names such as [{example}]"
    seen: set[str] = set()
    for name in value:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            return f"unknown column {name!r}: {hint}expected any of {', '.join(known)}"
        if name in seen:
            return f"column {name!r} is listed twice: list each column once"
        seen.add(name)
    if "id" not in seen:
        return "the id column is missing: every layout shows which job (or step) a row is"
    return None


def layouts(config_jobs: Sequence[str] | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The layouts ``l`` cycles through: the config's own first (when it sets one), then
    the presets that differ from it."""
    presets = tuple(LAYOUTS.items())
    if not config_jobs:
        return presets
    own = tuple(config_jobs)
    return ((CONFIG_LAYOUT, own), *((n, c) for n, c in presets if c != own))
