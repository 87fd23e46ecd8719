"""Interrupted checkpoints and restarts on a real Slurm 22.05 cluster (issue 25).

A checkpoint is judged when things fail.  The job: a batch job of sckpt-alice whose step
``.0`` runs ``tests/cooperative/two_files.py`` under ``sckpt run``: its image is two files,
each written ``.tmp`` then renamed, and from its second checkpoint on it sleeps between the
two.  Each test interrupts that second checkpoint (a requeue, ``scancel --signal=KILL``,
slurmd stopped and started) and checks the restart resumes from the previous complete
generation, both files of one checkpoint; others remove an image, refuse a lock or fill a
file system before a restart or a checkpoint.

The module has a cluster of its own (``private_cluster``): one test stops its slurmd, which
must not disturb other suites on the shared cluster.  libslurm takes one slurm.conf per
process, so sckpt is the ``sckpt`` command in a child process, as an operator types it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.generations import TaskImages
from sckpt.backend.checkpointing.protocol import StepRecord
from sckpt.backend.checkpointing.restart import CREDENTIAL_GAP
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.model import StepId

from tests.conftest import PrivateCluster
from tests.cooperative.conftest import ALICE, SCKPT
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

TWO_FILES = Path(__file__).with_name("two_files.py")
SLOW = 60
"""Seconds the program sleeps between its two files from its second checkpoint on: the
window in which each test interrupts it."""

SCRIPT = f"""#!/bin/bash
srun -n1 {SCKPT} run --poll 0.5 --grace 0.5 --name two -- /usr/bin/python3 {TWO_FILES} \\
    --log $PWD/two.log --slow {SLOW} $TWO_ARGS
