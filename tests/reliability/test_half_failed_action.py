"""A vacate whose controller dies half-way, on a real cluster (cooperative engine, ``sckpt``).

The job: a batch job of sckpt-alice whose step ``.0`` is the example counter under
``sckpt run``, made slow inside its checkpoint (``--slow``: it writes ``state.tmp``, sleeps,
then renames it to ``state``).  ``sckpt vacate JOB.0`` runs as a separate process, as an
operator would type it.  As soon as the counter is inside its checkpoint (``state.tmp``
exists), slurmctld is killed: the checkpoint still finishes (the wrapper and the program need
only the filesystem), but the requeue that ends the job cannot reach the controller, and
libslurm gives up after MessageTimeout.  The controller is restarted only after the command
has returned.

What must hold: the command exits non-zero with a message that says the checkpoint finished
(and where its image is) but the job was not requeued; the audit line is a failure with the
same account; the state file's history records the same, with the checkpoint itself closed
and its image recorded; the image's bytes on disk are complete and consistent with the
program's log; and after the restart the job is still running (nothing claimed a requeue).

The same vacate is then made from the console (Pilot, in a child process:
``console_driver.py vacate-half``) with the keys an operator uses: its notification must say
"failed" with the same account, and no notification may claim success.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend.audit import read_records
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.model import StepId

from tests.conftest import ROOT, PrivateCluster
from tests.cooperative.conftest import EXAMPLE, SCKPT
from tests.helpers import catches_signal, wait_for

from .controller_support import wait_state_saved

pytestmark = pytest.mark.slurm

ALICE = "sckpt-alice"
EXIT_UNREACHABLE = 3
SLOW = 8
"""Seconds the counter spends inside its checkpoint: the window in which the controller dies."""

SCRIPT = f"""#!/bin/bash
srun -n1 {SCKPT} run --poll 0.5 --grace 0.5 --name step0 -- /usr/bin/python3 {EXAMPLE} \\
    --log $PWD/step0.log --slow {SLOW}
