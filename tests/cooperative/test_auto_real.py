"""Automatic checkpoints under Slurm's own events, on a real Slurm 22.05 cluster (issue 32).

Each scenario runs a signal program (``examples/counter.py``) and a transparent one
(``programs/plain_counter.py`` under DMTCP) side by side, as two jobs of sckpt-alice under
``sckpt run`` with a policy, and lets Slurm do what it does: a time limit, a preemption by a
job of a higher partition (``scavenger``, GraceTime 20 s: ``scripts/slurm-cluster``).
Nobody acts on the jobs but Slurm and the wrappers; the test only watches and then checks
the counts (every number exactly once) and the images.  Then what must never happen: a
periodic checkpoint cut off by SIGKILL, a disabled step, a program that would die of its
signal, a policy that cannot work.  (A node set DOWN: ``test_auto_node.py``.)

The time-limit chain takes seven minutes of Slurm's clocks: it is submitted as the module
starts and checked last, the other tests running beside it on the module's own cluster
(``private_cluster``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.protocol import (
    CAUSE_BEFORE_END,
    CAUSE_INTERVAL,
    CAUSE_SIGTERM,
)

from tests.conftest import PrivateCluster
from tests.cooperative.auto_jobs import Job, cancel_jobs, submit_jobs
from tests.cooperative.conftest import SCKPT
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

CHAIN_LIMIT = 3000
"""Five minutes of work at ``PAUSE``."""


@pytest.fixture(scope="module", autouse=True)
def chain(private_cluster: PrivateCluster, dmtcp_install: object) -> Iterator[dict[str, Job]]:
    """The time-limit chain's jobs, submitted as the module starts: they run their seven
    minutes beside the module's other tests (one CPU each, in the default partition, which
    nothing preempts), and the last test checks them."""
    top = Path(tempfile.mkdtemp(prefix="sckpt-chain-", dir="/tmp"))
    top.chmod(0o755)
    started = submit_jobs(private_cluster, top, "--before-end 30s", "--time=2", limit=CHAIN_LIMIT)
    try:
        yield started
    finally:
        cancel_jobs(private_cluster, list(started.values()))
        shutil.rmtree(top, ignore_errors=True)


def _sckpt(cluster: PrivateCluster, *words: str) -> subprocess.CompletedProcess[str]:
    """The ``sckpt`` command as root on the module's cluster, as an operator types it."""
    return subprocess.run(
        [str(SCKPT), *words],
        env=cluster.env(),
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/tmp",
    )


def _exact(job: Job, limit: int) -> None:
    values = job.counted()
    assert values == list(range(1, limit + 1)), (
        f"{job.variant}: a count lost or repeated ({len(values)} values)"
    )


def test_a_preempted_job_checkpoints_in_its_grace_and_resumes_by_itself(
    jobs: Callable[..., dict[str, Job]], private_cluster: PrivateCluster
) -> None:
    """Two scavenger jobs under --every 20s are preempted by a debug job that needs every
    CPU the chain's jobs leave.  They resume afterwards with nobody acting: the signal
    program (which goes on 8 s after SIGTERM) from its SIGTERM checkpoint, losing nothing;
    the transparent one (which dies of SIGTERM) from its last interval image, losing at
    most one interval."""
    every = 20
    started = jobs(f"--every {every}s", "-p", "scavenger", "-c", "31", term_after=8)
    for job in started.values():
        job.wait(lambda job=job: job.done_lines(CAUSE_INTERVAL), timeout=every + 60)
    high = private_cluster.run(
        "sbatch", "--parsable", "-p", "debug", "-c", "62", "-o", "/dev/null", "--wrap", "sleep 5"
    )
    high_id = high.stdout.strip().split(";")[0]
    for job in started.values():
        job.wait(lambda job=job: int(job.field("Restarts") or 0) >= 1, timeout=120)
    preempted_at = int(time.time())
    for job in started.values():
        job.wait(lambda job=job: job.running(restart_count=1), timeout=180)
    assert private_cluster.run("squeue", "-h", "-j", high_id, check=False).stdout.strip() == ""
    signal_job, dmtcp_job = started["signal"], started["transparent"]
    # The signal program's SIGTERM checkpoint: it resumed from at least where SIGTERM came.
    term = re.search(r"counter: SIGTERM at (\d+)", signal_job.output())
    resumed = re.search(r"counter: resumed from (\d+)", signal_job.output())
    assert term and resumed, signal_job.output()
    assert int(resumed.group(1)) >= int(term.group(1)), signal_job.output()
    assert signal_job.done_lines(CAUSE_SIGTERM)
    # The transparent program: its newest image was at most one interval before the end.
    rec = dmtcp_job.record()
    assert rec is not None and rec.tasks["0"].start_note.startswith("resumed from generation")
    images = [int(h["time"]) for h in dmtcp_job.done_lines()]  # type: ignore[call-overload]
    before = [t for t in images if t <= preempted_at]
    assert before and preempted_at - max(before) <= every + 25, (images, preempted_at)
    for job in started.values():
        values = job.counted()
        assert values == list(range(1, len(values) + 1)), f"{job.variant}: gap or repeat"


