"""Console on a real Slurm cluster with 10,000 jobs, side by side with ``watch -n 2 squeue``.

Starts a cluster of its own with ``scripts/slurm-cluster`` (directory /tmp/sckpt-bench, its
own ports and node, so the shared test cluster is never loaded), fills it with held batch jobs
plus a few running ones with steps, then measures the real app (``build_app`` on the engine
``sckpt`` picks, headless under Textual's Pilot at 160x50):

* first complete screen, an unchanged refresh, key -> repaint while a refresh runs;
* peak RSS; CPU seconds per minute idle at the default 2 s interval;
* slurmctld's side: RPCs per minute (``sdiag`` counters, reset before each run) for the idle
  console, for ``squeue`` run every 2 s (what ``watch -n 2 squeue`` does) and, with
  ``--turm PATH``, for turm (a Rust Slurm TUI; 0.17 from PyPI) at its default 2 s refresh in
  a tmux pane of 160x50, plus the CPU seconds per minute each costs on the client (turm's
  own and its squeue children's).

With ``--terminal N`` it measures instead, N rounds on the cluster as it is (``--keep``
leaves it up between runs), each program started by ``tmux`` in a pane of 160x50: the first
rows (from tmux starting the program, Python's start and imports included, to a job id of
the cluster at the start of a pane line) and the idle client CPU per minute (``/proc``, from
``--settle`` seconds after the first rows, for ``--idle`` seconds), for this tree's ``sckpt``,
each ``--before PROGRAM`` (e.g. a launcher of an older tree; rounds alternate the programs),
``--turm`` and one ``squeue`` (its wall time).  Medians and ranges are printed per program.

Figures only (a Markdown table for bench/README.md); nothing is asserted.  Needs root.

    .venv/bin/python bench/real_console_bench.py --jobs 10000 --idle 60
    .venv/bin/python bench/real_console_bench.py --keep --terminal 4 --idle 30 --turm turm
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from report import print_report  # bench/report.py: run as python bench/real_console_bench.py

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

ROOT = Path(__file__).resolve().parent.parent
DIR = Path("/tmp/sckpt-bench")
CLUSTER_ENV = {
    "SCKPT_CLUSTER_DIR": str(DIR),
    "SCKPT_CTLD_PORT": "46837",
    "SCKPT_SLURMD_PORT": "46838",
    "SCKPT_NODE": "sckpt-bench",
    "SCKPT_NODE_CPUS": "256",
}
CONF = DIR / "slurm.conf"


def cluster(command: str) -> None:
    subprocess.run(
        [str(ROOT / "scripts" / "slurm-cluster"), command],
        env={**os.environ, **CLUSTER_ENV},
        check=True,
        timeout=900,
    )


def slurm(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        env={**os.environ, "SLURM_CONF": str(CONF)},
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
        cwd="/tmp",
    )


def job_count() -> int:
    return len(slurm("squeue", "-h", "-o", "%i").stdout.split())


def fill(jobs: int, running: int) -> None:
    """``running`` jobs with two steps each, then held jobs up to ``jobs`` in all."""
    # Two CPUs and --overlap: without them the second srun waits for the first's CPU and
    # retries its step creation every few seconds, which is not a quiet cluster.
    steps = "srun --overlap -n1 sleep 3600 & srun --overlap -n1 sleep 3600 & wait"
    for _ in range(running):
        slurm("sbatch", "-n2", "-o", "/dev/null", "--wrap", steps)
    missing = jobs - job_count()

    def submit(_: int) -> None:
        slurm("sbatch", "--hold", "-o", "/dev/null", "--wrap", "sleep 60", check=False)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(submit, range(max(0, missing))))


def sdiag_rpcs() -> tuple[int, int]:
    """RPCs slurmctld counted since its last ``sdiag -r``: (count, total microseconds).

    Only reads are counted (``REQUEST_*_INFO``), without sdiag's own REQUEST_STATS_INFO:
    the jobs' own RPCs (an srun creating its step, a batch script ending) are not the
    reader's doing.
    """
    text = slurm("sdiag").stdout
    block = text.split("Remote Procedure Call statistics by message type", 1)[1]
    block = block.split("Remote Procedure Call statistics by user", 1)[0]
    count = total = 0
    row = r"(\w+)\s+\(\s*\d+\)\s+count:(\d+).*?total_time:(\d+)"
    for kind, n, micros in re.findall(row, block):
        if kind.endswith("_INFO") and kind != "REQUEST_STATS_INFO":
            count += int(n)
            total += int(micros)
    return count, total


async def measure_console(presses: int, idle: float) -> dict[str, Any]:
    from sckpt.backend.config import Settings
    from sckpt.backend.facade import open_facade
    from sckpt.tui.app import SckptApp, build_app

    async def loaded(app: SckptApp, pilot: Any) -> None:
        while not app.pipeline.loaded:
            await pilot.pause(0.005)
        await app.workers.wait_for_complete()
        await pilot.pause()

    settings = Settings(audit_log=Path(tempfile.mkdtemp()) / "audit.log")
    facade = open_facade(settings)
    app = build_app(facade, settings)
    out: dict[str, Any] = {"engine": facade.engine_name}
    start = time.perf_counter()
    async with app.run_test(size=(160, 50)) as pilot:
        await loaded(app, pilot)
        out["first_screen_ms"] = (time.perf_counter() - start) * 1000
        con = app.console_screen()
        assert con is not None
        out["rows"] = con.jobs_table.row_count
        costs = []
        for _ in range(10):
            t = time.perf_counter()
            app.refresh_now()
            while app.pipeline.running:
                await asyncio.sleep(0.0005)
            costs.append((time.perf_counter() - t) * 1000)
        out["refresh_ms_median"] = statistics.median(costs)
        latencies = []
        for i in range(presses):
            if not app.pipeline.running:
                app.refresh_now()
            t = time.perf_counter()
            await pilot.press("down" if i % 40 < 20 else "up")
            latencies.append((time.perf_counter() - t) * 1000)
        latencies.sort()
        out["key_during_refresh_p50_ms"] = latencies[len(latencies) // 2]
        out["key_during_refresh_p95_ms"] = latencies[int(len(latencies) * 0.95)]
        # Idle at the default interval: the console's CPU and the controller's RPCs.
        await asyncio.sleep(3)
        slurm("sdiag", "-r")
        cpu0 = time.process_time()
        await asyncio.sleep(idle)
        out["console_idle_cpu_s_per_min"] = (time.process_time() - cpu0) * 60 / idle
        rpcs, micros = sdiag_rpcs()
        out["console_idle_rpcs_per_min"] = rpcs * 60 / idle
        out["console_idle_ctld_ms_per_min"] = micros / 1000 * 60 / idle
        if os.environ.get("BENCH_SDIAG"):
            print(slurm("sdiag").stdout, file=sys.stderr)
        out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    facade.close()
    return out


def measure_squeue_loop(seconds: float) -> dict[str, Any]:
    """``squeue`` every 2 s, as ``watch -n 2 squeue`` runs it, for ``seconds``."""
    slurm("sdiag", "-r")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    end = time.monotonic() + seconds
    runs = []
    while time.monotonic() < end:
        t = time.perf_counter()
        slurm("squeue")
        runs.append(time.perf_counter() - t)
        time.sleep(max(0.0, 2.0 - (time.perf_counter() - t)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rpcs, micros = sdiag_rpcs()
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {
        "squeue_ms_median": statistics.median(runs) * 1000,
        "squeue_loop_cpu_s_per_min": cpu * 60 / seconds,
        "squeue_loop_rpcs_per_min": rpcs * 60 / seconds,
        "squeue_loop_ctld_ms_per_min": micros / 1000 * 60 / seconds,
    }


def _cpu_seconds(pid: int) -> float:
    """A process's CPU time, with its reaped children's (turm runs squeue each refresh)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def measure_turm(turm: str, seconds: float) -> dict[str, Any]:
    """turm idle at its default refresh in a real terminal (tmux, 160x50), for ``seconds``."""
    name = f"bench-turm-{os.getpid()}"
    env = f"SLURM_CONF={CONF}"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "50",
         "env", env, "TERM=xterm-256color", turm],
        check=True,
    )  # fmt: skip
    try:
        time.sleep(8)  # its first listing of every job
        pid = int(
            subprocess.run(
                ["tmux", "display-message", "-p", "-t", name, "#{pane_pid}"],
                capture_output=True, text=True, check=True,
            ).stdout
        )  # fmt: skip
        slurm("sdiag", "-r")
        cpu0 = _cpu_seconds(pid)
        time.sleep(seconds)
        cpu = _cpu_seconds(pid) - cpu0
        rpcs, micros = sdiag_rpcs()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], check=False)
    return {
        "turm_cpu_s_per_min": cpu * 60 / seconds,
        "turm_rpcs_per_min": rpcs * 60 / seconds,
        "turm_ctld_ms_per_min": micros / 1000 * 60 / seconds,
    }


