"""``sckpt output`` on the real Slurm 22.05 cluster.

A job of sckpt-alice prints numbered lines into a file named with Slurm's patterns
(``%x-%j-%u.out``): the path sckpt reports must be the one scontrol shows (expanded by
Slurm), the bytes printed must be the file's last lines byte for byte, following must print
what comes later and stop when the job ends, and sckpt-bob (who cannot read alice's 0600
file, as ``cat`` proves) must be told "permission denied", not shown an empty file.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import SlurmCluster
from ..helpers import wait_for
from .test_jobctl_real import home_of, run_as, show
from .test_real_cluster import config, sckpt, shared_dir, squeue_state

pytestmark = pytest.mark.slurm
__all__ = ["config", "shared_dir"]  # module fixtures shared with test_real_cluster

ALICE, BOB = "sckpt-alice", "sckpt-bob"


@pytest.fixture
def writer(slurm_cluster: SlurmCluster, shared_dir: Path) -> Iterator[tuple[int, Path, Path]]:
    """Alice's job: 30 lines at once, then (after ``go`` appears) one more, then it ends.

    Its files are 0600 (umask 077 travels with sbatch as SLURM_UMASK): only alice (and
    root) may read them.
    """
    name = f"out-{uuid.uuid4().hex[:6]}"
    go = shared_dir / f"{name}.go"
    script = shared_dir / f"{name}.sh"
    script.write_text(
        "#!/bin/bash\n"
        'for i in $(seq 1 30); do echo "line $i of $SLURM_JOB_ID"; done\n'
        "echo 'to stderr' >&2\n"
        f"while [ ! -e {go} ]; do sleep 0.2; done\n"
        "echo 'the last line'\n"
    )
    script.chmod(0o755)
    pattern = f"{shared_dir}/%x-%j-%u.out"
    submitted = slurm_cluster.run(
        "bash", "-c", f"umask 077; exec sbatch --parsable -J {name} -o {pattern} {script}",
        user=ALICE,
    )  # fmt: skip
    job = int(submitted.stdout.strip().split(";")[0])
    try:
        path = Path(f"{shared_dir}/{name}-{job}-{ALICE}.out")
        wait_for(lambda: path.exists() and path.read_bytes().count(b"\n") >= 30, timeout=60)
        yield job, path, go
    finally:
        go.touch()
        slurm_cluster.run("scancel", str(job), check=False)


def test_output_prints_the_files_last_lines_byte_for_byte(
    slurm_cluster: SlurmCluster, config: Path, writer: tuple[int, Path, Path]
) -> None:
    job, path, _go = writer
    done = sckpt(slurm_cluster, config, "output", str(job), "--lines", "5")
    assert done.returncode == 0, done.stderr
    expected = b"".join(path.read_bytes().splitlines(keepends=True)[-5:])
    assert done.stdout.encode() == expected
    assert f"line 30 of {job}" in done.stdout
    document = json.loads(sckpt(slurm_cluster, config, "output", str(job), "--json").stdout)
    record = show(slurm_cluster, job)
    assert document["stdout"] == record["StdOut"] == str(path)  # %x %j %u expanded by Slurm
    assert document["stderr"] == record["StdErr"] == str(path)
    assert document["readable"] is True and document["size"] == path.stat().st_size
    assert document["state"] == squeue_state(slurm_cluster, job) == "RUNNING"


def test_output_follow_prints_what_comes_later_and_ends_with_the_job(
    slurm_cluster: SlurmCluster, config: Path, writer: tuple[int, Path, Path]
) -> None:
    job, path, go = writer
    go.touch()
    done = sckpt(slurm_cluster, config, "output", str(job), "--follow", "--lines", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("the last line\n")
    assert done.stdout.encode() == path.read_bytes()[-len(done.stdout.encode()) :]
    assert squeue_state(slurm_cluster, job) in ("", "COMPLETED", "COMPLETING")


def test_another_user_is_told_permission_denied(
    slurm_cluster: SlurmCluster, config: Path, writer: tuple[int, Path, Path]
) -> None:
    job, path, _go = writer
    cat_code, cat_said = run_as(slurm_cluster, BOB, "cat", str(path))
    assert cat_code != 0 and "Permission denied" in cat_said
    home_of(config, BOB)
    done = sckpt(slurm_cluster, config, "output", str(job), user=BOB, home=config.parent / BOB)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == f"sckpt: cannot read {path}: permission denied\n"
    as_json = sckpt(
        slurm_cluster, config, "output", str(job), "--json", user=BOB, home=config.parent / BOB
    )
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["problem"] == f"cannot read {path}: permission denied"
    mine = sckpt(slurm_cluster, config, "output", str(job), user=ALICE, home=home_of(config, ALICE))
    assert mine.returncode == 0 and f"line 30 of {job}" in mine.stdout