def test_a_periodic_checkpoint_cut_off_mid_write_leaves_the_last_image_good(
    jobs: Callable[..., dict[str, Job]], private_cluster: PrivateCluster
) -> None:
    """The second interval checkpoint hangs between writing ``state.tmp`` and renaming it;
    ``scancel --signal=KILL --full`` then; a restart resumes from the first, untouched."""
    started = jobs("--every 10s", variants=("signal",), slow=30.0)
    job = started["signal"]
    job.wait(lambda: len(job.done_lines(CAUSE_INTERVAL)) == 1, timeout=60)
    task = job.work / f"{job.id}.cnt" / "task0"
    first = (task / "g1" / "state").read_bytes()
    job.wait(lambda: (task / "current" / "state.tmp").exists(), timeout=60)
    private_cluster.run("scancel", "--signal=KILL", "--full", str(job.id))
    job.wait(lambda: job.field("JobState") in ("CANCELLED", "FAILED"), timeout=60)
    assert (task / "g1" / "state").read_bytes() == first
    assert not (task / "g2").exists()
    restart = _sckpt(private_cluster, "restart", str(job.id), "--wait")
    assert restart.returncode == 0, (restart.stdout, restart.stderr)
    job.wait(lambda: job.running(restart_count=1), timeout=120)
    count = first.split()[0].decode()
    assert f"counter: resumed from {count} ({task / 'g1'})" in job.output()


def test_a_transparent_periodic_checkpoint_cut_off_mid_write_leaves_the_last_image_good(
    jobs: Callable[..., dict[str, Job]], private_cluster: PrivateCluster
) -> None:
    """DMTCP writing a 300 MiB image of an interval checkpoint (about a second) is cut off
    by ``scancel --signal=KILL --full``; a restart resumes from the newest complete
    generation, and the count goes on from it without a gap."""
    job = jobs("--every 10s", variants=("transparent",), mib=300)["transparent"]
    task = job.work / f"{job.id}.cnt" / "task0"
    job.wait(lambda: (task / "g1").is_dir(), timeout=60)

    def writing() -> bool:
        return any((task / "dmtcp").glob("*.temp"))

    wait_for(writing, timeout=60, interval=0.02)  # the next interval's image, half written
    complete = sorted(p.name for p in task.glob("g[0-9]*") if not p.name.endswith(".partial"))
    private_cluster.run("scancel", "--signal=KILL", "--full", str(job.id))
    job.wait(lambda: job.field("JobState") in ("CANCELLED", "FAILED"), timeout=60)
    newest = max(complete, key=lambda g: int(g[1:]))
    restart = _sckpt(private_cluster, "restart", str(job.id), "--wait")
    assert restart.returncode == 0, (restart.stdout, restart.stderr)
    job.wait(lambda: job.running(restart_count=1), timeout=120)
    rec = job.record()
    assert rec is not None
    assert rec.tasks["0"].start_note.startswith(f"resumed from generation {newest[1:]} "), (
        complete,
        rec.tasks["0"].start_note,
    )
    before = len(job.counted())
    wait_for(lambda: len(job.counted()) > before + 50, timeout=60)
    values = job.counted()
    assert values == list(range(1, len(values) + 1)), "a count lost or repeated"


def test_a_disabled_step_waits_and_a_program_that_would_die_is_never_sent_the_signal(
    jobs: Callable[..., dict[str, Job]], private_cluster: PrivateCluster
) -> None:
    """--every 10s on a disabled step: skipped, then taken within a poll of its enable.
    The same policy on a program that does not catch SIGUSR1: never signalled, it runs on."""
    started = jobs("--every 10s", variants=("signal", "uncaught"))
    job, plain = started["signal"], started["uncaught"]

    def sckpt(*words: str) -> None:
        done = _sckpt(private_cluster, *words)
        assert done.returncode == 0, (done.stdout, done.stderr)

    sckpt("disable", f"{job.id}.0")  # the first interval is due 10 s after start
    wait_for(lambda: time.time() - job.started() >= 25, timeout=60)
    assert job.done_lines(CAUSE_INTERVAL) == []
    enabled = time.time()
    sckpt("enable", f"{job.id}.0")
    job.wait(lambda: job.done_lines(CAUSE_INTERVAL), timeout=15)
    assert int(job.done_lines(CAUSE_INTERVAL)[0]["time"]) - enabled < 5  # type: ignore[call-overload]
    rec = plain.record()
    assert rec is not None and rec.tasks["0"].handler == "default"
    assert plain.field("JobState") == "RUNNING" and plain.done_lines() == []
    before = len(plain.counted())
    wait_for(lambda: len(plain.counted()) > before + 20, timeout=30)


