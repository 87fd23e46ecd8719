"""An idle console sends little: the installed ``sckpt --demo`` in an 80x24 pty, left alone.

Over SSH every byte the console writes crosses the network, so an idle console must not
repaint what did not change (issue 8's target: under 20 KB per minute at the default 2 s
refresh).  The test counts what the program writes to its terminal during a minute with no
key pressed, after the first screen; then ``q`` must still quit it with status 0, so a
frozen console (which would write nothing) cannot pass.  The demo cluster keeps changing
meanwhile (jobs arrive, start, checkpoints end): those rows are real changes and count.
The same over real SSH, with the figures before and after: bench/README.md ("Idle bytes
over SSH", ``bench/ssh_bench.py``).
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import termios
import time
from pathlib import Path

SCKPT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sckpt"
LIMIT_KB_PER_MIN = 20.0
WINDOW = 60.0


def _read(fd: int, seconds: float, until: bytes | None = None) -> bytes:
    """What the program writes during ``seconds`` (or until ``until`` appears)."""
    out = bytearray()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the program closed its terminal
            break
        if not chunk:
            break
        out += chunk
        if until is not None and until in out:
            break
    return bytes(out)


def test_idle_demo_console_writes_under_20_kb_per_minute(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("")
    env = {**os.environ, "TERM": "xterm-256color", "SCKPT_CONFIG": str(config)}
    env.pop("TEXTUAL_ANIMATIONS", None)  # the console's own default is what operators get
    pid, fd = pty.fork()
    if pid == 0:  # the child: the console, as an operator starts it
        os.execve(str(SCKPT), [str(SCKPT), "--demo"], env)
    try:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        first = _read(fd, 60, until=b"JobID")
        assert b"JobID" in first, first[-500:]
        _read(fd, 5)  # the first refreshes and the footer settle
        idle = _read(fd, WINDOW)
        rate = len(idle) / 1024 / (WINDOW / 60)
        print(f"idle demo console: {rate:.1f} KB/min ({len(idle)} bytes in {WINDOW:.0f} s)")
        assert rate < LIMIT_KB_PER_MIN, f"{rate:.1f} KB/min while idle"
        os.write(fd, b"q")
        _read(fd, 10)
        _, status = os.waitpid(pid, 0)
        pid = 0
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        if pid:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)
