"""What the README promises of the demo: job output files and a checkpoint history.

``o`` on every demo job said "not written yet" and ``sckpt --demo history`` showed no
checkpoint event for any job.  The demo's cluster now writes its batch jobs' output into a
directory of its own (``simulator/output.py``) and keeps an hourly checkpoint history of
its running jobs (``SimulatedCluster._demo_hourly``); the demo's engine hands that history
to ``history`` (``engines/simulated.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import StepId
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for
from sckpt.tui.app import build_app
from sckpt.tui.screens.output import OutputScreen

from .conftest import screen_text, settle

SCKPT = Path(sys.executable).with_name("sckpt")


@pytest.fixture
def outdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sckpt-demo-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_o_on_a_demo_job_shows_its_output_and_follows_it(
    outdir: Path, tmp_path: Path
) -> None:
    cluster = SimulatedCluster(
        seed=42,
        n_jobs=48,
        clock=ManualClock(),
        users=demo_users_for("alice"),
        arrivals=False,
        output_dir=str(outdir),
    )
    settings = Settings(refresh_interval=3600.0, audit_log=tmp_path / "audit.log")
    facade = open_facade(settings, as_user="alice", cluster=cluster)
    app = build_app(facade, settings, clock=cluster.clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        console = app.console_screen()
        assert console is not None
        console.select_target(StepId(184201))
        console.jobs_table.focus()
        await pilot.press("o")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, OutputScreen)
        text = screen_text(app)
        assert "not written yet" not in text
        assert str(outdir / "slurm-184201.out") in text
        assert "pw.x: step" in text and "following" in text
        before = (outdir / "slurm-184201.out").read_text()
        cluster.control.advance(12)  # two more lines of simulated output
        screen.poll()  # what the 1 s timer does
        await settle(pilot)
        after = (outdir / "slurm-184201.out").read_text()
        assert after.startswith(before) and after.count("\n") == before.count("\n") + 2
        assert after.splitlines()[-1].split("  ")[1] in screen_text(app)


def _demo(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{tmp_path / "audit.log"}"\n')
    env = {**os.environ, "SCKPT_CONFIG": str(config)}
    return subprocess.run(
        [str(SCKPT), "--demo", *argv], env=env, capture_output=True, text=True, timeout=60
    )


def test_sckpt_demo_output_and_history_have_something_to_show(tmp_path: Path) -> None:
    out = _demo(tmp_path, "output", "184201", "-n", "3")
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 3 and all(
        "pw.x: step" in x for x in out.stdout.splitlines()
    )
    document = json.loads(_demo(tmp_path, "--json", "output", "184201").stdout)
    assert document["readable"] is True and document["size"] > 0
    assert not Path(document["path"]).exists()  # the demo's directory left with its process
    pending = _demo(tmp_path, "output", "184208")  # pending: nothing yet, and it says why
    assert pending.returncode == 1 and "the job has not started" in pending.stderr
    history = json.loads(_demo(tmp_path, "--json", "history", "184201").stdout)
    events = history["checkpoints"]
    assert len(events) >= 2
    assert {e["step_id"] for e in events} == {"184201.0"}
    # The demo's failed checkpoint happened while the job ran, not before it started.
    failed = json.loads(_demo(tmp_path, "--json", "history", "184241").stdout)
    (start,) = [r["start_time"] for r in failed["records"]]
    assert [e["event"]["code"] for e in failed["checkpoints"]] == [28]
    assert failed["checkpoints"][0]["event"]["time"] >= start


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_the_demo_directory_goes_when_a_signal_ends_the_process(
    tmp_path: Path, signum: int
) -> None:
    """``output -f`` stopped by SIGTERM, or a console that got SIGHUP, left its demo output
    directory in /tmp (atexit does not run when a signal ends a process)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{tmp_path / "audit.log"}"\n')
    env = {**os.environ, "SCKPT_CONFIG": str(config), "TMPDIR": str(temp)}
    follow = subprocess.Popen(
        [str(SCKPT), "--demo", "output", "184201", "-f", "-n", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follow.stdout is not None
        assert "pw.x: step" in follow.stdout.readline()  # following: the directory exists
        assert [p.name[:18] for p in temp.iterdir()] == ["sckpt-demo-output-"]
        follow.send_signal(signum)
        assert follow.wait(timeout=30) == -signum  # ended by the signal, as before
    finally:
        follow.kill()
        follow.wait()
    assert list(temp.iterdir()) == []
