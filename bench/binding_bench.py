"""Benchmark the libslurm binding against ``squeue`` on a big cluster.

Measures, as the median of several runs in one process:

* a full snapshot through the binding (``load_jobs(0)`` + ``get_steps(0)``, converted to
  sckpt's dataclasses) against plain-text ``squeue`` (jobs) and ``squeue`` + ``squeue -s``
  (jobs and steps) for the same cluster;
* an unchanged refresh: both calls with the previous ``last_update`` (two RPCs answering
  SLURM_NO_CHANGE_IN_DATA), and ``load_jobs`` alone (one RPC: ``LiveEngine.refresh`` asks
  for steps only when the jobs changed);
* the conversion cost per 1,000 jobs (flat records -> ``Job`` dataclasses, no RPC), for
  jobs built afresh and for jobs unchanged since the previous response (reused).

Run it against a dedicated cluster (``scripts/slurm-cluster`` with its own directory and
ports, see bench/README.md) holding about 10,000 jobs and 300 running steps::

    SLURM_CONF=/tmp/sckpt-cluster-binding/slurm.conf .venv/bin/python bench/binding_bench.py

Figures are printed (and as JSON with ``--json``); nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from sckpt.backend.libslurm import decode, get_binding


def _median_ms(fn: Callable[[], object], runs: int) -> tuple[float, list[float]]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), samples


def _squeue(*args: str) -> None:
    subprocess.run(["squeue", *args], check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    b = get_binding()
    jobs = b.load_jobs(0)
    steps = b.get_steps(0)
    n_jobs = len(jobs.jobs)
    running_steps = sum(1 for s in steps.steps if s.state == "RUNNING")

    def snapshot() -> None:
        j = b.load_jobs(0)
        s = b.get_steps(0)
        assert j.changed and s.changed

    # Interleaved, so load from other users of the machine hits both sides alike.
    snap_samples, squeue_samples, squeue_steps_samples = [], [], []
    for _ in range(args.runs):
        snap_samples.append(_median_ms(snapshot, 1)[0])
        squeue_samples.append(_median_ms(lambda: _squeue(), 1)[0])
        squeue_steps_samples.append(_median_ms(lambda: _squeue("-s"), 1)[0])
    snap_ms = statistics.median(snap_samples)
    squeue_ms = statistics.median(squeue_samples)
    squeue_steps_ms = statistics.median(squeue_steps_samples)

    last_jobs, last_steps = b.load_jobs(0).last_update, b.get_steps(0).last_update

    def unchanged() -> None:
        j = b.load_jobs(last_jobs)
        s = b.get_steps(last_steps)
        if j.changed or s.changed:
            raise RuntimeError("the cluster changed during the unchanged-refresh benchmark")

    unchanged_ms, _ = _median_ms(unchanged, max(args.runs, 21))

    def unchanged_snapshot() -> None:
        j = b.load_jobs(last_jobs)  # LiveEngine.refresh asks for steps only after a change
        if j.changed:
            raise RuntimeError("the cluster changed during the unchanged-refresh benchmark")

    unchanged_snapshot_ms, _ = _median_ms(unchanged_snapshot, max(args.runs, 21))

    # Conversion only: load once on the binding's thread, then time record -> Job.
    rt = b.runtime

    def conversion() -> tuple[float, float]:
        ffi, lib = rt.ffi, rt.lib
        handle = ffi.new("void **")
        count = ffi.new("uint32_t *")
        last = ffi.new("int64_t *")
        err = ffi.new("int *")
        rc = lib.sckpt_load_jobs(0, handle, count, last, err)
        try:
            if rc != 0:
                raise RuntimeError(f"slurm_load_jobs failed: {rc}/{err[0]}")
            n = count[0]
            cold, warm = [], []
            for _ in range(args.runs):
                jobs_from = decode.JobDecoder(rt)  # every job built afresh
                start = time.perf_counter()
                jobs_from(handle[0], n)
                cold.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()  # same records again: all reused
                jobs_from(handle[0], n)
                warm.append((time.perf_counter() - start) * 1000)
            return (
                statistics.median(cold) * 1000 / n,
                statistics.median(warm) * 1000 / n,
            )
        finally:
            lib.sckpt_jobs_free(handle[0])

    per_1000_ms, per_1000_warm_ms = rt.run(conversion)

    result: dict[str, Any] = {
        "machine": f"{platform.node()} {platform.machine()} {platform.processor() or ''}".strip(),
        "python": sys.version.split()[0],
        "slurm": b.header_version,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "runs": args.runs,
        "jobs": n_jobs,
        "steps": len(steps.steps),
        "running_steps": running_steps,
        "snapshot_binding_ms": round(snap_ms, 1),
        "snapshot_binding_samples_ms": [round(x, 1) for x in snap_samples],
        "squeue_ms": round(squeue_ms, 1),
        "squeue_plus_steps_ms": round(squeue_ms + squeue_steps_ms, 1),
        "unchanged_refresh_ms": round(unchanged_ms, 3),
        "unchanged_snapshot_ms": round(unchanged_snapshot_ms, 3),
        "conversion_per_1000_jobs_ms": round(per_1000_ms, 2),
        "conversion_per_1000_unchanged_jobs_ms": round(per_1000_warm_ms, 2),
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for key, value in result.items():
            print(f"{key:32} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
