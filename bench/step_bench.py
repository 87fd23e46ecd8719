"""Issue 33: a step-wide checkpoint beside ``dd``, and the coordinator relay's cost.

    SLURM_CONF=... .venv/bin/python bench/step_bench.py checkpoint [--rounds 3] [--mib 256]
    SLURM_CONF=... .venv/bin/python bench/step_bench.py chatty [--rounds 3] [--seconds 10]

``checkpoint``: a job of sckpt-alice runs 4 tasks that each hold ``--mib`` MiB of random
bytes, under ``sckpt run --transparent`` on the real cluster (``coordinator_memory.start_step``),
and ``sckpt create JOB.0 --wait`` is timed once per round, right after
``dd if=/dev/zero bs=1M count=4*MIB conv=fsync`` into the job's directory (the file system
the images go to).  Three steps: ``tcp_chat.py`` (rank 0 serves, the others ask every 0.2 s)
under ``--coordinator step``, and ``plain_counter.py`` (tasks that do not talk) under
``step`` and ``task``, so the two coordinator kinds are compared on the same program.  The
task's image is whole at the newest mtime of its images (from the moment
``create`` was started); image bytes and each wrapper's own ``ckpt_seconds`` come from the
step's record (the latter timed from the request's whole-second ``start``, so up to 1 s
longer).  The CPU time and socket bytes of the relays and coordinator(s) over the
create are taken as in ``chatty`` (below).

``chatty``: a 2-task ``tcp_chat.py`` with no pause (request, answer, as fast as the two
processes go) runs plain under ``srun``, under ``--coordinator step`` and under ``task``;
once it flows, messages per second are counted from the client's output over ``--seconds``,
and over the same window the CPU time (``/proc/PID/stat`` utime+stime) and the bytes
their TCP sockets sent and received (``ss -ti``) of what the wrappers started beside the programs
(relays, coordinator; ``coordinator_memory.beside``) and of the wrappers themselves.

Figures only; nothing is asserted.  Markdown tables go to stdout.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from coordinator_memory import SCKPT, beside, end_step, start_step
from dmtcp_bench import ROOT
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.checkpointing.transparent import IMAGE_GLOB
from sckpt.backend.model import StepId

PROGRAMS = ROOT / "tests" / "cooperative" / "programs"
CHAT = PROGRAMS / "tcp_chat.py"
COUNTER = PROGRAMS / "plain_counter.py"
TICKS = os.sysconf("SC_CLK_TCK")


def last_count(path: Path) -> int:
    """The last whole number a counting program wrote to ``path`` (0 before the first)."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - 64))
            lines = f.read().split(b"\n")[:-1]
    except OSError:
        return 0
    return int(lines[-1]) if lines and lines[-1].isdigit() else 0


def wait_flowing(work: Path, outs: list[str], job: int, able: bool) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        ok = all(last_count(work / o) > 0 for o in outs)
        if ok and able:
            got = subprocess.run(
                [str(SCKPT), "able", f"{job}.0"], capture_output=True, text=True, check=False
            )
            ok = got.stdout.strip() == "Yes"
        if ok:
            return
        time.sleep(0.5)
    raise SystemExit(f"job {job}: its tasks did not start counting in 180 s")


def dd_zero(work: Path, mib: int) -> float:
    target = work / "dd.bin"
    start = time.perf_counter()
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={mib}", "conv=fsync"],
        capture_output=True,
        check=True,
    )
    took = time.perf_counter() - start
    target.unlink()
    return took


def checkpoint_rounds(kind: str, program: str, mib: int, rounds: int) -> list[dict[str, float]]:
    if program == "chat":
        line, outs = f"/usr/bin/python3 {CHAT} rv out.%t 100000000 0.2 {mib}", ["out.1"]
    else:
        line, outs = f"/usr/bin/python3 {COUNTER} out.%t {mib}", [f"out.{t}" for t in range(4)]
    work, job, rec = start_step(kind, 4, line, base="/var/tmp", poll=0.5)
    extra = beside(rec)
    rows = []
    try:
        wait_flowing(work, outs, job, able=True)
        store = StepStore(work / ".sckpt", StepId(job, 0))
        for _ in range(rounds):
            dd = dd_zero(work, 4 * mib)
            cpu0, moved0 = cpu_io(extra)
            wall, start = time.time(), time.perf_counter()
            done = subprocess.run(
                [str(SCKPT), "create", f"{job}.0", "--wait"], capture_output=True, text=True
            )
            took = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(f"{kind}/{program}: create failed: {done.stderr.strip()}")
            cpu1, moved1 = cpu_io(extra)
            rec = store.read()
            rows.append(
                {
                    "dd": dd,
                    "create": took,
                    "recorded": max(rec.ckpt_seconds.values()),
                    "slowest": max(written(Path(d)) - wall for d in rec.last_image.values()),
                    "fastest": min(written(Path(d)) - wall for d in rec.last_image.values()),
                    "bytes": sum(rec.image_bytes.values()),
                    "beside_cpu": cpu1 - cpu0,
                    "beside_bytes": moved1 - moved0,
                }
            )
    finally:
        end_step(work, job)
    return rows


