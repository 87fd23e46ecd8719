"""Every console key in one table: the footer, the help screen and the command palette read it.

Each binding has an ``id`` equal to its action name, posting-style, so ``[keys]`` in the
config file remaps it (``create = "ctrl+k"``) through ``App.set_keymap``.  Mutating actions
are flagged: read-only mode hides them from the footer, the help and the palette.

The default keys are not written here: they are the backend's (``backend/keymap.py``), which
checks the config's ``[keys]`` against them.  The checkpoint operations' keys are not written
here either: each operation with a ``key`` in the
operations table (``backend/operations.py``) gets one, with its words, and runs the screens'
one ``operation`` action with its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from sckpt.backend.keymap import (
    ACTION_DEFAULTS,
    ACTIONS,
    CONSOLE_DEFAULTS,
    GLOBAL_DEFAULTS,
    STEP_DEFAULTS,
)
from sckpt.backend.operations import OPERATIONS, Operation
from textual.binding import Binding, BindingType


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One console action: its binding id (= action name), default key, and words."""

    id: str
    key: str
    description: str
    help: str
    mutating: bool = False
    show: bool = True
    key_display: str | None = None
    bound: bool = True
    """False: handled by a widget (Enter, Tab); listed in the help, not bound again."""
    action: str = ""
    """The Textual action the key runs, when it is not the one named ``id``."""
    group: str = ""
    """Keys of one group share one line in the help, each by its name (the job-control
    verbs: four lines of "as scancel / scontrol" pushed the help past 24 rows)."""

    @property
    def runs(self) -> str:
        """The Textual action string the key (and its palette entry) runs."""
        return self.action or self.id


def _operation_key(op: Operation, key: str) -> KeySpec:
    """The key of an operation, from its row in the operations table.

    The job-control verbs' keys (K, H, L, Q) and ``auto``'s (a) are in the help and the
    palette but not in the footer: at 80 columns they would push out ``x``, ``/`` and
    ``?``, and an operator reaching for scancel's twin looks in ``?`` first.
    """
    return KeySpec(
        op.name,
        key,
        op.name.capitalize(),
        op.key_help,
        op.mutating,
        show=op.kind == "checkpoint",
        action=f"operation({op.name!r})",
        group="Job control, asks first:" if op.kind == "job" else "",
    )


SORTING = "Rows: sort by the next column (or click a header):"
"""The help's one line for ``s`` and ``S``: with ``a`` (automatic checkpoints) the help
would no longer fit 24 rows."""

ACTION_KEYS: tuple[KeySpec, ...] = (
    *(_operation_key(op, op.key) for op in OPERATIONS if op.key is not None),
    KeySpec(
        "check",
        ACTION_DEFAULTS["check"],
        "Check",
        "ask Slurm again: can it checkpoint, and its last error",
    ),
    KeySpec(
        "output",
        ACTION_DEFAULTS["output"],
        "Output",
        "the job's output file, followed while it runs (e: stderr)",
        show=False,
    ),
)
"""Actions on the selected step or job (on the console and on the step screen): the
operations that have a key, then ``check`` (able and error again, for one row) and
``output`` (the job's output file; in the help and the palette, not the footer, which has
no room for it at 80 columns)."""

CONSOLE_KEYS: tuple[KeySpec, ...] = (
    KeySpec(
        "filter",
        CONSOLE_DEFAULTS["filter"],
        "Filter",
        "filter jobs: text or field:value (user:alice state:R)",
        key_display="/",
    ),
    KeySpec(
        "sort",
        CONSOLE_DEFAULTS["sort"],
        "Sort",
        "sort by the next column (click a header to sort by it)",
        show=False,
        group=SORTING,
    ),
    KeySpec(
        "reverse",
        CONSOLE_DEFAULTS["reverse"],
        "Reverse",
        "reverse the sort order",
        show=False,
        group=SORTING,
    ),
    KeySpec("mine", CONSOLE_DEFAULTS["mine"], "Mine", "toggle: only my jobs", show=False),
    KeySpec(
        "finished",
        CONSOLE_DEFAULTS["finished"],
        "Finished",
        "toggle: finished jobs, from accounting too (the last day)",
        show=False,
    ),
    KeySpec(
        "details",
        CONSOLE_DEFAULTS["details"],
        "Details",
        "jobs: go to the steps; steps: open the detail",
        bound=False,
    ),
    KeySpec(
        "switch",
        CONSOLE_DEFAULTS["switch"],
        "Next",
        "move between the filter, jobs and steps tables",
        bound=False,
    ),
    KeySpec("refresh", CONSOLE_DEFAULTS["refresh"], "Refresh", "refresh now", show=False),
    KeySpec(
        "layout",
        CONSOLE_DEFAULTS["layout"],
        "Layout",
        "next columns: [columns], default, queue (starts), resources",
        show=False,
    ),
    KeySpec(
        "mark",
        CONSOLE_DEFAULTS["mark"],
        "Mark",
        "mark or unmark the row: the next action acts on every marked row",
        show=False,
        key_display="space",
    ),
)
"""Keys of the full console only."""

STEP_KEYS: tuple[KeySpec, ...] = (
    KeySpec("back", STEP_DEFAULTS["back"], "Console", "back to the full console"),
    KeySpec("pids", STEP_DEFAULTS["pids"], "Pids", "reload the step's processes and interconnect"),
)
"""Keys of the step detail screen only."""

OUTPUT_KEYS: tuple[KeySpec, ...] = (
    KeySpec("output_back", "escape", "Back", "back to where o was pressed"),
    KeySpec("output_stream", "e", "Stderr/out", "show the error file, or the output file again"),
    KeySpec("output_follow", "f", "Follow", "stop following the file (to read), or follow again"),
)
"""Keys of the job output screen (``o``)."""

GLOBAL_KEYS: tuple[KeySpec, ...] = (
    KeySpec("help", GLOBAL_DEFAULTS["help"], "Help", "list every key", key_display="?"),
    KeySpec(
        "command_palette",
        GLOBAL_DEFAULTS["command_palette"],
        "Palette",
        "search every action",
        bound=False,
    ),
    KeySpec("quit", GLOBAL_DEFAULTS["quit"], "Quit", "quit the console"),
)
"""Keys that work everywhere (the app's own bindings)."""

MUTATING_IDS = frozenset(k.id for k in ACTION_KEYS if k.mutating)


def bindings(specs: tuple[KeySpec, ...], *, read_only: bool = False) -> list[BindingType]:
    """Textual bindings for ``specs``; read-only hides (never removes) the mutating ones.

    The hidden keys stay bound so pressing one can say "read-only" instead of nothing.
    """
    return [
        Binding(
            s.key,
            s.runs,
            s.description,
            show=s.show and not (read_only and s.mutating),
            key_display=s.key_display,
            id=s.id,
            tooltip=s.help,
        )
        for s in specs
        if s.bound
    ]


def hide_mutating(binding: Binding) -> Binding:
    """The same binding, hidden from the footer (read-only mode)."""
    return replace(binding, show=False) if binding.id in MUTATING_IDS else binding


def keymap(keys: Mapping[str, str]) -> dict[str, str]:
    """The config file's ``[keys]`` table as a Textual keymap.

    Which action names exist is the backend's one list, ``keymap.ACTIONS``: the config's
    check refuses any other name, and one in a ``Settings`` built by hand is left out here
    rather than bound to nothing."""
    return {action: key for action, key in keys.items() if action in ACTIONS}
