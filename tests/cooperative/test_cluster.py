"""Cooperative checkpointing end to end on the real Slurm 22.05 cluster.

Every job here is a batch job of sckpt-alice whose script runs the example counter twice,
as steps ``.0`` and ``.1``, each under ``srun sckpt run``.  The operator is this process
(root) through the facade; a second process (the ``sckpt`` command) and an unprivileged
user (sckpt-bob) check what others see.  Each test cancels the jobs it submitted.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.generations import TaskImages
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.errors import (
    AlreadyInProgress,
    CheckpointFailed,
    Disabled,
    JobNotFinished,
    JobPending,
    NoSuchImage,
    NotRequeueable,
    NotSupported,
    SckptError,
    SlurmError,
)
from sckpt.backend.facade import Facade
from sckpt.backend.model import CheckpointKind, StepId
from sckpt.tui.reports import force_question

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, BOB, EXAMPLE, SCKPT, cancel, cli, state
from tests.helpers import catches_signal, wait_for

pytestmark = pytest.mark.slurm

SCRIPT = """#!/bin/bash
#SBATCH -n 2
#SBATCH -J coop-test
srun -n1 --exact {sckpt} run --poll 0.5 --grace 0.5 --name step0 -- /usr/bin/python3 {example} \\
    --log $PWD/step0.log $STEP0_ARGS ${{STEP0_FAIL:+--fail "$STEP0_FAIL"}} &
# The second step starts once the first one exists, so step ids match the log names in
# every run (the tests name steps by id; images are found by --name).
until squeue -h -s -j $SLURM_JOB_ID -o %i | grep -qx "$SLURM_JOB_ID.0"; do sleep 0.1; done
srun -n1 --exact {sckpt} run --poll 0.5 --grace 0.5 --name step1 -- /usr/bin/python3 {example} \\
    --log $PWD/step1.log $STEP1_ARGS ${{STEP1_FAIL:+--fail "$STEP1_FAIL"}} &
wait
"""


class Job:
    """One submitted job: its id, directory, state files, and log checks."""

    def __init__(self, cluster: SlurmCluster, work: Path, job_id: int) -> None:
        self.cluster = cluster
        self.work = work
        self.id = job_id

    def step(self, n: int | str) -> str:
        return f"{self.id}.{n}"

    def task_dir(self, n: int) -> Path:
        """Step ``n``'s image directory of task 0 (``--name stepN``): its generations."""
        return self.work / f"{self.id}.step{n}" / "task0"

    def latest(self, n: int) -> Path | None:
        """Step ``n``'s newest complete image generation of task 0 (``task0/g<N>``)."""
        return TaskImages(self.task_dir(n)).latest()

    def store(self, n: int) -> StepStore:
        return StepStore(self.work / ".sckpt", StepId(self.id, n))

    def state_bytes(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((self.work / ".sckpt").glob("*.json"))}

    def field(self, name: str) -> str:
        out = self.cluster.run("scontrol", "show", "job", str(self.id)).stdout
        match = re.search(rf"\b{name}=(\S*)", out)
        return match.group(1) if match else ""

    def counted(self, n: int) -> list[int]:
        try:
            return [int(x) for x in (self.work / f"step{n}.log").read_text().split()]
        except FileNotFoundError:
            return []

    def image(self, n: int) -> tuple[int, int]:
        latest = self.latest(n)
        assert latest is not None, f"no complete image generation in {self.task_dir(n)}"
        count, size = (latest / "state").read_text().split()
        return int(count), int(size)

    def registered(self, restart_count: int = 0) -> bool:
        for n in (0, 1):
            rec = self.store(n).read() if self.store(n).path.exists() else None
            if rec is None or not any(
                t.state == "running"
                and t.restart_count == restart_count
                and not t.checkpoint_blocker()
                for t in rec.tasks.values()
            ):
                return False
        return bool(self.counted(0) and self.counted(1))


