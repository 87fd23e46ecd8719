"""The console while slurmctld is killed for 30 s, or paused with SIGSTOP, on a real cluster.

The console runs headless under Textual's Pilot in a child process
(``tests/reliability/console_driver.py``: libslurm takes one slurm.conf per process, and this
one may already talk to the shared cluster), against the private cluster of this module,
whose controller the driver kills or pauses.  Two jobs of sckpt-alice run on it so the console
has rows to keep and to move between.  The refresh interval is 1 s.

What "within two refresh intervals" means here: the time from the fault (or from the restart
or SIGCONT) until the rendered screen shows the change, sampled every 50 ms.  The console
marks a refresh overdue after half an interval, so on an idle machine the banner shows after
1 to 1.5 intervals; the assertion allows two intervals plus ``LOAD_SLACK`` for late timers
on a loaded 2-core machine.  Key-press latency is the issue's explicit 100 ms (explained in
``console_driver.key_latencies``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, PrivateCluster
from tests.helpers import wait_for

from .controller_support import wait_state_saved

pytestmark = pytest.mark.slurm

INTERVAL = 1.0
LOAD_SLACK = 1.0
"""Seconds allowed beyond two intervals: the driver's 50 ms sampling, and timers that fire
late while other tests load both cores."""
KEY_LIMIT_MS = 100.0


@pytest.fixture(scope="module")
def jobs(private_cluster: PrivateCluster) -> Iterator[list[int]]:
    """Two running jobs of sckpt-alice on the private cluster."""
    name = f"outage-{uuid.uuid4().hex[:6]}"
    ids = []
    for _ in range(2):
        out = private_cluster.run(
            "sbatch", "--parsable", "-J", name, "-o", "/dev/null", "--wrap", "sleep 1200",
            user="sckpt-alice",
        )  # fmt: skip
        ids.append(int(out.stdout.strip().split(";")[0]))
    try:
        listed = ",".join(map(str, ids))
        wait_for(
            lambda: (
                private_cluster.run("squeue", "-h", "-j", listed, "-o", "%t").stdout.split()
                == ["R", "R"]
            ),
            timeout=60,
        )
        # Saved after they started, so the killed controller still knows them on restart.
        wait_state_saved(private_cluster)
        yield ids
    finally:
        private_cluster.run("scancel", *map(str, ids), check=False)


def drive(cluster: PrivateCluster, scenario: str, jobs: list[int], tmp: Path) -> dict[str, Any]:
    """Run the driver for one scenario; its report (after checking it ended cleanly).

    ``exited_at`` (wall clock) is added: when the driver's process had ended.  A paused
    controller is always resumed afterwards, whatever the scenario left behind.
    """
    fields = {
        "conf": str(cluster.conf),
        "directory": str(cluster.directory),
        "node": cluster.node,
        "ctld_port": cluster.ctld_port,
        "slurmd_port": cluster.slurmd_port,
    }
    env = {
        **os.environ,
        "SLURM_CONF": str(cluster.conf),
        "SCKPT_CONFIG": str(tmp / "none.toml"),
        "SCKPT_DRIVER_AUDIT": str(tmp / "audit.log"),
        "TEXTUAL_ANIMATIONS": "none",
    }
    (tmp / "none.toml").write_text("")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tests.reliability.console_driver", scenario,
             json.dumps(fields), ",".join(map(str, jobs)), str(INTERVAL)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=400,
        )  # fmt: skip
        exited_at = time.time()
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(cluster.pid("slurmctld"), signal.SIGCONT)
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert lines, (proc.stdout[-2000:], proc.stderr[-2000:])
    report: dict[str, Any] = json.loads(lines[-1][len("REPORT ") :])
    report["exited_at"] = exited_at
    return report


def check_outage_and_recovery(report: dict[str, Any], jobs: list[int]) -> None:
    """What both faults must show: banner, data kept, recovery, nothing stuck or crashed."""
    assert report["loaded"] and report["cluster_in_header"], report
    within = 2 * INTERVAL + LOAD_SLACK
    # Outage banner within two intervals, while the jobs stay on screen.
    assert report["banner_after"] is not None, report
    assert report["banner_after"] <= within, report
    assert "STALE since" in report["header_at_banner"]
    assert "not answering" in report["header_at_banner"]
    assert report["rows_kept"] == jobs
    assert report["stale_throughout"], report
    # Recovery by itself, within two intervals of the controller answering again.
    assert report["recovered_after"] is not None, report
    assert report["recovered_after"] <= within, report
    assert report["still_fresh"] and report["rows_after"] == jobs, report
    assert "STALE" not in report["header_after"]
    # Never two refreshes at once (a second one would only queue on the libslurm thread),
    # nothing left running afterwards, no internal error, and q still quits with 0.
    assert report["max_refresh_workers"] == 1, report
    assert report["max_workers"] == 1, report
    assert report["running_after"] == [], report
    assert report["internal_errors"] == [], report
    assert report["return_code"] == 0


def test_controller_killed_for_30_s(
    private_cluster: PrivateCluster, jobs: list[int], tmp_path: Path
) -> None:
    report = drive(private_cluster, "kill", jobs, tmp_path)
    assert report["restart_error"] == "", report
    assert report["down_for"] >= 30
    check_outage_and_recovery(report, jobs)
    # Slurm's own error arrived once its connection retries gave up (MessageTimeout).
    assert any("connect failure" in e for e in report["errors_seen"]), report
    # The restarted controller kept its state: the same jobs, still running.
    out = private_cluster.run("squeue", "-h", "-j", ",".join(map(str, jobs)), "-o", "%i %t")
    assert sorted(out.stdout.split("\n")[:-1]) == sorted(f"{j} R" for j in jobs)


def test_controller_paused_ui_stays_responsive(
    private_cluster: PrivateCluster, jobs: list[int], tmp_path: Path
) -> None:
    report = drive(private_cluster, "pause", jobs, tmp_path)
    check_outage_and_recovery(report, jobs)
    # The keys were pressed while a refresh hung on the paused controller.
    assert report["refresh_overdue_at_keys"], report
    paused = report["latency_paused_ms"]
    assert len(paused) == 8 and all(math.isfinite(ms) for ms in paused), report
    # Under 100 ms; one press of eight may miss (a garbage collection or another test's
    # burst on the loaded machine), but never by much.
    assert sum(ms < KEY_LIMIT_MS for ms in paused) >= 7, report
    assert max(paused) < 5 * KEY_LIMIT_MS, report
    # The hung refresh timed out (libslurm's MessageTimeout, 20 s here) and was retried.
    assert report["timed_out_and_retried_after"] is not None, report
    assert report["failures_while_paused"] >= 1
    assert any("timed out" in e for e in report["errors_seen"]), report
    assert report["refresh_attempts_during_fault"] >= 2, report
    # SIGCONT: the controller answers again, and still knows the jobs.
    out = private_cluster.run("squeue", "-h", "-j", ",".join(map(str, jobs)), "-o", "%i %t")
    assert sorted(out.stdout.split("\n")[:-1]) == sorted(f"{j} R" for j in jobs)


def test_console_started_while_the_controller_is_paused(
    private_cluster: PrivateCluster, jobs: list[int], tmp_path: Path
) -> None:
    # Nothing known yet and the first refresh hangs: the screens must not ask slurmctld for
    # the header's facts on the UI thread (they did: the console froze until MessageTimeout).
    report = drive(private_cluster, "start-paused", jobs, tmp_path)
    assert report["painted_after"] is not None and report["painted_after"] <= 10, report
    assert report["banner_after"] is not None, report
    assert report["banner_after"] <= 2 * INTERVAL + LOAD_SLACK, report
    assert "not answering" in report["header_at_banner"], report
    # nothing loaded yet: nothing to call stale, and no "STALE since" the current time
    assert "NO DATA YET" in report["header_at_banner"], report
    assert "STALE" not in report["header_at_banner"], report
    assert report["refresh_overdue_at_keys"], report
    latencies = report["latency_paused_ms"]
    assert len(latencies) == 8 and all(math.isfinite(ms) for ms in latencies), report
    assert sum(ms < KEY_LIMIT_MS for ms in latencies) >= 7, report
    assert max(latencies) < 5 * KEY_LIMIT_MS, report
    # SIGCONT: the hung refresh is answered, rows and the cluster's name arrive.
    assert report["recovered_after"] is not None, report
    assert report["recovered_after"] <= 2 * INTERVAL + LOAD_SLACK, report
    assert report["cluster_in_header"] and report["still_fresh"], report
    assert report["max_refresh_workers"] == 1 and report["running_after"] == [], report
    assert report["internal_errors"] == [] and report["return_code"] == 0, report


def test_quit_while_a_refresh_hangs(
    private_cluster: PrivateCluster, jobs: list[int], tmp_path: Path
) -> None:
    # q during an outage ends the process at once: nothing waits out the hung libslurm call
    # (it would return only after MessageTimeout, 20 s here; the test resumes the
    # controller only after the process has ended).
    report = drive(private_cluster, "quit-paused", jobs, tmp_path)
    assert report["loaded"] and report["banner_after"] is not None, report
    assert report["refreshing_at_quit"], report
    assert report["return_code"] == 0
    assert report["exited_at"] - report["quit_at"] < 8, report
