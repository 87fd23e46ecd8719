"""Fixtures for the libslurm binding tests: the binding, job submission with cleanup, and
parsers for what Slurm's own commands report (the reference the binding is compared to)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend.libslurm import Binding, get_binding

from tests.conftest import SlurmCluster

ROOT = Path(__file__).resolve().parents[2]
PYTHON = str(ROOT / ".venv" / "bin" / "python")


def python_as(cluster: SlurmCluster, user: str, code: str, *args: str) -> Any:
    """Run ``code`` with this checkout's Python as ``user`` on ``cluster``; the JSON value of
    its last line of output.

    runuser passes the caller's environment on: without SCKPT_CACHE_DIR the user builds
    the shim in their own cache, not in root's (which they cannot read).
    """
    proc = subprocess.run(
        [
            "runuser", "-u", user, "--", "env", "-u", "SCKPT_CACHE_DIR",
            f"SLURM_CONF={cluster.conf}", f"PYTHONPATH={ROOT}", PYTHON, "-c", code, *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/tmp",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def binding(slurm_cluster: SlurmCluster) -> Binding:
    """The process's binding, pointed at the test cluster (the fixture sets SLURM_CONF)."""
    return get_binding()


Submit = Callable[..., int]


@pytest.fixture
def submit(slurm_cluster: SlurmCluster) -> Iterator[Submit]:
    """``submit(*sbatch_args, user=None) -> job id``; every job is cancelled afterwards."""
    jobs: list[tuple[int, str | None]] = []

    def _submit(*args: str, user: str | None = None) -> int:
        out = slurm_cluster.run("sbatch", "--parsable", "-o", "/dev/null", *args, user=user)
        job_id = int(out.stdout.strip().split(";")[0])
        jobs.append((job_id, user))
        return job_id

    yield _submit
    for job_id, _user in jobs:
        slurm_cluster.run("scancel", str(job_id), check=False)


def squeue_jobs(cluster: SlurmCluster, job_ids: set[int]) -> dict[int, dict[str, Any]]:
    """``squeue --json`` records for the given jobs (22.05's squeue --json ignores -j)."""
    out = cluster.run("squeue", "--json")
    data = json.loads(out.stdout)
    return {j["job_id"]: j for j in data["jobs"] if j["job_id"] in job_ids}


_STEP_FIELD = re.compile(r"(\w+(?::\w+)?)=(\S*)")


def scontrol_steps(cluster: SlurmCluster, job_id: int) -> dict[str, dict[str, str]]:
    """``scontrol -o show step JOB`` as {"<job>.<step>": {field: value}}."""
    out = cluster.run("scontrol", "-o", "show", "step", str(job_id), check=False)
    steps: dict[str, dict[str, str]] = {}
    for line in out.stdout.splitlines():
        fields = dict(_STEP_FIELD.findall(line))
        if "StepId" in fields:
            steps[fields["StepId"]] = fields
    return steps


def scontrol_time(text: str) -> int:
    """scontrol's local ISO time to Unix seconds."""
    return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def step_container_pids(job_id: int, step_text: str) -> set[int]:
    """The processes under ``slurmstepd: [JOB.STEP]`` (proctrack/linuxproc's container)."""
    parents: dict[int, int] = {}
    stepd: int | None = None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = (
                Path(f"/proc/{pid}/cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
            )
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents[pid] = ppid
        if cmdline.strip() == f"slurmstepd: [{job_id}.{step_text}]":
            stepd = pid
    assert stepd is not None, f"no slurmstepd for {job_id}.{step_text}"
    found: set[int] = set()
    frontier = {stepd}
    while frontier:
        children = {p for p, pp in parents.items() if pp in frontier and p not in found}
        found |= children
        frontier = children
    return found