@pytest.fixture
def submit(cluster_work: Path, slurm_cluster: SlurmCluster) -> Iterator[object]:
    jobs: list[int] = []

    def _submit(step0: str = "", step1: str = "", fail0: str = "") -> Job:
        script = cluster_work / "job.sh"
        script.write_text(SCRIPT.format(sckpt=SCKPT, example=EXAMPLE))
        out = slurm_cluster.run(
            "sbatch",
            "--parsable",
            "--open-mode=append",
            f"--chdir={cluster_work}",
            "-o",
            str(cluster_work / "out.txt"),
            f"--export=ALL,STEP0_ARGS={step0},STEP1_ARGS={step1},STEP0_FAIL={fail0}",
            str(script),
            user=ALICE,
            cwd=str(cluster_work),
        )
        job = Job(slurm_cluster, cluster_work, int(out.stdout.strip().split(";")[0]))
        jobs.append(job.id)
        wait_for(job.registered, timeout=60)
        return job

    yield _submit
    cancel(slurm_cluster, *jobs)


def test_counter_create_and_what_others_see(submit, facade: Facade, shared_dir: Path) -> None:  # type: ignore[no-untyped-def]
    job = submit(step1="--slow 3")
    t0, t1 = job.step(0), job.step(1)
    assert facade.able(t0).in_progress_since == 0
    assert cli(shared_dir, "able", t0).stdout.strip() == "Yes"

    # The disable counter: two disables need two enables.
    facade.disable(t0)
    facade.disable(t0)
    facade.enable(t0)
    with pytest.raises(Disabled):
        facade.able(t0)
    with pytest.raises(Disabled) as refused:
        facade.create(t0, max_wait=10)
    assert refused.value.name == "ESLURM_DISABLED"
    assert cli(shared_dir, "able", t0).stdout.strip() == "No"  # a second process sees it
    seen = state(facade, t0)
    assert (seen.kind, seen.disable_count) == (CheckpointKind.DISABLED, 1)
    assert state(facade, t1).kind == CheckpointKind.ABLE
    batch = state(facade, job.step("batch"))
    assert batch.kind == CheckpointKind.NOT_SUPPORTED and "sckpt run" in batch.reason
    facade.enable(t0)
    assert facade.able(t0).in_progress_since == 0
    facade.enable(t0)  # enable at 0 stays 0 (no 65535 wrap)
    assert job.store(0).read().disable_count == 0  # type: ignore[union-attr]

    # create: an image appears, the program keeps running, error shows 0.
    before = len(job.counted(0))
    result = facade.create(t0, max_wait=20)
    count, size = job.image(0)
    assert count >= before and size == sum(len(f"{i}\n") for i in range(1, count + 1))
    assert "image" in result.detail
    assert job.field("JobState") == "RUNNING"
    wait_for(lambda: len(job.counted(0)) > count + 3)
    assert facade.error(t0).code == 0
    assert cli(shared_dir, "error", t0).stdout.strip().startswith("error(0)")

    # A slow checkpoint: able shows its start, a second create is EALREADY, others see it.
    done: list[object] = []

    def slow_create() -> None:
        try:
            done.append(facade.create(t1, max_wait=30))
        except Exception as exc:  # shown by the assertion below
            done.append(exc)

    thread = threading.Thread(target=slow_create)
    started = int(time.time())
    thread.start()
    since = wait_for(lambda: facade.able(t1).in_progress_since or done, timeout=10)
    assert isinstance(since, int), (since, job.store(1).read())
    assert abs(since - started) <= 2
    with pytest.raises(AlreadyInProgress) as already:
        facade.create(t1, max_wait=5)
    assert already.value.code == errno.EALREADY
    assert cli(shared_dir, "able", t1).stdout.strip().startswith("Began at")
    seen = state(facade, t1)
    assert (seen.kind, seen.in_progress_since) == (CheckpointKind.IN_PROGRESS, since)
    thread.join(60)
    assert done and facade.able(t1).in_progress_since == 0
    assert facade.error(t1).code == 0 and job.image(1)[0] > 0
    seen = state(facade, t1)
    assert seen.kind == CheckpointKind.ABLE and seen.last_error is None
    assert seen.image_dir == str(job.task_dir(1) / "g1")  # its first checkpoint, complete
    assert [e.operation for e in seen.history][-2:] == ["create", "done"]

    # The batch step is not under sckpt run: not supported, with the reason.
    with pytest.raises(NotSupported) as nope:
        facade.able(job.step("batch"))
    assert "sckpt run" in nope.value.hint


