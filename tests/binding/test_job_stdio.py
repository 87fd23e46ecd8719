"""``Binding.job_stdio``: a job's StdOut/StdErr exactly as ``scontrol show job`` prints them.

Slurm expands the paths (``slurm_get_job_stdout``); these cases make it do work: the
default ``slurm-%j.out`` in the work dir, patterns (%x %u %j), an array task (%A_%a), a
relative path (taken from the work dir), a separate error file, and a job with none.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from sckpt.backend import errors as E
from sckpt.backend.libslurm import Binding

from ..conftest import SlurmCluster

pytestmark = pytest.mark.slurm


def _scontrol(cluster: SlurmCluster, job: int) -> tuple[str, str]:
    out = cluster.run("scontrol", "-o", "show", "job", str(job)).stdout.splitlines()[0]
    fields = dict(re.findall(r"(\w+)=(\S*)", out))
    return fields.get("StdOut", ""), fields.get("StdErr", "")


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["-J", "named", "-o", "%x-%u-%j.log"],
        ["-o", "out-%j.txt", "-e", "/tmp/err-%j.txt"],
        ["--array", "3-4", "-o", "arr-%A_%a.out"],
    ],
    ids=["default", "patterns", "relative-and-error", "array"],
)
def test_paths_equal_scontrols(
    binding: Binding, slurm_cluster: SlurmCluster, args: list[str]
) -> None:
    workdir = tempfile.mkdtemp(prefix="sckpt-stdio-")
    # not the ``submit`` fixture: it sets -o /dev/null, and the default is a case here
    out = slurm_cluster.run(
        "sbatch", "--parsable", "--hold", "-D", workdir, *args, "--wrap", "true"
    )
    job = int(out.stdout.strip().split(";")[0])
    try:
        record = binding.job_stdio(job)
        assert (record.std_out, record.std_err) == _scontrol(slurm_cluster, job)
        assert record.std_out.startswith(workdir) and "%" not in record.std_out
        assert record.job_id == job and record.batch
        if not args:
            assert record.std_out == f"{workdir}/slurm-{job}.out" == record.std_err
    finally:
        slurm_cluster.run("scancel", str(job), check=False)
        Path(workdir).rmdir()


def test_an_unknown_job_is_slurms_refusal(binding: Binding) -> None:
    with pytest.raises(E.InvalidJobId):
        binding.job_stdio(4_000_000_000)
