"""End to end in a real terminal (tmux, 80x24) on the real cluster: ``o`` on a running job.

The installed ``sckpt JOB`` opens the console on the job; ``o`` shows the job's output
file, and lines the job writes afterwards appear on the screen (following) until it ends.
Also with a hostile environment: COLUMNS/LINES exported (a tmux server started from a shell
that exported them), a plain TERM, and no HOME.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SlurmCluster
from tests.helpers import wait_for

from ..tmux import Tmux

pytestmark = pytest.mark.slurm

SCKPT = Path(sys.executable).with_name("sckpt")


@pytest.fixture
def ticking(slurm_cluster: SlurmCluster) -> Iterator[tuple[int, Path, Path]]:
    """A job writing ``tick N`` each time a ``goN`` file appears (so the test decides
    when a line comes), ending after tick 3; its output file, its directory."""
    directory = Path(tempfile.mkdtemp(prefix="sckpt-tmux-out-"))
    directory.chmod(0o755)
    script = directory / "job.sh"
    script.write_text(
        "#!/bin/bash\n"
        "echo 'started'\n"
        f"for i in 1 2 3; do while [ ! -e {directory}/go$i ]; do sleep 0.1; done; "
        'echo "tick $i"; done\n'
    )
    script.chmod(0o755)
    out = slurm_cluster.run(
        "sbatch", "--parsable", "-J", "tmux-out", "-o", f"{directory}/%j.out", str(script)
    )
    job = int(out.stdout.strip().split(";")[0])
    path = directory / f"{job}.out"
    try:
        wait_for(lambda: path.exists() and b"started" in path.read_bytes(), timeout=60)
        yield job, path, directory
    finally:
        slurm_cluster.run("scancel", str(job), check=False)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("hostile", [False, True], ids=["plain", "hostile-env"])
def test_o_in_tmux_follows_the_job_output(
    slurm_cluster: SlurmCluster,
    ticking: tuple[int, Path, Path],
    tmp_path: Path,
    hostile: bool,
) -> None:
    job, path, directory = ticking
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{tmp_path}/audit.log"\nrefresh_interval = 1.0\n')
    env = [f"SLURM_CONF={slurm_cluster.conf}", f"SCKPT_CONFIG={config}", "TZ=UTC"]
    if hostile:
        env += ["COLUMNS=200", "LINES=60", "TERM=screen"]
        command = f"env -u HOME {SCKPT} {job}; echo SCKPT-EXIT=$?; sleep 30"
    else:
        env += ["TERM=xterm-256color", f"HOME={os.environ.get('HOME', '/root')}"]
        command = f"{SCKPT} {job}; echo SCKPT-EXIT=$?; sleep 30"
    with Tmux(command, 80, 24, env=env) as term:
        term.wait(lambda s: f"{job}" in s and "tmux-out" in s, timeout=60)
        screen = term.press_until("o", lambda s: f"Output of job {job}" in s)
        screen = term.wait(lambda s: "started" in s)
        assert str(path) in screen
        lines = screen.splitlines()
        assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
        assert "esc Back" in lines[-1] or "Back" in lines[-1]
        for i in (1, 2, 3):
            (directory / f"go{i}").touch()
            term.wait(lambda s, i=i: f"tick {i}" in s, timeout=20)
        screen = term.wait(lambda s: "ended" in s, timeout=30)
        shown = [line.rstrip() for line in screen.splitlines()]
        for line in path.read_text().splitlines():
            assert line in shown
        term.keys("Escape")
        term.wait(lambda s: f"Output of job {job}" not in s)
        term.keys("q")
        term.wait(lambda s: "SCKPT-EXIT=0" in s)
