"""A DMTCP coordinator that only the job's user can talk to.

Why this exists: ``dmtcp_coordinator`` (4.2.0) listens on every address (``INADDR_ANY``, no
option to change it, no Unix-socket mode) and obeys whoever connects: any user on the node,
or on any host that can route to it, can run ``dmtcp_command -p PORT --kill`` and end the
computation, ``--checkpoint`` it, or ``--quit`` the coordinator.  We tried it: sckpt-bob
ended a task of sckpt-alice's step that way (README, "Checkpoint any program").

What sckpt does instead, for each coordinator:

* the coordinator runs in a **private network namespace** (``unshare(CLONE_NEWNET)``, inside
  a new user namespace when not root: no privilege needed), where its listening socket
  cannot be reached from the node's network at all;
* a **relay** (this module, a forked child of the wrapper) listens on ``127.0.0.1`` of the
  node, on a port the kernel picks (so two steps, or two users' jobs, never collide), and
  forwards a connection into the namespace **only when the connecting socket belongs to the
  job's uid**.  Loopback TCP carries no credentials, so the owner is read from the kernel's
  socket table (``/proc/net/tcp``, the ``uid`` column of the client's end of that very
  connection), through a file opened before leaving the node's namespace;
* DMTCP's own processes (``dmtcp_launch``, ``dmtcp_restart``, every process of the program,
  and the wrapper's ``dmtcp_command``) reach it through the relay: ``DMTCP_COORD_HOST`` =
  127.0.0.1, ``DMTCP_COORD_PORT`` = the relay's port.

One coordinator per step (``--coordinator step``, task 0's): the relay then also listens on
every address, for the relays of the step's other nodes (``NodeRelay``, one per node, run by
its first task), which must prove the job's secret before anything is forwarded
(``relay.py``): no uid can be read across nodes.

What remains (README says so too): root can do anything; processes of the same uid
(the job's owner's other jobs, their login shell) can read the secret and command the
coordinator, as they could ``kill`` the program anyway; traffic after the handshake is
neither encrypted nor authenticated.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from .relay import LOCAL, PUBLIC, Relay, connector

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
START_TIMEOUT = 20.0


class CoordinatorError(OSError):
    """The private coordinator could not be started (errno and a sentence)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _unshare(flags: int) -> None:
    if _libc().unshare(flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"unshare: {os.strerror(code)}")


