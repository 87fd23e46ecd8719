"""Transparent checkpointing (DMTCP 4.2.0): checkpoint and restart of 1 GiB, beside ``dd``.

    .venv/bin/python bench/dmtcp_bench.py [--dir DIR] [--mib 1024] [--rounds 3] [--gzip]
    .venv/bin/python bench/dmtcp_bench.py --throughput [--seconds 10] [--rounds 3]

A Python process fills ``--mib`` MiB of resident memory with random bytes (incompressible)
and then sleeps.  It runs under the project's DMTCP with sckpt's own checkpointer
(``backend/transparent.py``: a private coordinator behind the uid-checking relay, images
fsynced before a checkpoint is called complete), so the figure is what a create costs
inside the wrapper, minus the wrapper's polling.  In the same round and directory:

* dd: ``dd bs=1M conv=fsync`` of the same number of random bytes (read from a file in
  /dev/shm, so only the write is timed): the disk's limit;
* checkpoint: from ``dmtcp_command --checkpoint`` until every image is whole and flushed,
  split into "written" (the images have their final names) and the fsync after it;
* restart: from ``dmtcp_restart`` until the coordinator sees the process running again.

``--slurm``: the same through the whole product, on the real cluster ($SLURM_CONF): a job of
sckpt-alice runs the holder under ``srun sckpt run --transparent`` (one task), and
``sckpt create JOB.0 --wait`` is timed (request, wrapper, DMTCP, fsync, generation), beside
dd in the job's directory, once per round.

``--throughput``: a counter that writes each count to a file as fast as it can, for
``--seconds``, alone and under ``dmtcp_launch``: the cost of running under DMTCP.

Figures only; nothing is asserted.  A Markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sckpt.backend.checkpointing.dmtcp import find_dmtcp
from sckpt.backend.checkpointing.transparent import DmtcpCheckpointer

HOLDER = """
import os, sys, time
data = os.urandom({mib} << 20)
open(sys.argv[1], "w").write("ready")
while True:
    time.sleep(1)
"""
COUNTER = """
import sys, time
out = open(sys.argv[1], "w")
end = time.monotonic() + float(sys.argv[2])
flush = sys.argv[3] == "flush"
n = 0
while time.monotonic() < end:  # the clock once per 1000 counts: DMTCP wraps clock_gettime
    for _ in range(1000):
        n += 1
        out.write(f"{n}\\n")
        if flush:
            out.flush()
