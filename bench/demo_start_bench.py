"""How long ``sckpt --demo`` takes to show its first job rows in a real terminal, and ``sckpt
--demo ls``'s wall time, CPU time and peak RSS, at a given demo size (issue 34).

The console runs in a tmux pane of 160x50 (``TERM=xterm-256color``), started by this script;
the pane is read with ``tmux capture-pane`` every 20 ms until a job row of the demo (its first
job id, 1842xx, at the start of a line) is on screen, then until the header's job count no
longer says "loading" (a big demo shows its first part first and the whole cluster on a later
refresh: ``backend/simulator/staging.py``; without that, both times are the same screen).
The times count from tmux starting the process, so they include Python's start and every
import.  Peak RSS is the pane process's ``VmHWM`` a few seconds after the whole listing is
shown.  ``ls`` runs under ``/usr/bin/time`` with its output thrown away.  The demo's size
comes from a config file of its own (``[demo] jobs``).

Figures only (a Markdown table for bench/README.md); nothing is asserted.

    .venv/bin/python bench/demo_start_bench.py --jobs 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCKPT = ROOT / ".venv" / "bin" / "sckpt"
ROW = re.compile(r"^\W*18\d{4}\b", re.MULTILINE)
"""A job row: the demo's job ids start at 184201 (a marker or box line may come first)."""
LOADING = re.compile(r"\d jobs?, loading")
"""The header's job count while the demo's first part is shown (``tui/screens/console.py``)."""


def _tmux(*words: str) -> str:
    """tmux on a server of this script's own (a shared one may be shutting down as its
    last session ends, and other runs on the machine start and kill theirs)."""
    socket = f"sckpt-demo-bench-{os.getpid()}"
    return subprocess.run(
        ["tmux", "-L", socket, *words], capture_output=True, text=True, check=True
    ).stdout


def first_rows(env: dict[str, str], timeout: float = 60.0) -> tuple[float, float, float]:
    """(seconds to the first job row on screen, seconds to the whole listing on screen,
    peak RSS in MB) of one console start."""
    name = f"bench-demo-{os.getpid()}"
    words = [f"{k}={v}" for k, v in env.items()]
    start = time.perf_counter()
    for attempt in range(3):  # tmux failed now and then to start a server, load 2-3
        try:
            _tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "50",
                  "env", *words, "TERM=xterm-256color", str(SCKPT), "--demo")  # fmt: skip
            break
        except subprocess.CalledProcessError as failed:
            print(f"tmux new-session failed ({failed.stderr.strip()}); again", file=sys.stderr)
            time.sleep(1)
            start = time.perf_counter()
            if attempt == 2:
                raise
    try:
        pid = int(_tmux("display-message", "-p", "-t", name, "#{pane_pid}"))
        seen = whole = float("nan")
        while time.perf_counter() - start < timeout:
            pane = _tmux("capture-pane", "-p", "-t", name)
            if seen != seen and ROW.search(pane):  # nan: no row seen yet
                seen = time.perf_counter() - start
            if seen == seen and not LOADING.search(pane):
                whole = time.perf_counter() - start
                break
            time.sleep(0.02)
        time.sleep(3)  # the rest of the whole screen, then its steady state
        status = Path(f"/proc/{pid}/status").read_text()
        hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    finally:
        _tmux("kill-server")
    return seen, whole, hwm


def ls_run(env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one ``sckpt --demo ls``."""
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run(
            ["/usr/bin/time", "-o", out.name, "-f", "%e %U %S %M", str(SCKPT), "--demo", "ls"],
            env={**os.environ, **env}, stdout=subprocess.DEVNULL, check=True,
        )  # fmt: skip
        wall, user, system, rss = out.read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text(f"[demo]\njobs = {args.jobs}\n")
        env = {"SCKPT_CONFIG": str(config), "TEXTUAL_ANIMATIONS": "none"}
        console = [first_rows(env) for _ in range(args.repeat)]
        ls = [ls_run(env) for _ in range(args.repeat)]
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"{args.jobs} jobs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {' '.join(load)}")  # fmt: skip
    rows = [
        ("first job rows in tmux (s)", [c[0] for c in console], "{:.2f}"),
        ("whole listing in tmux (s)", [c[1] for c in console], "{:.2f}"),
        ("console peak RSS (MB)", [c[2] for c in console], "{:.0f}"),
        ("`--demo ls` wall (s)", [x[0] for x in ls], "{:.2f}"),
        ("`--demo ls` CPU (s)", [x[1] for x in ls], "{:.2f}"),
        ("`--demo ls` peak RSS (MB)", [x[2] for x in ls], "{:.0f}"),
    ]
    print("| figure | median | runs |\n|---|---|---|")
    for label, values, fmt in rows:
        runs = ", ".join(fmt.format(v) for v in values)
        print(f"| {label} | {fmt.format(statistics.median(values))} | {runs} |")


if __name__ == "__main__":
    main()
