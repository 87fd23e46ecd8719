"""Automatic checkpoints on the real cluster: what a periodic checkpoint stops, what a
preemption loses.

    .venv/bin/python bench/auto_bench.py stopped [--mib 1024] [--every 20] [--count 3]
    .venv/bin/python bench/auto_bench.py preempt [--every 30] [--rounds 2]

($SLURM_CONF set, as ``scripts/slurm-cluster env`` prints it.)

``stopped``: a job of sckpt-alice holds ``--mib`` MiB of random (incompressible) bytes and
ticks every 5 ms, logging every tick that came more than 50 ms after the previous one (the
time it was stopped), under ``sckpt run --every``: transparent (DMTCP stops it while it
writes the image) and signal (its handler writes the buffer, fsynced, between two ticks).
Beside it, in the same directory and round, ``dd`` of the same bytes with ``conv=fsync``.

``preempt``: a ``scavenger`` job under ``--every`` is preempted by a ``debug`` job needing
every CPU at a moment that does not depend on the interval, and resumes by itself; the work
lost is the time from its newest complete image to the preemption (its record's history
and ``scontrol``'s PreemptTime).  Transparent (the program dies of SIGTERM: loses what came
after the last interval image) and signal with ``--term-after 8`` (checkpointed on SIGTERM).

Figures only, nothing asserted; a Markdown table goes to stdout.  Needs the cluster of
``scripts/slurm-cluster up`` (its scavenger partition) and root (jobs run as sckpt-alice).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCKPT = ROOT / ".venv" / "bin" / "sckpt"
ALICE = "sckpt-alice"

TICKER = """
import os, signal, sys, time
from pathlib import Path
data = bytearray(os.urandom({mib} << 20))
log = open(sys.argv[1], "a", buffering=1)
requested = False
def ask(signum, frame):
    global requested
    requested = True
signal.signal(signal.SIGUSR1, ask)
last = time.monotonic()
while True:
    if requested:
        requested = False
        image = Path(os.environ["SCKPT_IMAGE_DIR"])
        with open(image / "data.tmp", "wb") as f:
            f.write(data); f.flush(); os.fsync(f.fileno())
        os.rename(image / "data.tmp", image / "data")
        Path(os.environ["SCKPT_CKPT_DONE"]).write_text("0\\n")
    time.sleep(0.005)
    now = time.monotonic()
    if now - last > 0.05:
        log.write(f"{{time.time():.3f}} {{now - last:.3f}}\\n")
    last = now
