"""Bytes an idle console sends over SSH per minute, next to a `watch -n 2 squeue` loop.

Runs the installed ``sckpt`` through a private sshd on loopback (``tests/sshd.py``) inside a
tmux pane of 80x24, waits for the first screen, then counts what the ssh client reads from
the connection (``/proc/<ssh>/io`` rchar: all it reads while idle is the server's output)
over a window of idle time.  The same is measured for ``watch -n 2 squeue``.

    .venv/bin/python bench/ssh_bench.py --seconds 60            # demo console and watch
    SLURM_CONF=... .venv/bin/python bench/ssh_bench.py --real   # against the real cluster
    .venv/bin/python bench/ssh_bench.py --sckpt /path/to/other/sckpt  # another build (before/after)
    SLURM_CONF=... .venv/bin/python bench/ssh_bench.py --real --busy \
        --sckpt /work/main/.venv/bin/sckpt --sckpt /path/to/before/sckpt   # the busy cluster

``--busy`` makes the busy-cluster workload of issue 15 itself, so the figure can be made
again: a batch job of sckpt-alice that starts a 1 s ``srun --overlap`` step every ~1.5 s,
and a short job (one 2 s step) submitted every 10 s; each console is opened on the busy
job (``sckpt JOB``), so its steps are the ones on screen.  ``--sckpt`` may be given twice or
more: the builds are measured in turn, each in a workload of its own made the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
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


BUSY_SCRIPT = "for i in $(seq 1 2000); do srun --overlap -n1 sleep 1; sleep 0.5; done"


@contextlib.contextmanager
def busy_workload(env: dict[str, str]) -> Iterator[int]:
    """sckpt-alice's busy job (a new step every ~1.5 s) and a short job every 10 s, on a
    thread, for as long as the block runs; yields the busy job's id."""
    full = {**os.environ, **env}

    def sbatch(*args: str) -> int:
        out = subprocess.run(
            ["su", USER, "-s", "/bin/sh", "-c",
             shlex.join(["sbatch", "--parsable", "-o", "/dev/null", "-n1", *args])],
            capture_output=True, text=True, check=True, env=full, cwd="/tmp",
        )  # fmt: skip
        return int(out.stdout.strip().split(";")[0])

    busy = sbatch("-J", "bench-busy", "--wrap", BUSY_SCRIPT)
    stop = threading.Event()
    short: list[int] = []

    def churn() -> None:
        while not stop.wait(0 if not short else 10):
            short.append(sbatch("-J", "bench-churn", "--wrap", "srun sleep 2"))

    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    try:
        time.sleep(5)  # the busy job runs its first steps
        yield busy
    finally:
        stop.set()
        thread.join()
        subprocess.run(["scancel", str(busy), *map(str, short)], env=full, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=8.0)
    parser.add_argument("--real", action="store_true", help="console on SLURM_CONF, not --demo")
    parser.add_argument(
        "--sckpt", action="append", help="the sckpt program to run remotely (repeatable)"
    )
    parser.add_argument("--busy", action="store_true", help="make the busy workload (--real)")
    parser.add_argument("--no-watch", action="store_true", help="skip the watch squeue row")
    args = parser.parse_args()
    programs = args.sckpt or [str(SCKPT)]
    env = {"SLURM_CONF": os.environ["SLURM_CONF"]} if "SLURM_CONF" in os.environ else {}
    if args.busy and not (args.real and env):
        parser.error("--busy needs --real and SLURM_CONF")
    with ssh_server(USER, env=env) as server:
        base = server.ssh_argv("PLACEHOLDER")
        rows: list[list[str] | None] = [[program] for program in programs]
        if env and not args.no_watch:
            rows.append(None)
        for row in rows:
            # Each console gets a workload of its own, so each sees a busy job of the same
            # age: a job younger than a minute repaints its elapsed time every second, so a
            # console measured on an older job would be favoured.
            with busy_workload(env) if args.busy else contextlib.nullcontext(None) as busy:
                if row is None:
                    remote = "watch -n 2 squeue"
                else:
                    target = [] if busy is None else [str(busy)]
                    remote = shlex.join([*row, *([] if args.real else ["--demo"]), *target])
                rate = measure(base, remote, args.settle, args.seconds)
            label = remote if row is None else shlex.join(row)
            print(f"{label:40s} {rate:8.1f} KB/min idle over SSH ({args.seconds:.0f} s window)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