print(n)
"""


def running(checkpointer: DmtcpCheckpointer, env: dict[str, str]) -> bool:
    out = subprocess.run(
        [checkpointer.install.program("dmtcp_command"), "--status"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return "NUM_PEERS=1" in out and "RUNNING=yes" in out


def dd_seconds(work: Path, mib: int) -> float:
    source = Path(tempfile.mkstemp(prefix="sckpt-dmtcp-bench-", dir="/dev/shm")[1])
    try:
        with source.open("wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
        start = time.perf_counter()
        subprocess.run(
            ["dd", f"if={source}", f"of={work / 'dd.bin'}", "bs=1M", "conv=fsync"],
            capture_output=True,
            check=True,
        )
        return time.perf_counter() - start
    finally:
        source.unlink()
        (work / "dd.bin").unlink(missing_ok=True)


def one_round(work: Path, mib: int, gzip: bool) -> dict[str, float]:
    install = find_dmtcp()
    task = work / "task0"
    task.mkdir()
    dd = dd_seconds(work, mib)

    checkpointer = DmtcpCheckpointer(install, task, gzip=gzip)
    env = {**os.environ, **checkpointer.env()}
    holder = work / "holder.py"
    holder.write_text(HOLDER.format(mib=mib))
    ready = work / "ready"
    child = subprocess.Popen(
        checkpointer.command([sys.executable, str(holder), str(ready)]), env=env
    )
    while not ready.exists():
        time.sleep(0.1)
    time.sleep(0.5)
    start = time.perf_counter()
    code, message = checkpointer.begin(child.pid)
    if code:
        raise SystemExit(f"checkpoint refused: {message}")
    while checkpointer.images() is None:
        time.sleep(0.01)
    written = time.perf_counter() - start
    while checkpointer.poll() is None:
        time.sleep(0.01)
    ckpt = time.perf_counter() - start
    generation = task / "g1"
    generation.mkdir()
    size = checkpointer.collect(generation)
    child.kill()
    child.wait()
    checkpointer.close()

    again = DmtcpCheckpointer(install, task, gzip=gzip)
    env = {**os.environ, **again.env()}
    start = time.perf_counter()
    restarted = subprocess.Popen(
        again.command([], str(generation)), env=env, stderr=subprocess.DEVNULL
    )
    while not running(again, env):
        time.sleep(0.01)
    restart = time.perf_counter() - start
    restarted.kill()
    restarted.wait()
    again.close()
    return {"dd": dd, "written": written, "ckpt": ckpt, "restart": restart, "size": size}


def throughput(work: Path, seconds: float, under: bool, flush: bool) -> int:
    """Counts per run of a counter that writes each count (``flush``: one write(2) each;
    else buffered, nearly all CPU), alone or under DMTCP."""
    script = work / "counter.py"
    script.write_text(COUNTER)
    mode = "flush" if flush else "buffered"
    command = [sys.executable, str(script), str(work / "count.log"), str(seconds), mode]
    env = dict(os.environ)
    checkpointer = None
    if under:
        checkpointer = DmtcpCheckpointer(find_dmtcp(), work)
        env.update(checkpointer.env())
        command = checkpointer.command(command)
    try:
        out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        return int(out.stdout.split()[-1])
    finally:
        if checkpointer is not None:
            checkpointer.close()


ROOT = Path(__file__).resolve().parent.parent
SCKPT = ROOT / ".venv" / "bin" / "sckpt"
PLAIN = ROOT / "tests" / "cooperative" / "programs" / "plain_counter.py"


def through_slurm(base: str, mib: int, rounds: int) -> list[dict[str, float]]:
    work = Path(tempfile.mkdtemp(prefix="sckpt-dmtcp-bench-", dir=base))
    work.chmod(0o755)
    subprocess.run(["chown", "sckpt-alice:sckpt-alice", str(work)], check=True)
    script = work / "job.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH -n 1\n"
        f"srun {SCKPT} run --transparent --poll 0.5 --name big -- /usr/bin/python3 {PLAIN} "
        f"{work}/count.log {mib}\n"
    )
    script.chmod(0o755)
    env = {"SLURM_CONF": os.environ["SLURM_CONF"]}
    out = subprocess.run(
        [
            "runuser",
            "-u",
            "sckpt-alice",
            "--",
            "env",
            f"SLURM_CONF={env['SLURM_CONF']}",
            "sbatch",
            "--parsable",
            f"--chdir={work}",
            "-o",
            str(work / "out.txt"),
            str(script),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    job = out.stdout.strip().split(";")[0]
    rows = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            able = subprocess.run([str(SCKPT), "able", f"{job}.0"], capture_output=True, text=True)
            log = work / "count.log"
            if able.stdout.strip() == "Yes" and log.exists() and log.stat().st_size > 0:
                break
            time.sleep(0.5)
        for _ in range(rounds):
            dd = dd_seconds(work, mib)
            start = time.perf_counter()
            done = subprocess.run(
                [str(SCKPT), "create", f"{job}.0", "--wait"], capture_output=True, text=True
            )
            took = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(f"create failed: {done.stderr.strip()}")
            rows.append({"dd": dd, "create": took})
    finally:
        subprocess.run(["scancel", job], check=False)
        time.sleep(3)
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", default=None, help="where images and dd write (default /var/tmp)")
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gzip", action="store_true", help="DMTCP's gzip compression on")
    parser.add_argument("--throughput", action="store_true")
    parser.add_argument("--slurm", action="store_true")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    base = args.dir or "/var/tmp"
    if args.slurm:
        rows = through_slurm(base, args.mib, args.rounds)
        print(f"| {args.mib} MiB through Slurm | dd (fsync) | sckpt create --wait | ratio |")
        print("|---|---|---|---|")
        ratio = statistics.median(r["create"] / r["dd"] for r in rows)
        dd = statistics.median(r["dd"] for r in rows)
        create = statistics.median(r["create"] for r in rows)
        print(f"| median of {args.rounds} | {dd:.2f} s | {create:.2f} s | {ratio:.2f}x |")
        for i, r in enumerate(rows, 1):
            print(
                f"| round {i} | {r['dd']:.2f} s | {r['create']:.2f} s "
                f"| {r['create'] / r['dd']:.2f}x |"
            )
        return 0
    if args.throughput:
        print(
            f"| counter, counts/s (median of {args.rounds} x {args.seconds:.0f} s) | alone "
            "| under DMTCP | cost |"
        )
        print("|---|---|---|---|")
        for flush in (False, True):
            alone, under = [], []
            for _ in range(args.rounds):
                for flag, into in ((False, alone), (True, under)):
                    work = Path(tempfile.mkdtemp(prefix="sckpt-dmtcp-bench-", dir=base))
                    try:
                        into.append(throughput(work, args.seconds, flag, flush) / args.seconds)
                    finally:
                        shutil.rmtree(work, ignore_errors=True)
            a, u = statistics.median(alone), statistics.median(under)
            what = "one write(2) per count" if flush else "buffered writes (CPU-bound)"
            print(f"| {what} | {a:,.0f} | {u:,.0f} | {100 * (a - u) / a:+.1f} % |")
        return 0
    rows = []
    for _ in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="sckpt-dmtcp-bench-", dir=base))
        try:
            rows.append(one_round(work, args.mib, args.gzip))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    mode = "gzip" if args.gzip else "no compression"
    print(
        f"| {args.mib} MiB, {mode} | dd (fsync) | written | checkpoint (+fsync) | ratio "
        "| image | restart |"
    )
    print("|---|---|---|---|---|---|---|")

    def row(label: str, r: dict[str, float]) -> str:
        return (
            f"| {label} | {r['dd']:.2f} s | {r['written']:.2f} s | {r['ckpt']:.2f} s "
            f"| {r['ckpt'] / r['dd']:.2f}x | {r['size'] / (1 << 20):.0f} MiB "
            f"| {r['restart']:.2f} s |"
        )

    median = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    median_ratio = statistics.median(r["ckpt"] / r["dd"] for r in rows)
    print(
        row(f"median of {args.rounds}", median).replace(
            f"| {median['ckpt'] / median['dd']:.2f}x |", f"| {median_ratio:.2f}x |"
        )
    )
    for i, r in enumerate(rows, 1):
        print(row(f"round {i}", r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