"""


@dataclass
class Job:
    """One submitted job on the module's cluster, with sckpt and its files at hand."""

    cluster: PrivateCluster
    work: Path
    config: Path
    id: int

    @property
    def step(self) -> str:
        return f"{self.id}.0"

    @property
    def task_dir(self) -> Path:
        return self.work / f"{self.id}.two" / "task0"

    def store(self) -> StepStore:
        return StepStore(self.work / ".sckpt", StepId(self.id, 0))

    def record(self) -> StepRecord:
        rec = self.store().read()
        assert rec is not None
        return rec

    def sckpt(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """The ``sckpt`` command as root, on this cluster, with the module's config."""
        return subprocess.run(
            [str(SCKPT), *args],
            env=self.cluster.env(SCKPT_CONFIG=str(self.config)),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd="/tmp",
        )

    def background(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [str(SCKPT), *args],
            env=self.cluster.env(SCKPT_CONFIG=str(self.config)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/tmp",
        )

    def field(self, name: str) -> str:
        out = self.cluster.run("scontrol", "show", "job", str(self.id), check=False).stdout
        match = re.search(rf"\b{name}=(\S*)", out)
        return match.group(1) if match else ""

    def registered(self, restart_count: int = 0) -> bool:
        """Task 0 of this run registered and its program catches the signal."""
        try:
            rec = self.store().read()
        except Exception:
            return False
        task = rec.tasks.get("0") if rec is not None else None
        return (
            task is not None
            and task.state == "running"
            and task.restart_count == restart_count
            and (task.handler == "caught" or bool(task.off))
        )

    def counted(self) -> int:
        try:
            return len((self.work / "two.log").read_text().split())
        except FileNotFoundError:
            return 0

    def output(self) -> str:
        try:
            return (self.work / "out.txt").read_text()
        except FileNotFoundError:
            return ""

    def generation(self, n: int) -> dict[str, bytes]:
        """The two files of complete generation ``n``."""
        where = self.task_dir / f"g{n}"
        return {p: (where / p).read_bytes() for p in ("part1", "part2")}

    def wait(self, predicate: Callable[[], object], timeout: float) -> None:
        """``wait_for`` that, when it fails, says what Slurm knows of the job."""
        try:
            wait_for(predicate, timeout=timeout)
        except AssertionError as exc:
            show = self.cluster.run("scontrol", "show", "job", str(self.id), check=False)
            log = self.cluster.directory / "log" / "slurmctld.log"
            lines = log.read_text(errors="replace").splitlines() if log.exists() else []
            mine = [line for line in lines if f"JobId={self.id} " in line or f"{self.id}." in line]
            raise AssertionError(
                f"{exc}\n{show.stdout}\n" + "\n".join(mine[-30:]) + "\n" + self.output()[-2000:]
            ) from None

    def as_alice(self, command: str) -> None:
        subprocess.run(["runuser", "-u", ALICE, "--", "sh", "-c", command], check=True)


@pytest.fixture
def work(cluster_work: Path) -> Iterator[Path]:
    """Alice's job directory (``cluster_work``); the file systems a test mounts under it
    are unmounted before it is removed."""
    yield cluster_work
    with contextlib.suppress(OSError):
        for mount in _mounts_under(cluster_work.parent):
            subprocess.run(["umount", "-l", mount], check=False)


def _mounts_under(top: Path) -> list[str]:
    lines = Path("/proc/mounts").read_text().splitlines()
    return [fields[1] for line in lines if (fields := line.split())[1].startswith(str(top))]


def _sbatch(cluster: PrivateCluster, work: Path, *args: str) -> Job:
    """``sbatch ARGS`` as alice in ``work``, with the operator's config beside it."""
    config = work.parent / "sckpt.toml"
    config.write_text(f'audit_log = "{work.parent}/audit.log"\nengine = "cooperative"\n')
    out = cluster.run(
        "sbatch", "--parsable", f"--chdir={work}", *args, user=ALICE, cwd=str(work)
    )  # fmt: skip
    return Job(cluster, work, config, int(out.stdout.strip().split(";")[0]))


def _two_files_job(cluster: PrivateCluster, work: Path, args: str = "") -> Job:
    """The two-file program's job (``SCRIPT``), ``args`` added to its command line."""
    (work / "job.sh").write_text(SCRIPT)
    return _sbatch(
        cluster, work, "-J", "two-files", "--open-mode=append", "-o", str(work / "out.txt"),
        f"--export=ALL,TWO_ARGS={args}", str(work / "job.sh"),
    )  # fmt: skip


@pytest.fixture
def submit(private_cluster: PrivateCluster, work: Path) -> Iterator[Callable[..., Job]]:
    jobs: list[int] = []

    def _submit(args: str = "") -> Job:
        job = _two_files_job(private_cluster, work, args)
        jobs.append(job.id)
        job.wait(job.registered, timeout=90)
        job.wait(lambda: job.counted() >= 5, timeout=30)
        return job

    yield _submit
    for job_id in jobs:
        private_cluster.run("scancel", str(job_id), check=False)
    if jobs:
        ids = ",".join(map(str, jobs))
        wait_for(
            lambda: not private_cluster.run("squeue", "-h", "-j", ids, check=False).stdout,
            timeout=90,
        )


def _vacated(job: Job) -> None:
    """``sckpt vacate JOB.0 --wait``: checkpointed, then requeued held, waiting for a
    restart; the wait ends when the step is gone (the job pends: no ESLURM_JOB_PENDING)."""
    vacate = job.sckpt("vacate", job.step, "--wait")
    assert vacate.returncode == 0, (vacate.stdout, vacate.stderr)
    assert vacate.stdout.strip().splitlines()[-1] == f"{job.step}: vacate ended", vacate.stdout
    job.wait(lambda: job.field("Reason") == "job_requeued_in_held_state", timeout=90)


def _first_checkpoint(job: Job) -> dict[str, bytes]:
    """One complete checkpoint (generation 1): its two files hold the same count."""
    done = job.sckpt("create", job.step, "--max-wait", "30")
    assert done.returncode == 0, done.stderr
    assert "create completed after" in done.stdout, done.stdout
    saved = job.generation(1)
    assert saved["part1"] == saved["part2"]
    wait_for(lambda: job.counted() >= int(saved["part1"]) + 5, timeout=30)
    return saved


def _half_written(job: Job) -> subprocess.Popen[str]:
    """A second create, left inside its checkpoint between the two files."""
    create = job.background("create", job.step, "--max-wait", str(SLOW * 2))
    partial = job.task_dir / "g2.partial"
    wait_for(lambda: (partial / "part1").exists() or create.poll() is not None, timeout=30)
    assert create.poll() is None, create.communicate()
    assert not (partial / "part2").exists()
    return create


def _resumed(job: Job, saved: dict[str, bytes], restart_count: int) -> None:
    """The restarted program got generation 1 whole: both files of the same checkpoint."""
    job.wait(lambda: job.registered(restart_count), timeout=120)
    first = job.task_dir / "g1"
    one, two = (int(saved[p]) for p in ("part1", "part2"))
    said = f"two_files: resumed part1={one} part2={two} ({first})"
    wait_for(lambda: said in job.output(), timeout=30)
    assert re.findall(r"resumed part1=(\d+) part2=(\d+)", job.output()) == [(str(one), str(two))]
    assert job.generation(1) == saved  # the last good image, untouched
    task = job.record().tasks["0"]
    assert task.resumed_from == str(first)
    assert task.start_note == f"resumed from generation 1 ({first})"
    assert not (job.task_dir / "g2").exists()  # the interrupted one was never called good


def test_a_requeue_mid_checkpoint_resumes_from_the_previous_generation(submit) -> None:  # type: ignore[no-untyped-def]
    job = submit()
    saved = _first_checkpoint(job)
    create = _half_written(job)
    job.cluster.run("scontrol", "requeue", str(job.id))
    out, err = create.communicate(timeout=120)
    # The wait ends because someone else requeued the job (exit 6, wait_end.py), saying so.
    assert create.returncode == 6, (out, err)
    assert f"job {job.id} was requeued" in err and "stopped waiting" in err, err
    wait_for(lambda: job.field("JobState") == "PENDING", timeout=60)
    # A requeued job waits for its begin time, which Slurm sets ahead, and sets again when
    # the requeue finishes completing: clear it until the job runs.  Not in the second the
    # previous run's credential was revoked: slurmd would refuse the launch (as restart
    # knows: CREDENTIAL_GAP).
    time.sleep(CREDENTIAL_GAP + 0.5)
    job.wait(lambda: _start_now(job), timeout=120)
    _resumed(job, saved, restart_count=1)


def _start_now(job: Job) -> bool:
    """True once the job runs; else clear a begin time it waits for."""
    state, reason = job.field("JobState"), job.field("Reason")
    if state == "PENDING" and reason == "BeginTime":
        job.cluster.run("scontrol", "update", f"JobId={job.id}", "StartTime=now", check=False)
    return state == "RUNNING"


def test_scancel_kill_mid_checkpoint_then_restart_resumes_from_the_previous_generation(
    submit,
) -> None:  # type: ignore[no-untyped-def]
    job = submit()
    saved = _first_checkpoint(job)
    create = _half_written(job)
    job.cluster.run("scancel", "--signal=KILL", "--full", str(job.id))
    out, err = create.communicate(timeout=120)
    assert create.returncode != 0, (out, err)
    wait_for(lambda: job.field("JobState") not in ("RUNNING", "COMPLETING"), timeout=90)
    assert job.generation(1) == saved
    restart = job.sckpt("restart", str(job.id), "--wait")
    assert restart.returncode == 0, (
        restart.stdout,
        restart.stderr,
        job.cluster.run("scontrol", "show", "job", str(job.id), check=False).stdout,
        job.output()[-1500:],
    )
    assert f"{job.id}.0 task 0 resumes from generation 1" in restart.stdout, restart.stdout
    told = f"sckpt: restart {job.id}: {job.id}.0 task 0: resumed from generation 1"
    assert told in restart.stderr, restart.stderr
    assert f"{job.id}: restart running" in restart.stdout, restart.stdout
    _resumed(job, saved, restart_count=1)


def test_slurmd_stopped_and_started_mid_checkpoint_resumes_from_a_complete_generation(
    submit,
) -> None:  # type: ignore[no-untyped-def]
    """slurmd stops while the program is between its files: the step itself lives on
    (slurmstepd does not need slurmd), then the job is requeued held and restarted as after
    a node loss.  Whatever generation is the last complete one, it is whole."""
    job = submit()
    saved = _first_checkpoint(job)
    create = _half_written(job)
    slurmd = job.cluster.pid("slurmd")
    os.kill(slurmd, signal.SIGTERM)
    wait_for(lambda: not Path(f"/proc/{slurmd}").exists(), timeout=30)
    time.sleep(2)  # real time: an outage the step lives through, not an instant restart
    up = job.cluster.script("up")
    assert up.returncode == 0, up.stderr[-2000:]
    job.cluster.run("scontrol", "requeuehold", str(job.id))
    create.communicate(timeout=180)
    wait_for(lambda: job.field("JobState") == "PENDING", timeout=90)
    restart = job.sckpt("restart", str(job.id), "--wait")
    assert restart.returncode == 0, (restart.stdout, restart.stderr)
    _resumed(job, saved, restart_count=1)


def test_keep_last_two_generations_after_five_checkpoints(submit) -> None:  # type: ignore[no-untyped-def]
    job = submit("--slow-from 1000")
    counts = []
    for n in range(1, 6):
        done = job.sckpt("create", job.step, "--max-wait", "30")
        assert done.returncode == 0, done.stderr
        counts.append(int(job.generation(n)["part1"]) if n >= 4 else 0)
        before = job.counted()
        wait_for(lambda before=before: job.counted() > before + 2, timeout=30)
    complete = sorted(g.path.name for g in TaskImages(job.task_dir).generations() if g.complete)
    assert complete == ["g4", "g5"]
    assert sorted(p.name for p in job.task_dir.iterdir()) == ["current", "g4", "g5", "g6.partial"]
    assert counts[3] < counts[4]
    assert job.record().last_image == {"0": str(job.task_dir / "g5")}
    owner = {p.stat().st_uid for p in job.task_dir.iterdir() if p.is_dir()}
    assert owner == {int(subprocess.check_output(["id", "-u", ALICE]))}


def test_a_removed_image_refuses_restart_and_force_starts_fresh(submit) -> None:  # type: ignore[no-untyped-def]
    job = submit("--slow-from 1000")
    _vacated(job)
    gone = job.task_dir / "g1"
    job.as_alice(f"rm -rf {gone}")

    refused = job.sckpt("restart", str(job.id))
    assert refused.returncode == 1, refused.stdout
    assert refused.stderr.startswith(
        f"sckpt: restart {job.id}: ENOENT (2): job {job.id} cannot resume every task: "
        f"{job.id}.0 task 0: its last image {gone} does not exist"
    ), refused.stderr
    assert "Traceback" not in refused.stderr and refused.stdout == ""
    assert job.field("JobState") == "PENDING" and job.field("Reason") == (
        "job_requeued_in_held_state"
    )  # nothing was changed

    forced = job.sckpt("restart", str(job.id), "--force", "--wait")
    assert forced.returncode == 1, (forced.stdout, forced.stderr)  # not every task resumed
    assert f"starts from zero: {job.id}.0 task 0: its last image {gone}" in forced.stdout
    note = f"task 0: started fresh: its last image {gone} does not exist"
    assert f"{job.id}.0 {note}" in forced.stderr, forced.stderr
    assert job.output().count("two_files: starting from 0") == 2  # first run, then forced
    error = job.sckpt("error", job.step)
    assert error.stdout.strip() == f"error(2): task 0 {note[len('task 0: ') :]}", error.stdout
    listing = json.loads(job.sckpt("ls", "--steps", "--json", str(job.id)).stdout)
    steps = [s for j in listing["jobs"] for s in j["steps"] if s["step_id"] == job.step]
    assert [s["checkpoint"]["start_notes"] for s in steps] == [[note]], steps
    able = job.sckpt("able", job.step)
    assert able.stdout.strip() == "Yes" and f"{job.id}.0 {note}" in able.stderr, able.stderr


def test_a_refused_lock_at_restart_is_shown_to_the_operator(submit) -> None:  # type: ignore[no-untyped-def]
    job = submit("--slow-from 1000")
    _vacated(job)
    lock = job.work / ".sckpt" / f"{job.id}.0.lock"
    job.as_alice(f"rm -f {lock} && ln -s /etc/hostname {lock}")
    restart = job.sckpt("restart", str(job.id), "--wait")
    assert restart.returncode == 1, (restart.stdout, restart.stderr)
    assert "checkpointing is off" in restart.stderr, restart.stderr
    assert "symbolic link" in restart.stderr, restart.stderr
    wait_for(lambda: job.counted() > 0, timeout=30)  # the program runs anyway
    able = job.sckpt("able", job.step)
    assert able.returncode == 1
    assert "checkpointing is off for this task" in able.stderr, able.stderr
    error = job.sckpt("error", job.step)
    assert error.stdout.startswith("error(40): task 0: checkpointing is off: cannot lock")


def _tmpfs(where: Path, owner: str, size: str = "2m") -> None:
    where.mkdir(exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)], check=True
    )
    subprocess.run(["chown", f"{owner}:{owner}", str(where)], check=True)


