"""Which characters must never reach a terminal as they are, and their visible escape.

A job's name, a Slurm message, a path or a job's output is text someone else chose: a C0
control character, DEL or a C1 one (0x80-0x9f: 0x9b is a one-byte CSI on some terminals)
could move the cursor, retitle the window or worse.  The console shows such characters
as ``\\xNN`` (``tui/console_text.printable``), so does the command line
(``cli/output.clean``), and the command line refuses them in free text a person types
(``cli/arguments.plain_text``).  One definition here, for both front ends.

Pure text: nothing but the standard library.
"""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Every C0 control character, DEL and every C1 control character."""
CONTROL_BUT_LAYOUT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""``CONTROL`` without tab and newline: for a text shown as lines (a job's output file),
where those two lay the text out instead of hiding anything."""


def has_control(text: str) -> bool:
    """Whether ``text`` holds any character of ``CONTROL``."""
    return CONTROL.search(text) is not None


def escape_controls(text: str, *, keep_layout: bool = False) -> str:
    """``text`` with each control character replaced by its ``\\xNN`` escape; with
    ``keep_layout``, tab and newline are kept as they are (``CONTROL_BUT_LAYOUT``)."""
    pattern = CONTROL_BUT_LAYOUT if keep_layout else CONTROL
    return pattern.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