"""


def run(*argv: str, user: str | None = None, check: bool = True) -> str:
    cmd = list(argv)
    if user:
        cmd = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={os.environ['SLURM_CONF']}", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=600).stdout


def field(job: str, name: str) -> str:
    match = re.search(rf"\b{name}=(\S*)", run("scontrol", "show", "job", job, check=False))
    return match.group(1) if match else ""


def record(work: Path, job: str) -> dict[str, object]:
    try:
        return json.loads((work / ".sckpt" / f"{job}.0.json").read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return {}


SUBMITTED: list[str] = []
"""Every job this run submitted: cancelled when it ends, however it ends."""


def submit(work: Path, script: str, *sbatch: str) -> str:
    work.mkdir(parents=True)
    shutil.chown(work, ALICE, ALICE)
    (work / "job.sh").write_text(script)
    (work / "job.sh").chmod(0o755)
    out = run(
        "sbatch", "--parsable", f"--chdir={work}", "--requeue", "--open-mode=append",
        "-o", str(work / "out.txt"), *sbatch, str(work / "job.sh"), user=ALICE,
    )  # fmt: skip
    job = out.strip().split(";")[0]
    SUBMITTED.append(job)
    return job


def wait(predicate: Callable[[], bool], timeout: float) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {predicate}")
        time.sleep(0.5)


def history(work: Path, job: str) -> list[dict[str, Any]]:
    lines = record(work, job).get("history", [])
    return [dict(h) for h in lines] if isinstance(lines, list) else []


def completed(work: Path, job: str) -> list[dict[str, Any]]:
    """The history lines of the checkpoints that completed."""
    return [h for h in history(work, job) if h.get("operation") == "done" and h.get("code") == 0]


def enough(work: Path, job: str, count: int) -> bool:
    return len(completed(work, job)) >= count


def wait_field(job: str, name: str, wanted: Callable[[str], bool], timeout: float) -> None:
    wait(lambda: wanted(field(job, name)), timeout)


def stopped(args: argparse.Namespace) -> None:
    top = Path(tempfile.mkdtemp(prefix="sckpt-autobench-", dir=args.dir))
    top.chmod(0o755)
    ticker = top / "ticker.py"
    ticker.write_text(TICKER.format(mib=args.mib))
    rows = []
    try:
        for how in ("signal", "transparent"):
            work = top / how
            flag = "--transparent" if how == "transparent" else ""
            script = (
                f"#!/bin/bash\nsrun -n1 {SCKPT} run {flag} --every {args.every}s --poll 0.5 "
                f"--name tick -- /usr/bin/python3 {ticker} $PWD/gaps.log\n"
            )
            job = submit(work, script)
            limit = args.every * (args.count + 3) + 120
            wait(partial(enough, work, job, args.count), limit)
            run("scancel", job)
            src = Path("/dev/shm") / f"autobench-{os.getpid()}"
            src.write_bytes(os.urandom(args.mib << 20))
            began = time.monotonic()
            run("dd", f"if={src}", f"of={work / 'dd.out'}", "bs=1M", "conv=fsync")
            dd = time.monotonic() - began
            src.unlink()
            (work / "dd.out").unlink()
            gaps = [
                float(line.split()[1])
                for line in (work / "gaps.log").read_text().split("\n")
                if line
            ]
            long = sorted(gaps, reverse=True)[: args.count]
            rec = record(work, job)
            took = float(dict(rec.get("ckpt_seconds", {})).get("0", 0.0))  # type: ignore[call-overload]
            rows.append((how, long, dd, took))
        print(
            f"| {args.mib} MiB, every {args.every}s | stopped per checkpoint (each) | median | "
            "sckpt's measured checkpoint | dd (fsync) |"
        )
        print("|---|---|---|---|---|")
        for how, long, dd, took in rows:
            each = ", ".join(f"{g:.2f} s" for g in long)
            median = statistics.median(long) if long else 0.0
            print(f"| {how} | {each} | {median:.2f} s | {took:.2f} s | {dd:.2f} s |")
    finally:
        shutil.rmtree(top, ignore_errors=True)


def preempt(args: argparse.Namespace) -> None:
    top = Path(tempfile.mkdtemp(prefix="sckpt-autobench-", dir=args.dir))
    top.chmod(0o755)
    counter = ROOT / "examples" / "counter.py"
    plain = ROOT / "tests" / "cooperative" / "programs" / "plain_counter.py"
    rows = []
    try:
        for round_ in range(args.rounds):
            for how in ("signal", "transparent"):
                work = top / f"{how}-{round_}"
                if how == "signal":
                    program = f"/usr/bin/python3 {counter} --log $PWD/c.log --term-after 8"
                    flag = ""
                else:
                    program = f"/usr/bin/python3 {plain} $PWD/c.log"
                    flag = "--transparent"
                script = (
                    f"#!/bin/bash\nsrun -n1 {SCKPT} run {flag} --every {args.every}s "
                    f"--poll 0.5 --name c -- {program}\n"
                )
                job = submit(work, script, "-p", "scavenger", "--exclusive")
                wait_field(job, "JobState", lambda v: v == "RUNNING", 120)
                # a moment that does not depend on the interval: 1.3 intervals + 7 s per round
                time.sleep(args.every * 1.3 + 7 * round_)
                print(f"round {round_ + 1}, {how}: preempting job {job}", file=sys.stderr)
                high = run("sbatch", "--parsable", "-p", "debug", "--exclusive", "-o",
                           "/dev/null", "--wrap", "sleep 2").strip()  # fmt: skip
                wait_field(job, "Restarts", lambda v: int(v or 0) >= 1, 120)
                preempted = time.time()
                wait_field(job, "JobState", lambda v: v == "RUNNING", 240)
                done = completed(work, job)
                asked = [h for h in history(work, job) if h.get("cause") == "SIGTERM"]
                term_at = min((int(h["time"]) for h in asked), default=int(preempted))
                before = [int(h["time"]) for h in done if int(h["time"]) <= term_at + 30]
                lost = max(0, term_at - max(before)) if before else -1
                saved = any(h.get("cause") == "SIGTERM" for h in done)
                run("scancel", job, high, check=False)
                rows.append((how, round_, lost, saved))
        print(f"| preemption, --every {args.every}s | round | work lost | SIGTERM checkpoint |")
        print("|---|---|---|---|")
        for how, round_, lost, term in rows:
            print(f"| {how} | {round_ + 1} | {lost} s | {'complete' if term else 'none'} |")
    finally:
        shutil.rmtree(top, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("stopped")
    one.add_argument("--mib", type=int, default=1024)
    one.add_argument("--every", type=int, default=20)
    one.add_argument("--count", type=int, default=3)
    two = sub.add_parser("preempt")
    two.add_argument("--every", type=int, default=30)
    two.add_argument("--rounds", type=int, default=2)
    for p in (one, two):
        p.add_argument("--dir", default="/var/tmp")
    args = parser.parse_args()
    if "SLURM_CONF" not in os.environ:
        print("auto_bench: set SLURM_CONF (scripts/slurm-cluster env)", file=sys.stderr)
        return 2
    try:
        stopped(args) if args.what == "stopped" else preempt(args)
    finally:
        if SUBMITTED:
            run("scancel", *SUBMITTED, check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
