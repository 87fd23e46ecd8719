"""Two tasks that talk over one TCP connection, or a task talking to a server outside the job.

``tcp_talk.py DIR``: task 0 (``SLURM_PROCID``) listens on 127.0.0.1, writes its port to
``DIR/port``, accepts one connection and answers each number ``n`` with ``2n``; task 1
connects and asks 1, 2, 3 ... every 20 ms.  ``tcp_talk.py DIR HOST:PORT``: every task asks
that server instead (an echo server started outside the job, which answers ``2n`` too).

Each asking task writes ``n 2n`` per answer to ``DIR/talk.<rank>.log``, the serving task
``n`` per question to ``DIR/talk.0.log``: a conversation that went on has every number
exactly once, in order.  A wrong answer ends the program with status 3.
"""

import os
import socket
import sys
import time
from pathlib import Path

where = Path(sys.argv[1])
rank = int(os.environ.get("SLURM_PROCID", "0"))
log = (where / f"talk.{rank}.log").open("w", buffering=1)


def serve() -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    tmp = where / "port.tmp"
    tmp.write_text(str(listener.getsockname()[1]))
    tmp.rename(where / "port")
    conn, _ = listener.accept()
    reader = conn.makefile("r")
    for line in reader:
        n = int(line)
        log.write(f"{n}\n")
        conn.sendall(f"{2 * n}\n".encode())


def ask(address: tuple[str, int]) -> None:
    conn = socket.create_connection(address)
    reader = conn.makefile("r")
    n = 0
    while True:
        n += 1
        conn.sendall(f"{n}\n".encode())
        answer = int(reader.readline())
        if answer != 2 * n:
            log.write(f"wrong answer {answer} to {n}\n")
            sys.exit(3)
        log.write(f"{n} {answer}\n")
        time.sleep(0.02)


if len(sys.argv) > 2:
    host, _, port = sys.argv[2].rpartition(":")
    ask((host, int(port)))
elif rank == 0:
    serve()
else:
    while not (where / "port").exists():
        time.sleep(0.05)
    ask(("127.0.0.1", int((where / "port").read_text())))
