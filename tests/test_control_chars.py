"""Which characters never reach a terminal as they are (``control_chars``), and that both
front ends show and refuse exactly those: the console's ``printable``, the output view's
``shown_text``, the command line's ``clean`` and its ``plain_text`` check."""

from __future__ import annotations

import pytest
from sckpt.backend.arguments import validate_image_dir
from sckpt.backend.control_chars import escape_controls, has_control
from sckpt.backend.errors import UsageError
from sckpt.cli.arguments import plain_text
from sckpt.cli.output import clean
from sckpt.tui.console_text import printable
from sckpt.tui.screens.output import shown_text

HOSTILE = "a\x1b]0;pwned\x07\tb\nc\x7f\x9b2J\x80é"
ESCAPED = "a\\x1b]0;pwned\\x07\\x09b\\x0ac\\x7f\\x9b2J\\x80é"


def test_c0_del_and_c1_are_escaped_and_nothing_else() -> None:
    assert escape_controls(HOSTILE) == ESCAPED
    assert escape_controls("plain é ü 漢 ~") == "plain é ü 漢 ~"
    kept = escape_controls(HOSTILE, keep_layout=True)
    assert kept == "a\\x1b]0;pwned\\x07\tb\nc\\x7f\\x9b2J\\x80é"


@pytest.mark.parametrize("char", ["\x00", "\x1f", "\x7f", "\x80", "\x9b", "\x9f", "\n", "\t"])
def test_has_control_sees_every_control_character(char: str) -> None:
    assert has_control(f"x{char}y")


def test_both_front_ends_escape_alike() -> None:
    assert printable(HOSTILE) == clean(HOSTILE) == ESCAPED
    assert shown_text(HOSTILE.encode()) == escape_controls(HOSTILE, keep_layout=True)


@pytest.mark.parametrize("check", [plain_text, validate_image_dir])
def test_typed_text_with_a_control_character_is_refused(check: object) -> None:
    assert callable(check)
    for char in ("\x1b", "\x7f", "\x9b"):
        with pytest.raises(UsageError, match="contains control characters"):
            check(f"/scratch/a{char}b")
    assert check("/scratch/ab") == "/scratch/ab"