"""


@pytest.fixture
def work() -> Iterator[Path]:
    """A directory alice owns (the job's working dir: state files and images go there)."""
    top = Path(tempfile.mkdtemp(prefix="sckpt-half-", dir="/tmp"))
    top.chmod(0o755)
    work = top / "alice"
    work.mkdir()
    subprocess.run(["chown", f"{ALICE}:{ALICE}", str(work)], check=True)
    try:
        yield work
    finally:
        shutil.rmtree(top, ignore_errors=True)


def image_is_complete(state: bytes, log: bytes) -> tuple[int, int]:
    """``(count, log size)`` of a counter image, checked against the program's log.

    The image says "count log_size"; the log's first log_size bytes must be exactly the
    values 1..count, one per line (the counter's contract, examples/counter.py).
    """
    count, size = (int(x) for x in state.decode().split())
    assert count >= 1
    expected = "".join(f"{i}\n" for i in range(1, count + 1)).encode()
    assert size == len(expected)
    assert log[:size] == expected
    return count, size


def test_vacate_with_the_controller_killed_half_way(
    private_cluster: PrivateCluster, work: Path
) -> None:
    script = work / "job.sh"
    script.write_text(SCRIPT)
    out = private_cluster.run(
        "sbatch", "--parsable", "-J", "half-vacate", f"--chdir={work}", "-o", str(work / "out.txt"),
        str(script), user=ALICE, cwd=str(work),
    )  # fmt: skip
    job = int(out.stdout.strip().split(";")[0])
    store = StepStore(work / ".sckpt", StepId(job, 0))
    task = work / f"{job}.step0" / "task0"  # <job>.<step name>
    image = task / "g1"  # the generation this (first) checkpoint completes
    log = work / "step0.log"
    audit = work.parent / "audit.log"
    config = work.parent / "sckpt.toml"
    config.write_text(f'audit_log = "{audit}"\nengine = "cooperative"\n')
    vacate: subprocess.Popen[str] | None = None
    try:
        wait_for(lambda: catches_signal(store.directory, job) and log.exists(), timeout=90)
        wait_for(lambda: log.stat().st_size, timeout=30)
        wait_state_saved(private_cluster)  # the killed controller must still know the job
        vacate = subprocess.Popen(
            [str(SCKPT), "vacate", f"{job}.0", "--max-wait", "120"],
            env=private_cluster.env(SCKPT_CONFIG=str(config)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/tmp",
        )  # fmt: skip
        inside = task / "current" / "state.tmp"  # the generation being written
        wait_for(lambda: inside.exists() or vacate.poll() is not None, timeout=90)
        assert vacate.poll() is None, vacate.communicate()
        os.kill(private_cluster.pid("slurmctld"), signal.SIGKILL)
        killed = time.monotonic()
        stdout, stderr = vacate.communicate(timeout=180)
        took = time.monotonic() - killed

        # The command: non-zero ("cannot reach Slurm"), one clear line, no traceback.
        assert vacate.returncode == EXIT_UNREACHABLE, (stdout, stderr)
        assert "Traceback" not in stderr
        assert "vacate half done: the checkpoint finished" in stderr, stderr
        assert f"{job}.0 image {image}" in stderr, stderr
        assert f"job {job} was not requeued" in stderr, stderr
        assert "Unable to contact slurm controller" in stderr, stderr
        assert "requested" not in stdout + stderr and "accepted" not in stdout + stderr
        assert took < 120  # it gave up (MessageTimeout), it did not hang

        # The image: complete (renamed into place, no leftover), consistent with the log.
        state = (image / "state").read_bytes()
        assert not (image / "state.tmp").exists()
        count, _size = image_is_complete(state, log.read_bytes())

        # The state file: the checkpoint closed with its image, then the failed end.
        rec = store.read()
        assert rec is not None and rec.in_progress is None
        assert rec.error_code == 0 and rec.last_image == {"0": str(image)}
        ops = [(h["operation"], h["code"]) for h in rec.history]
        assert ops[-3][0] == "vacate" and ops[-3][1] == 0  # the request
        assert ops[-2] == ("done", 0)  # the checkpoint, complete
        assert ops[-1][0] == "vacate" and ops[-1][1] != 0  # the end that did not happen
        assert "not requeued" in rec.history[-1]["message"]

        # The audit log: one line, a failure, with the same account; no success anywhere.
        lines = [r for r in read_records(audit) if r["operation"] == "vacate"]
        assert len(lines) == 1, lines
        result = lines[0]["result"]
        assert result["code"] != 0 and result["name"].startswith("SLURMCTLD_COMMUNICATIONS")
        assert "half done" in lines[0]["hint"] and str(image) in lines[0]["hint"]

        # Controller back (same state): the job was never requeued, it still runs and
        # counts on, and the image on disk is the same bytes.
        up = private_cluster.script("up")
        assert up.returncode == 0, up.stderr[-2000:]
        squeue = private_cluster.run("squeue", "-h", "-j", str(job), "-o", "%t")
        assert squeue.stdout.strip() == "R"
        wait_for(lambda: int(log.read_text().split()[-1]) > count + 5, timeout=60)
        assert (image / "state").read_bytes() == state
    finally:
        if vacate is not None and vacate.poll() is None:
            vacate.kill()
            vacate.wait()
        if private_cluster.script("status").returncode != 0:
            private_cluster.script("up")
        private_cluster.run("scancel", str(job), check=False)
        wait_for(
            lambda: not private_cluster.run("squeue", "-h", "-j", str(job), check=False).stdout,
            timeout=90,
        )


# ------------------------------------------------------------------ the console


def drive_console_vacate(
    cluster: PrivateCluster, job: int, inside: Path, audit: Path, tmp: Path
) -> dict[str, Any]:
    """Run ``console_driver.py vacate-half`` against the private cluster; its report.

    A child process, as in test_controller_outage.py: libslurm takes one slurm.conf per
    process and this one may already talk to the shared cluster.
    """
    fields = {
        "conf": str(cluster.conf),
        "directory": str(cluster.directory),
        "node": cluster.node,
        "ctld_port": cluster.ctld_port,
        "slurmd_port": cluster.slurmd_port,
    }
    (tmp / "none.toml").write_text("")
    env = {
        **os.environ,
        "SLURM_CONF": str(cluster.conf),
        "SCKPT_CONFIG": str(tmp / "none.toml"),
        "SCKPT_DRIVER_AUDIT": str(audit),
        "SCKPT_DRIVER_WATCH": str(inside),
        "TEXTUAL_ANIMATIONS": "none",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "tests.reliability.console_driver", "vacate-half",
         json.dumps(fields), str(job), "1.0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert lines, (proc.stdout[-2000:], proc.stderr[-2000:])
    report: dict[str, Any] = json.loads(lines[-1][len("REPORT ") :])
    return report


def test_console_vacate_with_the_controller_killed_half_way_says_failed(
    private_cluster: PrivateCluster, work: Path, tmp_path: Path
) -> None:
    script = work / "job.sh"
    script.write_text(SCRIPT)
    out = private_cluster.run(
        "sbatch", "--parsable", "-J", "half-console", f"--chdir={work}",
        "-o", str(work / "out.txt"), str(script), user=ALICE, cwd=str(work),
    )  # fmt: skip
    job = int(out.stdout.strip().split(";")[0])
    store = StepStore(work / ".sckpt", StepId(job, 0))
    task = work / f"{job}.step0" / "task0"  # <job>.<step name>
    image = task / "g1"  # the generation this (first) checkpoint completes
    log = work / "step0.log"
    audit = work.parent / "audit.log"
    try:
        wait_for(lambda: catches_signal(store.directory, job) and log.exists(), timeout=90)
        wait_for(lambda: log.stat().st_size, timeout=30)
        wait_state_saved(private_cluster)  # the killed controller must still know the job
        inside = task / "current" / "state.tmp"  # the generation being written
        report = drive_console_vacate(private_cluster, job, inside, audit, tmp_path)

        # The keys reached the form and the confirmation; the kill fell inside the checkpoint.
        assert report["loaded"] and report["form_shown"] and report["confirm_shown"], report
        assert report["inside_after"] is not None, report
        assert report["reported_after_kill"] is not None, report
        assert report["reported_after_kill"] < 180, report  # gave up, did not hang

        # What the operator was told: failed, with what was done and what was not.
        about = [n for n in report["notifications"] if f"vacate {job}.0" in n["message"]]
        assert len(about) == 1, report["notifications"]
        (note,) = about
        assert note["title"] == "failed" and note["severity"] == "error", note
        message = note["message"]
        assert message.startswith(f"vacate {job}.0 failed: SLURMCTLD_COMMUNICATIONS"), message
        assert "vacate half done: the checkpoint finished" in message, message
        assert f"{job}.0 image {image}" in message, message
        assert f"job {job} was not requeued" in message, message
        # ... and nothing claimed a success: no "done", "requested" or "accepted", no
        # information toast.
        for shown in report["notifications"]:
            text = shown["message"]
            assert not any(w in text for w in (": done", "requested", "accepted")), shown
            assert shown["severity"] != "information" or shown["title"] != "vacate", shown
        assert report["return_code"] == 0

        # The audit line, the state file and the image say what the command line's test
        # checks: one failed vacate with the account; the checkpoint closed with its image.
        lines = [r for r in read_records(audit) if r["operation"] == "vacate"]
        assert len(lines) == 1, lines
        assert lines[0]["result"]["name"].startswith("SLURMCTLD_COMMUNICATIONS")
        assert "half done" in lines[0]["hint"] and str(image) in lines[0]["hint"]
        rec = store.read()
        assert rec is not None and rec.in_progress is None
        assert rec.error_code == 0 and rec.last_image == {"0": str(image)}
        ops = [(h["operation"], h["code"]) for h in rec.history]
        assert ops[-2] == ("done", 0) and ops[-1][0] == "vacate" and ops[-1][1] != 0
        state = (image / "state").read_bytes()
        assert not (image / "state.tmp").exists()
        count, _size = image_is_complete(state, log.read_bytes())

        # Controller back: the console recovered, and the job still runs (never requeued).
        assert report["restart_error"] == "" and report["recovered"], report
        assert "RUNNING" in report["screen_after"], report["screen_after"]
        squeue = private_cluster.run("squeue", "-h", "-j", str(job), "-o", "%t")
        assert squeue.stdout.strip() == "R"
        wait_for(lambda: int(log.read_text().split()[-1]) > count + 5, timeout=60)
        assert (image / "state").read_bytes() == state
    finally:
        if private_cluster.script("status").returncode != 0:
            private_cluster.script("up")
        private_cluster.run("scancel", str(job), check=False)
        wait_for(
            lambda: not private_cluster.run("squeue", "-h", "-j", str(job), check=False).stdout,
            timeout=90,
        )
