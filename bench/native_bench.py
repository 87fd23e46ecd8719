"""The native engine on Slurm 19.05.8: sckpt beside ``scontrol checkpoint``, same run.

Run it as an unprivileged user against the 19.05 cluster, so sdiag's per-user RPC counts
are this benchmark's own::

    eval "$(scripts/slurm-cluster env --release 19.05)"
    runuser -u sckpt-alice -- env SLURM_CONF=$SLURM_CONF SLURM_INCLUDE_DIR=$SLURM_INCLUDE_DIR \\
        SLURM_LIB_DIR=$SLURM_LIB_DIR PATH=$PATH HOME=/tmp/alice-bench \\
        /work/main/.venv/bin/python /work/main/bench/native_bench.py --rounds 20

It submits one batch job whose step 0 is ``srun sleep``, then for able, error, disable and
enable measures, per call: ``scontrol checkpoint OP JOB.0`` (a process each), ``sckpt
checkpoint OP JOB.0`` (a process each: Python start-up, shim load, one call) and the facade
in one process (what the console pays per action), with the controller RPCs each sent.
Figures only; nothing is asserted.  Results go to stdout as a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from report import print_report  # bench/report.py: run as python bench/native_bench.py
from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import StepId

ROOT = Path(__file__).resolve().parent.parent
SCKPT = ROOT / ".venv" / "bin" / "sckpt"
USER = os.environ.get("USER") or os.environ.get("LOGNAME") or ""


_SDIAG_CALLS = [0]


def rpcs() -> int:
    """This user's controller RPCs, not counting this benchmark's own sdiag requests.

    sdiag's count includes every earlier sdiag of this user (not the one asking), and an
    RPC is counted after its reply: read until two readings agree.
    """

    def once() -> int:
        out = subprocess.run(["sdiag"], capture_output=True, text=True, check=True).stdout
        m = re.search(rf"^\s*{re.escape(USER)}\s+\(\s*\d+\)\s+count:(\d+)", out, re.MULTILINE)
        earlier = _SDIAG_CALLS[0]
        _SDIAG_CALLS[0] += 1
        return (int(m.group(1)) if m else 0) - earlier

    count = once()
    while True:
        time.sleep(0.3)
        again = once()
        if again == count:
            return count
        count = again


def measure(call: Callable[[], object], rounds: int) -> tuple[float, float, float]:
    """(median ms, max ms, controller RPCs per call)."""
    times = []
    before = rpcs()
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times), (rpcs() - before) / rounds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    scontrol = shutil.which("scontrol") or "scontrol"
    version = subprocess.run([scontrol, "--version"], capture_output=True, text=True).stdout
    job = int(
        subprocess.run(
            ["sbatch", "--parsable", "-o", "/dev/null", "--wrap", "srun sleep 3600"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    target = f"{job}.0"
    work = Path(tempfile.mkdtemp(prefix="sckpt-native-bench-"))
    try:
        while (
            target
            not in subprocess.run(
                ["squeue", "-h", "-s", "-j", str(job), "-o", "%i"], capture_output=True, text=True
            ).stdout.split()
        ):
            time.sleep(0.2)
        facade = open_facade(Settings(audit_log=work / "audit.log"), engine="native")
        step = StepId(job, 0)
        env = {**os.environ, "NO_COLOR": "1"}
        results: dict[str, object] = {"Slurm": version.strip(), "rounds": args.rounds}
        in_process: dict[str, Callable[[], object]] = {
            "able": lambda: facade.able(step),
            "error": lambda: facade.error(step),
            "disable": lambda: facade.disable(step),
            "enable": lambda: facade.enable(step),
        }
        for op in ("able", "error", "disable", "enable"):
            for who, argv in (
                ("scontrol", [scontrol, "checkpoint", op, target]),
                ("sckpt CLI", [str(SCKPT), "checkpoint", op, target]),
            ):
                median, worst, per = measure(
                    lambda argv=argv: subprocess.run(
                        argv, env=env, capture_output=True, check=True
                    ),
                    args.rounds,
                )
                results[f"{op}: {who} (median / max ms, RPCs)"] = (
                    f"{median:.1f} / {worst:.1f}, {per:.1f}"
                )
            median, worst, per = measure(in_process[op], args.rounds)
            results[f"{op}: sckpt facade in process (median / max ms, RPCs)"] = (
                f"{median:.2f} / {worst:.2f}, {per:.1f}"
            )
        facade.close()
    finally:
        subprocess.run(["scancel", str(job)], check=False)
        shutil.rmtree(work, ignore_errors=True)
    print_report(results)


if __name__ == "__main__":
    main()
