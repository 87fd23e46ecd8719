"""What a task's processes are connected to, found before DMTCP is asked for a checkpoint.

Why: DMTCP 4.2.0 drains every connected stream socket at a checkpoint (TCP, TCP6, Unix: it
writes a marker into the socket and reads until the other side's marker arrives), with no
timeout, while the program's threads stay stopped.  What we saw on this machine:

* a 2-task step talking over TCP under per-task coordinators froze in ``create --wait``:
  both coordinators checkpoint at once, one side's handshake arrives behind the other's
  marker, and the other side polls for ever (its worker log repeats "Still draining
  socket... perhaps remote host is not running under DMTCP?");
* a task connected to a plain TCP echo server outside the job froze the same way, with
  DMTCP's own coordinator and ``dmtcp_launch`` as much as under sckpt, and the server got
  DMTCP's marker in its stream; so did a task connected to a Unix-socket server.
  DMTCP's peer discovery did not mark those sockets external, as its sources suggest it
  would (only its fixed list of remote ports, 53, 389 and 636, is);
* neither SIGCONT nor killing the coordinator frees such a freeze (``stuck.py``).

So before asking, the wrapper looks (``survey``): each process of the task's tree
(``processes.process_tree``), its sockets (``/proc/PID/fd`` -> ``socket:[N]``), matched to
the namespace's tables (``/proc/PID/net/tcp``, ``tcp6``; for Unix sockets the kernel's
``sock_diag`` answer names the peer's inode), then the peer's own socket and its owning
process where it can be read (same user, same node).  Each connection is

* ``inside``: the peer is in the task's tree, or under the same DMTCP coordinator (same
  ``DMTCP_COORD_HOST``/``PORT``): DMTCP drains and restores it;
* ``coordinator``: the peer runs under another DMTCP coordinator (another task of the step
  with per-task coordinators, or another job's program);
* ``outside``: the peer is not under DMTCP (a server outside the job), or cannot be read
  (another user's, another node's);
* ``external``: DMTCP itself treats it as external (remote port 53, 389 or 636): not
  drained, restored as a dead socket.

``coordinator`` and ``outside`` are refused before anything is stopped: ``EXDEV``
("cross-device link": the connection leaves the checkpointed computation), naming the peer
(rank, pid, program, address).  ``external`` ones are named in the answer and the step
detail ("Not restored").

Standard library only (it runs in the wrapper on compute nodes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import socket
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config import ENV_PEERS_UNCHECKED

INSIDE = "inside"
COORDINATOR = "coordinator"
OUTSIDE = "outside"
EXTERNAL = "external"
DMTCP_EXTERNAL_PORTS = frozenset({53, 389, 636})
"""Remote ports DMTCP 4.2.0 marks external when connecting (DNS, LDAP:
``TcpConnection::isBlacklistedTcp``): never drained, restored as dead sockets."""
_UNIX_STREAM_TYPES = frozenset({socket.SOCK_STREAM, socket.SOCK_SEQPACKET})
REFUSAL_CODE = errno.EXDEV
"""The code of a checkpoint refused because a socket crosses into another coordinator's
computation (README, "Checkpoint any program")."""
ENV_UNCHECKED = ENV_PEERS_UNCHECKED
"""Tests only: ``1`` skips the look, so a test can make the freeze this module prevents and
check that ``stuck.py`` ends the wait on it."""
_ESTABLISHED = "01"
_TCP_FILES = ("tcp", "tcp6")
_COORD_KEYS = ("DMTCP_COORD_HOST", "DMTCP_COORD_PORT")


@dataclass(frozen=True)
class Peer:
    """The process at the other end of a connection, as far as it can be read."""

    pid: int = 0
    program: str = ""
    job: str = ""
    step: str = ""
    rank: str = ""
    coordinator: tuple[str, str] | None = None
    """``(DMTCP_COORD_HOST, DMTCP_COORD_PORT)`` of its environment; None: not under DMTCP."""

    def describe(self, same_step: bool) -> str:
        """``task 0 of the step (pid 4242, python3)``, ``pid 4242 (nc)`` or ``""``."""
        if not self.pid:
            return ""
        what = f"pid {self.pid}, {self.program}" if self.program else f"pid {self.pid}"
        if same_step and self.rank:
            return f"task {self.rank} of the step ({what})"
        if self.job:
            return f"a process of job {self.job}.{self.step} ({what})"
        return what


@dataclass(frozen=True)
class Connection:
    """One connected socket of the task's processes, and where its other end is."""

    pid: int
    program: str
    kind: str
    """``TCP``, ``TCP6`` or ``Unix``."""
    local: str
    remote: str
    where: str
    """``inside``, ``coordinator`` or ``outside``."""
    peer: Peer

    def describe(self, same_step: bool = False) -> str:
        """``TCP 127.0.0.1:4000 -> 127.0.0.1:39999 (pid 12, nc)``: how answers name it."""
        ours = f"pid {self.pid}" + (f" ({self.program})" if self.program else "")
        theirs = self.peer.describe(same_step)
        link = f"{self.kind} {self.local} -> {self.remote}".rstrip(" ->")
        return f"{ours}: {link}" + (f" to {theirs}" if theirs else "")


