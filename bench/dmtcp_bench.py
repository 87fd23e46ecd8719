"""Transparent checkpointing (DMTCP 4.2.0): checkpoint and restart of 1 GiB, beside ``dd``.

    .venv/bin/python bench/dmtcp_bench.py [--dir DIR] [--mib 1024] [--rounds 3] [--gzip]

A Python process fills ``--mib`` MiB of resident memory with random bytes (incompressible)
and then sleeps.  It runs under the project's DMTCP with sckpt's own checkpointer
(``backend/transparent.py``: a private coordinator behind the uid-checking relay, images
fsynced before a checkpoint is called complete), so the figure is what ``create`` costs
inside the wrapper, minus the wrapper's own polling.  In the same run and directory:

* ``dd if=/dev/zero bs=1M count=N conv=fsync``: the disk's limit for the same bytes;
* checkpoint: from ``dmtcp_command --checkpoint`` until every image is whole and flushed;
* restart: from ``dmtcp_restart`` until the coordinator sees the process running again.

Figures only; nothing is asserted.  A Markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sckpt.backend.dmtcp import find_dmtcp
from sckpt.backend.transparent import DmtcpCheckpointer

HOLDER = """
import os, sys, time
data = os.urandom({mib} << 20)
open(sys.argv[1], "w").write("ready")
while True:
    time.sleep(1)
"""


def running(checkpointer: DmtcpCheckpointer, env: dict[str, str]) -> bool:
    out = subprocess.run(
        [checkpointer.install.program("dmtcp_command"), "--status"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return "NUM_PEERS=1" in out and "RUNNING=yes" in out


def one_round(work: Path, mib: int, gzip: bool) -> tuple[float, float, float, int]:
    """(dd seconds, checkpoint seconds, restart seconds, image bytes)."""
    install = find_dmtcp()
    task = work / "task0"
    task.mkdir()
    target = work / "dd.bin"
    start = time.perf_counter()
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={mib}", "conv=fsync"],
        capture_output=True,
        check=True,
    )
    dd = time.perf_counter() - start
    target.unlink()

    checkpointer = DmtcpCheckpointer(install, task, gzip=gzip)
    env = {**os.environ, **checkpointer.env()}
    holder = work / "holder.py"
    holder.write_text(HOLDER.format(mib=mib))
    ready = work / "ready"
    child = subprocess.Popen(
        checkpointer.command([sys.executable, str(holder), str(ready)]), env=env
    )
    while not ready.exists():
        time.sleep(0.1)
    time.sleep(0.5)
    start = time.perf_counter()
    code, message = checkpointer.begin(child.pid)
    if code:
        raise SystemExit(f"checkpoint refused: {message}")
    while checkpointer.poll() is None:
        time.sleep(0.02)
    ckpt = time.perf_counter() - start
    generation = task / "g1"
    generation.mkdir()
    size = checkpointer.collect(generation)
    child.kill()
    child.wait()
    checkpointer.close()

    again = DmtcpCheckpointer(install, task, gzip=gzip)
    env = {**os.environ, **again.env()}
    start = time.perf_counter()
    restarted = subprocess.Popen(again.command([], str(generation)), env=env)
    while not running(again, env):
        time.sleep(0.02)
    restart = time.perf_counter() - start
    restarted.kill()
    restarted.wait()
    again.close()
    return dd, ckpt, restart, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", default=None, help="where images and dd write (default /var/tmp)")
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gzip", action="store_true", help="DMTCP's gzip compression on")
    args = parser.parse_args()
    rows = []
    for _ in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="sckpt-dmtcp-bench-", dir=args.dir or "/var/tmp"))
        try:
            rows.append(one_round(work, args.mib, args.gzip))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    dd = statistics.median(r[0] for r in rows)
    ckpt = statistics.median(r[1] for r in rows)
    restart = statistics.median(r[2] for r in rows)
    size = statistics.median(r[3] for r in rows)
    mode = "gzip" if args.gzip else "no compression"
    print(f"| {args.mib} MiB, {mode} | dd (fsync) | checkpoint | ratio | image | restart |")
    print("|---|---|---|---|---|---|")
    print(
        f"| median of {args.rounds} | {dd:.2f} s | {ckpt:.2f} s | {ckpt / dd:.2f}x "
        f"| {size / (1 << 20):.0f} MiB | {restart:.2f} s |"
    )
    for i, (d, c, r, s) in enumerate(rows, 1):
        mib = s / (1 << 20)
        print(f"| round {i} | {d:.2f} s | {c:.2f} s | {c / d:.2f}x | {mib:.0f} MiB | {r:.2f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