def test_program_failure_and_timeout_are_recorded(submit, facade: Facade) -> None:  # type: ignore[no-untyped-def]
    job = submit(fail0="42 disk quota exceeded", step1="--slow 30")
    t0, t1 = job.step(0), job.step(1)
    with pytest.raises(CheckpointFailed) as failed:  # the outcome, not "accepted"
        facade.create(t0, max_wait=20)
    assert (failed.value.code, failed.value.message) == (42, "disk quota exceeded")
    assert f"{t0} task 0 (pid" in failed.value.hint
    assert "error(42): disk quota exceeded" in failed.value.hint
    err = facade.error(t0)
    assert (err.code, err.message) == (42, "disk quota exceeded")
    assert job.latest(0) is None and not list(job.task_dir(0).glob("*/state"))  # no image
    # A later, smaller report does not replace it (only the highest code is kept).
    begin = job.store(0).read().history[-1]["time"]  # type: ignore[union-attr]
    facade.complete(t0, begin, 5, "smaller")
    assert (facade.error(t0).code, facade.error(t0).message) == (42, "disk quota exceeded")
    # max_wait exceeded: recorded as ETIME, and the step can be asked again.
    with pytest.raises(CheckpointFailed) as late:
        facade.create(t1, max_wait=2)
    assert late.value.code == errno.ETIME
    err = facade.error(t1)
    assert err.code == errno.ETIME and "max_wait=2s" in err.message
    assert facade.able(t1).in_progress_since == 0
    # The whole job reports the highest code of its steps.
    assert facade.error(str(job.id)).code == max(42, errno.ETIME)


def test_vacate_and_restart_continue_the_count(
    submit, facade: Facade, slurm_cluster: SlurmCluster
) -> None:  # type: ignore[no-untyped-def]
    job = submit()
    # A disabled step (a critical section) blocks the vacate of the whole batch job.
    facade.disable(job.step(1))
    with pytest.raises(Disabled) as blocked:
        facade.vacate(job.step(0), max_wait=20)
    assert f"{job.id}.1 ESLURM_DISABLED" in blocked.value.hint
    assert job.field("JobState") == "RUNNING"
    assert job.latest(0) is None and not list(job.task_dir(0).glob("*/state"))  # no image
    facade.enable(job.step(1))
    for round_, stick in enumerate((False, True), start=1):
        wait_for(lambda r=round_: len(job.counted(0)) > 10 * r)
        result = facade.vacate(job.step(0), max_wait=20)
        assert "requeued and held" in result.detail
        saved = {n: job.image(n)[0] for n in (0, 1)}
        where = {n: job.latest(n) for n in (0, 1)}  # the generation this vacate completed
        wait_for(lambda: job.field("JobState") == "PENDING", timeout=60)
        assert job.field("Reason") == "job_requeued_in_held_state"
        assert slurm_cluster.run("squeue", "-h", "-s", "-j", str(job.id)).stdout.strip() == ""
        with pytest.raises(JobPending):
            facade.create(job.step(0), max_wait=5)
        facade.restart(str(job.id), stick=stick)
        wait_for(lambda: job.field("JobState") == "RUNNING", timeout=60)
        wait_for(lambda r=round_: job.registered(restart_count=r), timeout=60)
        assert job.field("ReqNodeList") == (slurm_cluster.node if stick else "(null)")
        expected = [f"resumed from {saved[n]} ({where[n]})" for n in (0, 1)]
        wait_for(lambda e=expected: all(x in (job.work / "out.txt").read_text() for x in e))
        for n in (0, 1):
            wait_for(lambda n=n, s=saved[n]: len(job.counted(n)) > s + 5)
            values = job.counted(n)
            # No lost progress beyond the checkpoint, no value counted twice.
            assert values == list(range(1, len(values) + 1))
    with pytest.raises(JobNotFinished):
        facade.restart(str(job.id), stick=False)


