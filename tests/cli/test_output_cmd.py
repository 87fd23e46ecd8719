"""``sckpt output`` on the simulated cluster: tail's lines, --json, and its refusals."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.model import JobState
from sckpt.backend.simulator import SimulatedCluster

from .conftest import CliEnv


@pytest.fixture
def outdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sckpt-output-cli-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_lines_stderr_and_json(cli_env: CliEnv, cluster: SimulatedCluster, outdir: Path) -> None:
    job = cluster.control.submit("alice", name="w", state=JobState.RUNNING).job_id
    out, err = outdir / "o.txt", outdir / "e.txt"
    out.write_bytes(b"".join(b"out %d\n" % i for i in range(1, 21)))
    err.write_bytes(b"err 1\nerr 2")
    cluster.control.set_output_paths(job, str(out), str(err))
    got = cli_env.run("--as-user", "alice", "output", str(job), "--lines", "3")
    assert (got.code, got.out, got.err) == (0, "out 18\nout 19\nout 20\n", "")
    got = cli_env.run("--as-user", "alice", "output", f"{job}.batch", "--stderr", "-n", "1")
    assert (got.code, got.out) == (0, "err 2")
    document = json.loads(cli_env.run("--as-user", "alice", "--json", "output", str(job)).out)
    assert document == {
        "job_id": job,
        "state": "RUNNING",
        "user": "alice",
        "stdout": str(out),
        "stderr": str(err),
        "stream": "stdout",
        "path": str(out),
        "readable": True,
        "problem": None,
        "size": out.stat().st_size,
    }


def test_refusals(cli_env: CliEnv, cluster: SimulatedCluster, outdir: Path) -> None:
    job = cluster.control.submit("alice", name="w", state=JobState.PENDING).job_id
    cluster.control.set_output_paths(job, str(outdir / "later.out"))
    got = cli_env.run("--as-user", "alice", "output", str(job))
    assert got.code == 1 and got.out == ""
    assert got.err == f"sckpt: not written yet: {outdir}/later.out (the job has not started)\n"
    as_json = cli_env.run("--as-user", "alice", "--json", "output", str(job))
    assert as_json.code == 1 and json.loads(as_json.out)["readable"] is False
    missing = cli_env.run("--as-user", "alice", "output", "4000000")
    assert missing.code == 1 and "ESLURM_INVALID_JOB_ID" in missing.err
    for argv, says in (
        (("output", str(job), "--lines", "x"), "--lines: expected a number"),
        (("--json", "output", str(job), "--follow"), "cannot be combined with --follow"),
        (("output",), "JOB"),
    ):
        bad = cli_env.run("--as-user", "alice", *argv)
        assert bad.code == 2 and says in bad.err and "Traceback" not in bad.err
