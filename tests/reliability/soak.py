"""Soak machinery: run the real console headless for a long time and watch the process.

Shared by ``tests/reliability/test_soak.py`` (3 minutes by default, 30 with ``--run-slow``)
and ``bench/soak_bench.py`` (figures for bench/README.md).  The console is the app
``sckpt`` runs (``build_app``) under Textual's ``run_test``, refreshing on its own timer;
while it runs, a churn callback starts and ends jobs and steps in the source it shows.

What is watched comes from the kernel, not from the app: ``VmRSS`` and ``Threads`` in
``/proc/self/status`` and the entries of ``/proc/self/fd``, sampled after a garbage
collection so that the RSS is what the process really keeps.  The first ``warmup``
seconds are not judged: thread pools, caches and Python's allocator arenas fill up then.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import StepId
from sckpt.backend.simulator import SimulatedCluster
from sckpt.tui.app import SckptApp, build_app
from sckpt.tui.widgets.header import StatusHeader


@dataclass(frozen=True)
class Usage:
    """One look at the process: seconds since the soak began, RSS, threads, open files."""

    at: float
    rss_kb: int
    threads: int
    fds: int


def process_usage(at: float) -> Usage:
    """This process's RSS (kB), thread count and open descriptors, from /proc/self."""
    rss = threads = -1
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return Usage(at, rss, threads, sum(1 for _ in Path("/proc/self/fd").iterdir()))


@dataclass
class SoakReport:
    """What a soak saw; the judging helpers compare the start and the end of the window."""

    seconds: float
    warmup: float
    samples: list[Usage] = field(default_factory=list)
    refreshes: int = 0
    """Refreshes the app applied during the judged window."""
    steps_started: int = 0
    """Step ids that appeared in the console's data between two samples (judged window)."""
    steps_ended: int = 0
    """Step ids that disappeared from it."""
    jobs_shown: list[int] = field(default_factory=list)
    """Rows in the jobs table at each sample."""
    stale: list[str] = field(default_factory=list)
    """Samples at which the console showed STALE: when, and the header's reason."""

    def _window(self, first: bool, span: float) -> list[Usage]:
        judged = [s for s in self.samples if s.at >= self.warmup]
        if not judged:
            raise AssertionError("no sample after the warm-up")
        if first:
            chosen = [s for s in judged if s.at < judged[0].at + span]
        else:
            chosen = [s for s in judged if s.at > judged[-1].at - span]
        return chosen

    def span(self) -> float:
        """Seconds of the window used at each end: a sixth of the judged time, 10 s..60 s."""
        return max(10.0, min(60.0, (self.seconds - self.warmup) / 6))

    def rss_growth_mb(self) -> float:
        """Median RSS at the end minus median RSS right after the warm-up, in MB."""
        start = statistics.median(s.rss_kb for s in self._window(True, self.span()))
        end = statistics.median(s.rss_kb for s in self._window(False, self.span()))
        return (end - start) / 1024

    def thread_growth(self) -> int:
        """Most threads seen at the end minus most seen right after the warm-up."""
        return max(s.threads for s in self._window(False, self.span())) - max(
            s.threads for s in self._window(True, self.span())
        )

    def fd_growth(self) -> int:
        """Most open descriptors seen at the end minus most seen right after the warm-up."""
        return max(s.fds for s in self._window(False, self.span())) - max(
            s.fds for s in self._window(True, self.span())
        )

    def trend(self, every: float = 60.0) -> str:
        """A sample every ``every`` seconds, one line each: the curve behind the summary."""
        lines, due = [], 0.0
        for s in self.samples:
            if s.at >= due:
                lines.append(
                    f"{s.at:7.0f} s  RSS {s.rss_kb / 1024:6.1f} MB"
                    f"  threads {s.threads}  fds {s.fds}"
                )
                due = s.at + every
        return "\n".join(lines)

    def summary(self) -> str:
        """One paragraph for a failure message or the benchmark's output."""
        first, last = self.samples[0], self.samples[-1]
        parts = [
            f"{self.seconds:.0f} s soak ({self.warmup:.0f} s warm-up):",
            f"RSS {first.rss_kb / 1024:.1f} -> {last.rss_kb / 1024:.1f} MB,",
            f"growth after warm-up {self.rss_growth_mb():+.2f} MB;",
            f"threads {first.threads} -> {last.threads} (growth {self.thread_growth():+d});",
            f"fds {first.fds} -> {last.fds} (growth {self.fd_growth():+d});",
            f"{self.refreshes} refreshes;",
            f"steps started {self.steps_started}, ended {self.steps_ended};",
            f"rows {min(self.jobs_shown)}..{max(self.jobs_shown)};",
            f"stale at {len(self.stale)} of {len(self.samples)} samples {self.stale[:3]}",
        ]
        return " ".join(parts)


def _step_ids(app: SckptApp) -> set[StepId]:
    return {s.step.step_id for job in app.all_jobs() for s in job.steps}