def written(generation: Path) -> float:
    """When a task's image of ``generation`` was last written (its newest image's mtime; the
    step's restart script is copied in later)."""
    return max(f.stat().st_mtime for f in generation.glob(IMAGE_GLOB))


def cpu_io(pids: list[int]) -> tuple[float, int]:
    """Seconds of CPU (utime+stime) of ``pids``, and the bytes their TCP sockets sent and
    received (``ss -ti`` in each of their network namespaces: ``/proc/PID/io`` does not
    count recv(2) and send(2)); a hop between two of them counts at both ends."""
    cpu, namespaces = 0.0, {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            namespaces[str(Path(f"/proc/{pid}/ns/net").readlink())] = pid
        except OSError:
            continue
        cpu += (int(fields[11]) + int(fields[12])) / TICKS
    moved, owners, wanted = 0, set(), {str(p) for p in pids}
    for pid in namespaces.values():
        listing = subprocess.run(
            ["nsenter", f"--net=/proc/{pid}/ns/net", "ss", "-tinpH"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        for line in listing.splitlines():
            if "users:(" in line:
                owners = set(re.findall(r"pid=(\d+)", line))
            elif owners & wanted:
                moved += sum(int(n) for n in re.findall(r"bytes_(?:sent|received):(\d+)", line))
    return cpu, moved


def chatty_once(kind: str, seconds: float) -> dict[str, float]:
    line = f"/usr/bin/python3 {CHAT} rv out.%t 1000000000 0"
    work, job, rec = start_step(kind, 2, line, base="/var/tmp", poll=0.5)
    try:
        wait_flowing(work, ["out.1"], job, able=False)
        time.sleep(2)  # past the start
        extra = beside(rec) if rec.tasks else []
        wrappers = [t.pid for t in rec.tasks.values()]
        n0, (c0, b0), (w0, _) = last_count(work / "out.1"), cpu_io(extra), cpu_io(wrappers)
        time.sleep(seconds)
        n1, (c1, b1), (w1, _) = last_count(work / "out.1"), cpu_io(extra), cpu_io(wrappers)
        return {
            "rate": (n1 - n0) / seconds,
            "beside_cpu": c1 - c0,
            "beside_bytes": b1 - b0,
            "wrapper_cpu": w1 - w0,
            "beside_procs": len(extra),
        }
    finally:
        end_step(work, job)


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main_checkpoint(args: argparse.Namespace) -> None:
    print(
        f"| 4 x {args.mib} MiB | round | load | dd {4 * args.mib} MiB (fsync) "
        "| create --wait | slowest task | fastest task | record's slowest | images "
        "| relays + coordinator: CPU, bytes |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, program in (("step", "chat"), ("step", "counter"), ("task", "counter")):
        rows = checkpoint_rounds(kind, program, args.mib, args.rounds)
        label = f"{kind}, {'tcp_chat' if program == 'chat' else 'plain_counter'}"
        for i, r in enumerate(rows, 1):
            print(
                f"| {label} | {i} | {load()} | {r['dd']:.2f} s | {r['create']:.2f} s "
                f"| {r['slowest']:.2f} s | {r['fastest']:.2f} s | {r['recorded']:.2f} s "
                f"| {r['bytes'] / (1 << 20):.0f} MiB "
                f"| {r['beside_cpu']:.2f} s, {r['beside_bytes']:,.0f} B |",
                flush=True,
            )
        for name, pick in (("median", statistics.median), ("max", max)):
            print(
                f"| {label} | {name} | | {pick(r['dd'] for r in rows):.2f} s "
                f"| {pick(r['create'] for r in rows):.2f} s "
                f"| {pick(r['slowest'] for r in rows):.2f} s | "
                f"| {pick(r['recorded'] for r in rows):.2f} s | | |",
                flush=True,
            )


def main_chatty(args: argparse.Namespace) -> None:
    print(
        f"| tcp_chat, 2 tasks, no pause | round | load | messages/s ({args.seconds:.0f} s) "
        "| CPU beside (relay, coordinator) | socket bytes beside | CPU of the wrappers |"
    )
    print("|---|---|---|---|---|---|---|")
    for i in range(1, args.rounds + 1):
        for kind in ("plain", "step", "task"):
            r = chatty_once(kind, args.seconds)
            print(
                f"| {kind} | {i} | {load()} | {r['rate']:,.0f} | {r['beside_cpu']:.2f} s "
                f"({r['beside_procs']:.0f} processes) | {r['beside_bytes']:,.0f} "
                f"| {r['wrapper_cpu']:.2f} s |",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=("checkpoint", "chatty"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    if args.what == "checkpoint":
        main_checkpoint(args)
    else:
        main_chatty(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
