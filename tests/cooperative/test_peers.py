"""``peers.py`` on real processes and sockets: what a task is connected to, and where.

No cluster: a "task" here is a child process holding one end of a real TCP connection or
Unix socket pair, its other end held by another real process whose environment says which
DMTCP coordinator (if any) it runs under, exactly what the wrapper reads in ``/proc``.
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from sckpt.backend.checkpointing import peers

HOLD = """
import socket, sys, time
kind, where = sys.argv[1], sys.argv[2]
if kind == "tcp":
    host, port = where.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
else:
    s = socket.socket(socket.AF_UNIX)
    s.connect(where)
print("connected", flush=True)
time.sleep(60)
"""


@pytest.fixture
def spawn() -> Iterator[object]:
    made: list[subprocess.Popen[str]] = []

    def _spawn(kind: str, where: str, env: dict[str, str]) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", HOLD, kind, where],
            env={"PATH": os.environ["PATH"], **env},
            stdout=subprocess.PIPE,
            text=True,
        )
        made.append(child)
        assert child.stdout is not None and child.stdout.readline().strip() == "connected"
        return child

    yield _spawn
    for child in made:
        child.kill()
        child.wait()


OURS = {"DMTCP_COORD_HOST": "127.0.0.1", "DMTCP_COORD_PORT": "4101"}
STEP = {"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0"}


def _serve() -> socket.socket:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    return listener


def test_a_peer_under_another_coordinator_is_refused_and_named(spawn) -> None:  # type: ignore[no-untyped-def]
    listener = _serve()
    host, port = listener.getsockname()
    other = {
        **STEP,
        "SLURM_PROCID": "1",
        "DMTCP_COORD_HOST": "127.0.0.1",
        "DMTCP_COORD_PORT": "4102",
    }
    child = spawn("tcp", f"{host}:{port}", other)
    conn, _ = listener.accept()
    found = peers.survey([os.getpid()], OURS)
    assert [(c.where, c.peer.pid, c.peer.rank) for c in found] == [
        (peers.COORDINATOR, child.pid, "1")
    ]
    assert found[0].remote == f"127.0.0.1:{found[0].remote.rsplit(':', 1)[1]}"
    why = peers.refusal(found, "77", "0")
    assert f"task 1 of the step (pid {child.pid}, {found[0].peer.program})" in why
    assert found[0].peer.program.startswith("python")
    assert f"127.0.0.1:{port} -> " in why and "--coordinator step" in why
    conn.close()
    listener.close()


def test_same_coordinator_is_inside_and_an_unmanaged_peer_is_refused(spawn) -> None:  # type: ignore[no-untyped-def]
    listener = _serve()
    host, port = listener.getsockname()
    same = spawn("tcp", f"{host}:{port}", {**STEP, "SLURM_PROCID": "1", **OURS})
    conns = [listener.accept()[0]]
    assert peers.before_checkpoint([os.getpid()], OURS) == (0, "", [])
    plain = spawn("tcp", f"{host}:{port}", {})
    conns.append(listener.accept()[0])
    found = {c.peer.pid: c.where for c in peers.survey([os.getpid()], OURS)}
    assert found == {same.pid: peers.INSIDE, plain.pid: peers.OUTSIDE}
    code, why, named = peers.before_checkpoint([os.getpid()], OURS)
    assert code == errno.EXDEV and named == []
    assert f"pid {plain.pid}" in why and f":{port} -> " in why
    assert "--coordinator step" not in why  # not a task of the step: no such advice
    for c in conns:
        c.close()
    listener.close()


def test_dmtcp_external_ports_are_named_not_refused(spawn) -> None:  # type: ignore[no-untyped-def]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 636))  # LDAPS: DMTCP marks it external itself
    listener.listen(1)
    client = socket.create_connection(("127.0.0.1", 636))
    child = spawn("tcp", "127.0.0.1:636", {})  # a second client, in another process
    conns = [listener.accept()[0], listener.accept()[0]]
    tree = [child.pid]  # the "task" is the client process: its peer is this test process
    code, why, named = peers.before_checkpoint(tree, OURS)
    assert (code, why) == (0, "")
    assert len(named) == 1 and f"-> 127.0.0.1:636 to pid {os.getpid()}, python" in named[0]
    for c in [client, *conns]:
        c.close()
    listener.close()


def test_unix_peer_under_another_coordinator(spawn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "s")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)
    child = spawn("unix", path, {"DMTCP_COORD_HOST": "127.0.0.1", "DMTCP_COORD_PORT": "9"})
    conn, _ = listener.accept()
    code, why, _named = peers.before_checkpoint([os.getpid()], OURS)
    assert code == errno.EXDEV and f"pid {child.pid}, python" in why and "Unix" in why
    conn.close()
    listener.close()


def test_the_link_to_its_own_coordinator_is_not_named() -> None:
    listener = _serve()
    host, port = listener.getsockname()
    mine = socket.create_connection((host, port))
    conn, _ = listener.accept()
    found = peers.survey([os.getpid()], {"DMTCP_COORD_HOST": host, "DMTCP_COORD_PORT": str(port)})
    assert found == []  # both ends here, and the client's remote is the coordinator
    mine.close()
    conn.close()
    listener.close()


def test_with_one_coordinator_per_step_a_task_of_the_step_is_inside(spawn, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``--coordinator step``: another task of the step may name another relay address in
    its environment and still be under the step's one coordinator; another step's is not."""
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_STEP_ID", "0")
    listener = _serve()
    host, port = listener.getsockname()
    relay = {"DMTCP_COORD_HOST": "127.0.0.1", "DMTCP_COORD_PORT": "4102"}
    spawn("tcp", f"{host}:{port}", {**STEP, "SLURM_PROCID": "1", **relay})
    conns = [listener.accept()[0]]
    assert peers.before_checkpoint([os.getpid()], OURS)[0] == errno.EXDEV  # per task
    assert peers.before_checkpoint([os.getpid()], OURS, step_wide=True) == (0, "", [])
    other = spawn("tcp", f"{host}:{port}", {**STEP, "SLURM_STEP_ID": "1", **relay})
    conns.append(listener.accept()[0])
    code, why, _named = peers.before_checkpoint([os.getpid()], OURS, step_wide=True)
    assert code == errno.EXDEV and f"a process of job 77.1 (pid {other.pid}, " in why
    for c in conns:
        c.close()
    listener.close()