def _fill(where: Path) -> None:
    with contextlib.suppress(OSError), (where / "filler").open("wb") as f:
        while True:
            f.write(b"x" * 65536)
            f.flush()


def test_a_full_image_dir_is_enospc_and_the_last_image_stays(submit, work: Path) -> None:  # type: ignore[no-untyped-def]
    job = submit("--slow-from 1000")
    images = work.parent / "images"
    _tmpfs(images, ALICE)
    first = job.sckpt("create", job.step, "--image-dir", str(images), "--max-wait", "30")
    assert first.returncode == 0, first.stderr
    copied = images / f"{job.id}.two" / "task0" / "g1"
    saved = {p: (copied / p).read_bytes() for p in ("part1", "part2")}
    _fill(images)
    full = job.sckpt("create", job.step, "--image-dir", str(images), "--max-wait", "30")
    assert full.returncode == 1
    target = images / f"{job.id}.two" / "task0"
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1, full.stderr
    assert lines[0].startswith(
        f"sckpt: create {job.step}: ENOSPC (28): cannot copy the image to {target}: "
        "No space left on device"
    ), full.stderr
    assert "[(" not in full.stderr and "EIO" not in full.stderr
    assert {p: (copied / p).read_bytes() for p in saved} == saved
    assert job.record().last_image == {"0": str(copied)}
    assert job.field("JobState") == "RUNNING"


