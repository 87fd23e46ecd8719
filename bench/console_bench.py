"""Console benchmark: first screen, key latency during refresh, idle refresh cost, RSS, idle CPU.

Runs the real app (``build_app``) headless with Textual's Pilot over the simulated cluster.
Figures only (printed as a Markdown table for bench/README.md); nothing is asserted.

    .venv/bin/python bench/console_bench.py --jobs 10000 --idle 30

* first screen: from app start to the first snapshot shown in both tables;
* key -> repaint: ``down`` presses (Pilot waits until the screen processed them) while
  refreshes with changed data run back to back (the simulated clock advances 2 s each);
* unchanged refresh: one refresh whose snapshot says "no change" (facade + app);
* RSS: the process's peak resident memory with the cluster and the console loaded;
* idle CPU: process CPU seconds per minute with the default 2 s interval on a real clock.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from sckpt.backend.config import Settings
from sckpt.backend.engines.simulated import ManualClock, SimulatedCluster
from sckpt.backend.facade import open_facade
from sckpt.tui.app import SckptApp, build_app


async def _wait_loaded(app: SckptApp, pilot: Any) -> None:
    while not app.loaded:
        await pilot.pause(0.005)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def measure(jobs: int, presses: int) -> dict[str, Any]:
    clock = ManualClock()
    t0 = time.perf_counter()
    cluster = SimulatedCluster(seed=1, n_jobs=jobs, clock=clock)
    gen = time.perf_counter() - t0
    steps = sum(len(j.steps) for j in cluster.snapshot().jobs)
    audit = Path(tempfile.mkdtemp()) / "audit.log"
    settings = Settings(audit_log=audit, refresh_interval=3600)
    facade = open_facade(settings, as_user="root", cluster=cluster)
    app = build_app(facade, settings, clock=clock)
    out: dict[str, Any] = {"jobs": jobs, "steps": steps, "generation_s": gen}
    start = time.perf_counter()
    async with app.run_test(size=(160, 50)) as pilot:
        await _wait_loaded(app, pilot)
        out["first_screen_ms"] = (time.perf_counter() - start) * 1000
        con = app.console_screen()
        assert con is not None
        out["rows"] = con.jobs_table.row_count

        # Unchanged refresh: facade snapshot ("no change") + the app's handling of it.
        costs = []
        for _ in range(20):
            t = time.perf_counter()
            app.refresh_now()
            while app._refreshing:
                await asyncio.sleep(0.0005)
            costs.append((time.perf_counter() - t) * 1000)
        out["unchanged_refresh_ms"] = statistics.median(costs)

        # Baseline: key presses with no refresh running (Pilot's own round trip included).
        base = []
        for i in range(min(presses, 60)):
            t = time.perf_counter()
            await pilot.press("down" if i % 40 < 20 else "up")
            base.append((time.perf_counter() - t) * 1000)
        base.sort()
        out["key_idle_p50_ms"] = base[len(base) // 2]
        out["key_idle_p95_ms"] = base[int(len(base) * 0.95)]

        # Key presses while changed-data refreshes run back to back.
        latencies = []
        refreshes = 0
        for i in range(presses):
            if not app._refreshing:
                clock.advance(2)
                app.refresh_now()
                refreshes += 1
            t = time.perf_counter()
            await pilot.press("down" if i % 40 < 20 else "up")
            latencies.append((time.perf_counter() - t) * 1000)
        latencies.sort()
        out["key_p50_ms"] = latencies[len(latencies) // 2]
        out["key_p95_ms"] = latencies[int(len(latencies) * 0.95)]
        out["refreshes_during_keys"] = refreshes
        out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    facade.close()
    return out


async def idle_cpu(jobs: int, seconds: float) -> float:
    """CPU seconds per minute, console idle on a real clock with the default 2 s interval."""
    cluster = SimulatedCluster(seed=1, n_jobs=jobs)
    settings = Settings(audit_log=Path(tempfile.mkdtemp()) / "audit.log")
    facade = open_facade(settings, as_user="root", cluster=cluster)
    app = build_app(facade, settings)
    async with app.run_test(size=(160, 50)) as pilot:
        await _wait_loaded(app, pilot)
        cpu0 = time.process_time()
        await asyncio.sleep(seconds)
        cpu = time.process_time() - cpu0
    facade.close()
    return cpu * 60 / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--presses", type=int, default=200)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU sampling")
    args = parser.parse_args()
    res = asyncio.run(measure(args.jobs, args.presses))
    res["idle_cpu_s_per_min"] = asyncio.run(idle_cpu(args.jobs, args.idle)) if args.idle else 0
    print(
        f"# {platform.node()} {platform.python_version()} "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(f"# load average {os.getloadavg()}, argv {sys.argv[1:]}")
    print("| measurement | value |\n|---|---|")
    for key, value in res.items():
        shown = f"{value:.1f}" if isinstance(value, float) else str(value)
        print(f"| {key} | {shown} |")


if __name__ == "__main__":
    main()
