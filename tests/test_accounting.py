"""scripts/slurm-cluster --accounting: real MariaDB + slurmdbd and two clusters registered in it.

What Slurm's own commands see through slurmdbd (sacctmgr, squeue -M, sacct -M, --duplicates),
and that the script's status/down answer with the right exit codes and stop only their own.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid
from pathlib import Path

import pytest

from .conftest import (
    ACCOUNTING_CLUSTERS,
    AccountingSetup,
    SlurmCluster,
    accounting_logs,
    accounting_script,
    accounting_setup,
)
from .helpers import wait_for

pytestmark = pytest.mark.slurm


def _by_cluster(output: str) -> dict[str, list[str]]:
    """``squeue -M``'s output: the lines under each ``CLUSTER: name`` heading, less the header.

    (``-h`` would drop the ``CLUSTER:`` headings too.)
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith("CLUSTER: "):
            current = sections.setdefault(line.removeprefix("CLUSTER: ").strip(), [])
        elif line.strip() and current is not None and line.split()[0] != "JOBID":
            current.append(line.strip())
    return sections


def _sacct(cluster: SlurmCluster, *argv: str) -> list[list[str]]:
    done = cluster.run("sacct", "-n", "-P", "-X", *argv)
    return [line.split("|") for line in done.stdout.splitlines() if line]


def _state(cluster: SlurmCluster, job: str) -> str:
    return cluster.run("squeue", "-h", "-j", job, "-o", "%T", check=False).stdout.strip()


def test_sacctmgr_lists_both_clusters_and_the_test_users(
    slurm_accounting: AccountingSetup,
) -> None:
    a = slurm_accounting.clusters["sckpt-a"]
    shown = a.run(
        "sacctmgr", "-n", "-P", "show", "cluster", "format=cluster,controlhost,controlport"
    )
    rows = {line.split("|")[0]: line.split("|")[1:] for line in shown.stdout.splitlines()}
    port = slurm_accounting.port
    # Each slurmctld registered itself (host and port are what -M uses to reach it).
    assert rows == {
        "sckpt-a": ["127.0.0.1", str(port + 2)],
        "sckpt-b": ["127.0.0.1", str(port + 4)],
    }
    assoc = a.run(
        "sacctmgr", "-n", "-P", "show", "assoc", "where", "account=sckpt", "format=cluster,user"
    ).stdout.split()
    for name in ACCOUNTING_CLUSTERS:
        for user in ("sckpt-alice", "sckpt-bob", "root"):
            assert f"{name}|{user}" in assoc


def test_a_job_on_each_cluster_shows_in_squeue_all_and_then_in_sacct(
    slurm_accounting: AccountingSetup,
) -> None:
    a, b = (slurm_accounting.clusters[name] for name in ACCOUNTING_CLUSTERS)
    tag = uuid.uuid4().hex[:8]
    jobs: dict[str, str] = {}
    for name, user in (("sckpt-a", "sckpt-alice"), ("sckpt-b", "sckpt-bob")):
        # Submitted through cluster A's slurm.conf: -M sckpt-b goes through slurmdbd.
        out = a.run(
            "sbatch",
            "--parsable",
            "-M",
            name,
            "-J",
            f"{name}-{tag}",
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 4",
            user=user,
        ).stdout.strip()
        job_id, _, on = out.partition(";")
        assert on == name, out
        jobs[name] = job_id
    # From cluster B's slurm.conf too: -M all lists both clusters, each with its own job.
    for via in (a, b):
        shown = _by_cluster(via.run("squeue", "-M", "all", "-o", "%i %j %u").stdout)
        assert set(shown) == set(ACCOUNTING_CLUSTERS), shown
        assert f"{jobs['sckpt-a']} sckpt-a-{tag} sckpt-alice" in shown["sckpt-a"]
        assert f"{jobs['sckpt-b']} sckpt-b-{tag} sckpt-bob" in shown["sckpt-b"]
        assert not any(tag in line for line in shown["sckpt-a"] if "sckpt-a-" not in line)
    for name, user in (("sckpt-a", "sckpt-alice"), ("sckpt-b", "sckpt-bob")):
        rows = wait_for(
            functools.partial(_completed, a, name, jobs[name]),
            60,
            0.5,
            what=f"{name} job {jobs[name]} completed in sacct -M {name}",
        )
        assert rows == [[jobs[name], name, f"{name}-{tag}", user, "sckpt", "COMPLETED"]]


def _completed(via: SlurmCluster, cluster: str, job: str) -> list[list[str]]:
    """sacct -M CLUSTER -j JOB's record, once the job completed (its records come late)."""
    fields = "jobid,cluster,jobname,user,account,state"
    rows = _sacct(via, "-M", cluster, "-j", job, "-o", fields)
    return rows if rows and all(r[5] == "COMPLETED" for r in rows) else []


