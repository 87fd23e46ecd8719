#!/usr/bin/env python3
"""A counter that follows sckpt's checkpoint contract (see README, "Cooperative checkpointing").

It counts 1, 2, 3 ... and appends every value it counts to ``--log``.  It installs the
handler of its checkpoint signal ($SCKPT_CKPT_SIGNAL, default SIGUSR1) first thing, and on
that signal saves its state between two counts:

1. write ``state.tmp`` in $SCKPT_IMAGE_DIR, fsync, rename it to ``state`` (atomic: a crash
   leaves the previous image intact);
2. write ``0`` (or ``<code> <message>`` on failure) to the file named by $SCKPT_CKPT_DONE.

The state is the count *and the log's length*: on a restart ($SLURM_RESTART_DIR set) the
counter truncates its log to the checkpointed length, so values counted after the checkpoint
(before the job was vacated) are counted again exactly once, as an application's output
after its last checkpoint would be redone.

Options for the tests: ``--fail "CODE MESSAGE"`` reports that error instead of saving,
``--slow SECONDS`` sleeps between writing ``state.tmp`` and the rename (from checkpoint
``--slow-from`` on), ``--limit N`` stops.
Standard library only: runs with any python3 on a compute node.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

requested = False


def on_checkpoint(signum: int, frame: object) -> None:
    global requested
    requested = True


TERM_AFTER = 0.0
"""``--term-after``: seconds it goes on counting after SIGTERM (0: it ends at once)."""
term_at: float = 0.0


def on_term(signum: int, frame: object) -> None:
    global term_at
    if not TERM_AFTER:
        raise SystemExit(143)
    term_at = term_at or time.monotonic()


def report(text: str) -> None:
    done = os.environ.get("SCKPT_CKPT_DONE")
    if done:
        Path(done).write_text(text + "\n")


def checkpoint(count: int, log_size: int, args: argparse.Namespace) -> None:
    image = Path(os.environ.get("SCKPT_IMAGE_DIR", "."))
    if args.fail:
        report(args.fail)
        return
    try:
        image.mkdir(parents=True, exist_ok=True)
        tmp = image / "state.tmp"
        with tmp.open("w") as f:
            f.write(f"{count} {log_size}\n")
            f.flush()
            os.fsync(f.fileno())
        args.taken = getattr(args, "taken", 0) + 1
        if args.slow and args.taken >= args.slow_from:
            time.sleep(args.slow)
        tmp.replace(image / "state")
    except OSError as exc:
        report(f"{exc.errno or 5} {exc.strerror}")
        return
    report("0")


def main() -> int:
    # First thing, before anything slow (parsing, loading input): until the handler is
    # installed the checkpoint signal would kill the program, so sckpt does not send it
    # (``sckpt able`` says "program does not catch SIGUSR1" until then).
    sig = getattr(signal, os.environ.get("SCKPT_CKPT_SIGNAL", "SIGUSR1"), signal.SIGUSR1)
    signal.signal(sig, on_checkpoint)
    signal.signal(signal.SIGTERM, on_term)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="file each counted value is appended to")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds per count")
    parser.add_argument("--limit", type=int, default=0, help="stop after this value (0: never)")
    parser.add_argument("--fail", default="", help='report "CODE MESSAGE" instead of saving')
    parser.add_argument("--slow", type=float, default=0.0, help="seconds inside a checkpoint")
    parser.add_argument(
        "--slow-from", type=int, default=1, help="first checkpoint (1, 2 ...) that is slow"
    )
    parser.add_argument(
        "--term-after",
        type=float,
        default=0.0,
        help="on SIGTERM, go on this many seconds (a checkpoint may still be asked for)",
    )
    args = parser.parse_args()
    global TERM_AFTER
    TERM_AFTER = args.term_after

    count, log_size = 0, 0
    restart = os.environ.get("SLURM_RESTART_DIR")
    if restart:
        count, log_size = (int(x) for x in (Path(restart) / "state").read_text().split())
        with Path(args.log).open("r+b") as f:
            f.truncate(log_size)
        print(f"counter: resumed from {count} ({restart})", file=sys.stderr, flush=True)
    else:
        Path(args.log).write_bytes(b"")
        print("counter: starting from 0", file=sys.stderr, flush=True)

    global requested
    with Path(args.log).open("ab", buffering=0) as log:
        while not args.limit or count < args.limit:
            if requested:
                requested = False
                checkpoint(count, log.tell(), args)
            if term_at:
                if not getattr(args, "term_said", False):
                    args.term_said = True
                    print(f"counter: SIGTERM at {count}", file=sys.stderr, flush=True)
                if time.monotonic() - term_at >= TERM_AFTER:
                    return 143
            count += 1
            log.write(f"{count}\n".encode())
            time.sleep(args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
