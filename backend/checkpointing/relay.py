"""The byte relay in front of a DMTCP coordinator, and the handshake that guards it.

Why a relay at all: ``dmtcp_coordinator`` (4.2.0) obeys whoever connects
(``dmtcp_coordinator.py`` says why and what sckpt does about it).  Every way in is a
listening socket of this relay, and each admits a connection its own way before a single
byte of DMTCP's protocol is forwarded:

* ``LOCAL`` (``127.0.0.1``): the connecting socket must belong to the job's uid, read from
  the kernel's socket table (``socket_owner``): nothing is read from the client first;
* ``PUBLIC`` (every address, for the relays of the step's other nodes, where no uid can be
  read): the relay sends a fresh random nonce and the client must answer, within
  ``HANDSHAKE_SECONDS``, ``HMAC-SHA256(secret, LABEL + nonce)`` with the job's secret
  (``store.job_secret``: 32 random bytes only the job's user can read).  The answer is
  compared with ``hmac.compare_digest``; on a wrong or late answer the connection is closed
  and nothing more is read from it.  A recorded answer is useless: the next connection gets
  another nonce.

A connection admitted is joined to a fresh connection upstream (the coordinator in its
private namespace, or, for a node relay, the step relay's public port after this relay has
proved the secret itself: ``prove``), and bytes then flow both ways unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import selectors
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

LOCAL = "local"
PUBLIC = "public"
LABEL = b"sckpt dmtcp relay v1\n"
NONCE_BYTES = 32
HANDSHAKE_SECONDS = 5.0
_BUFFER = 65536


def proof(secret: bytes, nonce: bytes) -> bytes:
    """What a client that knows ``secret`` answers to ``nonce``."""
    return hmac.new(secret, LABEL + nonce, hashlib.sha256).digest()


def prove(sock: socket.socket, secret: bytes, timeout: float = HANDSHAKE_SECONDS) -> None:
    """The client's half of the handshake on a connected ``sock`` (``OSError`` on failure)."""
    sock.settimeout(timeout)
    nonce = b""
    while len(nonce) < NONCE_BYTES:
        chunk = sock.recv(NONCE_BYTES - len(nonce))
        if not chunk:
            raise ConnectionError("the step relay closed the connection before its nonce")
        nonce += chunk
    sock.sendall(proof(secret, nonce))
    sock.settimeout(None)


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


@dataclass
class _Pending:
    """A public connection that has been sent its nonce and owes the proof."""

    nonce: bytes
    deadline: float
    got: bytes = b""


@dataclass
class Relay:
    """One relay's listeners and rules; ``run`` forwards until ``alive()`` says stop.

    ``listeners``: socket -> ``LOCAL`` or ``PUBLIC``.  ``upstream()`` opens the connection
    an admitted client is joined to (None when it cannot).  ``draining`` (set from a signal
    handler when the task that owns the relay ends) ends the relay once no connection is
    left: the DMTCP processes of the step's other tasks still use it until they end.
    """

    listeners: dict[socket.socket, str]
    table: int
    owner: int
    secret: bytes
    upstream: Callable[[], socket.socket | None]
    alive: Callable[[], bool] = lambda: True
    monotonic: Callable[[], float] = time.monotonic
    """What a handshake's ``HANDSHAKE_SECONDS`` is measured with (injected by its owner)."""
    draining: bool = False
    peers: dict[socket.socket, socket.socket] = field(default_factory=dict)
    pending: dict[socket.socket, _Pending] = field(default_factory=dict)

    def run(self) -> None:
        self.sel = selectors.DefaultSelector()
        for listener in self.listeners:
            self.sel.register(listener, selectors.EVENT_READ, None)
        while self.alive() and not (self.draining and not self.peers):
            for key, _ in self.sel.select(timeout=0.5):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock in self.listeners:
                    self._accept(sock)
                elif sock in self.pending:
                    self._check(sock)
                else:
                    self._pass(sock)
            now = self.monotonic()
            for sock in [s for s, p in self.pending.items() if p.deadline < now]:
                self._close(sock)  # too slow to prove it knows the secret

    def _accept(self, listener: socket.socket) -> None:
        try:
            client, address = listener.accept()
        except OSError:
            return
        if self.listeners[listener] == LOCAL:
            if socket_owner(self.table, address[:2], listener.getsockname()[:2]) != self.owner:
                client.close()  # another user (or gone already): never reaches it
                return
            self._join(client)
            return
        nonce = os.urandom(NONCE_BYTES)
        try:
            client.setblocking(False)
            client.send(nonce)
        except OSError:
            client.close()
            return
        self.pending[client] = _Pending(nonce, self.monotonic() + HANDSHAKE_SECONDS)
        self.sel.register(client, selectors.EVENT_READ, None)

    def _check(self, sock: socket.socket) -> None:
        state = self.pending[sock]
        try:
            chunk = sock.recv(hashlib.sha256().digest_size - len(state.got))
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._close(sock)
            return
        state.got += chunk
        if len(state.got) < hashlib.sha256().digest_size:
            return
        del self.pending[sock]
        self.sel.unregister(sock)
        if not hmac.compare_digest(state.got, proof(self.secret, state.nonce)):
            sock.close()  # wrong secret, or a replayed answer to another nonce
            return
        sock.setblocking(True)
        self._join(sock)

    def _join(self, client: socket.socket) -> None:
        upstream = self.upstream()
        if upstream is None:
            client.close()
            return
        self.peers[client], self.peers[upstream] = upstream, client
        self.sel.register(client, selectors.EVENT_READ, None)
        self.sel.register(upstream, selectors.EVENT_READ, None)

    def _pass(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(_BUFFER)
        except OSError:
            data = b""
        other = self.peers.get(sock)
        if not data or other is None:
            self._close(sock)
            return
        try:
            other.sendall(data)
        except OSError:
            self._close(sock)

    def _close(self, sock: socket.socket) -> None:
        self.pending.pop(sock, None)
        other = self.peers.pop(sock, None)
        for s in (sock, other):
            if s is None:
                continue
            self.peers.pop(s, None)
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(s)
            s.close()


def connector(address: tuple[str, int], secret: bytes = b"") -> Callable[[], socket.socket | None]:
    """``Relay.upstream`` for ``address``: a connection, after proving ``secret`` when given."""

    def connect() -> socket.socket | None:
        try:
            sock = socket.create_connection(address, timeout=HANDSHAKE_SECONDS)
        except OSError:
            return None
        try:
            if secret:
                prove(sock, secret)
            sock.settimeout(None)
        except OSError:
            sock.close()
            return None
        return sock

    return connect
