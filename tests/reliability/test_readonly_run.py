"""Read-only mode and ``sckpt run`` (the job-side wrapper), on the real cluster.

``sckpt run`` writes the step's state file when it registers the task and then carries out
checkpoint requests, so read-only mode refuses it, whichever way read-only is asked for:
``sckpt --read-only run``, ``sckpt run --read-only`` and ``read_only = true`` in the config.
A batch job of sckpt-alice runs the three as steps 0-2, then a control step (no read-only,
state and images in a subdirectory) that shows the same checks see a wrapper that did run.

What an operator can observe is asserted: each refused step exits 1 with one line naming the
step and read-only mode, the program never ran, nothing was written where the state files and
images go, and alice's audit log holds one READ_ONLY line per refusal.
"""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest

from tests.conftest import SlurmCluster
from tests.helpers import wait_for

from .security_support import ALICE, SCKPT, run_as, user_workdir

pytestmark = pytest.mark.slurm


def _job_done(cluster: SlurmCluster, job_id: int) -> bool:
    out = cluster.run("squeue", "-h", "-j", str(job_id), "-o", "%T", check=False).stdout
    return not out.strip()


def test_read_only_refuses_sckpt_run_and_audits_it(slurm_cluster: SlurmCluster) -> None:
    with user_workdir(ALICE, prefix="sckpt-ro-run-") as work:
        audit = work / "audit.log"
        rw = work / "rw.toml"
        rw.write_text(f'audit_log = "{audit}"\n')
        ro = work / "ro.toml"
        ro.write_text(f'read_only = true\naudit_log = "{audit}"\n')
        control = work / "control"
        control.mkdir()
        entry = pwd.getpwnam(ALICE)
        os.chown(control, entry.pw_uid, entry.pw_gid)
        script = work / "job.sh"
        script.write_text(
            "#!/bin/sh\n"
            f"srun -n1 {SCKPT} --read-only --config {rw} run -- touch {work}/ran0\n"
            'echo "rc0=$?"\n'
            f"srun -n1 {SCKPT} run --read-only --config {rw} -- touch {work}/ran1\n"
            'echo "rc1=$?"\n'
            f"SCKPT_CONFIG={ro} srun -n1 {SCKPT} run -- touch {work}/ran2\n"
            'echo "rc2=$?"\n'
            f"srun -n1 {SCKPT} --config {rw} run --state-dir {control}/.sckpt "
            f"--image-dir {control} -- touch {control}/ran3\n"
            'echo "rc3=$?"\n'
        )
        script.chmod(0o755)
        out_file = work / "job.out"
        submitted = run_as(
            slurm_cluster, ALICE,
            "sbatch", "--parsable", "-p", "debug", "-J", "ro-run", "-D", str(work),
            "-o", str(out_file), str(script),
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.stderr
        job_id = int(submitted.stdout.strip().split(";")[0])
        wait_for(lambda: _job_done(slurm_cluster, job_id), timeout=120, interval=0.5)
        wait_for(lambda: "rc3=" in (out_file.read_text() if out_file.exists() else ""))
        output = out_file.read_text()

        # exit status 1 and one line naming the step, for each way of asking for read-only
        for step in (0, 1, 2):
            assert f"rc{step}=1" in output, output
            assert (
                f"sckpt run: run {job_id}.{step} refused: sckpt is in read-only mode; "
                "touch was not started"
            ) in output, output
            assert not (work / f"ran{step}").exists()
        assert output.count("refused") == 3, output
        # nothing written where the state files and the images go
        assert not (work / ".sckpt").exists()
        assert not list(work.glob(f"{job_id}.*"))
        # the control step ran and registered: the checks above would have seen it
        assert "rc3=0" in output, output
        assert (control / "ran3").exists()
        assert (control / ".sckpt" / f"{job_id}.3.json").exists()

        records = [json.loads(line) for line in audit.read_text().splitlines()]
        assert [r["target"] for r in records] == [f"{job_id}.{step}" for step in (0, 1, 2)]
        for step, record in enumerate(records):
            assert record["operation"] == "run"
            assert record["engine"] == "wrapper"
            assert record["user"] == ALICE
            assert record["result"]["name"] == "READ_ONLY"
            assert record["arguments"] == {"program": ["touch", f"{work}/ran{step}"]}
        assert Path(audit).stat().st_uid == entry.pw_uid
