"""Memory sckpt adds beside a ``--transparent`` step, per task, by coordinator kind.

    SLURM_CONF=... .venv/bin/python bench/coordinator_memory.py [--tasks 16 64]

For each ``--coordinator task`` and ``step`` and each task count, a job of sckpt-alice runs
``srun -O -n N sckpt run --transparent --coordinator KIND -- sleep 600`` on the real
cluster.  Once every task is registered, the PSS (``/proc/PID/smaps_rollup``) of what each
wrapper started beside its program is summed: its relay (a forked Python), the coordinator
behind it, a node relay; the program's own processes and the wrapper itself are left out
(the wrapper's PSS is shown apart).  Figures only; nothing is asserted.  A Markdown table
goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SCKPT = ROOT / ".venv" / "bin" / "sckpt"

from sckpt.backend.checkpointing.processes import process_tree  # noqa: E402
from sckpt.backend.checkpointing.protocol import StepRecord  # noqa: E402
from sckpt.backend.checkpointing.store import StepStore  # noqa: E402
from sckpt.backend.model import StepId  # noqa: E402


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def start_step(
    kind: str,
    tasks: int,
    program: str,
    base: str = "/tmp",
    wait: float = 300,
    poll: float = 5,
) -> tuple[Path, int, StepRecord]:
    """Submit a job of sckpt-alice whose one step runs ``program`` (a shell word list) on
    ``tasks`` tasks under ``sckpt run --transparent --coordinator KIND`` (``kind`` "plain":
    under srun alone, no sckpt), in a fresh directory under ``base``; return that directory,
    the job id and, once every task has registered, the step's record (plain: an empty one).
    ``end_step`` cancels the job and removes the directory."""
    work = Path(tempfile.mkdtemp(prefix="sckpt-bench-", dir=base))
    work.chmod(0o755)
    shutil.chown(work, "sckpt-alice", "sckpt-alice")
    script = work / "job.sh"
    wrap = (
        ""
        if kind == "plain"
        else f"{SCKPT} run --transparent --coordinator {kind} --poll {poll} -- "
    )
    script.write_text(f"#!/bin/bash\n#SBATCH -n {tasks} -O\nsrun -O {wrap}{program}\n")
    script.chmod(0o755)
    sbatch = ["env", f"SLURM_CONF={os.environ['SLURM_CONF']}", "sbatch", "--parsable"]
    out = subprocess.run(
        ["runuser", "-u", "sckpt-alice", "--", *sbatch, f"--chdir={work}", str(script)],
        capture_output=True,
        text=True,
        check=True,
    )
    job = int(out.stdout.strip().split(";")[0])
    if kind == "plain":
        return work, job, StepRecord(job_id=job, step="0")
    store = StepStore(work / ".sckpt", StepId(job, 0))
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        rec = store.read() if store.path.exists() else None
        running = [t for t in (rec.tasks.values() if rec else []) if t.program_pid]
        if rec is not None and len(running) == tasks:
            return work, job, rec
        time.sleep(1)
    end_step(work, job)
    raise SystemExit(f"{kind} x{tasks}: not every task registered in {wait:.0f} s")


def end_step(work: Path, job: int) -> None:
    subprocess.run(["scancel", str(job)], check=False)
    time.sleep(5)
    shutil.rmtree(work, ignore_errors=True)


def beside(rec: StepRecord) -> list[int]:
    """The processes the step's wrappers started beside their programs (relays, the
    coordinator), neither the programs' own nor the wrappers."""
    found = []
    for t in rec.tasks.values():
        program = set(process_tree(t.program_pid))
        found += [p for p in process_tree(t.pid) if p != t.pid and p not in program]
    return found


def measure(kind: str, tasks: int) -> dict[str, float]:
    work, job, rec = start_step(kind, tasks, "sleep 600")
    try:
        time.sleep(5)  # let every task settle
        wrappers = sum(pss_kib(t.pid) for t in rec.tasks.values())
        return {"beside": sum(pss_kib(p) for p in beside(rec)) / 1024, "wrapper": wrappers / 1024}
    finally:
        end_step(work, job)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, nargs="+", default=[16, 64])
    args = parser.parse_args()
    print("| coordinator | tasks | beside the wrappers (PSS, MB) | per task | wrappers per task |")
    print("|---|---|---|---|---|")
    for tasks in args.tasks:
        for kind in ("task", "step"):
            got = measure(kind, tasks)
            print(
                f"| {kind} | {tasks} | {got['beside']:.1f} | {got['beside'] / tasks:.2f} "
                f"| {got['wrapper'] / tasks:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