def test_killing_program_or_wrapper_mid_checkpoint_keeps_the_previous_image(
    submit, facade: Facade
) -> None:  # type: ignore[no-untyped-def]
    job = submit(step0="--slow 60 --slow-from 2", step1="--slow 60 --slow-from 2")
    for n in (0, 1):
        facade.create(job.step(n), max_wait=20)
    first = {n: job.latest(n) for n in (0, 1)}  # the complete generation g1 of each step
    assert first == {n: job.task_dir(n) / "g1" for n in (0, 1)}
    saved = {n: (job.task_dir(n) / "g1" / "state").read_bytes() for n in (0, 1)}
    results: dict[int, object] = {}

    def create(n: int) -> None:
        try:
            results[n] = facade.create(job.step(n), max_wait=8)
        except Exception as exc:  # the step may end under us: shown by the asserts below
            results[n] = exc

    threads = [threading.Thread(target=create, args=(n,)) for n in (0, 1)]
    for t in threads:
        t.start()
    for n in (0, 1):
        wait_for((job.task_dir(n) / "current" / "state.tmp").exists, timeout=20)  # not g1
    rec = {n: job.store(n).read() for n in (0, 1)}
    wrapper = rec[1].tasks["0"].pid  # type: ignore[union-attr]
    program = subprocess.run(
        ["pgrep", "-f", f"^/usr/bin/python3 {EXAMPLE} --log {job.work}/step0.log"],
        capture_output=True,
        text=True,
    ).stdout.split()
    assert program
    for pid in program:
        os.kill(int(pid), 9)  # the program of step 0 dies mid-checkpoint
    os.kill(wrapper, 9)  # the wrapper of step 1 dies mid-checkpoint
    for t in threads:
        t.join(60)
    for n in (0, 1):
        image = job.task_dir(n) / "g1" / "state"
        assert image.read_bytes() == saved[n]  # the previous complete generation, intact
        assert job.latest(n) == image.parent  # and nothing newer was called complete
        count, size = (int(x) for x in image.read_text().split())
        assert count > 0 and size > 0
        after = job.store(n).read()
        assert after is not None and after.in_progress is None
        assert after.last_image == {"0": str(image.parent)}
    # Both requests end ECANCELED: step 0's program died, and step 1's wrapper took its step
    # with it, which ends the wait before its MaxWait (wait_end.py) rather than at it (ETIME).
    assert job.store(0).read().error_code == errno.ECANCELED  # type: ignore[union-attr]
    assert job.store(1).read().error_code == errno.ECANCELED  # type: ignore[union-attr]
    # The program of the killed wrapper got its death signal: no orphan outlives the step
    # (proctrack/linuxproc would lose it once reparented).
    orphan = f"^/usr/bin/python3 {EXAMPLE} --log {job.work}/step1.log"
    wait_for(lambda: subprocess.run(["pgrep", "-f", orphan]).returncode == 1, timeout=20)


