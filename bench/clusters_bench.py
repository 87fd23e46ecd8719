"""The idle ``sckpt -M all`` console beside ``watch -n 2 squeue -M all``: what each costs the
two controllers and slurmdbd, one after the other in one run.

Uses the accounting setup (``scripts/slurm-cluster up --accounting``: MariaDB, slurmdbd and
the clusters sckpt-a and sckpt-b registered in it); it must be up (this script neither starts
nor stops it: it is shared).  It submits ``--jobs`` held jobs to each cluster (cancelled at
the end), then for ``--idle`` seconds each:

* the real console (``build_app`` on the engine ``sckpt`` picks, ``-M all``, headless under
  Textual's Pilot at 160x50, default 2 s refresh), started and loaded before the window;
* ``squeue -M all`` every 2 s, as ``watch -n 2 squeue -M all`` runs it.

Measured per minute: each slurmctld's read RPCs and the time it spent on them (``sdiag -M
NAME``, counters reset with ``sdiag -r`` before each window; ``REQUEST_*_INFO`` without
sdiag's own), slurmdbd's RPCs and their time (``sacctmgr show stats``, reset with ``sacctmgr
clear stats``; what one reset-and-read costs by itself, measured first, is taken out), and
the client's CPU.  Figures only (a Markdown table for bench/README.md); nothing is asserted.

    SLURM_CONF=/tmp/sckpt-acct/sckpt-a/slurm.conf .venv/bin/python bench/clusters_bench.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from report import print_report  # bench/report.py: run as python bench/clusters_bench.py

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

ROOT = Path(__file__).resolve().parent.parent
CLUSTERS = ("sckpt-a", "sckpt-b")
ROW = re.compile(r"(\w+)\s+\(\s*\d+\)\s+count:(\d+).*?total_time:(\d+)")


def slurm(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, check=check, timeout=120, cwd="/tmp"
    )


def ctld_reads(cluster: str) -> tuple[int, int]:
    """Read RPCs slurmctld of ``cluster`` counted since ``sdiag -r``: (count, microseconds)."""
    text = slurm("sdiag", "-M", cluster).stdout
    block = text.split("Remote Procedure Call statistics by message type", 1)[1]
    block = block.split("Remote Procedure Call statistics by user", 1)[0]
    count = total = 0
    for kind, n, micros in ROW.findall(block):
        if kind.endswith("_INFO") and kind != "REQUEST_STATS_INFO":
            count += int(n)
            total += int(micros)
    return count, total


def dbd_rpcs() -> dict[str, tuple[int, int]]:
    """slurmdbd's RPCs since ``sacctmgr clear stats``, by type: (count, microseconds)."""
    text = slurm("sacctmgr", "show", "stats").stdout
    block = text.split("Remote Procedure Call statistics by message type", 1)[1]
    block = block.split("Remote Procedure Call statistics by user", 1)[0]
    return {kind: (int(n), int(micros)) for kind, n, micros in ROW.findall(block)}


def reset() -> None:
    for cluster in CLUSTERS:
        slurm("sdiag", "-r", "-M", cluster)
    slurm("sacctmgr", "-i", "clear", "stats")


def reader_overhead() -> dict[str, tuple[int, int]]:
    """What resetting and reading slurmdbd's counters costs it by itself (counts only
    matter: their times are subtracted at their mean)."""
    reset()
    return dbd_rpcs()


def window(seconds: float, overhead: dict[str, tuple[int, int]], run: Any) -> dict[str, float]:
    """Reset every counter, let ``run(seconds)`` work, read them: per-minute figures."""
    reset()
    cpu = run(seconds)
    scale = 60 / seconds
    out: dict[str, Any] = {"client_cpu_s_per_min": cpu * scale}
    # slurmdbd first: each ``sdiag -M`` below looks its cluster up in slurmdbd as well.
    dbd = dbd_rpcs()
    for cluster in CLUSTERS:
        n, micros = ctld_reads(cluster)
        out[f"{cluster}_rpcs_per_min"] = n * scale
        out[f"{cluster}_ctld_ms_per_min"] = micros / 1000 * scale
    count = 0
    spent = 0.0
    kinds = []
    for kind, (n, total) in dbd.items():
        own = overhead.get(kind, (0, 0))[0]
        mean = total / n if n else 0
        if n > own:
            kinds.append(f"{kind} {n - own}")
        count += max(0, n - own)
        spent += max(0.0, total - own * mean)
    out["slurmdbd_rpcs_per_min"] = count * scale
    out["slurmdbd_ms_per_min"] = spent / 1000 * scale
    out["slurmdbd_rpcs_in_window"] = ", ".join(kinds) or "none"
    return out


def console_idle(seconds: float) -> float:
    """The ``-M all`` console, loaded, then idle ``seconds``: its CPU seconds meanwhile."""
    from sckpt.backend.config import Settings
    from sckpt.backend.facade import open_facade
    from sckpt.tui.app import build_app

    settings = Settings(audit_log=Path(tempfile.mkdtemp()) / "audit.log")
    facade = open_facade(settings, clusters="all")
    app = build_app(facade, settings)
    used = 0.0

    async def run() -> None:
        nonlocal used
        async with app.run_test(size=(160, 50)) as pilot:
            while not app.pipeline.loaded:
                await pilot.pause(0.01)
            await asyncio.sleep(3)  # past the first listings
            reset()
            cpu0 = time.process_time()
            await asyncio.sleep(seconds)
            used = time.process_time() - cpu0

    # The window is reset inside (once the console is up): the outer reset is harmless.
    asyncio.run(run())
    facade.close()
    return used


def squeue_loop(seconds: float) -> float:
    """``squeue -M all`` every 2 s for ``seconds``: the CPU its runs took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter()
        slurm("squeue", "-M", "all")
        time.sleep(max(0.0, 2.0 - (time.perf_counter() - t)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100, help="held jobs per cluster")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds per window")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("clusters_bench: needs root (sdiag -r, sacctmgr clear stats)")
    status = subprocess.run(
        [str(ROOT / "scripts" / "slurm-cluster"), "status", "--accounting"],
        capture_output=True,
        text=True,
    )
    if status.returncode != 0:
        sys.exit(
            "clusters_bench: the accounting setup is not up (scripts/slurm-cluster up --accounting)"
        )
    os.environ.setdefault("SLURM_CONF", "/tmp/sckpt-acct/sckpt-a/slurm.conf")
    tag = f"bench-{uuid.uuid4().hex[:6]}"
    try:
        for cluster in CLUSTERS:
            for _ in range(args.jobs):
                slurm("sbatch", "-M", cluster, "-J", tag, "--hold", "-o", "/dev/null",
                      "--wrap", "sleep 60")  # fmt: skip
        overhead = reader_overhead()
        res: dict[str, Any] = {"jobs_per_cluster": args.jobs, "idle_s": args.idle}
        for name, run in (("console", console_idle), ("squeue_loop", squeue_loop)):
            for key, value in window(args.idle, overhead, run).items():
                res[f"{name}_{key}"] = value
    finally:
        for cluster in CLUSTERS:
            slurm("scancel", "-M", cluster, "-n", tag, check=False)
    print_report(res)


if __name__ == "__main__":
    main()