def _read(path: str) -> str:
    with contextlib.suppress(OSError):
        return Path(path).read_text(errors="replace")
    return ""


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in pairs}


def _program(pid: int) -> str:
    return _read(f"/proc/{pid}/comm").strip()


def socket_inodes(pid: int) -> dict[int, int]:
    """``{inode: pid}`` of the sockets process ``pid`` holds open (none when unreadable)."""
    found: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for fd in os.scandir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = str(Path(fd.path).readlink())
                if target.startswith("socket:["):
                    found[int(target[8:-1])] = pid
    return found


def _address(text: str, v6: bool) -> str:
    """``0100007F:1F90`` -> ``127.0.0.1:8080`` (the kernel writes host-order words)."""
    host, _, port = text.partition(":")
    raw = bytes.fromhex(host)
    words = struct.unpack(f"={len(raw) // 4}I", raw)
    packed = struct.pack(f"!{len(words)}I", *words)
    if v6:
        name = socket.inet_ntop(socket.AF_INET6, packed)
        if name.startswith("::ffff:"):
            name = name[7:]
        return f"[{name}]:{int(port, 16)}" if ":" in name else f"{name}:{int(port, 16)}"
    return f"{socket.inet_ntop(socket.AF_INET, packed)}:{int(port, 16)}"


def tcp_table(pid: int) -> dict[int, tuple[str, str, str]]:
    """``{inode: (kind, local, remote)}`` of the established TCP connections in the network
    namespace of ``pid``."""
    table: dict[int, tuple[str, str, str]] = {}
    for name in _TCP_FILES:
        for line in _read(f"/proc/{pid}/net/{name}").splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _ESTABLISHED:
                continue
            with contextlib.suppress(ValueError, OSError):
                v6 = name == "tcp6"
                local, remote = _address(fields[1], v6), _address(fields[2], v6)
                table[int(fields[9])] = (name.upper(), local, remote)
    return table


def unix_peers(inodes: Iterable[int]) -> dict[int, tuple[int, str]]:
    """``{inode: (peer inode, bound path)}`` of connected Unix sockets, from the kernel's
    ``sock_diag`` (``UNIX_DIAG_PEER``); empty where netlink cannot be used."""
    wanted = set(inodes)
    found: dict[int, tuple[int, str]] = {}
    if not wanted:
        return found
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4)  # NETLINK_SOCK_DIAG
    except OSError:
        return found
    with sock:
        # nlmsghdr (SOCK_DIAG_BY_FAMILY=20, NLM_F_REQUEST|NLM_F_DUMP) + unix_diag_req
        # (AF_UNIX, all states, show NAME|PEER).
        request = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0, 0x1 | 0x4, 0, 0)
        header = struct.pack("=IHHII", 16 + len(request), 20, 0x1 | 0x300, 1, 0)
        try:
            sock.send(header + request)
            _collect_unix(sock, wanted, found)
        except OSError:
            return found
    return found


