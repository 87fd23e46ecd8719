"""MPI under ``sckpt run --transparent`` on the real Slurm 22.05, with Debian's MPICH 4.0.2
and Open MPI 4.1.4 (``scripts/test`` installs both) and the project's DMTCP 4.2.0.

The program is ``programs/mpi_ring.c``: 2 ranks pass their state around a ring and sum it
every iteration; rank 0 prints one hash of the whole run, which a lost or repeated message
or iteration changes.  What README's MPI table says works is run here through create
``--wait``, vacate ``--wait`` and restart, and must end with an uninterrupted run's hash;
what it says is refused must exit 2 with its line before the program starts (the program's
marker file never appears; the same launch without ``--transparent`` makes it appear).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, SCKPT, cancel, cli
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

SOURCE = Path(__file__).resolve().parent / "programs" / "mpi_ring.c"
ITERATIONS = 200
DELAY_MS = 100
COMPILERS = {"mpich": "mpicc.mpich", "openmpi": "mpicc.openmpi"}
LAUNCH = {"mpich": "mpiexec.mpich -n 2", "openmpi": "mpirun.openmpi -n 2"}
OUTSIDE_SLURM = {"mpich": "-launcher fork", "openmpi": "--allow-run-as-root --oversubscribe"}
"""What the launchers need for the uninterrupted run, started by root outside any job."""
SRUN_MPI = {"mpich": "pmi2", "openmpi": "pmix"}
SCRIPT = """#!/bin/bash
#SBATCH -n 1
#SBATCH -c 2
#SBATCH --open-mode=append
srun {sckpt} run --transparent --poll 0.5 --name ring -- {launch} {binary} {iterations} {delay}
"""


@pytest.fixture(scope="module")
def binaries() -> Iterator[dict[str, Path]]:
    """The ring, built with each MPI's compiler, where every test user can run it."""
    where = Path(tempfile.mkdtemp(prefix="sckpt-mpi-", dir="/tmp"))
    where.chmod(0o755)
    try:
        built = {}
        for mpi, compiler in COMPILERS.items():
            binary = where / f"ring_{mpi}"
            subprocess.run([compiler, "-O2", "-o", str(binary), str(SOURCE)], check=True)
            built[mpi] = binary
        yield built
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture(scope="module")
def uninterrupted(binaries: dict[str, Path]) -> dict[int, str]:
    """The last line of a run nobody checkpointed, by number of ranks (both MPIs agree)."""
    found = {}
    for ranks in (2, 4):
        lines = set()
        for mpi, launch in LAUNCH.items():
            extra = OUTSIDE_SLURM[mpi].split()
            argv = [launch.split()[0], *extra, "-n", str(ranks)]
            argv += [str(binaries[mpi]), str(ITERATIONS), "0"]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
            lines.add(done.stdout.strip().splitlines()[-1])
        assert len(lines) == 1, lines
        (line,) = lines
        assert re.fullmatch(
            rf"ring ranks={ranks} iterations={ITERATIONS} hash=[0-9a-f]{{16}}", line
        )
        found[ranks] = line
    return found


@pytest.fixture
def work(cluster_work: Path) -> Path:
    """Alice's job directory (and the audit directory ``cli`` needs beside it)."""
    return cluster_work


@pytest.fixture
def submitted(slurm_cluster: SlurmCluster) -> Iterator[list[int]]:
    jobs: list[int] = []
    yield jobs
    cancel(slurm_cluster, *jobs)


def _state(cluster: SlurmCluster, job: int) -> str:
    out = cluster.run("scontrol", "show", "job", str(job), check=False).stdout
    match = re.search(r"\bJobState=(\S+)", out)
    return match.group(1) if match else ""


