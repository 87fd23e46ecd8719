"""Only the job's processes reach a step's DMTCP coordinator, from this node or another.

A 2-task ``tcp_chat.py`` step of sckpt-alice under ``--coordinator step`` (the default) on
the real Slurm 22.05.  sckpt-bob runs ``dmtcp_command --kill/--quit/--checkpoint/--status``
and raw connections against both the step relay's loopback port (uid check) and its public
port (the job's secret must be proved first); a wrong secret and a replayed answer are
closed unread.  A second network namespace made here (``ip netns`` and a veth pair with
private addresses, removed after) stands in for another node: a connection from it with a
wrong secret is closed unread; a node relay there with the right secret is forwarded.  The
job is unharmed throughout: its conversation ends with an uninterrupted run's result.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.relay import NONCE_BYTES, proof

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, BOB, cancel
from tests.cooperative.step_jobs import ChatJob, expected, submit_chat
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

COUNT = 1500
NETNS = f"sckpt-i33s-{os.getpid()}"
HOST_SIDE, NS_SIDE = "10.233.33.1", "10.233.33.2"
PROBE = """
import socket, sys
host, port, answer = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
s = socket.create_connection((host, port), timeout=10)
nonce = b""
while len(nonce) < 32:
    chunk = s.recv(32 - len(nonce))
    if not chunk:
        break
    nonce += chunk
print("nonce", len(nonce), flush=True)
try:
    s.sendall(answer + b"x" * 4096)
    got = s.recv(4096)
    print("closed" if got == b"" else f"answered {got!r}")
except ConnectionResetError:
    print("closed unread")
except TimeoutError:
    print("open")
"""
NODE_RELAY = """
import subprocess, sys
from pathlib import Path
from sckpt.backend.checkpointing.dmtcp_coordinator import NodeRelay
relay = NodeRelay((sys.argv[1], int(sys.argv[2])), Path(sys.argv[3]).read_bytes())
port = relay.start()
done = subprocess.run([sys.argv[4], "-h", "127.0.0.1", "-p", str(port), "--status"],
                      capture_output=True, text=True, timeout=30)
print(done.stdout)
relay.close()
"""


@pytest.fixture
def job(dmtcp_install: object, shared_dir: Path, slurm_cluster: SlurmCluster) -> Iterator[ChatJob]:
    chat = submit_chat(slurm_cluster, shared_dir / "chat", 2, COUNT)
    try:
        wait_for(chat.registered, timeout=90)
        yield chat
    finally:
        cancel(slurm_cluster, chat.id)


@pytest.fixture
def netns() -> Iterator[str]:
    """A namespace reaching this one only over a veth pair (10.233.33.0/24)."""
    steps = [
        ["ip", "netns", "add", NETNS],
        ["ip", "link", "add", "veth-i33s0", "type", "veth", "peer", "name", "veth-i33s1"],
        ["ip", "link", "set", "veth-i33s1", "netns", NETNS],
        ["ip", "addr", "add", f"{HOST_SIDE}/24", "dev", "veth-i33s0"],
        ["ip", "link", "set", "veth-i33s0", "up"],
        ["ip", "netns", "exec", NETNS, "ip", "addr", "add", f"{NS_SIDE}/24", "dev", "veth-i33s1"],
        ["ip", "netns", "exec", NETNS, "ip", "link", "set", "veth-i33s1", "up"],
        ["ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up"],
    ]
    try:
        for argv in steps:
            subprocess.run(argv, check=True, capture_output=True)
        yield NETNS
    finally:
        subprocess.run(["ip", "link", "del", "veth-i33s0"], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", NETNS], capture_output=True, check=False)


def _as(user: str | None, *argv: str, netns: str = "") -> str:
    cmd = list(argv)
    if user is not None:
        cmd = ["runuser", "-u", user, "--", *cmd]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


def _probe(user: str | None, host: str, port: int, answer: bytes, netns: str = "") -> str:
    return _as(user, sys.executable, "-c", PROBE, host, str(port), answer.hex(), netns=netns)


def test_other_users_and_wrong_secrets_are_closed_unread(  # type: ignore[no-untyped-def]
    job: ChatJob, dmtcp_install, netns: str
) -> None:
    command = dmtcp_install.program("dmtcp_command")
    rec = job.record()
    assert rec is not None
    loopback = next(iter(rec.coord_ports.values()))
    public = int(rec.coord_public.rpartition(":")[2])
    secret_file = job.work / ".sckpt" / f"{job.id}.secret"
    st = secret_file.stat()
    assert (st.st_mode & 0o777, st.st_uid) == (0o600, int(_as(None, "id", "-u", ALICE)))
    assert "Permission denied" in _as(BOB, "cat", str(secret_file))
    secret = secret_file.read_bytes()

    # The owner reaches the step's coordinator (both tasks' processes are its peers).
    mine = _as(ALICE, command, "-h", "127.0.0.1", "-p", str(loopback), "--status")
    assert "NUM_PEERS=2" in mine and "RUNNING=yes" in mine, mine
    # Bob, on either port: refused, whatever he asks.
    for port in (loopback, public):
        for verb in ("--kill", "--quit", "--checkpoint", "--status"):
            said = _as(BOB, command, "-h", "127.0.0.1", "-p", str(port), verb)
            assert "NUM_PEERS" not in said, (port, verb, said)
    # Raw connections: bob's on loopback is closed before anything is read; on the public
    # port nothing but the nonce comes back, and a wrong proof is closed with the bytes
    # after it unread (the kernel resets a socket closed with unread data).
    assert _probe(BOB, "127.0.0.1", loopback, b"y" * 32).split("\n")[0] == "nonce 0"
    wrong = _probe(BOB, "127.0.0.1", public, proof(b"z" * 32, b"n" * NONCE_BYTES))
    assert wrong.split()[:2] == ["nonce", "32"] and "closed unread" in wrong, wrong
    # A replayed answer (a proof with the right secret, for another nonce) fails the same way.
    replayed = _probe(None, "127.0.0.1", public, proof(secret, b"n" * NONCE_BYTES))
    assert "closed unread" in replayed, replayed

    # Another node: a wrong secret from the namespace is closed unread; a node relay there
    # with the job's secret is forwarded to the coordinator.
    remote_wrong = _probe(None, HOST_SIDE, public, proof(b"z" * 32, b"n" * 32), netns=netns)
    assert remote_wrong.split()[:2] == ["nonce", "32"] and "closed unread" in remote_wrong
    relayed = _as(
        None,
        sys.executable,
        "-c",
        NODE_RELAY,
        HOST_SIDE,
        str(public),
        str(secret_file),
        command,
        netns=netns,
    )
    assert "NUM_PEERS=2" in relayed, relayed

    # Nothing of all that harmed the job or took a checkpoint.
    wait_for(lambda: job.field("JobState") == "COMPLETED", timeout=240)
    rec = job.record()
    assert rec is not None and not rec.last_image, rec.last_image
    assert job.results() == expected(2, COUNT)