def _tmux(*words: str) -> str:
    """tmux on a server of this script's own (other runs on the machine start and kill theirs)."""
    socket = f"sckpt-real-bench-{os.getpid()}"
    return subprocess.run(
        ["tmux", "-L", socket, *words], capture_output=True, text=True, check=True
    ).stdout


def terminal_run(program: str, ids: set[str], settle: float, idle: float) -> tuple[float, float]:
    """(seconds to the first job row in a tmux pane, idle CPU seconds per minute) of one start."""
    name = f"bench-real-{os.getpid()}"
    row = re.compile(r"^\W*(?:[A-Z]{1,2} +)?(\d+)\b", re.MULTILINE)  # turm: "│PD 123"
    for attempt in range(3):  # a server just killed may still hold the socket
        start = time.perf_counter()
        try:
            _tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "50",
                  "env", f"SLURM_CONF={CONF}", "TERM=xterm-256color", program)  # fmt: skip
            break
        except subprocess.CalledProcessError:
            if attempt == 2:
                raise
            time.sleep(1)
    try:
        pid = int(_tmux("display-message", "-p", "-t", name, "#{pane_pid}"))
        seen = float("nan")
        while time.perf_counter() - start < 60:
            pane = _tmux("capture-pane", "-p", "-t", name)
            if any(m in ids for m in row.findall(pane)):
                seen = time.perf_counter() - start
                break
            time.sleep(0.01)
        time.sleep(settle)
        cpu0 = _cpu_seconds(pid)
        time.sleep(idle)
        cpu = (_cpu_seconds(pid) - cpu0) * 60 / idle
    finally:
        _tmux("kill-server")
    return seen, cpu