@pytest.mark.parametrize(
    ("mpi", "ranks", "through_a_script"),
    [("mpich", 2, False), ("openmpi", 2, False), ("mpich", 2, True), ("openmpi", 4, False)],
    ids=["mpich", "openmpi", "mpich-script", "openmpi-4-ranks"],
)
def test_mpiexec_in_one_task_checkpoints_and_restarts_exactly(  # type: ignore[no-untyped-def]
    mpi: str,
    ranks: int,
    through_a_script: bool,
    binaries: dict[str, Path],
    uninterrupted: dict[int, str],
    work: Path,
    submitted: list[int],
    slurm_cluster: SlurmCluster,
    dmtcp_install,
    shared_dir: Path,
) -> None:
    # 4 ranks on the task's 2 CPUs: Open MPI refuses more ranks than cores unless told.
    launch = LAUNCH[mpi].replace("-n 2", "--oversubscribe -n 4" if ranks == 4 else "-n 2")
    if through_a_script:  # sckpt sees bash, not the launcher: the run must work the same
        (work / "ring.sh").write_text(f'#!/bin/bash\necho "ring.sh: $*"\n{launch} "$@"\n')
        launch = "/bin/bash ./ring.sh"
    script = work / "job.sh"
    script.write_text(
        SCRIPT.format(
            sckpt=SCKPT,
            launch=launch,
            binary=binaries[mpi],
            iterations=ITERATIONS,
            delay=DELAY_MS,
        )
    )
    script.chmod(0o755)
    out = work / "out.txt"
    job = int(
        slurm_cluster.run(
            "sbatch", "--parsable", f"--chdir={work}", "-o", str(out), str(script), user=ALICE
        ).stdout.split(";")[0]
    )
    submitted.append(job)

    def printed() -> list[str]:
        return out.read_text().splitlines() if out.exists() else []

    wait_for(lambda: "iteration 20" in printed(), timeout=60)
    created = cli(shared_dir, "create", f"{job}.0", "--wait", user=ALICE)
    assert created.returncode == 0 and "create completed" in created.stdout, created
    at_create = len(printed())
    wait_for(lambda: len(printed()) > at_create + 2, timeout=30)  # the ranks run on
    vacated = cli(shared_dir, "vacate", str(job), "--wait", user=ALICE)
    assert vacated.returncode == 0, vacated
    wait_for(lambda: _state(slurm_cluster, job) == "PENDING", timeout=60)
    assert not any(line.startswith("ring ") for line in printed()), "ended before the vacate"
    restarted = cli(shared_dir, "restart", str(job), user=ALICE)
    assert restarted.returncode == 0 and "resumes from generation" in restarted.stdout, restarted
    wait_for(lambda: _state(slurm_cluster, job) == "COMPLETED", timeout=150)
    lines = printed()
    assert [line for line in lines if line.startswith("ring ")] == [uninterrupted[ranks]], lines
    # Resumed, not started over: the first progress line was printed once only.
    assert lines.count("iteration 10") == 1, lines


def _refused(
    cluster: SlurmCluster, work: Path, srun: list[str], program: list[str], transparent: bool
) -> subprocess.CompletedProcess[str]:
    mode = ["--transparent"] if transparent else []
    return cluster.run(
        "srun",
        f"--chdir={work}",
        *srun,
        str(SCKPT),
        "run",
        *mode,
        "--",
        *program,
        check=False,
        timeout=90,
        user=ALICE,
    )


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_srun_mpi_ranks_are_refused_before_they_start(
    mpi: str, binaries: dict[str, Path], work: Path, slurm_cluster: SlurmCluster
) -> None:
    marker = work / "marker"
    srun = [f"--mpi={SRUN_MPI[mpi]}", "-n2"]
    program = [str(binaries[mpi]), "3", "0", str(marker)]
    refused = _refused(slurm_cluster, work, srun, program, transparent=True)
    assert refused.returncode == 2, refused
    said = [line for line in refused.stderr.splitlines() if line.startswith("sckpt run:")]
    variable = "PMI_RANK" if mpi == "mpich" else "PMIX_RANK"
    assert len(said) == 2 and all(
        line.startswith(f"sckpt run: --transparent: this task is an MPI rank ({variable}=")
        and "DMTCP cannot restore a rank's connection to slurmstepd's PMI server" in line
        and "srun -n1 sckpt run --transparent -- mpiexec -n N ./app" in line
        for line in said
    ), refused.stderr
    assert not marker.exists()
    # The same launch in the signal mode starts the program (so the marker can appear).
    plain = _refused(slurm_cluster, work, srun, program, transparent=False)
    assert plain.returncode == 0 and marker.exists(), plain


def test_an_unknown_mpi_launcher_is_refused_before_it_starts(
    work: Path, slurm_cluster: SlurmCluster
) -> None:
    """A launcher named mpiexec that is neither MPICH's hydra nor Open MPI's orterun (here a
    script; on other machines Intel MPI's, or Open MPI 5's prterun) was never tried."""
    marker = work / "marker"
    launcher = work / "mpiexec"
    launcher.write_text(f"#!/bin/sh\ntouch {marker}\n")
    launcher.chmod(0o755)
    refused = _refused(slurm_cluster, work, ["-n1"], [str(launcher), "-n", "2", "x"], True)
    assert refused.returncode == 2, refused
    said = [line for line in refused.stderr.splitlines() if not line.startswith("srun: ")]
    assert said == [
        f"sckpt run: --transparent: mpiexec ({launcher}) is an MPI launcher sckpt has "
        "not checkpointed and restarted exactly (only MPICH (hydra) and Open MPI (orterun)); "
        "start the run with one of those, or let the program save itself (sckpt run -- ./app, "
        "the signal mode)"
    ], refused.stderr
    assert not marker.exists()
    plain = _refused(slurm_cluster, work, ["-n1"], [str(launcher)], transparent=False)
    assert plain.returncode == 0 and marker.exists(), plain
