"""A step under ``srun sckpt run`` that has no registration: starting, or what went wrong.

Issue 34, 18: in a working directory the job's user cannot write, the wrapper cannot make
its state file and runs the program without checkpoints (saying so on the job's stderr),
while ``ls -s`` and ``able`` said "not started under `sckpt run`".  On the real 22.05
cluster, as sckpt-alice in a directory she may enter but not write: for its first
``STARTING_GRACE`` seconds the step reads ``starting``; then ``ls -s`` and ``able`` say
that ``sckpt run`` could not register it and point at the job's stderr, which names the
cause.  A step of another program keeps "not started under `sckpt run`".
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.records import STARTING_GRACE

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, SCKPT, cancel, cli
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm


@pytest.fixture
def unwritable_job(shared_dir: Path, slurm_cluster: SlurmCluster) -> Iterator[tuple[int, Path]]:
    """alice's job in a working directory she cannot write: ``srun sckpt run`` as step 0 and
    a plain ``srun sleep`` as step 1 (both overlap, so both run at once)."""
    locked = shared_dir / "read-only"
    locked.mkdir(mode=0o555)
    err = shared_dir / "alice-err"
    err.mkdir()
    err.chmod(0o777)
    body = (
        f"srun --overlap -n1 {SCKPT} run -- sleep 300 &\n"
        "sleep 1; srun --overlap -n1 sleep 300 &\nwait\n"
    )
    out = slurm_cluster.run(
        "sbatch", "--parsable", "-J", "unregistered", f"--chdir={locked}",
        "-o", str(err / "out.txt"), "-e", str(err / "err.txt"), "--wrap", body,
        user=ALICE, cwd="/tmp",
    )  # fmt: skip
    job = int(out.stdout.strip().split(";")[0])
    try:
        yield job, err / "err.txt"
    finally:
        cancel(slurm_cluster, job)


def _row(listing: str, step: str) -> str:
    return next((line for line in listing.splitlines() if line.startswith(f"{step} ")), "")


@pytest.mark.usefixtures("cluster_work")  # the audit directory cli() writes in
def test_a_step_that_could_not_register_says_so_and_points_at_stderr(
    unwritable_job: tuple[int, Path], shared_dir: Path, slurm_cluster: SlurmCluster
) -> None:
    job, stderr = unwritable_job

    def steps() -> list[str]:
        out = slurm_cluster.run("squeue", "-h", "-s", "-j", str(job), "-o", "%i %j", check=False)
        return out.stdout.split("\n")

    wait_for(lambda: f"{job}.0 sckpt" in steps() and f"{job}.1 sleep" in steps(), timeout=60)
    seen = time.monotonic()
    early = cli(shared_dir, "ls", "-s", "-j", str(job))
    assert early.returncode == 0, early.stderr
    if time.monotonic() - seen < STARTING_GRACE - 5:  # the step started under 30 s ago
        assert "starting" in _row(early.stdout, f"{job}.0"), early.stdout
    assert "not started under `sckpt run`" in _row(early.stdout, f"{job}.1"), early.stdout

    wait_for(lambda: "WITHOUT checkpoint support" in stderr.read_text(), timeout=30)
    assert "Permission denied" in stderr.read_text()  # the cause, where the job wrote it
    time.sleep(max(0.0, STARTING_GRACE + 1 - (time.monotonic() - seen)))
    late = cli(shared_dir, "ls", "-s", "-j", str(job))
    row = _row(late.stdout, f"{job}.0")
    assert "`sckpt run` could not register the step" in row, late.stdout
    assert "the job's stderr says why" in row and "starting" not in row
    able = cli(shared_dir, "able", f"{job}.0")
    assert able.returncode == 1 and "ESLURM_NOT_SUPPORTED" in able.stderr, able
    assert f"{job}.0: `sckpt run` could not register the step in" in able.stderr
    assert "not started under" not in able.stderr
    other = cli(shared_dir, "able", f"{job}.1")
    assert other.returncode == 1 and "not started under `sckpt run`" in other.stderr
