"""A DMTCP coordinator that only the job's user can talk to.

Why this exists: ``dmtcp_coordinator`` (4.2.0) listens on every address (``INADDR_ANY``, no
option to change it, no Unix-socket mode) and obeys whoever connects: any user on the node,
or on any host that can route to it, can run ``dmtcp_command -p PORT --kill`` and end the
computation, ``--checkpoint`` it, or ``--quit`` the coordinator.  We tried it: sckpt-bob
ended a task of sckpt-alice's step that way (README, "Checkpoint any program").

What sckpt does instead, per task:

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

What remains (README says so too): root can do anything; processes of the same uid
(the job's owner's other jobs, their login shell) can command the coordinator, as they could
``kill`` the program anyway.  One coordinator per task means every coordinator is on its
task's node: a step across nodes works, but tasks that talk to each other through sockets
would need one coordinator per step, reachable from other nodes, which this design does not
offer.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import selectors
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
START_TIMEOUT = 20.0
_BUFFER = 65536


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


def _tcp_key(host: str, port: int) -> str:
    """An IPv4 endpoint as ``/proc/net/tcp`` writes it (``0100007F:1F90`` on x86)."""
    (number,) = struct.unpack("=I", socket.inet_aton(host))
    return f"{number:08X}:{port:04X}"


def socket_owner(table: int, client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The uid owning the client end of the TCP connection ``client -> server``.

    ``table`` is a descriptor of ``/proc/net/tcp`` opened in the node's network namespace
    (and user namespace: the uid column is translated into the opener's).  None when the
    connection is not there (the client already closed it).
    """
    local, remote = _tcp_key(*client), _tcp_key(*server)
    os.lseek(table, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(table, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    for line in b"".join(chunks).decode("ascii", "replace").splitlines()[1:]:
        fields = line.split()
        if len(fields) > 7 and fields[1] == local and fields[2] == remote:
            with contextlib.suppress(ValueError):
                return int(fields[7])
    return None


class PrivateCoordinator:
    """One task's coordinator behind a uid-checking loopback relay (see the module).

    ``start()`` returns the relay's port; ``env()`` is what DMTCP's programs need to find
    it; ``close()`` ends relay and coordinator (they also end with the wrapper: parent-death
    signal, and the coordinator's ``--exit-on-last``).
    """

    def __init__(self, coordinator: str, ckpt_dir: Path, log: Path) -> None:
        self.coordinator = coordinator
        self.ckpt_dir = ckpt_dir
        self.log = log
        self.port = 0
        self.pid = 0

    def env(self) -> dict[str, str]:
        return {"DMTCP_COORD_HOST": "127.0.0.1", "DMTCP_COORD_PORT": str(self.port)}

    def start(self) -> int:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        owner = os.getuid()
        table = os.open("/proc/self/net/tcp", os.O_RDONLY | os.O_CLOEXEC)
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the relay
            code = 1
            try:
                os.close(ready_r)
                code = _relay_main(self, listener, table, owner, ready_w)
            finally:
                os._exit(code)
        self.pid = pid
        listener.close()
        os.close(table)
        os.close(ready_w)
        answer = b""
        deadline = time.monotonic() + START_TIMEOUT
        with os.fdopen(ready_r, "rb") as ready:
            while b"\n" not in answer and time.monotonic() < deadline:
                chunk = ready.read1(256) if hasattr(ready, "read1") else ready.read(256)
                if not chunk:
                    break
                answer += chunk
        text = answer.decode("utf-8", "replace").strip()
        if text != "ok":
            self.close()
            raise CoordinatorError(errno.EIO, text or "the DMTCP coordinator did not start")
        return self.port

    def close(self) -> None:
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = 0


def _relay_main(
    coord: PrivateCoordinator, listener: socket.socket, table: int, owner: int, ready: int
) -> int:
    """The relay process: private namespace, coordinator, then forward owner connections."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        _libc().prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

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
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and child.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            inner = int(port_file.read_text().strip() or 0)
        if inner:
            break
        time.sleep(0.02)
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
    _forward(listener, table, owner, ("127.0.0.1", inner), child)
    return 0


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        _libc().prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def _forward(
    listener: socket.socket,
    table: int,
    owner: int,
    inner: tuple[str, int],
    child: subprocess.Popen[bytes],
) -> None:
    """Accept on the node's loopback, check the owner, relay bytes both ways."""
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, None)
    server = listener.getsockname()
    peers: dict[socket.socket, socket.socket] = {}

    def drop(sock: socket.socket) -> None:
        other = peers.pop(sock, None)
        for s in (sock, other):
            if s is None:
                continue
            peers.pop(s, None)
            with contextlib.suppress(KeyError, ValueError):
                sel.unregister(s)
            s.close()

    while child.poll() is None:
        for key, _ in sel.select(timeout=1.0):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if sock is listener:
                try:
                    client, address = listener.accept()
                except OSError:
                    continue
                if socket_owner(table, address[:2], server) != owner:
                    client.close()  # another user (or gone already): never reaches it
                    continue
                try:
                    upstream = socket.create_connection(inner, timeout=5)
                except OSError:
                    client.close()
                    continue
                upstream.settimeout(None)
                peers[client], peers[upstream] = upstream, client
                sel.register(client, selectors.EVENT_READ, None)
                sel.register(upstream, selectors.EVENT_READ, None)
                continue
            try:
                data = sock.recv(_BUFFER)
            except OSError:
                data = b""
            other = peers.get(sock)
            if not data or other is None:
                drop(sock)
                continue
            try:
                other.sendall(data)
            except OSError:
                drop(sock)