def test_another_user_is_refused_and_nothing_changes(
    submit, facade: Facade, shared_dir: Path, slurm_cluster: SlurmCluster
) -> None:  # type: ignore[no-untyped-def]
    job = submit()
    facade.create(job.step(0), max_wait=20)
    before = job.state_bytes()
    image = job.image(0)
    # issue 34, 18: another user sees what the controller would tell him, nothing of the
    # state files: every checkpoint command refuses with one code, naming the owner (restart
    # too, whatever the job's state: it said ESLURM_JOB_NOT_FINISHED, and EPERM later), and
    # the step's column and last error read unknown in ls -s, as in the console.
    for args in (
        ("able", job.step(0)),
        ("error", job.step(0)),
        ("disable", job.step(0)),
        ("enable", job.step(0)),
        ("create", job.step(1)),
        ("complete", job.step(1), "--begin-time", "1"),
        ("auto", job.step(1), "--every", "30m"),
        ("vacate", job.step(1)),
        ("vacate", str(job.id)),
        ("restart", str(job.id)),
    ):
        out = cli(shared_dir, *args, user=BOB)
        assert out.returncode == 1, out
        assert f"{args[0]} {args[1]}: ESLURM_ACCESS_DENIED (2002)" in out.stderr, out.stderr
        assert f"job {job.id} belongs to {ALICE}; only its owner or root" in out.stderr
        assert "Traceback" not in out.stderr
    listing = cli(shared_dir, "ls", "-s", "-H", "-j", str(job.id), user=BOB)
    rows = {line.split()[0]: line.split()[-2:] for line in listing.stdout.splitlines()}
    assert rows[job.step(0)] == rows[job.step(1)] == ["unknown", "unknown"], listing.stdout
    mine = cli(shared_dir, "ls", "-s", "-H", "-j", str(job.id))  # root sees the column
    assert [line.split()[-1] for line in mine.stdout.splitlines()][-2:] == ["able", "able"]
    shown = cli(shared_dir, "show", str(job.id), user=BOB).stdout
    assert "Checkpoint=1 not supported, 3 unknown" in shown, shown  # extern; batch, 0 and 1
    # The controller refuses bob's signal too; the state files are untouched.
    sig = slurm_cluster.run("scancel", "--signal=URG", job.step(0), user=BOB, check=False)
    assert sig.returncode != 0
    assert job.state_bytes() == before and job.image(0) == image
    assert job.field("JobState") == "RUNNING"
    # The job's owner may act on her own job.
    assert cli(shared_dir, "disable", job.step(0), user=ALICE).returncode == 0
    assert job.store(0).read().disable_count == 1  # type: ignore[union-attr]


def test_restart_brings_back_a_finished_batch_job(
    submit, facade: Facade, shared_dir: Path, slurm_cluster: SlurmCluster
) -> None:  # type: ignore[no-untyped-def]
    job = submit()
    facade.create(str(job.id), max_wait=20)  # the whole job: both steps
    saved = {n: job.image(n)[0] for n in (0, 1)}
    where = {n: job.latest(n) for n in (0, 1)}
    slurm_cluster.run("scancel", str(job.id))
    wait_for(lambda: job.field("JobState") == "CANCELLED", timeout=60)
    # Ended, with images: another user is refused as while it ran (issue 34: it said EPERM,
    # the reference's record check, where every other command says ESLURM_ACCESS_DENIED).
    out = cli(shared_dir, "restart", str(job.id), user=BOB)
    assert out.returncode == 1 and "ESLURM_ACCESS_DENIED (2002)" in out.stderr, out.stderr
    assert f"job {job.id} belongs to {ALICE}" in out.stderr
    assert job.field("JobState") == "CANCELLED"
    facade.restart(str(job.id), stick=False)  # requeued (not held) and started now
    wait_for(lambda: job.field("JobState") == "RUNNING", timeout=60)
    expected = [f"resumed from {saved[n]} ({where[n]})" for n in (0, 1)]
    wait_for(lambda: all(x in (job.work / "out.txt").read_text() for x in expected))


