"""A console whose terminal hangs up leaves (exit 129) instead of spinning.

What happened: a console run through ``su`` in a pty whose session leader was killed and
whose master side was closed (an SSH session dropped under a wrapper) got no SIGHUP; its
terminal read end-of-file forever, Textual's input thread looped on it at ~30 % of a core
and the refreshes went on.  Here the console runs with SIGHUP ignored (as it is inherited
by such a grandchild), in a pty whose leader exits and whose master is closed.
"""

from __future__ import annotations

import os
import pty
import signal
import sys
import time
from pathlib import Path

from tests.helpers import wait_for


def test_a_console_whose_terminal_hangs_up_exits_129(tmp_path: Path) -> None:
    status = tmp_path / "status"
    # The leader goes once the console shows its jobs: the test says so through this pipe
    # (closed unwritten if the console never shows them).  Not inherited across exec.
    shown_r, shown_w = os.pipe()
    pid, master = pty.fork()
    if pid == 0:  # the session leader: it starts the console, then goes (as su did)
        os.close(shown_w)
        if os.fork() == 0:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)  # inherited across exec
            os.environ.update(HOME=str(tmp_path), TERM="xterm-256color")
            command = f"{sys.executable} -m sckpt --demo; echo $? > {status}"
            os.execv("/bin/sh", ["sh", "-c", command])
        os.read(shown_r, 1)
        os._exit(0)
    os.close(shown_r)
    try:
        started = time.monotonic()
        seen = b""
        while time.monotonic() - started < 60 and b"JobID" not in seen:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
        assert b"JobID" in seen, seen[-2000:]
        os.write(shown_w, b"x")
        os.waitpid(pid, 0)  # the leader went
    finally:
        os.close(shown_w)
        os.close(master)  # the terminal hangs up
    wait_for(lambda: status.exists() and status.read_text().strip(), timeout=30)
    assert status.read_text().strip() == "129"