def test_a_job_requeued_twice_has_three_records_with_duplicates(
    slurm_accounting: AccountingSetup,
) -> None:
    b = slurm_accounting.clusters["sckpt-b"]
    job = b.run("sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 300").stdout.strip()
    try:
        for _ in range(2):
            # A requeued job starts again once its old credential expired (cred_expire=10).
            wait_for(lambda: _state(b, job) == "RUNNING", 90, 0.5, what=f"job {job} running")
            b.run("scontrol", "requeue", job)
        # scancel of a job still COMPLETING its requeue is lost: cancel it once it pends.
        wait_for(lambda: _state(b, job) == "PENDING", 60, 0.5, what=f"job {job} pending again")
    finally:
        b.run("scancel", job, check=False)
    rows = wait_for(
        lambda: (
            r if len(r := _sacct(b, "--duplicates", "-j", job, "-o", "jobid,state")) == 3 else []
        ),
        60,
        0.5,
        what=f"three records for job {job} in sacct --duplicates",
    )
    assert [r[1] for r in rows] == ["REQUEUED", "REQUEUED", "CANCELLED by 0"]
    # Without --duplicates, sacct shows only the last one.
    assert [r[1] for r in _sacct(b, "-j", job, "-o", "jobid,state")] == ["CANCELLED by 0"]


def _alive(pid: int, name: str) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == name
    except OSError:
        return False


def test_status_and_down_of_a_second_setup_leave_the_others_running(
    slurm_accounting: AccountingSetup, slurm_cluster: SlurmCluster
) -> None:
    """A throwaway setup on other ports: status 1 before up, 0 while up, down 0 and complete."""
    setup = accounting_setup(Path(f"/tmp/sckpt-acct-test-{os.getpid()}"), 46880)
    assert accounting_script(setup, "status").returncode == 1
    up = accounting_script(setup, "up")
    try:
        assert up.returncode == 0, up.stderr + accounting_logs(setup)
        assert (
            up.stdout.splitlines()[0] == f"export SLURM_CONF={setup.directory}/sckpt-a/slurm.conf"
        )
        status = accounting_script(setup, "status")
        assert status.returncode == 0, status.stderr
        for line in (
            "munged running",
            "mariadbd running",
            "slurmdbd running",
            "sckpt-a slurmctld running",
            "sckpt-b slurmd running",
            "sckpt-a sckpt-a-node idle",
            "sckpt-b sckpt-b-node idle",
            "sckpt-b|127.0.0.1|46884",
        ):
            assert line in status.stderr
        conf = (setup.directory / "slurmdbd.conf").stat()
        assert (conf.st_mode & 0o777, conf.st_uid) == (0o600, 0)
        pids = {
            "mariadbd": setup.directory / "mariadb" / "mariadbd.pid",
            "slurmdbd": setup.directory / "run" / "slurmdbd.pid",
            "munged": setup.directory / "run" / "munged.pid",
            **{
                d: setup.directory / name / "run" / f"{d}.pid"
                for name in ACCOUNTING_CLUSTERS
                for d in ("slurmctld", "slurmd")
            },
        }
        running = {(name, int(path.read_text())) for name, path in pids.items()}
        assert all(_alive(pid, name) for name, pid in running)
    finally:
        down = accounting_script(setup, "down", timeout=120)
    assert down.returncode == 0, down.stderr
    assert not any(_alive(pid, name) for name, pid in running)
    assert not setup.directory.exists()
    assert accounting_script(setup, "status").returncode == 1
    assert accounting_script(setup, "down").returncode == 0  # twice is harmless
    # The session's accounting setup and the shared test cluster still answer.
    assert accounting_script(slurm_accounting, "status").returncode == 0
    assert slurm_cluster.run("sinfo", "-h", "-o", "%t").stdout.split()[0] in (
        "idle",
        "mix",
        "alloc",
        "comp",
    )


def _listening(candidates: tuple[int, ...]) -> socket.socket:
    """A socket listening on the first of ``candidates`` that is free.

    46870-46899 lies in Linux's ephemeral range: srun's own listening sockets may hold one.
    """
    for port in candidates:
        taken = socket.socket()
        try:
            taken.bind(("127.0.0.1", port))
        except OSError:
            taken.close()
            continue
        taken.listen()
        return taken
    pytest.fail(f"none of the ports {candidates} is free to take")


def test_a_taken_port_fails_up_in_one_line_and_starts_nothing(
    slurm_accounting: AccountingSetup,
) -> None:
    with _listening((46890, 46892, 46894, 46888, 46886)) as taken:
        port = taken.getsockname()[1]
        # The port of its mariadbd, the first one checked.
        setup = accounting_setup(Path(f"/tmp/sckpt-acct-test-{os.getpid()}"), port)
        up = accounting_script(setup, "up", timeout=120)
    try:
        assert up.returncode == 1
        last = up.stderr.strip().splitlines()[-1]
        assert last.startswith(f"slurm-cluster: port {port} (for mariadbd) is in use"), up.stderr
        assert not (setup.directory / "run" / "munged.pid").exists()
        assert not (setup.directory / "mariadb" / "mariadbd.pid").exists()
    finally:
        accounting_script(setup, "down", timeout=120)