def test_a_job_slurm_cannot_requeue_is_not_vacated_unless_forced(
    cluster_work: Path, facade: Facade, slurm_cluster: SlurmCluster, shared_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    """``srun`` with no batch script: Slurm cannot requeue the job, so a vacate would end it
    for good (restart brings a job back by a requeue).  Refused before anything is sent,
    with the controller's own code; create still works; ``--force`` ends it."""
    log = cluster_work / "step0.log"
    srun = subprocess.Popen(
        [
            "runuser", "-u", ALICE, "--", "env", f"SLURM_CONF={slurm_cluster.conf}",
            "srun", "-n1", "-J", "coop-srun", f"--chdir={cluster_work}",
            str(SCKPT), "run", "--grace", "0.5", "--name", "counter", "--",
            "/usr/bin/python3", str(EXAMPLE), "--log", str(log),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    job_id = 0
    try:
        state_file = wait_for(lambda: list((cluster_work / ".sckpt").glob("*.0.json")), 60)[0]
        job_id = int(state_file.name.split(".")[0])
        wait_for(lambda: log.exists() and log.stat().st_size > 0)
        wait_for(lambda: catches_signal(cluster_work / ".sckpt", job_id))
        task_dir = cluster_work / f"{job_id}.counter" / "task0"
        reason = (
            f"job {job_id} has no batch script (started by srun or salloc), so Slurm "
            "cannot requeue it and restart cannot bring it back"
        )
        # Slurm's own answer to a requeue of this job, which a vacate would have to make.
        requeue = slurm_cluster.run("scontrol", "requeue", str(job_id), user=ALICE, check=False)
        assert requeue.returncode != 0
        assert "Only batch jobs are accepted or processed" in requeue.stderr
        # The command line refuses with that code and says why, what was done and the ways on.
        out = cli(shared_dir, "vacate", f"{job_id}.0", "--max-wait", "20", user=ALICE)
        assert out.returncode == 1, out
        assert out.stderr.startswith(
            f"sckpt: vacate {job_id}.0: ESLURM_BATCH_ONLY (2039): "
            f"Only batch jobs are accepted or processed; {reason}: a vacate would end it "
            "for good; nothing was done"
        ), out.stderr
        assert "`sckpt create`" in out.stderr and "--force" in out.stderr
        # The console's facade gets the same refusal, and asks its question in those words.
        with pytest.raises(NotRequeueable) as refused:
            facade.vacate(f"{job_id}", max_wait=20)
        assert refused.value.code == 2039 and reason in refused.value.hint
        question = force_question("vacate", f"step {job_id}.0", refused.value).plain
        assert f"{reason}: a vacate would end it for good" in question
        assert "restart cannot bring it back" in question.splitlines()[-1]
        # Nothing was sent or ended: the job runs, no checkpoint began.
        assert srun.poll() is None
        assert slurm_cluster.run("squeue", "-h", "-j", str(job_id), "-o", "%T").stdout == (
            "RUNNING\n"
        )
        assert TaskImages(task_dir).latest() is None
        assert facade.able(f"{job_id}.0").in_progress_since == 0
        # create still works and leaves it running.
        made = cli(shared_dir, "create", f"{job_id}.0", "--wait", user=ALICE)
        assert made.returncode == 0, made.stderr
        assert made.stdout.strip() == f"{job_id}.0: create completed"
        assert TaskImages(task_dir).latest() is not None and srun.poll() is None
        # --force ends it, after its checkpoint, and says that restart cannot bring it back.
        result = facade.vacate(f"{job_id}.0", max_wait=20, force=True)
        assert "step ended" in result.detail and reason in result.detail
        assert srun.wait(timeout=60) != 0  # srun reports its task's SIGTERM
        image = TaskImages(task_dir).latest()
        assert image is not None and image.name == "g2"
        assert int((image / "state").read_text().split()[0]) > 0
        with pytest.raises(SlurmError) as nope:
            facade.restart(str(job_id), stick=False)
        assert (nope.value.code, nope.value.hint) == (2039, reason)
    finally:
        if job_id:
            cancel(slurm_cluster, job_id)
        if srun.poll() is None:
            srun.kill()
        srun.communicate(timeout=30)


def test_a_corrupt_state_file_is_reported_not_a_crash(submit, facade: Facade) -> None:  # type: ignore[no-untyped-def]
    job = submit()
    job.store(0).path.write_text("{ not json")
    with pytest.raises(SckptError) as bad:
        facade.able(job.step(0))
    assert "corrupt" in str(bad.value) and str(job.store(0).path) in str(bad.value)
    seen = state(facade, job.step(0))
    assert seen.kind == CheckpointKind.UNKNOWN and "corrupt" in seen.reason
    assert facade.able(job.step(1)).in_progress_since == 0  # the other step is unaffected


def test_a_step_with_two_tasks_checkpoints_both(
    cluster_work: Path, facade: Facade, slurm_cluster: SlurmCluster
) -> None:  # type: ignore[no-untyped-def]
    script = cluster_work / "tasks.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH -n 2\n"
        f"srun -n2 {SCKPT} run --grace 0.5 -- /bin/bash -c "
        f"'exec /usr/bin/python3 {EXAMPLE} --log $PWD/task$SLURM_PROCID.log'\n"
    )
    out = slurm_cluster.run(
        "sbatch", "--parsable", f"--chdir={cluster_work}", "-o", "/dev/null", str(script),
        user=ALICE, cwd=str(cluster_work),
    )  # fmt: skip
    job_id = int(out.stdout.strip().split(";")[0])
    try:
        store = StepStore(cluster_work / ".sckpt", StepId(job_id, 0))
        wait_for(lambda: store.path.exists() and len(store.read().running_tasks) == 2, 60)  # type: ignore[union-attr]
        wait_for(lambda: all((cluster_work / f"task{p}.log").exists() for p in (0, 1)))
        wait_for(lambda: catches_signal(cluster_work / ".sckpt", job_id, tasks=2))
        result = facade.create(f"{job_id}.0", max_wait=20)
        rec = store.read()
        assert rec is not None and rec.error_code == 0
        assert set(rec.last_image) == {"0", "1"}
        # issue 34, 18: the answer names every task's image, not only task 0's
        step_dir = Path(rec.last_image["0"]).parent.parent
        assert Path(rec.last_image["1"]) == step_dir / "task1" / "g1"
        assert result.detail.endswith(f"{job_id}.0: images {step_dir}/task{{0,1}}/g1"), result
        hosts = {t.host for t in rec.tasks.values()}
        assert hosts == {slurm_cluster.node}
        for p in (0, 1):
            count, size = (
                int(x) for x in Path(rec.last_image[str(p)], "state").read_text().split()
            )
            assert size == sum(len(f"{i}\n") for i in range(1, count + 1))
    finally:
        cancel(slurm_cluster, job_id)


def test_an_operators_image_dir_is_used_by_create_and_restart(
    submit, facade: Facade, shared_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    images = shared_dir / "images"
    images.mkdir()
    subprocess.run(["chown", f"{ALICE}:{ALICE}", str(images)], check=True)
    job = submit()
    facade.create(job.step(0), max_wait=20, image_dir=str(images))
    copied = images / f"{job.id}.step0" / "task0" / "g1" / "state"  # the generation, whole
    count = int(copied.read_text().split()[0])
    assert copied.read_bytes() == (job.task_dir(0) / "g1" / "state").read_bytes()
    assert job.store(0).read().last_image == {"0": str(copied.parent)}  # type: ignore[union-attr]
    facade.vacate(str(job.id), max_wait=20)  # the default image dir for both steps
    wait_for(lambda: job.field("JobState") == "PENDING", timeout=60)
    before = job.state_bytes()
    with pytest.raises(NoSuchImage):
        facade.restart(str(job.id), stick=False, image_dir=str(shared_dir / "nothing-here"))
    assert job.state_bytes() == before and job.field("Reason") == "job_requeued_in_held_state"
    # the refused restart changed nothing: the job is still held; restart from that dir
    facade.restart(str(job.id), stick=False, image_dir=str(images))
    expected = f"resumed from {count} ({copied.parent})"
    wait_for(lambda: expected in (job.work / "out.txt").read_text(), timeout=60)
