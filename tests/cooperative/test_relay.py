"""The relay's handshake on its own (``relay.py``), with an echo server upstream.

Why beside the cluster tests: these are the cases a real coordinator cannot tell apart from
the outside (a proof for the right nonce is forwarded, byte for byte; one byte wrong, a
replay or silence is closed with nothing read past the proof and nothing forwarded)."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator

import pytest
from sckpt.backend.checkpointing import relay as relay_module
from sckpt.backend.checkpointing.relay import NONCE_BYTES, PUBLIC, Relay, connector, proof

SECRET = os.urandom(32)


@pytest.fixture
def public(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, list[bytes]]]:
    """A relay's public port, and what its upstream echo server received."""
    monkeypatch.setattr(relay_module, "HANDSHAKE_SECONDS", 1.0)
    echo = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = echo.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(4096):
                    received.append(data)
                    conn.sendall(data)

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    table = os.open("/proc/self/net/tcp", os.O_RDONLY)
    relay = Relay(
        {listener: PUBLIC},
        table,
        os.getuid(),
        SECRET,
        connector(echo.getsockname()),
        alive=lambda: not stop.is_set(),
    )
    threads = [threading.Thread(target=serve, daemon=True), threading.Thread(target=relay.run)]
    for t in threads:
        t.start()
    yield listener.getsockname()[1], received
    stop.set()
    threads[1].join(5)
    echo.close()
    listener.close()
    os.close(table)


def _nonce(port: int) -> tuple[socket.socket, bytes]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    nonce = b""
    while len(nonce) < NONCE_BYTES:
        nonce += sock.recv(NONCE_BYTES - len(nonce))
    return sock, nonce


def _closed_unread(sock: socket.socket) -> bool:
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True


def test_the_right_proof_is_forwarded_byte_for_byte(public) -> None:  # type: ignore[no-untyped-def]
    port, received = public
    sock, nonce = _nonce(port)
    sock.sendall(proof(SECRET, nonce) + b"dmtcp hello")
    assert sock.recv(100) == b"dmtcp hello"
    assert b"".join(received) == b"dmtcp hello"  # the proof itself is not forwarded


@pytest.mark.parametrize("case", ["wrong secret", "replayed", "one bit", "silent"])
def test_a_failed_proof_is_closed_unread_and_forwards_nothing(public, case: str) -> None:  # type: ignore[no-untyped-def]
    port, received = public
    first, old_nonce = _nonce(port)
    first.close()
    sock, nonce = _nonce(port)
    assert nonce != old_nonce  # a fresh nonce per connection
    answer = {
        "wrong secret": proof(os.urandom(32), nonce),
        "replayed": proof(SECRET, old_nonce),
        "one bit": bytes([proof(SECRET, nonce)[0] ^ 1]) + proof(SECRET, nonce)[1:],
        "silent": b"",
    }[case]
    sock.sendall(answer + (b"x" * 4096 if answer else b""))
    sock.settimeout(5)
    assert _closed_unread(sock)
    assert received == []
