"""Helpers for the native engine's tests on the real Slurm 19.05.8 (``slurm1905``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import Slurm1905
from ..helpers import wait_for

SCKPT = Path(sys.executable).with_name("sckpt")
BATCH_1905 = 0xFFFFFFFE
"""19.05's SLURM_BATCH_SCRIPT: the only way to name a batch step to ``scontrol checkpoint``."""


@dataclass(frozen=True)
class Native:
    """sckpt and 19.05's own commands, side by side, against the 19.05 cluster."""

    cluster: Slurm1905
    home: Path

    def sckpt(
        self, *argv: str, user: str | None = None, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """The installed ``sckpt`` (engine auto) as root or as a test user; ``extra``: env."""
        where = self.home / (user or "root")
        env = {
            **{k: v for k, v in self.cluster.env().items() if k.startswith("SLURM_")},
            "PATH": self.cluster.env()["PATH"],
            "SCKPT_CONFIG": str(self.home / "config.toml"),
            "NO_COLOR": "1",
            **({"TZ": os.environ["TZ"]} if "TZ" in os.environ else {}),
            "HOME": str(where),
            "XDG_STATE_HOME": str(where / "state"),
            "XDG_CACHE_HOME": str(where / "cache"),
            **extra,
        }
        cmd = [str(SCKPT), *argv]
        if user is not None:
            cmd = ["runuser", "-u", user, "--", "env", *(f"{k}={v}" for k, v in env.items()), *cmd]
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        return subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=300, check=False, cwd="/tmp"
        )

    def scontrol(self, *argv: str, user: str | None = None) -> subprocess.CompletedProcess[str]:
        """19.05's ``scontrol``, as root or as a test user."""
        return self.cluster.run("scontrol", *argv, user=user, check=False)

    def submit_step_job(self, user: str | None = None) -> int:
        """A batch job whose step 0 is a running ``srun sleep``; returns once the step runs."""
        out = self.cluster.run(
            "sbatch", "--parsable", "-o", "/dev/null", "--wrap", "srun sleep 900", user=user
        )
        job = int(out.stdout.strip().split(";")[0])
        wait_for(lambda: f"{job}.0" in self.steps(job), timeout=60)
        return job

    def steps(self, job: int) -> list[str]:
        """``squeue -s`` of 19.05 for one job: its step ids, as squeue writes them."""
        out = self.cluster.run("squeue", "-h", "-s", "-j", str(job), "-o", "%i", check=False)
        return out.stdout.split()

    def job_state(self, job: int) -> str:
        out = self.cluster.run("squeue", "-h", "-j", str(job), "-o", "%T", check=False)
        return out.stdout.strip()

    def cancel(self, *jobs: int) -> None:
        self.cluster.run("scancel", *map(str, jobs), check=False)


@pytest.fixture(scope="module")
def native(slurm1905: Slurm1905) -> Iterator[Native]:
    home = Path(tempfile.mkdtemp(prefix="sckpt-native-"))
    home.chmod(0o755)
    (home / "config.toml").write_text("# native engine tests: defaults (engine auto)\n")
    (home / "config.toml").chmod(0o644)
    for user in (None, *slurm1905.users):
        where = home / (user or "root")
        where.mkdir()
        if user is not None:
            subprocess.run(["chown", user, str(where)], check=True)
    yield Native(slurm1905, home)
    subprocess.run(["rm", "-rf", str(home)], check=False)
