"""Tasks of one step that talk over TCP: the step-coordinator tests' program (plain Python).

``tcp_chat.py RENDEZVOUS OUT COUNT [PAUSE [MIB]]``, run as every task of a step (``SLURM_PROCID``
is the rank, ``SLURM_NTASKS`` the number of tasks).  Rank 0 serves: it listens on a port the
kernel picks and writes ``HOST PORT`` to ``RENDEZVOUS`` (which must not exist before the
step).  Every other rank connects and sends ``COUNT`` numbered messages, one at a time; rank 0
answers each; both sides check that each number is the one expected, so a lost or duplicated
message ends the program with ``lost or duplicated`` and exit status 3.  ``PAUSE`` seconds
(default 0.02) pass between two messages of a client; ``MIB`` MiB of random bytes are held
in memory first (images that take a while to write).

Each side keeps a running SHA-256 of its conversation (every line sent and received, in
order; rank 0 one per client, combined in rank order at the end).  ``OUT`` (``%t`` becomes
the rank) gets one line per completed exchange (its number) and, at the end, one line
``result last=N hash=H``; the same line goes to stdout.  The result depends only on the ranks,
``COUNT`` and the message text, so an uninterrupted run's hash can be compared with a run that
was checkpointed, vacated and restarted (lines written after the image was taken are written
again, identically, at the same offset).
"""

import hashlib
import os
import selectors
import socket
import sys
import time
from pathlib import Path
from typing import Any

RANK = int(os.environ.get("SLURM_PROCID", "0"))
NTASKS = int(os.environ.get("SLURM_NTASKS", "1"))


class LineReader:
    """Whole lines from a socket, without the file wrappers DMTCP need not know about."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn, self.buf = conn, b""

    def ready(self) -> list[str]:
        """Read what is there (one recv) and return the complete lines; [] at EOF too."""
        data = self.conn.recv(65536)
        if not data:
            raise EOFError
        self.buf += data
        *done, self.buf = self.buf.split(b"\n")
        return [line.decode() for line in done]

    def one(self) -> str:
        while b"\n" not in self.buf:
            data = self.conn.recv(65536)
            if not data:
                raise EOFError
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()


def fail(why: str) -> None:
    print(f"rank {RANK}: lost or duplicated: {why}", flush=True)
    sys.exit(3)


def finish(out, last: int, digest: str) -> None:  # type: ignore[no-untyped-def]
    line = f"result last={last} hash={digest}"
    out.write(line + "\n")
    out.flush()
    print(f"rank {RANK}: {line}", flush=True)


def serve(rendezvous: Path, out, count: int) -> None:  # type: ignore[no-untyped-def]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("0.0.0.0", 0))
    listener.listen(NTASKS)
    tmp = rendezvous.with_name(rendezvous.name + ".tmp")
    tmp.write_text(f"{socket.gethostname()} {listener.getsockname()[1]}\n")
    tmp.rename(rendezvous)
    sel = selectors.DefaultSelector()
    clients: dict[int, tuple[LineReader, Any, list[int]]] = {}  # reader, sha256, last number
    while len(clients) < NTASKS - 1:
        conn, _ = listener.accept()
        reader = LineReader(conn)
        rank = int(reader.one().split()[1])  # "hello RANK"; it waits for "welcome"
        conn.sendall(f"welcome {rank}\n".encode())
        clients[rank] = (reader, hashlib.sha256(), [0])
        sel.register(conn, selectors.EVENT_READ, rank)
    listener.close()
    done = 0
    while done < NTASKS - 1:
        for key, _ in sel.select():
            rank = key.data
            reader, digest, last = clients[rank]
            try:
                got = reader.ready()
            except EOFError:
                fail(f"rank {rank} hung up after {last[0]}")
            for line in got:
                frm, num, _text = line.split(" ", 2)
                if int(frm) != rank or int(num) != last[0] + 1:
                    fail(f"from rank {rank} expected {last[0] + 1}, got {line!r}")
                last[0] = int(num)
                answer = f"{rank} {num} ack {int(num) * 7 % 1000}"
                digest.update(f"{line}\n{answer}\n".encode())
                reader.conn.sendall(answer.encode() + b"\n")
                if last[0] == count:
                    sel.unregister(reader.conn)
                    done += 1
    total = hashlib.sha256()
    for rank in sorted(clients):
        total.update(f"{rank}:{clients[rank][1].hexdigest()}\n".encode())
    finish(out, min(c[2][0] for c in clients.values()) if clients else 0, total.hexdigest())


def ask(rendezvous: Path, out, count: int, pause: float) -> None:  # type: ignore[no-untyped-def]
    while not rendezvous.exists():
        time.sleep(0.05)
    host, port = rendezvous.read_text().split()
    conn = socket.create_connection((host, int(port)))
    conn.sendall(f"hello {RANK}\n".encode())
    reader = LineReader(conn)
    if reader.one() != f"welcome {RANK}":
        fail("no welcome")
    digest = hashlib.sha256()
    for n in range(1, count + 1):
        line = f"{RANK} {n} message {n * 13 % 997}"
        conn.sendall(line.encode() + b"\n")
        try:
            answer = reader.one()
        except EOFError:
            fail(f"server hung up at {n}")
        if answer != f"{RANK} {n} ack {n * 7 % 1000}":
            fail(f"sent {n}, answer {answer!r}")
        digest.update(f"{line}\n{answer}\n".encode())
        out.write(f"{n}\n")
        time.sleep(pause)
    finish(out, count, digest.hexdigest())


def main() -> None:
    rendezvous = Path(sys.argv[1])
    count = int(sys.argv[3])
    pause = float(sys.argv[4]) if len(sys.argv) > 4 else 0.02
    held = os.urandom(int(sys.argv[5]) << 20) if len(sys.argv) > 5 else b""
    with Path(sys.argv[2].replace("%t", str(RANK))).open("w", buffering=1) as out:
        if RANK == 0:
            serve(rendezvous, out, count)
        else:
            ask(rendezvous, out, count, pause)
    del held


main()