def _collect_unix(sock: socket.socket, wanted: set[int], found: dict[int, tuple[int, str]]) -> None:
    while True:
        data = sock.recv(1 << 16)
        offset = 0
        while offset + 16 <= len(data):
            length, kind = struct.unpack_from("=IH", data, offset)
            if kind in (2, 3) or length < 16:  # NLMSG_ERROR, NLMSG_DONE
                return
            body = data[offset + 16 : offset + length]
            offset += (length + 3) & ~3
            if len(body) < 16:
                continue
            kind, inode = body[1], struct.unpack_from("=I", body, 4)[0]
            if inode not in wanted or kind not in _UNIX_STREAM_TYPES:
                continue  # datagram sockets are not drained
            peer, path, attr = 0, "", 16
            while attr + 4 <= len(body):
                alen, atype = struct.unpack_from("=HH", body, attr)
                value = body[attr + 4 : attr + alen]
                if atype == 2 and len(value) >= 4:  # UNIX_DIAG_PEER
                    peer = struct.unpack_from("=I", value)[0]
                elif atype == 0:  # UNIX_DIAG_NAME
                    path = value.rstrip(b"\0").decode(errors="replace").replace("\0", "@")
                attr += (alen + 3) & ~3
            if peer:
                found[inode] = (peer, path)


def owners(inodes: set[int]) -> dict[int, int]:
    """``{socket inode: pid}`` for the inodes some readable process holds (one pass over
    ``/proc``: only the job's user's processes can be read, which is where peers that
    matter live)."""
    found: dict[int, int] = {}
    if not inodes:
        return found
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            for inode, pid in socket_inodes(int(entry.name)).items():
                if inode in inodes:
                    found.setdefault(inode, pid)
    return found


def _coordinator(env: dict[str, str]) -> tuple[str, str] | None:
    """``(DMTCP_COORD_HOST, DMTCP_COORD_PORT)`` of an environment (None: not under DMTCP)."""
    if all(k in env for k in _COORD_KEYS):
        return env[_COORD_KEYS[0]], env[_COORD_KEYS[1]]
    return None


def _peer(pid: int) -> Peer:
    env = _environ(pid)
    coordinator = _coordinator(env)
    return Peer(
        pid=pid,
        program=_program(pid),
        job=env.get("SLURM_JOB_ID", ""),
        step=env.get("SLURM_STEP_ID", ""),
        rank=env.get("SLURM_PROCID", ""),
        coordinator=coordinator,
    )


def _where(peer: Peer, tree: set[int], ours: set[tuple[str, str]]) -> str:
    if peer.pid in tree or peer.coordinator in ours:
        return INSIDE
    if peer.coordinator is not None:
        return COORDINATOR
    return OUTSIDE


def _tcp_pairs(
    held: dict[int, int], table: dict[int, tuple[str, str, str]]
) -> list[tuple[int, int, str, str, str, int]]:
    """``(inode, pid, kind, local, remote, peer inode)`` of each held TCP connection; the
    peer inode is the socket of this namespace whose ends are the reverse (0: none here)."""
    by_ends = {(local, remote): inode for inode, (_k, local, remote) in table.items()}
    out = []
    for inode, pid in held.items():
        if inode in table:
            kind, local, remote = table[inode]
            out.append((inode, pid, kind, local, remote, by_ends.get((remote, local), 0)))
    return out


