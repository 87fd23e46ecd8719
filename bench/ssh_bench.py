"""Bytes an idle console sends over SSH per minute, next to a `watch -n 2 squeue` loop.

Runs the installed ``sckpt`` through a private sshd on loopback (``tests/sshd.py``) inside a
tmux pane of 80x24, waits for the first screen, then counts what the ssh client reads from
the connection (``/proc/<ssh>/io`` rchar: all it reads while idle is the server's output)
over a window of idle time.  The same is measured for ``watch -n 2 squeue``.

    .venv/bin/python bench/ssh_bench.py --seconds 60            # demo console and watch
    SLURM_CONF=... .venv/bin/python bench/ssh_bench.py --real   # against the real cluster
    .venv/bin/python bench/ssh_bench.py --sckpt /path/to/other/sckpt  # another build (before/after)
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.sshd import ssh_server  # noqa: E402

SCKPT = ROOT / ".venv" / "bin" / "sckpt"
USER = "sckpt-alice"


def _rchar(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise RuntimeError("no rchar")


def measure(argv: list[str], remote: str, settle: float, seconds: float) -> float:
    """KB per minute read by the ssh client while the remote program sits idle."""
    name = f"bench-{uuid.uuid4().hex[:8]}"
    command = "exec " + shlex.join([*argv[:-1], remote])
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", name, "-x", "80", "-y", "24",
         "env", "TERM=xterm-256color", "sh", "-c", command],
        check=True,
    )  # fmt: skip
    try:
        time.sleep(settle)
        pid = int(
            subprocess.run(
                ["tmux", "display-message", "-p", "-t", name, "#{pane_pid}"],
                capture_output=True, text=True, check=True,
            ).stdout
        )  # fmt: skip
        before = _rchar(pid)
        time.sleep(seconds)
        after = _rchar(pid)
        return (after - before) / 1024 / (seconds / 60)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=8.0)
    parser.add_argument("--real", action="store_true", help="console on SLURM_CONF, not --demo")
    parser.add_argument("--sckpt", default=str(SCKPT), help="the sckpt program to run remotely")
    parser.add_argument("--no-watch", action="store_true", help="skip the watch squeue row")
    args = parser.parse_args()
    env = {"SLURM_CONF": os.environ["SLURM_CONF"]} if "SLURM_CONF" in os.environ else {}
    with ssh_server(USER, env=env) as server:
        base = server.ssh_argv("PLACEHOLDER")
        console = shlex.join([args.sckpt, *([] if args.real else ["--demo"])])
        rows = [("sckpt" + ("" if args.real else " --demo"), console)]
        if env and not args.no_watch:
            rows.append(("watch -n 2 squeue", "watch -n 2 squeue"))
        for label, remote in rows:
            rate = measure(base, remote, args.settle, args.seconds)
            print(f"{label:24s} {rate:8.1f} KB/min idle over SSH ({args.seconds:.0f} s window)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
