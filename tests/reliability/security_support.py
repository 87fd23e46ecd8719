"""What the security tests share: running sckpt as a test user, their jobs, what Slurm says.

The test users (``sckpt-alice``, ``sckpt-bob``) come from ``scripts/slurm-cluster``.  Every
command run as one of them goes through ``runuser`` with that user's own HOME (so sckpt's
audit log and libslurm shim cache are theirs) and the cluster's SLURM_CONF.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import SlurmCluster
from tests.helpers import catches_signal, wait_for

ROOT = Path(__file__).resolve().parents[2]
SCKPT = ROOT / ".venv" / "bin" / "sckpt"
PYTHON = ROOT / ".venv" / "bin" / "python"
EXAMPLE = ROOT / "examples" / "counter.py"
"""Built from Debian's python3 (scripts/bootstrap), so the test users can run it too."""
ALICE, BOB = "sckpt-alice", "sckpt-bob"


def uid_of(user: str) -> int:
    return pwd.getpwnam(user).pw_uid


def user_env(cluster: SlurmCluster, user: str, **extra: str) -> list[str]:
    """``KEY=value`` words for ``env``: the user's HOME, the cluster, no developer config."""
    home = pwd.getpwnam(user).pw_dir
    return [
        f"HOME={home}",
        f"USER={user}",
        f"LOGNAME={user}",
        f"SLURM_CONF={cluster.conf}",
        "XDG_CONFIG_HOME=/nonexistent/sckpt-test-xdg",  # no config file: the defaults
        f"PATH={os.environ.get('PATH', '/usr/bin:/bin')}",
        *(f"{k}={v}" for k, v in extra.items()),
    ]


def run_as(
    cluster: SlurmCluster,
    user: str,
    *argv: str,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as ``user`` (a clean environment plus ``env``), from /tmp; never raises."""
    words = user_env(cluster, user, **dict(env or {}))
    return subprocess.run(
        ["runuser", "-u", user, "--", "env", "-i", *words, *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/tmp",
        check=False,
    )


@contextmanager
def user_workdir(user: str, prefix: str = "sckpt-sec-") -> Iterator[Path]:
    """A fresh directory in /tmp owned by ``user``, mode 0755 (others may read, not write)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


UNDER_RUN = (
    f"srun -n1 {SCKPT} run --name step0 -- /usr/bin/python3 {EXAMPLE} --log /dev/null --interval 1"
)
"""Step 0 of the security tests' jobs: a program that catches its checkpoint signal (the
example counter, counting nowhere), so the step is checkpointable; images in
``<work>/<job>.step0/task0/g<N>`` (written through the link ``task0/current``)."""


def submit_under_run(
    cluster: SlurmCluster, user: str, workdir: Path, name: str | None = None
) -> int:
    """A batch job of ``user`` whose step 0 runs ``UNDER_RUN``; its id.

    Returns once the wrapper registered the step and recorded that its program catches
    the checkpoint signal (its state file then no longer changes by itself).
    """
    name = name or f"sec-{uuid.uuid4().hex[:6]}"
    out = cluster.run(
        "sbatch", "--parsable", "-p", "debug", "-J", name, "-D", str(workdir),
        "-o", str(workdir / "slurm-%j.out"), "--wrap", UNDER_RUN,
        user=user,
    )  # fmt: skip
    job_id = int(out.stdout.strip().split(";")[0])
    wait_for(lambda: catches_signal(workdir / ".sckpt", job_id), timeout=90)
    output = workdir / f"slurm-{job_id}.out"
    wait_for(lambda: output.exists() and "counter: starting" in output.read_text(), timeout=30)
    return job_id


_FIELDS = ("JobState", "Restarts", "Priority", "ReqNodeList", "ExcNodeList", "Reason", "Requeue")


def job_facts(cluster: SlurmCluster, job_id: int) -> dict[str, str]:
    """What ``scontrol show job`` says of the job (the fields an action could change)."""
    out = cluster.run("scontrol", "show", "job", "-o", str(job_id)).stdout
    found = dict(re.findall(r"(\w+)=(\S*)", out))
    return {key: found.get(key, "") for key in _FIELDS}


def running_steps(cluster: SlurmCluster, job_id: int) -> list[str]:
    out = cluster.run("squeue", "-s", "-h", "-j", str(job_id), "-o", "%i").stdout
    return sorted(line.strip() for line in out.splitlines() if line.strip())


Digest = dict[str, tuple[int, int, str]]


def tree_digest(path: Path) -> Digest:
    """Every entry under ``path``: (uid, mode, sha256 of a file's bytes) by relative name."""
    out: Digest = {}
    for entry in sorted(path.rglob("*")):
        st = entry.lstat()
        digest = ""
        if entry.is_file() and not entry.is_symlink():
            digest = hashlib.sha256(entry.read_bytes()).hexdigest()
        out[str(entry.relative_to(path))] = (st.st_uid, st.st_mode, digest)
    return out
