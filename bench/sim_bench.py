"""Simulated cluster at scale: generation and snapshot times for 100,000 jobs.

Run: ``.venv/bin/python bench/sim_bench.py [--jobs 100000] [--repeat 3]``.
Prints one Markdown table row per measurement (paste into bench/README.md with the
machine and date).  Nothing here is asserted: the figures are for people.

Measured:
* generation: ``SimulatedCluster(seed, n_jobs, ManualClock())`` (jobs, steps, views), wall
  clock and CPU time of this process (the CPU time is what a busy shared machine cannot
  inflate);
* first snapshot: the first ``snapshot()`` after generation;
* unchanged snapshot: nothing happened since the last one (``changed=False``);
* snapshot after 60 s and 600 s of simulated time, then 2 s later (one console refresh):
  jobs started/ended meanwhile, only their views are rebuilt;
* facade snapshot: the same through ``open_facade(cluster=...)``: the demo's engine (the
  native engine over the simulated controller) lists jobs and steps and asks able/error of
  at most 200 steps per refresh; then one refresh later, and once more with nothing due;
* one action: ``facade.disable()`` on a running step, audit log included.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import JobState
from sckpt.backend.simulator import ManualClock, SimulatedCluster


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def run(n_jobs: int) -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    clock = ManualClock()
    cpu = time.process_time()
    out["generation"], cluster = timed(lambda: SimulatedCluster(seed=1, n_jobs=n_jobs, clock=clock))
    out["generation, CPU time"] = time.process_time() - cpu
    assert isinstance(cluster, SimulatedCluster)
    out["jobs"], out["steps"] = cluster.size
    out["first snapshot"], _ = timed(cluster.snapshot)
    out["unchanged snapshot"], _ = timed(cluster.snapshot)
    clock.advance(60)
    out["snapshot after 60 s"], _ = timed(cluster.snapshot)
    clock.advance(600)
    out["snapshot after 600 s"], _ = timed(cluster.snapshot)
    clock.advance(2)
    out["snapshot 2 s later (one refresh)"], _ = timed(cluster.snapshot)
    with tempfile.TemporaryDirectory() as tmp:
        facade = open_facade(
            Settings(audit_log=Path(tmp) / "audit.log"), cluster=cluster, as_user="root"
        )
        clock.advance(5)
        out["facade snapshot (5 s later)"], snap = timed(facade.snapshot)
        clock.advance(2)
        out["facade snapshot 2 s later (one refresh)"], _ = timed(facade.snapshot)
        out["facade snapshot, nothing due"], _ = timed(facade.snapshot)
        job = next(v for v in snap.jobs if v.job.state is JobState.RUNNING and v.steps)  # type: ignore[attr-defined]
        step = job.steps[-1].step.step_id
        out["facade disable (audited)"], _ = timed(lambda: facade.disable(step))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [run(args.jobs) for _ in range(args.repeat)]
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(f"# {runs[0]['jobs']} jobs, {runs[0]['steps']} steps, {args.repeat} runs (median, max)")
    print("| measurement | median | max |")
    print("|---|---|---|")
    for key in runs[0]:
        if key in ("jobs", "steps"):
            continue
        values = [float(r[key]) for r in runs]
        print(
            f"| {key} | {statistics.median(values) * 1000:.1f} ms | {max(values) * 1000:.1f} ms |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
