"""End to end in tmux at 80x24: a theme picked in the palette with no usable home.

``nobody`` with HOME unset: the config path falls back to the passwd entry's home,
``/nonexistent``, which nobody cannot create.  The console must keep the theme, say it was
not saved and why, and go on (``q`` exits 0) -- never crash.  As root only (``runuser``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import IN_CI

from ..tmux import Tmux

SCKPT = Path(sys.executable).with_name("sckpt")


def test_theme_without_a_home_is_used_and_not_saved_with_a_message() -> None:
    if os.geteuid() != 0:
        message = "needs root to run the console as nobody"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    command = (
        f"runuser -u nobody -- env -u HOME -u XDG_CONFIG_HOME -u SCKPT_CONFIG "
        f"TERM=xterm-256color {SCKPT} --demo; echo SCKPT-EXIT=$?; sleep 30"
    )
    with Tmux(command, 80, 24) as term:
        term.wait(lambda s: "user nobody" in s, timeout=60)
        term.press_until("C-p", lambda s: "Search" in s or "search" in s)
        term.type("theme")
        term.wait(lambda s: "heme" in s)
        term.keys("Enter")
        term.wait(lambda s: "themes" in s.lower())
        term.type("nord")
        term.keys("Enter")
        screen = term.wait(lambda s: "not" in s and "saved" in s)
        # the toast: the right-hand part of the lines, after its border
        toast = " ".join(
            line.split("▌", 1)[1].strip() for line in screen.splitlines() if "▌" in line
        )
        assert "theme nord is used now but not saved: cannot write" in toast
        assert "/nonexistent/.config/sckpt/config.to" in toast and "Permission denied" in toast
        term.keys("q")
        term.wait(lambda s: "SCKPT-EXIT=0" in s)
    assert not Path("/nonexistent").exists()
