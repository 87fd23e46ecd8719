"""A real terminal for end-to-end tests: one detached tmux session, keys in, screen out."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from types import TracebackType

import pytest

from .conftest import IN_CI


def _tmux(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=check, timeout=20)


_SGR = re.compile(r"\x1b\[[0-9;]*m")
"""A colour or style escape in ``capture-pane -e`` output."""


def _starts_bold(line: str) -> bool:
    """Whether the first character of a ``capture-pane -e`` line is drawn bold: the style
    escapes before it set bold (SGR 1) after their last reset (SGR 0)."""
    lead = re.match(r"(?:\x1b\[[0-9;]*m)*", line)
    bold = False
    for escape in _SGR.findall(lead.group(0) if lead else ""):
        params = escape[2:-1].split(";")
        i = 0
        while i < len(params):
            code = params[i]
            if code in ("38", "48", "58"):  # a colour: 5;N or 2;R;G;B follow
                i += 3 if params[i + 1 : i + 2] == ["5"] else 5
                continue
            if code in ("", "0", "22"):
                bold = False
            elif code == "1":
                bold = True
            i += 1
    return bold


class Tmux:
    """A detached tmux session of a given size running one shell command.

    Use as a context manager; the session is killed on exit.  ``wait`` polls the visible
    screen (``capture-pane``) until a predicate holds and fails the test with the last
    screen otherwise.
    """

    def __init__(
        self, command: str, width: int = 80, height: int = 24, env: Sequence[str] = ()
    ) -> None:
        if shutil.which("tmux") is None:
            message = "tmux is not installed (scripts/test installs it)"
            if IN_CI:
                pytest.fail(message)
            pytest.skip(message)
        self.name = f"sckpt-{uuid.uuid4().hex[:10]}"
        self.command = command
        self.size = (width, height)
        self.env = list(env)

    def __enter__(self) -> Tmux:
        width, height = self.size
        _tmux(
            "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height),
            "env", *self.env, "sh", "-c", self.command,
        )  # fmt: skip
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        _tmux("kill-session", "-t", self.name, check=False)

    def screen(self) -> str:
        return _tmux("capture-pane", "-p", "-t", self.name).stdout

    def cursor_row(self) -> str:
        """The text of the focused table's cursor row, or "" when no table has the focus.

        Textual draws the block cursor of the focused table bold, and a table without
        the focus draws its cursor plain: the row of table text (it starts with an id)
        whose first cell is bold is the cursor of the table that has the focus.
        """
        styled = _tmux("capture-pane", "-e", "-p", "-t", self.name).stdout
        for line in styled.splitlines():
            text = _SGR.sub("", line)
            if _starts_bold(line) and text.strip()[:1].isdigit():
                return text.strip()
        return ""

    def wait_cursor(self, predicate: Callable[[str], bool], timeout: float = 30.0) -> str:
        """Wait until the focused table's cursor row (``cursor_row``) satisfies
        ``predicate``: where the focus and the cursor are, which keys then act on."""
        deadline = time.monotonic() + timeout
        row = self.cursor_row()
        while not predicate(row):
            if time.monotonic() > deadline:
                raise AssertionError(f"cursor row never matched: {row!r}\n{self.screen()}")
            time.sleep(0.1)
            row = self.cursor_row()
        return row

    def keys(self, *keys: str) -> None:
        """tmux key names (``Enter``, ``Down``, ``q``)."""
        _tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        """Literal text."""
        _tmux("send-keys", "-t", self.name, "-l", text)

    def pane_pid(self) -> int:
        return int(_tmux("display-message", "-p", "-t", self.name, "#{pane_pid}").stdout)

    def wait(self, predicate: Callable[[str], bool], timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        text = self.screen()
        while not predicate(text):
            if time.monotonic() > deadline:
                raise AssertionError(f"screen never matched; last screen:\n{text}")
            time.sleep(0.2)
            text = self.screen()
        return text

    def press_until(self, key: str, predicate: Callable[[str], bool], tries: int = 20) -> str:
        """Press ``key`` until the screen shows its effect.

        The first paint can come before the terminal's input mode is set, so an early key may
        be lost; once the effect has appeared no key is pressed again.
        """
        for _ in range(tries):
            self.keys(key)
            try:
                return self.wait(predicate, timeout=1.0)
            except AssertionError:
                continue
        return self.wait(predicate, timeout=1.0)
