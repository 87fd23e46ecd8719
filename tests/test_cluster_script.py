"""scripts/slurm-cluster: `up` twice is harmless, `down` leaves no daemon of its own.

Runs a second, throwaway cluster on other ports so the session's shared cluster is untouched.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from .conftest import CLUSTER_SCRIPT, IN_CI, Slurm1905, SlurmCluster

pytestmark = pytest.mark.slurm

DAEMONS = ("munged", "slurmctld", "slurmd")


def _script(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SCKPT_CLUSTER_DIR": str(directory),
        "SCKPT_CTLD_PORT": "46917",
        "SCKPT_SLURMD_PORT": "46918",
    }
    return subprocess.run(
        [str(CLUSTER_SCRIPT), *args], env=env, capture_output=True, text=True, timeout=900
    )


def _pids(directory: Path) -> dict[str, int]:
    return {d: int((directory / "run" / f"{d}.pid").read_text()) for d in DAEMONS}


def _alive(pid: int, name: str) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == name
    except OSError:
        return False


def test_a_connection_on_the_controller_port_fails_up_in_one_line(
    tmp_path: Path, slurm_cluster: SlurmCluster
) -> None:
    """Not only a listener: a connection whose local port is slurmctld's makes its bind fail.

    CI once lost a module's cluster that way ("slurm_init_msg_engine_port error Address
    already in use" after the listening check passed); `up` now names the port instead.
    """
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI must run as root to start a Slurm cluster")
        pytest.skip("needs root")
    with socket.create_server(("127.0.0.1", 0)) as server, socket.socket() as client:
        client.bind(("127.0.0.1", 46917))
        client.connect(server.getsockname())
        peer, _ = server.accept()
        with peer:
            up = _script(tmp_path / "cluster", "up")
    try:
        assert up.returncode == 1, up.stderr
        last = up.stderr.strip().splitlines()[-1]
        assert last.startswith("slurm-cluster: port 46917 (for slurmctld) is in use"), up.stderr
        assert "SCKPT_CTLD_PORT" in last
        assert not (tmp_path / "cluster" / "run" / "slurmctld.pid").exists()
    finally:
        _script(tmp_path / "cluster", "down")


@pytest.mark.parametrize("release", ["system", "19.05"])
def test_up_twice_is_harmless_and_down_stops_only_its_daemons(
    tmp_path: Path, slurm_cluster: SlurmCluster, request: pytest.FixtureRequest, release: str
) -> None:
    """For the system's 22.05 and for 19.05: the other clusters keep answering after down."""
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI must run as root to start a Slurm cluster")
        pytest.skip("needs root")
    args = () if release == "system" else ("--release", release)
    others: list[SlurmCluster] = [slurm_cluster]
    if release == "19.05":
        others.append(request.getfixturevalue("slurm1905"))  # built, and running beside
    directory = tmp_path / "cluster"
    first = _script(directory, "up", *args)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().startswith(f"export SLURM_CONF={directory}/slurm.conf")
    try:
        pids = _pids(directory)
        assert all(_alive(pid, name) for name, pid in pids.items())

        second = _script(directory, "up", *args)
        assert second.returncode == 0, second.stderr
        assert _pids(directory) == pids  # nothing restarted, nothing duplicated

        status = _script(directory, "status", *args)
        assert status.returncode == 0
        assert "sckpt-node idle" in status.stderr
        conf = (directory / "slurm.conf").read_text()
        expected = [
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "AuthType=auth/munge",
            "SlurmdParameters=config_overrides",
            "SlurmctldPort=46917",
            # scavenger is preempted by the other partitions (tests/test_cluster_preemption.py)
            "PreemptType=preempt/partition_prio",
            "PartitionName=scavenger ",
        ]
        if release == "19.05":
            expected += ["CheckpointType=checkpoint/ompi", "SelectType=select/cons_res"]
        for line in expected:
            assert line in conf
        assert int(conf.split("MaxJobCount=")[1].split()[0]) >= 200000
    finally:
        down = _script(directory, "down", *args)
    assert down.returncode == 0, down.stderr
    assert not any(_alive(pid, name) for name, pid in pids.items())
    assert not directory.exists()
    # The shared clusters (other directories) still answer, their node up: jobs of other
    # tests may be running or ending on them (mix, alloc, comp), never down or drained.
    for other in others:
        assert other.run("sinfo", "-h", "-o", "%t").stdout.split()[0] in (
            "idle",
            "mix",
            "alloc",
            "comp",
        )


def test_release_1905_missing_source_is_one_line_and_exit_3(tmp_path: Path) -> None:
    env = {**os.environ, "SCKPT_SLURM_TARBALL": str(tmp_path / "slurm-19.05.8.tar.xz")}
    for command in ("build", "up", "env"):
        done = subprocess.run(
            [str(CLUSTER_SCRIPT), command, "--release", "19.05"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 3, done.stderr
        lines = done.stderr.strip().splitlines()
        assert lines[-1].startswith("slurm-cluster: Slurm 19.05 source not found"), lines
        assert str(tmp_path) in lines[-1] and "SCKPT_SLURM_TARBALL" in lines[-1]
        assert done.stdout == ""


def test_release_1905_is_built_once_and_keyed_by_the_tarball(slurm1905: Slurm1905) -> None:
    """A second build (as every `up` does) finds the cached install and does not rebuild."""
    marker = slurm1905.prefix / ".sckpt-built"
    before = marker.stat().st_mtime_ns
    done = subprocess.run(
        [str(CLUSTER_SCRIPT), "build", "--release", "19.05"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(slurm1905.prefix)
    assert marker.stat().st_mtime_ns == before and "building" not in done.stderr
    tarball_hash = marker.read_text().strip()
    assert slurm1905.prefix.name == f"slurm-19.05.8-{tarball_hash[:16]}"
    version = slurm1905.run("scontrol", "--version").stdout.strip()
    assert version == "slurm 19.05.8"