def enter_private_network() -> None:
    """Move this process into a new network namespace with only ``lo``, and bring it up.

    Not root: a new user namespace first, mapping our uid and gid onto themselves, which is
    what lets an ordinary user make a network namespace (Debian allows it by default).
    """
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:
        _unshare(CLONE_NEWNET)
    else:
        _unshare(CLONE_NEWUSER | CLONE_NEWNET)
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(probe, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def _loopback_listener() -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    return listener


def _fork(
    body: Callable[[int], int],
    keep: list[socket.socket],
    table: int,
    monotonic: Callable[[], float],
) -> int:
    """Fork a relay running ``body(ready_fd)``; its pid once it wrote ``ok`` on ``ready_fd``
    (``CoordinatorError`` with what it wrote instead).  ``keep`` and ``table`` belong to the
    child from then on: the parent closes its copies."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the relay
        code = 1
        try:
            os.close(ready_r)
            code = body(ready_w)
        finally:
            os._exit(code)
    for sock in keep:
        sock.close()
    os.close(table)
    os.close(ready_w)
    answer = b""
    deadline = monotonic() + START_TIMEOUT
    with os.fdopen(ready_r, "rb") as ready:
        while b"\n" not in answer and monotonic() < deadline:
            chunk = ready.read1(256)
            if not chunk:
                break
            answer += chunk
    text = answer.decode("utf-8", "replace").strip()
    if text != "ok":
        _end(pid, signal.SIGTERM)
        raise CoordinatorError(errno.EIO, text or "the DMTCP coordinator did not start")
    return pid


def _end(pid: int, signum: int) -> None:
    """Signal the relay ``pid`` and wait for it (SIGUSR1: once its connections are gone)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _drain_on(signum: int, relay: Relay) -> None:
    def drain(_signum: int, _frame: object) -> None:
        relay.draining = True

    signal.signal(signum, drain)


class PrivateCoordinator:
    """A coordinator behind a relay (see the module); ``secret`` makes it a step's.

    Without ``secret`` (``--coordinator task``): one task's, reachable on ``127.0.0.1`` by
    the job's uid only.  With it (``--coordinator step``, started by task 0): also on every
    address (``public_port``), for the node relays of the step's other nodes, which must
    prove the secret first (``relay.py``).

    ``start()`` returns the loopback port; ``env()`` is what DMTCP's programs need to find
    it; ``close()`` ends relay and coordinator (they also end with the wrapper: parent-death
    signal, and the coordinator's ``--exit-on-last``).  ``close(drain=True)`` waits for the
    step's other tasks to leave first: their processes are clients of this coordinator.

    ``monotonic`` and ``sleep`` measure and wait out ``START_TIMEOUT`` (the transparent
    checkpointer's, injected: tests/backend/test_checkpointing_time.py runs it out in fake time).
    """

    def __init__(
        self,
        coordinator: str,
        ckpt_dir: Path,
        log: Path,
        secret: bytes = b"",
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.monotonic = monotonic
        self.sleep = sleep
        self.coordinator = coordinator
        self.ckpt_dir = ckpt_dir
        self.log = log
        self.secret = secret
        self.port = 0
        self.public_port = 0
        self.pid = 0
        self._public: socket.socket | None = None

    def env(self) -> dict[str, str]:
        return {"DMTCP_COORD_HOST": "127.0.0.1", "DMTCP_COORD_PORT": str(self.port)}

    def listeners(self, loopback: socket.socket) -> dict[socket.socket, str]:
        found = {loopback: LOCAL}
        if self._public is not None:
            found[self._public] = PUBLIC
        return found

    def start(self) -> int:
        listener = _loopback_listener()
        self.port = listener.getsockname()[1]
        keep = [listener]
        if self.secret:
            self._public = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._public.bind(("0.0.0.0", 0))
            self._public.listen(128)
            self.public_port = self._public.getsockname()[1]
            keep.append(self._public)
        owner = os.getuid()
        table = os.open("/proc/self/net/tcp", os.O_RDONLY | os.O_CLOEXEC)
        self.pid = _fork(
            lambda ready: _relay_main(self, listener, table, owner, ready),
            keep,
            table,
            self.monotonic,
        )
        self._public = None
        return self.port

    def close(self, drain: bool = False) -> None:
        if self.pid:
            _end(self.pid, signal.SIGUSR1 if drain else signal.SIGTERM)
            self.pid = 0


class NodeRelay:
    """One per node of a step, other than task 0's: ``127.0.0.1`` for the job's uid, each
    connection forwarded to the step relay's public port after proving the secret.  The
    node's tasks use it instead of a coordinator of their own (``env()``)."""

    def __init__(
        self,
        step_relay: tuple[str, int],
        secret: bytes,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.monotonic = monotonic
        """What the start's wait and the relay's handshake deadlines are measured with."""
        self.step_relay = step_relay
        self.secret = secret
        self.port = 0
        self.pid = 0

    def env(self) -> dict[str, str]:
        return {"DMTCP_COORD_HOST": "127.0.0.1", "DMTCP_COORD_PORT": str(self.port)}

    def start(self) -> int:
        listener = _loopback_listener()
        self.port = listener.getsockname()[1]
        owner = os.getuid()
        table = os.open("/proc/self/net/tcp", os.O_RDONLY | os.O_CLOEXEC)

        def body(ready: int) -> int:
            _relay_process()
            relay = Relay(
                {listener: LOCAL},
                table,
                owner,
                self.secret,
                connector(self.step_relay, self.secret),
                monotonic=self.monotonic,
            )
            _drain_on(signal.SIGUSR1, relay)
            os.write(ready, b"ok\n")
            os.close(ready)
            relay.run()
            return 0

        self.pid = _fork(body, [listener], table, self.monotonic)
        return self.port

    def close(self, drain: bool = False) -> None:
        if self.pid:
            _end(self.pid, signal.SIGUSR1 if drain else signal.SIGTERM)
            self.pid = 0


def _relay_process() -> None:
    """In a freshly forked relay: no blocked signals, SIGTERM ends it, and so does the
    wrapper's death."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        _libc().prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def _relay_main(
    coord: PrivateCoordinator, listener: socket.socket, table: int, owner: int, ready: int
) -> int:
    """The relay process: private namespace, coordinator, then forward owner connections."""
    _relay_process()

    def answer(text: str) -> None:
        with contextlib.suppress(OSError):
            os.write(ready, (text.replace("\n", " ") + "\n").encode())

    try:
        enter_private_network()
    except OSError as exc:
        answer(f"cannot make a private network namespace for the coordinator: {exc.strerror}")
        return 1
    port_file = coord.ckpt_dir / f".coordinator.{os.getpid()}.port"
    with contextlib.suppress(FileNotFoundError):
        port_file.unlink()
    try:
        log = coord.log.open("ab")  # the coordinator's output, for its whole life
        child = subprocess.Popen(
            [
                coord.coordinator,
                "--quiet",  # warnings and errors only: a NOTE per fork would fill the log
                "--exit-on-last",
                "-p",
                "0",
                "--port-file",
                str(port_file),
                "--ckptdir",
                str(coord.ckpt_dir),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=str(coord.ckpt_dir),
            preexec_fn=_die_with_parent,
        )
    except OSError as exc:
        answer(f"cannot start {coord.coordinator}: {exc.strerror}")
        return 1
    inner = 0
    deadline = coord.monotonic() + START_TIMEOUT
    while coord.monotonic() < deadline and child.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            inner = int(port_file.read_text().strip() or 0)
        if inner:
            break
        coord.sleep(0.02)
    with contextlib.suppress(OSError):
        port_file.unlink()
    if not inner:
        child.kill()
        answer(f"the DMTCP coordinator did not start (its log: {coord.log})")
        return 1
    answer("ok")
    os.close(ready)

    def on_term(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            child.terminate()
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    relay = Relay(
        coord.listeners(listener),
        table,
        owner,
        coord.secret,
        connector(("127.0.0.1", inner)),
        alive=lambda: child.poll() is None,
        monotonic=coord.monotonic,
    )
    _drain_on(signal.SIGUSR1, relay)
    relay.run()
    with contextlib.suppress(OSError):
        child.terminate()
    return 0


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        _libc().prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
