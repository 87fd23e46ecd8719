#!/usr/bin/env python3
"""A program whose checkpoint image is two files, as the README's contract asks each to be
written: ``part1`` then ``part2``, each as ``.tmp``, fsync, rename.  Between the two it may
sleep (``--slow`` from checkpoint ``--slow-from`` on), so a test can interrupt a checkpoint
after the first file and before the second.

It counts (one value per ``--interval``) into ``--log``; both parts hold the count at the
checkpoint.  On start with ``$SLURM_RESTART_DIR`` it reads both parts and prints
``two_files: resumed part1=A part2=B (DIR)``: a torn image is ``A != B``.  Standard library
only, so it runs with any python3 on a compute node.
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


def write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def main() -> int:
    signal.signal(signal.SIGUSR1, on_checkpoint)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--slow-from", type=int, default=2)
    args = parser.parse_args()
    count = 0
    restart = os.environ.get("SLURM_RESTART_DIR")
    if restart:
        one = int((Path(restart) / "part1").read_text())
        two = int((Path(restart) / "part2").read_text())
        count = min(one, two)
        print(f"two_files: resumed part1={one} part2={two} ({restart})", file=sys.stderr)
    else:
        print("two_files: starting from 0", file=sys.stderr)
    sys.stderr.flush()
    taken = 0
    global requested
    with Path(args.log).open("a") as log:
        while True:
            if requested:
                requested = False
                taken += 1
                image = Path(os.environ["SCKPT_IMAGE_DIR"])
                write(image / "part1", str(count))
                if args.slow and taken >= args.slow_from:
                    time.sleep(args.slow)
                write(image / "part2", str(count))
                Path(os.environ["SCKPT_CKPT_DONE"]).write_text("0\n")
            count += 1
            log.write(f"{count}\n")
            log.flush()
            time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
