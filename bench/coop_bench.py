"""Cooperative checkpointing on the real cluster: latencies and controller RPCs per operation.

Run it as the job's owner (an unprivileged user), so that sdiag's per-user RPC counts are
this benchmark's own even while other people use the cluster as root::

    runuser -u sckpt-alice -- env SLURM_CONF=/tmp/sckpt-cluster/slurm.conf \\
        /work/main/.venv/bin/python /work/main/bench/coop_bench.py --rounds 10

It submits one batch job running ``examples/counter.py`` under ``srun sckpt run`` (default
wrapper options: poll 1 s, grace 2 s), then measures

* create -> complete recorded: the facade's ``create`` returns when the wrapper recorded
  the outcome (the signal wakes the wrapper; polling is only the fallback);
* restart -> program running again: from ``restart`` until the counter prints
  "resumed from" (after a vacate that requeued the job held);
* controller RPCs per operation: sdiag's "by user" count for this user, before and after.

Figures only; nothing is asserted.  Results go to stdout as a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sckpt.backend.config import Settings
from sckpt.backend.facade import Facade, open_facade

ROOT = Path(__file__).resolve().parent.parent
SCKPT = ROOT / ".venv" / "bin" / "sckpt"
EXAMPLE = ROOT / "examples" / "counter.py"


def user_rpcs() -> int:
    """This user's controller RPC count from sdiag (0 when sdiag does not list it)."""
    out = subprocess.run(["sdiag"], capture_output=True, text=True, check=True).stdout
    section = out.split("Remote Procedure Call statistics by user", 1)[-1]
    name = (
        os.environ.get("USER")
        or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    )
    match = re.search(rf"^\s*{re.escape(name)}\s+\(\s*\d+\)\s+count:(\d+)", section, re.M)
    return int(match.group(1)) if match else 0


SDIAG_OWN = 0
"""RPCs one ``user_rpcs()`` call itself adds (measured at start-up, subtracted)."""


def measure(fn: Callable[[], object]) -> tuple[float, int]:
    """(seconds, controller RPCs) of one call."""
    before = user_rpcs()
    start = time.perf_counter()
    fn()
    took = time.perf_counter() - start
    return took, user_rpcs() - before - SDIAG_OWN


def wait(predicate: Callable[[], bool], timeout: float = 120, step: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit("benchmark: timed out waiting")
        time.sleep(step)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument(
        "--pause", type=float, default=5.0, help="seconds between vacate and restart"
    )
    args = parser.parse_args()
    global SDIAG_OWN
    a, b, c = user_rpcs(), user_rpcs(), user_rpcs()
    SDIAG_OWN = min(b - a, c - b)
    work = Path(tempfile.mkdtemp(prefix="sckpt-coop-bench-", dir="/tmp"))
    script = work / "job.sh"
    script.write_text(
        f"#!/bin/bash\nsrun -n1 {SCKPT} run -- /usr/bin/python3 {EXAMPLE} --log {work}/count.log\n"
    )
    out = work / "out.txt"
    job_id = int(
        subprocess.run(
            ["sbatch", "--parsable", "--open-mode=append", "-o", str(out), str(script)],
            capture_output=True,
            text=True,
            check=True,
            cwd=work,
        ).stdout.split(";")[0]
    )
    facade: Facade = open_facade(Settings(audit_log=work / "audit.log"), engine="cooperative")
    rows: dict[str, list[tuple[float, int]]] = {}
    try:
        target = f"{job_id}.0"

        def registered() -> bool:
            try:
                facade.able(target)
            except Exception:
                return False
            return True

        wait(registered)
        time.sleep(2.5)  # past the wrapper's start-up grace
        for op, call in (
            ("able", lambda: facade.able(target)),
            ("error", lambda: facade.error(target)),
            ("disable", lambda: facade.disable(target)),
            ("enable", lambda: facade.enable(target)),
            ("snapshot", facade.snapshot),
        ):
            rows[op] = [measure(call) for _ in range(args.rounds)]
        rows["create -> complete recorded"] = [
            measure(lambda: facade.create(target, max_wait=30)) for _ in range(args.rounds)
        ]
        for _ in range(max(1, args.rounds // 3)):
            rows.setdefault("vacate (checkpoint + requeue held)", []).append(
                measure(lambda: facade.vacate(target, max_wait=30))
            )
            wait(lambda: "job_requeued_in_held_state" in show(job_id), step=0.2)
            time.sleep(args.pause)  # an operator restarts later; right away costs CREDENTIAL_GAP
            seen = out.read_text().count("resumed from")

            def restart() -> None:
                facade.restart(str(job_id), stick=False)

            before = user_rpcs()
            start = time.perf_counter()
            restart()
            returned = time.perf_counter() - start
            rpcs = user_rpcs() - before - SDIAG_OWN
            wait(lambda s=seen: out.read_text().count("resumed from") > s)
            running = time.perf_counter() - start
            rows.setdefault("restart (call returns)", []).append((returned, rpcs))
            rows.setdefault("restart -> program running again", []).append((running, rpcs))
            wait(registered)
            time.sleep(2.5)
    finally:
        facade.close()
        subprocess.run(["scancel", str(job_id)], check=False)
    print(
        f"job {job_id}, {args.rounds} rounds, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print("| operation | median | max | controller RPCs (median) |")
    print("|---|---|---|---|")
    for op, values in rows.items():
        secs = [v[0] * 1000 for v in values]
        rpcs = [v[1] for v in values]
        print(
            f"| {op} | {statistics.median(secs):.0f} ms | {max(secs):.0f} ms | "
            f"{statistics.median(rpcs):.0f} |"
        )
    return 0


def show(job_id: int) -> str:
    return subprocess.run(
        ["scontrol", "show", "job", str(job_id)], capture_output=True, text=True
    ).stdout


if __name__ == "__main__":
    sys.exit(main())
