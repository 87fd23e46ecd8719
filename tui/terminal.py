"""The terminal and the process the console runs in: hang-ups, size hints, the heap.

The console is meant to stay open all day over SSH.  What that needs from the process
around the app lives here, apart from the app's screens and data: noticing a terminal
that hung up without a SIGHUP, dropping size hints that would pin the screen to its start
size, no animations unless asked for, and tuning the cyclic garbage collector once the
first screen is painted.
"""

from __future__ import annotations

import gc
import os
import sys
import termios

TERMINAL_CHECK = 2.0
"""Seconds between two looks at whether the console's terminal is still there."""

GC_THRESHOLDS = (10_000, 20, 50)
"""The cyclic GC's thresholds once the console runs (Python's defaults: 700, 10, 10)."""

FIRST_SCREEN_GC_LIMIT = 30.0
"""Seconds the cyclic GC stays paused at most when no first screen comes (``pause_gc``)."""


def animations_off() -> bool:
    """Whether the console turns Textual's animations off: yes unless the operator chose
    a level with ``TEXTUAL_ANIMATIONS`` (cheaper over SSH, and nothing moves on its own)."""
    return "TEXTUAL_ANIMATIONS" not in os.environ


def controlling_terminal() -> int | None:
    """The file descriptor of the terminal to watch for a hang-up: stdin when it is a
    terminal, else None (nothing to watch: a pipe, a test)."""
    stdin = sys.__stdin__
    if stdin is not None and stdin.isatty():
        return stdin.fileno()
    return None


def hung_up(fd: int) -> bool:
    """Whether the terminal ``fd`` has hung up.

    A console whose terminal went away without a SIGHUP reaching it (an SSH session
    dropped while a ``su`` or a wrapper was the session leader) kept running: Textual's
    input thread reads end-of-file from the hung-up terminal in a loop, 30 % of a core
    each, and the refreshes went on asking the controller for nobody.  A hung-up
    terminal answers ``tcgetattr`` with EIO.
    """
    try:
        termios.tcgetattr(fd)
    except (termios.error, OSError):
        return True
    return False


def trust_the_terminal() -> None:
    """Drop ``COLUMNS``/``LINES`` from the environment when a terminal answers for its size.

    Textual asks ``shutil.get_terminal_size()`` on start and on every SIGWINCH, and that
    prefers those two variables over the terminal.  Some shells export them, and a tmux
    server started from a test run inherits them: the console then kept its start size
    after every resize (old rows left on screen, no header).  sckpt's own children never
    need them.
    """
    try:
        os.get_terminal_size(sys.__stdout__.fileno() if sys.__stdout__ else 1)
    except (OSError, ValueError):
        return  # no terminal: leave the hint for whatever draws
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


def freeze_heap() -> None:
    """Once the first screen is painted: collect, hide what exists from the cyclic GC, and
    make full collections rare.

    At 10,000 jobs the console holds ~300,000 GC-tracked objects (the views, their steps
    and checkpoint states), and each full collection walked them all: a 100-300 ms stall of
    the UI thread every few dozen refreshes, the largest key-press delays measured.  These
    objects hold no reference cycles; those replaced later are still freed by reference
    counting, and full collections then walk only what was made since.  The collection
    first makes sure no cyclic garbage is frozen with them (it would never be freed).

    Freezing once is not enough: the native engine rebuilds each job's view as its
    checkpoint answers age, so within minutes the whole queue is new, unfrozen objects,
    and Python's default thresholds ran a full collection about every 0.6 s under a
    stream of changed refreshes (49 ms each at 33,000 jobs: the p95 of a key press went
    from 35 to 75 ms, bench/README).  With ``GC_THRESHOLDS`` a young collection waits for
    10,000 new objects and a full one for 1,000 young ones, so full collections come
    minutes apart (hours on an idle console) and cyclic garbage is still collected; the
    soak tests hold the RSS flat with them.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()  # paused since the console started (pause_gc)


def pause_gc() -> None:
    """Before the console starts: no cyclic GC until the first screen is painted
    (``freeze_heap`` collects then and turns it back on; ``resume_gc`` after
    ``FIRST_SCREEN_GC_LIMIT`` seconds if no data comes).

    Why: the first screen builds a view, a plan and table cells for every job, objects
    without reference cycles; at 100,000 jobs the collector walking them again and again
    was ~0.45 s of the ~1 s between the first data and the first rows painted
    (bench/README, issue 34)."""
    gc.disable()


def resume_gc() -> None:
    """The cyclic GC back on (``pause_gc``'s limit; a no-op once the first screen was)."""
    gc.enable()
