"""sckpt cancel, hold, release, requeue against the real Slurm 22.05 cluster, beside scancel
and scontrol: for each situation the same job is given twice (or one job to each tool in
turn), and sckpt's line carries the message scancel/scontrol print for it, its exit code
is 0 where theirs is and 1 where theirs is not, and the job's state afterwards (squeue,
scontrol show job) is the same.  Only jobs these tests submit are touched; all are
cancelled at the end.

scancel's exit status for a refusal is Slurm's code truncated to 8 bits (210 for access
denied); sckpt's is 1, its README's contract, with the code in the line.  scancel says
nothing and exits 0 when told to end a job that has already ended; sckpt says
ESLURM_ALREADY_DONE (scancel -v's message) and exits 1.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import SlurmCluster
from ..helpers import wait_for
from .test_real_cluster import audit_lines, config, sckpt, shared_dir, squeue_state, submit

pytestmark = pytest.mark.slurm
__all__ = ["config", "shared_dir"]  # module fixtures shared with test_real_cluster

NO_SUCH_JOB = "4000000000"


@pytest.fixture
def made(slurm_cluster: SlurmCluster) -> Iterator[list[int]]:
    """The jobs a test submits (it appends them); all cancelled afterwards."""
    jobs: list[int] = []
    yield jobs
    if jobs:
        slurm_cluster.run("scancel", *map(str, jobs), check=False)


def alice_job(cluster: SlurmCluster, made: list[int], *args: str) -> int:
    job = submit(cluster, "-J", "jobctl", *args, user=cluster.users[0])
    made.append(job)
    return job


def show(cluster: SlurmCluster, job: int) -> dict[str, str]:
    """``scontrol show job -o`` as a dict (JobState, Reason, Priority, Restarts ...)."""
    out = cluster.run("scontrol", "-o", "show", "job", str(job), check=False).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


def reason(cluster: SlurmCluster, job: int) -> str:
    return cluster.run("squeue", "-h", "-j", str(job), "-o", "%r", check=False).stdout.strip()


def running(cluster: SlurmCluster, job: int) -> None:
    wait_for(lambda: squeue_state(cluster, job) == "RUNNING", timeout=60)


def run_as(cluster: SlurmCluster, user: str | None, *argv: str) -> tuple[int, str]:
    """A Slurm command as ``user``: (exit code, stdout + stderr)."""
    done = cluster.run(*argv, user=user, check=False)
    return done.returncode, done.stdout + done.stderr


def home_of(config: Path, user: str) -> Path:
    home = config.parent / user
    home.mkdir(exist_ok=True)
    home.chmod(0o777)
    return home


def sckpt_as(
    cluster: SlurmCluster, config: Path, user: str | None, *argv: str
) -> tuple[int, str, str]:
    home = home_of(config, user) if user else None
    done = sckpt(cluster, config, *argv, user=user, home=home)
    return done.returncode, done.stdout, done.stderr


def test_cancel_as_scancel_running_then_already_done(
    slurm_cluster: SlurmCluster, config: Path, made: list[int]
) -> None:
    alice = slurm_cluster.users[0]
    ours, theirs = (alice_job(slurm_cluster, made, "--wrap", "sleep 600") for _ in range(2))
    running(slurm_cluster, ours)
    running(slurm_cluster, theirs)
    code, out, err = sckpt_as(slurm_cluster, config, alice, "cancel", str(ours))
    assert (code, out, err) == (0, f"{ours}: cancel requested\n", "")
    assert run_as(slurm_cluster, alice, "scancel", str(theirs)) == (0, "")
    for job in (ours, theirs):
        wait_for(lambda job=job: show(slurm_cluster, job).get("JobState") == "CANCELLED")
    # Ended already: scancel -v says why (and exits 0); sckpt says the same and exits 1.
    scancel_code, said = run_as(slurm_cluster, alice, "scancel", "-v", str(theirs))
    assert scancel_code == 0
    assert f"Kill job error on job id {theirs}: Job/step already completing or completed" in said
    code, out, err = sckpt_as(slurm_cluster, config, alice, "cancel", str(ours))
    assert (code, out) == (1, "")
    assert err == (
        f"sckpt: cancel {ours}: ESLURM_ALREADY_DONE (2021): "
        "Job/step already completing or completed\n"
    )
    home = home_of(config, alice)
    results = [
        (x["operation"], x["target"], x["result"]["name"]) for x in audit_lines(config, home)
    ]
    assert results[-2:] == [
        ("cancel", str(ours), "SLURM_SUCCESS"),
        ("cancel", str(ours), "ESLURM_ALREADY_DONE"),
    ]


def test_cancel_of_another_users_job_is_refused_as_scancel(
    slurm_cluster: SlurmCluster, config: Path, made: list[int]
) -> None:
    bob = slurm_cluster.users[1]
    job = alice_job(slurm_cluster, made, "--wrap", "sleep 600")
    running(slurm_cluster, job)
    scancel_code, said = run_as(slurm_cluster, bob, "scancel", str(job))
    assert scancel_code != 0 and "Access/permission denied" in said
    code, out, err = sckpt_as(slurm_cluster, config, bob, "cancel", str(job))
    assert (code, out) == (1, "")
    assert err == (
        f"sckpt: cancel {job}: ESLURM_ACCESS_DENIED (2002): Access/permission denied; "
        f"job {job} belongs to {slurm_cluster.users[0]}; only its owner or an operator "
        "may do this\n"
    )
    assert squeue_state(slurm_cluster, job) == "RUNNING"


def test_cancel_signal_as_scancel_signal(
    slurm_cluster: SlurmCluster, config: Path, made: list[int]
) -> None:
    """Twin jobs whose step is ``sleep``: USR1 (not caught) ends the step as scancel -s
    USR1 does, and both jobs end the same way."""
    alice = slurm_cluster.users[0]
    script = "srun --overlap -n1 sleep 600; sleep 600"
    ours, theirs = (alice_job(slurm_cluster, made, "--wrap", script) for _ in range(2))
    for job in (ours, theirs):
        wait_for(
            lambda job=job: (
                f"{job}.0"
                in slurm_cluster.run(
                    "squeue", "-h", "-s", "-j", str(job), "-o", "%i", check=False
                ).stdout.split()
            ),
            timeout=60,
        )
    code, out, _err = sckpt_as(
        slurm_cluster, config, alice, "cancel", "--signal", "USR1", str(ours)
    )
    assert (code, out) == (0, f"{ours}: signal SIGUSR1 sent\n")
    assert run_as(slurm_cluster, alice, "scancel", "-s", "USR1", str(theirs))[0] == 0

    def steps(job: int) -> list[str]:
        out = slurm_cluster.run("squeue", "-h", "-s", "-j", str(job), "-o", "%i", check=False)
        return sorted(s.split(".", 1)[1] for s in out.stdout.split())

    wait_for(lambda: steps(ours) == steps(theirs) and "0" not in steps(ours), timeout=60)
    assert squeue_state(slurm_cluster, ours) == squeue_state(slurm_cluster, theirs)


def test_hold_release_as_scontrol(
    slurm_cluster: SlurmCluster, config: Path, made: list[int]
) -> None:
    alice = slurm_cluster.users[0]
    # Pending behind a begin time, so that neither starts while we look.
    ours, theirs = (
        alice_job(slurm_cluster, made, "--begin", "now+1hour", "--wrap", "sleep 600")
        for _ in range(2)
    )
    assert sckpt_as(slurm_cluster, config, alice, "hold", str(ours))[:2] == (
        0,
        f"{ours}: hold requested\n",
    )
    assert run_as(slurm_cluster, alice, "scontrol", "hold", str(theirs)) == (0, "")
    assert reason(slurm_cluster, ours) == reason(slurm_cluster, theirs) == "JobHeldUser"
    assert show(slurm_cluster, ours)["Priority"] == show(slurm_cluster, theirs)["Priority"] == "0"
    # root's hold is an admin hold, as scontrol's
    assert sckpt_as(slurm_cluster, config, None, "hold", str(ours))[0] == 0
    assert run_as(slurm_cluster, None, "scontrol", "hold", str(theirs))[0] == 0
    assert reason(slurm_cluster, ours) == reason(slurm_cluster, theirs) == "JobHeldAdmin"
    # the owner cannot release an admin hold, with either tool
    scontrol_code, said = run_as(slurm_cluster, alice, "scontrol", "release", str(theirs))
    code, _out, err = sckpt_as(slurm_cluster, config, alice, "release", str(ours))
    assert scontrol_code == 1 and code == 1
    message = said.splitlines()[0].rsplit(" for job ", 1)[0]  # "Access/permission denied"
    assert message and f": {message}" in err and err.startswith(f"sckpt: release {ours}: ESLURM_")
    assert reason(slurm_cluster, ours) == reason(slurm_cluster, theirs) == "JobHeldAdmin"
    assert sckpt_as(slurm_cluster, config, None, "release", str(ours))[0] == 0
    assert run_as(slurm_cluster, None, "scontrol", "release", str(theirs))[0] == 0
    wait_for(lambda: reason(slurm_cluster, ours) == reason(slurm_cluster, theirs), timeout=60)
    assert not reason(slurm_cluster, ours).startswith("JobHeld")
    assert show(slurm_cluster, ours)["Priority"] != "0"


def test_hold_of_another_users_job_and_of_an_unknown_job_as_scontrol(
    slurm_cluster: SlurmCluster, config: Path, made: list[int]
) -> None:
    bob = slurm_cluster.users[1]
    job = alice_job(slurm_cluster, made, "--begin", "now+1hour", "--wrap", "sleep 600")
    for verb in ("hold", "release"):
        scontrol_code, said = run_as(slurm_cluster, bob, "scontrol", verb, str(job))
        code, out, err = sckpt_as(slurm_cluster, config, bob, verb, str(job))
        assert scontrol_code == code == 1 and out == ""
        assert said.startswith(f"Invalid user id for job {job}\n")
        # scontrol's code and message, then whose job it is, as a checkpoint refusal says.
        assert err == (
            f"sckpt: {verb} {job}: ESLURM_USER_ID_MISSING (2010): Invalid user id; "
            f"job {job} belongs to {slurm_cluster.users[0]}; only its owner or an operator "
            "may do this\n"
        )
    assert reason(slurm_cluster, job) == "BeginTime"
    for verb in ("hold", "release", "requeue"):
        scontrol_code, said = run_as(slurm_cluster, None, "scontrol", verb, NO_SUCH_JOB)
        code, out, err = sckpt_as(slurm_cluster, config, None, verb, NO_SUCH_JOB)
        assert scontrol_code == code == 1 and out == ""
        assert said.startswith(f"Invalid job id specified for job {NO_SUCH_JOB}\n")
        assert err == (
            f"sckpt: {verb} {NO_SUCH_JOB}: ESLURM_INVALID_JOB_ID (2017): Invalid job id specified\n"
        )


def test_requeue_as_scontrol_running_pending_and_not_batch(
    slurm_cluster: SlurmCluster, config: Path, made: list[int]
) -> None:
    alice = slurm_cluster.users[0]
    ours, theirs = (alice_job(slurm_cluster, made, "--wrap", "sleep 600") for _ in range(2))
    running(slurm_cluster, ours)
    running(slurm_cluster, theirs)
    code, out, err = sckpt_as(slurm_cluster, config, alice, "requeue", str(ours))
    assert (code, out, err) == (0, f"{ours}: requeue requested\n", "")
    assert run_as(slurm_cluster, alice, "scontrol", "requeue", str(theirs)) == (0, "")
    for job in (ours, theirs):
        wait_for(lambda job=job: show(slurm_cluster, job).get("JobState") == "PENDING")
    assert show(slurm_cluster, ours)["Restarts"] == show(slurm_cluster, theirs)["Restarts"] == "1"
    # the scheduler moves each reason on (BeginTime, then None) in its own time
    wait_for(lambda: reason(slurm_cluster, ours) == reason(slurm_cluster, theirs), timeout=60)
    # Pending now: both refuse a second requeue with ESLURM_JOB_PENDING.
    scontrol_code, said = run_as(slurm_cluster, alice, "scontrol", "requeue", str(theirs))
    code, out, err = sckpt_as(slurm_cluster, config, alice, "requeue", str(ours))
    assert scontrol_code == code == 1
    assert said == f"Job is pending execution for job {theirs}\n"
    assert err == f"sckpt: requeue {ours}: ESLURM_JOB_PENDING (2024): Job is pending execution\n"
    # A job without a batch script (salloc --no-shell): only batch jobs are requeued.
    slurm_cluster.run("salloc", "--no-shell", "-J", "jobctl-alloc", user=alice)
    listed = slurm_cluster.run("squeue", "-h", "-n", "jobctl-alloc", "-o", "%i").stdout.split()
    made.extend(int(j) for j in listed)
    alloc = int(listed[0])
    scontrol_code, said = run_as(slurm_cluster, alice, "scontrol", "requeue", str(alloc))
    code, out, err = sckpt_as(slurm_cluster, config, alice, "requeue", str(alloc))
    assert scontrol_code == code == 1
    assert said == f"Only batch jobs are accepted or processed for job {alloc}\n"
    assert err == (
        f"sckpt: requeue {alloc}: ESLURM_BATCH_ONLY (2039): "
        "Only batch jobs are accepted or processed\n"
    )
    assert squeue_state(slurm_cluster, alloc) == "RUNNING"


def test_read_only_refuses_the_verbs_on_the_real_cluster(
    slurm_cluster: SlurmCluster, config: Path, made: list[int]
) -> None:
    job = alice_job(slurm_cluster, made, "--wrap", "sleep 600")
    running(slurm_cluster, job)
    before = show(slurm_cluster, job)
    for verb in ("cancel", "hold", "release", "requeue"):
        code, out, err = sckpt_as(slurm_cluster, config, None, "--read-only", verb, str(job))
        assert (code, out) == (1, "")
        assert err.startswith(f"sckpt: {verb} {job} refused: sckpt is in read-only mode")
    after = show(slurm_cluster, job)
    assert (after["JobState"], after["Priority"], after["Restarts"]) == (
        before["JobState"],
        before["Priority"],
        before["Restarts"],
    )
    lines = audit_lines(config)[-4:]
    assert [(x["operation"], x["result"]["name"]) for x in lines] == [
        (verb, "READ_ONLY") for verb in ("cancel", "hold", "release", "requeue")
    ]