async def soak(
    app: SckptApp,
    pilot: Any,
    *,
    seconds: float,
    warmup: float,
    churn: Callable[[], None] | None = None,
    churn_every: float = 0.2,
    sample_every: float = 5.0,
    keys_every: float = 15.0,
    log: Callable[[str], None] | None = None,
) -> SoakReport:
    """Let the running ``app`` refresh on its own for ``seconds``; return what was seen.

    ``churn`` is called every ``churn_every`` seconds (it changes the source: jobs and steps
    start and end).  Every ``keys_every`` seconds the cursor jumps to the last row and back
    (``end``/``home``), so the steps table follows jobs whose steps come and go.
    """
    report = SoakReport(seconds=seconds, warmup=warmup)
    con = app.console_screen()
    if con is None:
        raise AssertionError("the console screen is not up")
    began = time.monotonic()
    next_sample = next_keys = 0.0
    previous: set[StepId] | None = None
    refreshes_at_warmup: int | None = None
    keys = ("end", "home")
    presses = 0
    while True:
        now = time.monotonic() - began
        if now >= seconds:
            break
        if churn is not None:
            churn()
        if now >= next_keys:
            await pilot.press(keys[presses % 2])
            presses += 1
            next_keys = now + keys_every
        if now >= next_sample:
            ids = _step_ids(app)
            if previous is not None and now >= warmup:
                report.steps_started += len(ids - previous)
                report.steps_ended += len(previous - ids)
            previous = ids
            if now >= warmup and refreshes_at_warmup is None:
                refreshes_at_warmup = app.pipeline.refresh_count
            # Sample between refreshes: a refresh's thread may be short-lived (it would
            # count as a thread only by the luck of the moment), so wait until none runs
            # and its thread has ended (on a loaded machine a refresh takes seconds).
            for _ in range(250):
                if not app.pipeline.running and not any(
                    t.name == "sckpt-refresh" for t in threading.enumerate()
                ):
                    break
                await asyncio.sleep(0.02)
            gc.collect()
            sample = process_usage(now)
            report.samples.append(sample)
            report.jobs_shown.append(con.jobs_table.row_count)
            if app.pipeline.stale:
                header = con.query_one(StatusHeader)
                report.stale.append(f"{now:.0f} s: {header.stale_error}")
            if log is not None:
                log(
                    f"{now:7.1f} s rss {sample.rss_kb / 1024:7.1f} MB threads {sample.threads}"
                    f" fds {sample.fds} rows {con.jobs_table.row_count}"
                    f" refreshes {app.pipeline.refresh_count}"
                )
            next_sample = now + sample_every
        await asyncio.sleep(churn_every)
    report.refreshes = app.pipeline.refresh_count - (refreshes_at_warmup or 0)
    return report


class SimChurn:
    """Submit running jobs at ``per_second`` (over 0.2 s calls) with short lives.

    Each job gets batch, extern and 1-4 numbered steps, and ends by itself 5-40 s later;
    with the cluster's ``min_job_age`` of 30 s the number of jobs stays near its start.
    """

    def __init__(self, cluster: SimulatedCluster, seed: int = 5, per_second: float = 5.0):
        self.cluster = cluster
        self.rng = random.Random(seed)
        self.per_call = per_second / 5
        self.owed = 0.0
        self.submitted: list[int] = []

    def __call__(self) -> None:
        self.owed += self.per_call
        while self.owed >= 1:
            self.owed -= 1
            job = self.cluster.control.submit(
                self.rng.choice(("alice", "bob", "carol")),
                name="soak",
                n_steps=self.rng.randint(1, 4),
                duration=self.rng.randint(5, 40),
            )
            self.submitted.append(job.job_id)


async def wait_until(predicate: Callable[[], object], pilot: Any, timeout: float) -> None:
    """Let the app run until ``predicate()`` is true; fail after ``timeout`` seconds."""
    for _ in range(int(timeout / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"not true after {timeout} s: {predicate}")


async def simulated_soak(
    audit_dir: Path,
    *,
    seconds: float,
    warmup: float,
    jobs: int = 10_000,
    interval: float = 0.2,
    log: Callable[[str], None] | None = None,
) -> SoakReport:
    """The console over a simulated cluster of ``jobs`` jobs with churn, on the real clock.

    At the end it checks the console still follows the cluster: after two more refreshes
    every active job of the cluster is a row, including the last one the churn submitted.
    """
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    cluster = SimulatedCluster(seed=3, n_jobs=jobs, min_job_age=30)
    settings = Settings(audit_log=audit_dir / "audit.log", refresh_interval=interval)
    facade = open_facade(settings, as_user="root", cluster=cluster)
    app = build_app(facade, settings)
    churn = SimChurn(cluster)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_until(lambda: app.pipeline.loaded, pilot, timeout=120)
            report = await soak(app, pilot, seconds=seconds, warmup=warmup, churn=churn, log=log)
            count = app.pipeline.refresh_count
            await wait_until(lambda: app.pipeline.refresh_count >= count + 2, pilot, timeout=60)
            con = app.console_screen()
            assert con is not None
            rows = set(con.jobs_table.row_keys_in_order)
            active = {
                str(v.job.job_id) for v in facade.snapshot().jobs if not v.job.state.is_finished
            }
            missing = active - rows
            assert not missing, f"{len(missing)} active jobs not shown, e.g. {sorted(missing)[:5]}"
            assert str(churn.submitted[-1]) in rows
    finally:
        facade.close()
    return report


class RealChurn:
    """Submit a short job (one ``srun`` step of 2 s) every ``every`` seconds, without waiting.

    ``argv`` is the ``sbatch`` command line (as the job owner); the processes are reaped
    as they finish, so the churn itself leaves no zombie or descriptor behind.
    """

    def __init__(self, argv: list[str], env: dict[str, str], every: float = 10.0):
        self.argv = argv
        self.env = env
        self.every = every
        self.last = 0.0
        self.running: list[subprocess.Popen[bytes]] = []
        self.submitted = 0

    def __call__(self) -> None:
        self.running = [p for p in self.running if p.poll() is None]
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self.running.append(
                subprocess.Popen(
                    self.argv,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    cwd="/tmp",
                )
            )
            self.submitted += 1

    def close(self) -> None:
        for process in self.running:
            process.wait(timeout=60)
        self.running = []