def test_a_full_state_directory_is_enospc_in_one_sentence(private_cluster, work: Path) -> None:  # type: ignore[no-untyped-def]
    """The state directory (``.sckpt``) on a file system that fills up after the step
    registered: an operator's change is refused with the code, not a bare sentence."""
    _tmpfs(work / ".sckpt", ALICE)
    # The submit fixture is not used: its job must start after the mount.
    job = _two_files_job(private_cluster, work, "--slow-from 1000")
    try:
        wait_for(job.registered, timeout=90)
        _fill(work / ".sckpt")
        refused = job.sckpt("disable", job.step)
        assert refused.returncode == 1, refused.stdout
        path = work / ".sckpt" / f"{job.id}.0.json"
        assert refused.stderr.strip() == (
            f"sckpt: disable {job.step}: ENOSPC (28): cannot write checkpoint state {path}: "
            "No space left on device"
        ), refused.stderr
        assert job.record().disable_count == 0
    finally:
        private_cluster.run("scancel", str(job.id), check=False)
        wait_for(
            lambda: not private_cluster.run("squeue", "-h", "-j", str(job.id), check=False).stdout,
            timeout=90,
        )


def test_a_symlinked_state_directory_is_named_by_restart(submit) -> None:  # type: ignore[no-untyped-def]
    job = submit("--slow-from 1000")
    _vacated(job)
    state = job.work / ".sckpt"
    job.as_alice(f"mv {state} {job.work}/elsewhere && ln -s {job.work}/elsewhere {state}")
    refused = job.sckpt("restart", str(job.id))
    assert refused.returncode == 1
    assert "ENOENT" not in refused.stderr and "no saved record" not in refused.stderr
    assert refused.stderr.startswith(f"sckpt: restart {job.id}: EPERM ({errno.EPERM}): ")
    assert f"{state} is a symbolic link owned by uid" in refused.stderr, refused.stderr
    assert job.field("Reason") == "job_requeued_in_held_state"  # nothing was changed


def test_vacate_force_on_a_job_with_nothing_under_sckpt_run_says_force_cannot_help(
    private_cluster: PrivateCluster, work: Path
) -> None:
    job = _sbatch(private_cluster, work, "-o", "/dev/null", "--wrap", "srun sleep 300")
    try:
        wait_for(lambda: f"{job.id}.0" in private_cluster.run("squeue", "-h", "-s").stdout)
        refused = job.sckpt("vacate", str(job.id), "--force")
        assert refused.returncode == 1
        assert refused.stderr.startswith(f"sckpt: vacate {job.id}: ESLURM_NOT_SUPPORTED"), (
            refused.stderr
        )
        assert "--force cannot help" in refused.stderr and "`sckpt requeue`" in refused.stderr
        assert job.field("JobState") == "RUNNING"
    finally:
        private_cluster.run("scancel", str(job.id), check=False)
