"""Console benchmark: first screen, key latency during refresh, idle refresh cost, RSS, idle CPU.

Runs the real app (``build_app``) with Textual's Pilot over the simulated cluster, on a
terminal that keeps nothing (``TerminalSink``: each screen update is rendered to terminal
bytes and timed), except the idle CPU, which runs headless as it always has.
Figures only (printed as a Markdown table for bench/README.md); nothing is asserted.

    .venv/bin/python bench/console_bench.py --jobs 10000 --idle 30

* first screen: from app start to the first snapshot shown in both tables, every row added
  and the app idle; "first rows painted": to the first screen update written with job rows;
* key presses, two figures each.  "Pilot" is ``Pilot.press``'s round trip, which includes
  Pilot's own waits (two ``wait_for_idle``: at least 20 ms each, and until the process's CPU
  time stops advancing, so a refresh running in the same process, the simulated cluster's
  included, is waited out).  "True" is what an operator sees: from the key event entering
  the app's queue (``Driver.send_message``, as a terminal driver does) to the first
  terminal write after the table handled it (the update rendered to terminal bytes);
* key presses while refreshes with changed data run back to back (the simulated clock
  advances 2 s each): with Pilot (a refresh started before each press), and as a stream of
  presses at random 0-40 ms gaps that land at any point of a refresh (true latency only);
* unchanged refresh: one refresh whose snapshot says "no change" (facade + app);
* RSS: the process's peak resident memory with the cluster and the console loaded;
* idle CPU: process CPU seconds per minute with the default 2 s interval on a real clock.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from report import print_report  # bench/report.py: run as python bench/console_bench.py
from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.simulator import ManualClock, SimulatedCluster
from sckpt.tui.app import SckptApp, build_app
from textual import events
from textual.app import App
from textual.drivers.headless_driver import HeadlessDriver
from textual.pilot import Pilot


class TerminalSink(HeadlessDriver):
    """A terminal that keeps nothing, for timing what a terminal would be sent.

    The app treats it as a real terminal (``is_headless`` False), so every screen update is
    rendered to the bytes a terminal would get and written here, where each write is
    counted and timed (a headless driver has the app skip that rendering).  Set as the
    app's ``driver_class`` and run with ``run_async``, whose ``auto_pilot`` drives it.
    """

    current: ClassVar[TerminalSink | None] = None
    """The sink of the app running now (the app makes its driver itself)."""

    def __init__(
        self,
        app: App[Any],
        *,
        debug: bool = False,
        mouse: bool = True,
        size: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self.writes = 0
        self.listeners: list[Callable[[], None]] = []
        TerminalSink.current = self

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        self.writes += 1
        for listener in self.listeners:
            listener()


class LatencyProbe:
    """Key-to-screen latency, measured inside the app rather than around Pilot.

    A press is stamped when its key event is posted, marked handled when the jobs table's
    cursor action ran, and done at the first terminal write after that (the write carries
    the moved cursor: the action refreshed those rows synchronously).
    """

    def __init__(self, sink: TerminalSink, table: Any) -> None:
        self.sink = sink
        self.sent = 0.0
        self.handled = False
        self.done: asyncio.Event = asyncio.Event()
        self.latencies: list[float] = []

        def written() -> None:
            if self.handled and not self.done.is_set():
                self.latencies.append((time.perf_counter() - self.sent) * 1000)
                self.done.set()

        sink.listeners.append(written)
        for name in ("action_cursor_down", "action_cursor_up"):
            action = getattr(table, name)

            def handled(action: Any = action) -> None:
                action()
                self.handled = True

            setattr(table, name, handled)

    def start(self) -> None:
        """A press is about to be posted."""
        self.sent = time.perf_counter()
        self.handled = False
        self.done.clear()

    async def press(self, key: str) -> float:
        """Post ``key`` as a terminal driver does (``Driver.send_message``) and wait for its
        screen update."""
        self.start()
        self.sink.send_message(events.Key(key, None))
        await asyncio.wait_for(self.done.wait(), timeout=60)
        return self.latencies[-1]


async def _run_in_sink(
    app: SckptApp, size: tuple[int, int], body: Callable[[Pilot[None]], Awaitable[None]]
) -> None:
    """Run ``app`` on a ``TerminalSink`` of ``size`` while ``body`` drives it; then quit."""
    failure: list[BaseException] = []

    async def drive(pilot: Pilot[None]) -> None:
        try:
            await body(pilot)
        except BaseException as exc:  # re-raised below, once the app has stopped
            failure.append(exc)
        finally:
            app.exit()

    app.driver_class = TerminalSink
    await app.run_async(size=size, auto_pilot=drive)
    if failure:
        raise failure[0]


def _percentiles(values: list[float], prefix: str, out: dict[str, Any]) -> None:
    ordered = sorted(values)
    out[f"{prefix}_p50_ms"] = ordered[len(ordered) // 2]
    out[f"{prefix}_p95_ms"] = ordered[int(len(ordered) * 0.95)]
    out[f"{prefix}_max_ms"] = ordered[-1]


async def _wait_loaded(app: SckptApp, pilot: Any) -> None:
    while not app.pipeline.loaded:
        await pilot.pause(0.005)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def measure(jobs: int, presses: int, numbered: int | None = None) -> dict[str, Any]:
    clock = ManualClock()
    t0 = time.perf_counter()
    cluster = SimulatedCluster(seed=1, n_jobs=jobs, clock=clock, numbered_steps=numbered)
    gen = time.perf_counter() - t0
    # The listing the console reads first (the cluster keeps it anyway), not snapshot(): the
    # tests' oracle would keep its views of every step (~29 MB at 100,000 jobs) for the run.
    steps = len(cluster.listing().steps)
    audit = Path(tempfile.mkdtemp()) / "audit.log"
    settings = Settings(audit_log=audit, refresh_interval=3600)
    facade = open_facade(settings, as_user="root", cluster=cluster)
    app = build_app(facade, settings, clock=clock)
    out: dict[str, Any] = {"jobs": jobs, "steps": steps, "generation_s": gen}
    first_rows: list[float] = []
    start = time.perf_counter()

    async def body(pilot: Pilot[None]) -> None:
        sink = TerminalSink.current
        assert sink is not None

        def first_rows_written() -> None:
            con = app.console_screen()
            if not first_rows and con is not None and con.jobs_table.row_count > 0:
                first_rows.append(time.perf_counter())

        sink.listeners.append(first_rows_written)
        await _wait_loaded(app, pilot)
        out["first_screen_ms"] = (time.perf_counter() - start) * 1000
        out["first_rows_painted_ms"] = (first_rows[0] - start) * 1000 if first_rows else -1.0
        con = app.console_screen()
        assert con is not None
        out["rows"] = con.jobs_table.row_count
        probe = LatencyProbe(sink, con.jobs_table)

        # Unchanged refresh: facade snapshot ("no change") + the app's handling of it.
        costs = []
        for _ in range(20):
            t = time.perf_counter()
            app.refresh_now()
            while app.pipeline.running:
                await asyncio.sleep(0.0005)
            costs.append((time.perf_counter() - t) * 1000)
        out["unchanged_refresh_ms"] = statistics.median(costs)

        # Baseline: key presses with no refresh running (Pilot's round trip and the true one).
        base = []
        probe.latencies.clear()
        for i in range(min(presses, 60)):
            t = time.perf_counter()
            probe.start()
            await pilot.press("down" if i % 40 < 20 else "up")
            base.append((time.perf_counter() - t) * 1000)
        _percentiles(base, "key_idle_pilot", out)
        _percentiles(probe.latencies, "key_idle_true", out)
        probe.latencies.clear()
        for i in range(min(presses, 60)):
            await probe.press("down" if i % 40 < 20 else "up")
            await asyncio.sleep(0.02)
        _percentiles(probe.latencies, "key_idle_true_no_pilot", out)

        # Key presses while changed-data refreshes run back to back, Pilot-driven: a refresh
        # is started before each press, and Pilot waits until it is over.
        latencies = []
        refreshes = 0
        probe.latencies.clear()
        for i in range(presses):
            if not app.pipeline.running:
                clock.advance(2)
                app.refresh_now()
                refreshes += 1
            t = time.perf_counter()
            probe.start()
            await pilot.press("down" if i % 40 < 20 else "up")
            latencies.append((time.perf_counter() - t) * 1000)
        _percentiles(latencies, "key_refresh_pilot", out)
        _percentiles(probe.latencies, "key_refresh_true", out)
        out["refreshes_during_keys"] = refreshes

        # The same load, keys as a stream at random gaps: presses land at every point of a
        # refresh (the snapshot on its thread, the apply on the UI thread).
        rng = random.Random(1)
        stop = False

        async def refresh_loop() -> int:
            count = 0
            while not stop:
                if not app.pipeline.running:
                    clock.advance(2)
                    app.refresh_now()
                    count += 1
                await asyncio.sleep(0.001)
            return count

        loop_task = asyncio.create_task(refresh_loop())
        probe.latencies.clear()
        for i in range(presses):
            await probe.press("down" if i % 40 < 20 else "up")
            await asyncio.sleep(rng.uniform(0, 0.04))
        stop = True
        out["refreshes_during_stream"] = await loop_task
        _percentiles(probe.latencies, "key_stream_true", out)
        while app.pipeline.running:
            await asyncio.sleep(0.01)
        out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    await _run_in_sink(app, (160, 50), body)
    facade.close()
    return out


async def idle_cpu(jobs: int, seconds: float, numbered: int | None = None) -> float:
    """CPU seconds per minute, console idle on a real clock with the default 2 s interval."""
    cluster = SimulatedCluster(seed=1, n_jobs=jobs, numbered_steps=numbered)
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
    parser.add_argument(
        "--numbered-steps",
        type=int,
        default=None,
        help="numbered steps per running batch job (default 1-5, drawn per job)",
    )
    parser.add_argument("--presses", type=int, default=200)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU sampling")
    args = parser.parse_args()
    res = asyncio.run(measure(args.jobs, args.presses, args.numbered_steps))
    idle = asyncio.run(idle_cpu(args.jobs, args.idle, args.numbered_steps)) if args.idle else 0
    res["idle_cpu_s_per_min"] = idle
    print_report(res)


if __name__ == "__main__":
    main()