def test_a_second_create_while_the_program_still_writes_the_first_is_refused(
    jobs: Callable[..., dict[str, Job]], private_cluster: PrivateCluster
) -> None:
    """``create --max-wait 1`` times out on a program that takes 8 s to save; a second
    ``create`` then is EALREADY naming when the first was asked for, never a new
    generation under the program's feet; the first image completes intact."""
    job = jobs("", variants=("signal",), slow=8.0, slow_from=1)["signal"]
    # past sckpt run's --grace (2 s): a request before it waits for it, and would expire
    wait_for(lambda: time.time() >= job.started() + 4, timeout=30)

    def sckpt(*words: str) -> subprocess.CompletedProcess[str]:
        return _sckpt(private_cluster, *words)

    first = sckpt("create", f"{job.id}.0", "--max-wait", "1")
    assert first.returncode == 1 and "ETIME" in first.stderr, (first.stdout, first.stderr)
    second = sckpt("create", f"{job.id}.0")
    assert second.returncode == 1, (second.stdout, second.stderr)
    assert "EALREADY" in second.stderr, second.stderr
    assert "has not finished the checkpoint it was asked for at" in second.stderr
    task = job.work / f"{job.id}.cnt" / "task0"
    job.wait(lambda: (task / "g1" / "state").exists(), timeout=30)
    # the next generation is ready and empty: the refused create started nothing
    assert sorted(p.name for p in task.glob("g*")) in (["g1"], ["g1", "g2.partial"])
    assert not any((task / "g2.partial").glob("*")) if (task / "g2.partial").exists() else True
    count, size = (int(x) for x in (task / "g1" / "state").read_text().split())
    assert size == sum(len(f"{i}\n") for i in range(1, count + 1))
    job.wait(lambda: sckpt("create", f"{job.id}.0", "--max-wait", "30").returncode == 0, 60)
    assert (task / "g2" / "state").exists()


def test_a_before_end_as_long_as_the_limit_is_refused_before_the_program_starts(
    private_cluster: PrivateCluster, shared_dir: Path
) -> None:
    started = submit_jobs(
        private_cluster, shared_dir, "--before-end 2m", "--time=1", limit=10, variants=("signal",)
    )
    job = started["signal"]
    job.wait(lambda: job.field("JobState") in ("FAILED", "COMPLETED"), timeout=120)
    said = [line for line in job.output().splitlines() if line.startswith("sckpt run:")]
    assert said == [
        f"sckpt run: --before-end 2m is not shorter than job {job.id}'s time limit (1m)"
    ], job.output()
    assert not job.log.exists()


@pytest.mark.timeout(1500)  # it waits out the rest of the chain's Slurm clocks (900 s at most)
def test_a_time_limit_chain_runs_past_the_limit_to_the_exact_result(
    chain: dict[str, Job],
) -> None:
    """--time=2 and five minutes of work, under --before-end: a chain of runs, each
    resuming from the image taken before the previous one's end, requeued by the wrapper
    with its begin time brought close (Slurm's would be two minutes).  Submitted when the
    module started (``chain``); the module's other tests ran meanwhile."""
    final = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}
    for job in chain.values():
        # Any end, so that a chain broken early fails now, with the controller's account.
        job.wait(lambda job=job: job.field("JobState") in final, timeout=900)
        if job.field("JobState") != "COMPLETED":
            raise AssertionError(
                f"{job.variant}: the chain ended {job.field('JobState')}\n{job.show()}\n"
                f"{job.output()[-3000:]}\nslurmctld on job {job.id}:\n{job.controller_said()}"
            )
    for job in chain.values():
        _exact(job, CHAIN_LIMIT)
        restarts = int(job.field("Restarts"))
        assert restarts >= 2, f"{job.variant}: {restarts} restarts"
        rec = job.record()
        assert rec is not None
        links = [h for h in rec.history if h["operation"] == "requeue"]
        assert len(links) == restarts, rec.history
        assert len(job.done_lines(CAUSE_BEFORE_END)) >= restarts
        # each run started within seconds of the previous one's requeue, not two minutes
        runs = [int(x) for x in re.findall(r"^run \d+ (\d+)$", job.output(), re.MULTILINE)]
        requeued = [int(h["time"]) for h in links]  # type: ignore[call-overload]
        gaps = [start - at for at, start in zip(requeued, runs[1:], strict=False)]
        assert gaps and max(gaps) < 60, (gaps, job.output())
        assert rec.tasks["0"].start_note.startswith("resumed from generation")
