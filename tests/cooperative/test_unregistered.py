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
from sckpt.backend.checkpointing.records import STARTING_GRACE, runs_the_wrapper
from sckpt.backend.model import Step, StepId

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, SCKPT, cancel, cli
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm


def _locked_job(
    shared_dir: Path, cluster: SlurmCluster, tag: str, body: str
) -> tuple[int, Path, Path]:
    """alice's batch job ``body`` in a working directory she may enter but not write:
    its id, its stderr, and that directory (the caller cancels the job)."""
    locked = shared_dir / f"read-only-{tag}"
    locked.mkdir(mode=0o555)
    err = shared_dir / f"alice-err-{tag}"
    err.mkdir()
    err.chmod(0o777)
    out = cluster.run(
        "sbatch", "--parsable", "-J", "unregistered", f"--chdir={locked}",
        "-o", str(err / "out.txt"), "-e", str(err / "err.txt"), "--wrap", body,
        user=ALICE, cwd="/tmp",
    )  # fmt: skip
    return int(out.stdout.strip().split(";")[0]), err / "err.txt", locked


@pytest.fixture
def unwritable_job(shared_dir: Path, slurm_cluster: SlurmCluster) -> Iterator[tuple[int, Path]]:
    """alice's job in a working directory she cannot write: ``srun sckpt run`` as step 0 and
    a plain ``srun sleep`` as step 1 (both overlap, so both run at once)."""
    body = (
        f"srun --overlap -n1 {SCKPT} run -- sleep 300 &\n"
        "sleep 1; srun --overlap -n1 sleep 300 &\nwait\n"
    )
    job, stderr, _locked = _locked_job(shared_dir, slurm_cluster, "plain", body)
    try:
        yield job, stderr
    finally:
        cancel(slurm_cluster, job)


def _row(listing: str, step: str) -> str:
    return next((line for line in listing.splitlines() if line.startswith(f"{step} ")), "")


def _listed_early(
    cluster: SlurmCluster, shared_dir: Path, job: int, names: tuple[str, str]
) -> None:
    """Once squeue lists steps 0 and 1 by ``names``: ``ls -s`` says step 0 (``sckpt run``)
    is starting (when under ``STARTING_GRACE`` has passed) and step 1 (another program)
    was not started under ``sckpt run``."""

    def steps() -> list[str]:
        out = cluster.run("squeue", "-h", "-s", "-j", str(job), "-o", "%i %j", check=False)
        return out.stdout.split("\n")

    wrapper, other = names
    wait_for(lambda: f"{job}.0 {wrapper}" in steps() and f"{job}.1 {other}" in steps(), timeout=60)
    seen = time.monotonic()
    early = cli(shared_dir, "ls", "-s", "-j", str(job))
    assert early.returncode == 0, early.stderr
    if time.monotonic() - seen < STARTING_GRACE - 5:  # the step started under 30 s ago
        assert "starting" in _row(early.stdout, f"{job}.0"), early.stdout
    assert "not started under `sckpt run`" not in _row(early.stdout, f"{job}.0")
    assert "not started under `sckpt run`" in _row(early.stdout, f"{job}.1"), early.stdout


def _past_the_grace(shared_dir: Path, job: int) -> str:
    """Step 0's ``ls -s`` row once ``STARTING_GRACE`` has passed: that ``sckpt run`` could
    not register it (waited for, not slept)."""

    def not_registered() -> str:
        row = _row(cli(shared_dir, "ls", "-s", "-j", str(job)).stdout, f"{job}.0")
        return row if "`sckpt run` could not register the step" in row else ""

    return wait_for(not_registered, timeout=STARTING_GRACE + 30, interval=2)


@pytest.mark.usefixtures("cluster_work")  # the audit directory cli() writes in
def test_a_step_that_could_not_register_says_so_and_points_at_stderr(
    unwritable_job: tuple[int, Path], shared_dir: Path, slurm_cluster: SlurmCluster
) -> None:
    job, stderr = unwritable_job
    _listed_early(slurm_cluster, shared_dir, job, ("sckpt", "sleep"))

    wait_for(lambda: "WITHOUT checkpoint support" in stderr.read_text(), timeout=30)
    assert "Permission denied" in stderr.read_text()  # the cause, where the job wrote it
    row = _past_the_grace(shared_dir, job)
    assert "the job's stderr says why" in row and "starting" not in row
    able = cli(shared_dir, "able", f"{job}.0")
    assert able.returncode == 1 and "ESLURM_NOT_SUPPORTED" in able.stderr, able
    assert f"{job}.0: `sckpt run` could not register the step in" in able.stderr
    assert "not started under" not in able.stderr
    other = cli(shared_dir, "able", f"{job}.1")
    assert other.returncode == 1 and "not started under `sckpt run`" in other.stderr


def test_runs_the_wrapper_reads_srun_s_command_line_whatever_the_step_is_named() -> None:
    # Slurm 21.08 and later report the srun command line; 19.05 only the name srun gave.
    def step(name: str, submit_line: str = "") -> Step:
        return Step(StepId(7, 0), name, ALICE, 1001, "debug", "RUNNING", submit_line=submit_line)

    assert runs_the_wrapper(step("sckpt"))  # srun sckpt run, on any release
    assert runs_the_wrapper(step("md", f"srun -J md --overlap {SCKPT} run -- ./app"))
    assert runs_the_wrapper(step("md", "srun -J md python -m sckpt run --every 5m -- ./app"))
    assert runs_the_wrapper(step("md", "srun -J 'my md' '/opt/my tools/sckpt' run -- ./app"))
    assert not runs_the_wrapper(step("md", "srun -J md ./app --log sckpt.log"))
    assert not runs_the_wrapper(step("md", "srun -J md sckpt-report run"))
    assert not runs_the_wrapper(step("md", "srun -J md 'unbalanced ./app"))
    assert not runs_the_wrapper(step("md"))


@pytest.mark.usefixtures("cluster_work")  # the audit directory cli() writes in
def test_a_step_srun_named_otherwise_reads_starting_then_could_not_register(
    shared_dir: Path, slurm_cluster: SlurmCluster
) -> None:
    """``srun -J md sckpt run``: the step is named ``md``, not ``sckpt``, yet its srun runs
    ``sckpt run`` (its command line says so): it reads ``starting``, then that the wrapper
    could not register it, never "not started under `sckpt run`"; a ``-J prep`` step of
    another program beside it keeps that."""
    body = (
        f"srun --overlap -n1 -J md {SCKPT} run -- sleep 300 &\n"
        "sleep 1; srun --overlap -n1 -J prep sleep 300 &\nwait\n"
    )
    job, stderr, _locked = _locked_job(shared_dir, slurm_cluster, "named", body)
    try:
        _listed_early(slurm_cluster, shared_dir, job, ("md", "prep"))

        _past_the_grace(shared_dir, job)
        assert "WITHOUT checkpoint support" in stderr.read_text()
        able = cli(shared_dir, "able", f"{job}.0")
        assert able.returncode == 1 and "ESLURM_NOT_SUPPORTED" in able.stderr, able
        assert f"{job}.0: `sckpt run` could not register the step in" in able.stderr
        whole = cli(shared_dir, "able", str(job))  # the whole job: what its wrapper step does
        assert whole.returncode == 1 and f"{job}.0: `sckpt run` could not register" in (
            whole.stderr
        ), whole
    finally:
        cancel(slurm_cluster, job)