def survey(tree: Sequence[int], coordinator: dict[str, str] | None = None) -> list[Connection]:
    """Every connected TCP or Unix socket held by the processes ``tree``, classified.

    ``coordinator``: the task's own ``DMTCP_COORD_HOST``/``PORT`` (None: read from the
    first process of ``tree``).  Sockets between two processes of the tree are left out
    (DMTCP handles them); so are listening and unconnected sockets."""
    if not tree:
        return []
    # The coordinator now, and the one the tree's processes were launched under: after a
    # restart their environment is the image's (the coordinator of the first run), and so
    # is every other restarted process's of the same computation.
    now = _coordinator(coordinator if coordinator is not None else _environ(tree[0]))
    ours = {c for c in (now, *(_coordinator(_environ(p)) for p in tree)) if c is not None}
    own_link = f"{now[0]}:{now[1]}" if now else ""
    held: dict[int, int] = {}
    for pid in tree:
        for inode, owner in socket_inodes(pid).items():
            held.setdefault(inode, owner)
    pairs = _tcp_pairs(held, tcp_table(tree[0]))
    unix = unix_peers(held)
    wanted = {p[5] for p in pairs if p[5]} | {peer for peer, _path in unix.values()}
    wanted -= set(held)
    whose = owners(wanted)
    members = set(tree)
    found = []
    for _inode, pid, kind, local, remote, peer_inode in pairs:
        if peer_inode in held or remote == own_link:
            continue  # both ends in the task's tree, or DMTCP's own link to its coordinator
        peer = _peer(whose[peer_inode]) if peer_inode in whose else Peer()
        where = _where(peer, members, ours)
        if int(remote.rpartition(":")[2]) in DMTCP_EXTERNAL_PORTS and kind == "TCP":
            where = EXTERNAL
        found.append(Connection(pid, _program(pid), kind, local, remote, where, peer))
    for inode, (peer_inode, path) in unix.items():
        if peer_inode in held:
            continue
        pid = held[inode]
        peer = _peer(whose[peer_inode]) if peer_inode in whose else Peer()
        where = _where(peer, members, ours)
        found.append(Connection(pid, _program(pid), "Unix", path, "", where, peer))
    return found


def refusal(found: Sequence[Connection], job: str, step: str) -> str:
    """Why a checkpoint must not be asked for ("" when it may): the connections that leave
    the computation, named (``task 1 of the step (pid 42, app)``, ``pid 7 (nc)``)."""
    leaving = [c for c in found if c.where in (COORDINATOR, OUTSIDE)]
    if not leaving:
        return ""
    in_step = [c.peer.job == job and c.peer.step == step and bool(c.peer.rank) for c in leaving]
    named = "; ".join(c.describe(same) for c, same in zip(leaving[:4], in_step, strict=False))
    more = f" and {len(leaving) - 4} more" if len(leaving) > 4 else ""
    advice = (
        "tasks that talk to each other need one coordinator for the whole step "
        "(`sckpt run --transparent --coordinator step`)"
        if any(in_step)
        else "DMTCP can checkpoint only connections between processes of one computation"
    )
    return (
        f"connected outside this DMTCP computation ({named}{more}): DMTCP 4.2.0 would wait "
        "for ever for the other end's part of the checkpoint, the program stopped; not "
        f"checkpointed, the program runs on; {advice}"
    )


def outside_words(found: Sequence[Connection]) -> list[str]:
    """The connections DMTCP treats as external, one line each (what the record keeps):
    they are not drained and come back as dead sockets at restart."""
    return [c.describe() for c in found if c.where == EXTERNAL][:16]


def before_checkpoint(
    tree: Sequence[int], coordinator: dict[str, str], *, step_wide: bool = False
) -> tuple[int, str, list[str]]:
    """The transparent checkpointer's one look before asking DMTCP: ``(EXDEV, why, named)``
    when a socket leaves the computation (nothing may be asked), else ``(0, "", named)``;
    ``named``: the connections DMTCP treats as external, for the record.

    ``step_wide``: the step's tasks share one coordinator (``--coordinator step``), so a
    peer that is a task of this job's same step (its ``SLURM_JOB_ID``/``SLURM_STEP_ID``) is
    inside whatever relay address its environment names.  A peer on another node cannot be
    read and is still refused by its address."""
    if os.environ.get(ENV_UNCHECKED) == "1":  # the test suite's way to make the freeze
        return 0, "", []
    try:
        found = survey(tree, coordinator)
    except OSError:  # /proc unreadable: nothing is known, nothing is refused
        return 0, "", []
    job, step = os.environ.get("SLURM_JOB_ID", ""), os.environ.get("SLURM_STEP_ID", "")
    if step_wide:
        found = [_in_step(c, job, step) for c in found]
    why = refusal(found, job, step)
    return (REFUSAL_CODE if why else 0), why, outside_words(found)


def _in_step(c: Connection, job: str, step: str) -> Connection:
    """``c`` counted inside when its peer is a task of the same step (one coordinator)."""
    if c.where == COORDINATOR and (c.peer.job, c.peer.step) == (job, step) and job:
        return dataclasses.replace(c, where=INSIDE)
    return c
