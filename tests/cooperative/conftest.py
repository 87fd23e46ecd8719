"""Fixtures of the cooperative tests: directories other users can reach, and a python for them.

pytest's ``tmp_path`` lives under a 0700 directory, so a job or a test user could not reach
it; ``shared_dir`` is a fresh ``/tmp/sckpt-coop-*`` directory (0755) removed afterwards.
The real-cluster modules share ``cluster_work`` (alice's job directory), the operator's
``facade``, ``cli`` (the command in another process), ``state`` and ``cancel``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sckpt.backend.checkpointing.dmtcp import DmtcpMissing, find_dmtcp
from sckpt.backend.config import Settings
from sckpt.backend.facade import Facade, open_facade
from sckpt.backend.model import CheckpointState

from tests.conftest import PrivateCluster, SlurmCluster
from tests.helpers import wait_for

if TYPE_CHECKING:
    from tests.cooperative.auto_jobs import Job

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "counter.py"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
"""Built from Debian's python3 (scripts/bootstrap), so the test users can run it too."""
SCKPT = ROOT / ".venv" / "bin" / "sckpt"
ALICE = "sckpt-alice"
BOB = "sckpt-bob"


@pytest.fixture(scope="module")
def dmtcp_install() -> object:
    """DMTCP as ``sckpt run --transparent`` finds it (scripts/dmtcp builds it); the
    transparent tests fail under CI=true without it, and skip elsewhere."""
    try:
        return find_dmtcp()
    except DmtcpMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{exc.message}: {exc.hint}")
        pytest.skip(f"{exc.message}: {exc.hint}")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sckpt-coop-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def cancel(cluster: SlurmCluster, *jobs: int) -> None:
    """scancel, then wait until the jobs are gone: no task may write into a removed dir."""
    if not jobs:
        return
    ids = ",".join(map(str, jobs))
    cluster.run("scancel", *map(str, jobs), check=False)
    wait_for(
        lambda: not cluster.run("squeue", "-h", "-j", ids, check=False).stdout.strip(),
        timeout=90,
    )


@pytest.fixture
def cluster_work(shared_dir: Path) -> Path:
    """A working directory alice owns (the job's), inside a directory everyone can reach."""
    work = shared_dir / "alice"
    work.mkdir()
    subprocess.run(["chown", f"{ALICE}:{ALICE}", str(work)], check=True)
    audit = shared_dir / "audit"
    audit.mkdir(mode=0o777)
    audit.chmod(0o1777)
    return work


@pytest.fixture
def facade(shared_dir: Path, cluster_work: Path, slurm_cluster: SlurmCluster) -> Iterator[Facade]:
    f = open_facade(Settings(audit_log=shared_dir / "audit" / "root.log"), engine="cooperative")
    yield f
    f.close()


def state(facade: Facade, target: str) -> CheckpointState:
    """The step's checkpoint column in a fresh snapshot (what the console shows)."""
    job_id, step = target.split(".")
    for view in facade.snapshot().jobs:
        if view.job.job_id == int(job_id):
            for s in view.steps:
                if s.step.step_id.step_text == step:
                    return s.checkpoint
    raise AssertionError(f"{target} not in the snapshot")


def cli(shared_dir: Path, *args: str, user: str | None = None) -> subprocess.CompletedProcess[str]:
    """The ``sckpt`` command in another process (as ``user``), with its own audit log."""
    name = user or "root"
    config = shared_dir / "audit" / f"{name}.toml"
    config.write_text(f'audit_log = "{shared_dir}/audit/{name}-cli.log"\nengine = "cooperative"\n')
    config.chmod(0o644)
    env = ["env", f"SLURM_CONF={os.environ['SLURM_CONF']}", f"SCKPT_CONFIG={config}"]
    cmd = [*env, str(SCKPT), *args]
    if user is not None:
        cmd = ["runuser", "-u", user, "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd="/tmp")


@pytest.fixture
def jobs(
    private_cluster: PrivateCluster, shared_dir: Path, dmtcp_install: object
) -> Iterator[Callable[..., dict[str, Job]]]:
    """Submit one job per variant (both at once: the test waits on Slurm's clocks once)
    and wait until each counts under its wrapper (``auto_jobs.py``)."""
    from tests.cooperative.auto_jobs import cancel_jobs, submit_jobs  # it imports this module

    made: list[Job] = []

    def submit(run_args: str, *sbatch: str, **how: Any) -> dict[str, Job]:
        out = submit_jobs(private_cluster, shared_dir, run_args, *sbatch, **how)
        made.extend(out.values())
        for job in out.values():
            job.wait(job.running, timeout=120)
        return out

    yield submit
    cancel_jobs(private_cluster, made)