def terminal_rounds(programs: dict[str, str], rounds: int, settle: float, idle: float) -> None:
    """Each program once per round, in turn; then each one's medians and ranges."""
    ids = set(slurm("squeue", "-h", "-o", "%i").stdout.split())
    first: dict[str, list[float]] = {label: [] for label in programs}
    cpu: dict[str, list[float]] = {label: [] for label in programs}
    squeue_ms: list[float] = []
    for n in range(rounds):
        for label, program in programs.items():
            seen, used = terminal_run(program, ids, settle, idle)
            first[label].append(seen * 1000)
            cpu[label].append(used)
            print(f"round {n} {label}: first rows {seen * 1000:.0f} ms, idle CPU "
                  f"{used:.2f} s/min, load {os.getloadavg()[0]:.2f}", file=sys.stderr)  # fmt: skip
        for _ in range(3):
            t = time.perf_counter()
            slurm("squeue")
            squeue_ms.append((time.perf_counter() - t) * 1000)

    def span(values: list[float], form: str) -> str:
        low, mid, high = min(values), statistics.median(values), max(values)
        return f"{form.format(mid)} ({form.format(low)}-{form.format(high)})"

    res: dict[str, Any] = {"jobs_in_squeue": len(ids), "one squeue, ms": span(squeue_ms, "{:.0f}")}
    for label in programs:
        res[f"{label}: first rows in tmux, ms"] = span(first[label], "{:.0f}")
        res[f"{label}: idle CPU, s per minute"] = span(cpu[label], "{:.2f}")
    print_report(res)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--running", type=int, default=50, help="running jobs with steps")
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle sampling")
    parser.add_argument("--keep", action="store_true", help="leave the bench cluster up")
    parser.add_argument("--turm", help="the turm program, to measure it the same way")
    parser.add_argument("--terminal", type=int, metavar="N", help="N rounds in tmux (above)")
    parser.add_argument("--before", action="append", default=[], help="another sckpt to time")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds before idle CPU")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("real_console_bench: needs root (it starts a private Slurm cluster)")
    cluster("up")
    try:
        t = time.perf_counter()
        if job_count() < args.jobs:  # a cluster kept up (--keep) is filled already
            fill(args.jobs, args.running)
        filled = time.perf_counter() - t
        os.environ["SLURM_CONF"] = str(CONF)
        if args.terminal:
            programs = {"sckpt": str(ROOT / ".venv" / "bin" / "sckpt")}
            programs.update({f"before {i}": p for i, p in enumerate(args.before)})
            if args.turm:
                programs["turm"] = args.turm
            terminal_rounds(programs, args.terminal, args.settle, args.idle)
            return
        res: dict[str, Any] = {"jobs_in_squeue": job_count(), "fill_s": filled}
        res.update(asyncio.run(measure_console(args.presses, args.idle)))
        res.update(measure_squeue_loop(args.idle))
        if args.turm:
            res.update(measure_turm(args.turm, args.idle))
    finally:
        if not args.keep:
            cluster("down")
    print_report(res)


if __name__ == "__main__":
    main()
