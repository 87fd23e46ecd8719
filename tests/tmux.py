"""A real terminal for end-to-end tests: one detached tmux session, keys in, screen out."""

from __future__ import annotations

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
