"""Runs the console headless (Textual's Pilot) with ``-M all`` on the accounting setup.

Why a separate process: libslurm reads one slurm.conf per process (``slurm_init``), and the
test process has usually loaded it for the shared cluster already, whose slurm.conf names no
slurmdbd; a stopped controller also blocks the binding's libslurm thread for up to
MessageTimeout, which must not stall the other tests.  ``tests/test_clusters.py`` starts this
module as ``python -m tests.clusters_driver SCENARIO NAME WIDTH HEIGHT [PID]`` with
``SLURM_CONF`` pointing at cluster sckpt-a's slurm.conf; it prints one ``REPORT {json}`` line.

Scenarios (the console's filter shows only the jobs named NAME):

``rows``  wait until rows of both clusters are shown; report every row's cells and the header.
``stop``  the same, then SIGSTOP the slurmctld PID (cluster sckpt-b's), wait until the header
          names sckpt-b stale while the data as a whole is fresh, report the rows then, SIGCONT
          it (also on any failure) and wait until no row is stale any more.

Every wait is bounded: one that runs out records ``None`` and the report still comes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.tui.app import SckptApp, build_app
from textual.pilot import Pilot

from tests.app_screen import screen_text


def _rows(app: SckptApp) -> dict[str, dict[str, str]]:
    console = app.console_screen()
    if console is None:
        return {}
    table = console.jobs_table
    out = {}
    for key in table.row_keys_in_order:
        cells = table.cells_of(key)
        if cells is not None:
            out[key] = {name: text.plain for name, text in cells.items()}
    return out


async def _until(pilot: Pilot[Any], check: Callable[[], bool], timeout: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        await pilot.pause(0.2)
    return None


def _both(app: SckptApp) -> bool:
    clusters = {row.get("cluster", "").rstrip("!") for row in _rows(app).values()}
    return {"sckpt-a", "sckpt-b"} <= clusters


async def _run(scenario: str, name: str, size: tuple[int, int], pid: int) -> dict[str, Any]:
    audit = Path(tempfile.mkdtemp(prefix="sckpt-clusters-driver-")) / "audit.log"
    settings = Settings(refresh_interval=1.0, audit_log=audit)
    facade = open_facade(settings, clusters="all")
    app = build_app(facade, settings)
    report: dict[str, Any] = {}
    stopped = False
    try:
        async with app.run_test(size=size) as pilot:
            await pilot.press("slash")
            for char in f"name:{name}":
                await pilot.press(char)
            await pilot.press("enter")
            report["loaded_after"] = await _until(pilot, lambda: _both(app), 60)
            report["rows"] = _rows(app)
            report["screen"] = screen_text(app)
            if scenario == "stop":
                os.kill(pid, signal.SIGSTOP)
                stopped = True

                def b_stale() -> bool:
                    header = screen_text(app).splitlines()[0]
                    rows = _rows(app).values()
                    return (
                        "sckpt-b STALE" in header
                        and not app.freshness.stale
                        and any(r["cluster"] == "sckpt-b!" for r in rows)
                    )

                report["stale_after"] = await _until(pilot, b_stale, 90)
                report["stale_rows"] = _rows(app)
                report["stale_screen"] = screen_text(app)
                os.kill(pid, signal.SIGCONT)
                stopped = False

                def recovered() -> bool:
                    rows = _rows(app).values()
                    header = screen_text(app).splitlines()[0]
                    return (
                        _both(app)
                        and "STALE" not in header
                        and not any(r["cluster"].endswith("!") for r in rows)
                    )

                report["recovered_after"] = await _until(pilot, recovered, 180)
                report["recovered_rows"] = _rows(app)
            await pilot.press("q")
    finally:
        if stopped:
            os.kill(pid, signal.SIGCONT)
        facade.close()
    return report


def main(argv: list[str]) -> int:
    scenario, name, width, height = argv[1], argv[2], int(argv[3]), int(argv[4])
    pid = int(argv[5]) if len(argv) > 5 else 0
    report = asyncio.run(_run(scenario, name, (width, height), pid))
    print("REPORT " + json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
