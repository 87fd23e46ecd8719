"""Transparent checkpointing (``sckpt run --transparent``, DMTCP) on the real Slurm 22.05.

The program is ``programs/plain_counter.py``: it catches no signal and has never heard of
sckpt or DMTCP.  Each job is ``srun -n2 sckpt run --transparent`` of it; the operator is
this process (root) through the facade, as in ``test_cluster.py``.  DMTCP is the project's
build (``scripts/dmtcp build``, run by ``scripts/test``), found with no variable set.
"""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.errors import CheckpointFailed, Disabled
from sckpt.backend.facade import Facade
from sckpt.backend.model import CheckpointKind, StepId

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, BOB, SCKPT, cancel, cli, state
from tests.cooperative.step_jobs import submit_script
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

PROGRAM = Path(__file__).resolve().parent / "programs" / "plain_counter.py"
LABEL = "transparent (DMTCP 4.2.0)"
SCRIPT = """#!/bin/bash
#SBATCH -n 2
#SBATCH -J transparent-test
srun {sckpt} run --transparent --poll 0.5 --name cnt {run_args} -- \\
    {program} $PWD/count.%t.log {program_args}
"""
PYTHON_COUNTER = f"/usr/bin/python3 {PROGRAM}"


class Job:
    def __init__(self, cluster: SlurmCluster, work: Path, job_id: int, image_root: Path) -> None:
        self.cluster, self.work, self.id, self.image_root = cluster, work, job_id, image_root

    @property
    def step(self) -> str:
        return f"{self.id}.0"

    def task_dir(self, n: int) -> Path:
        return self.image_root / f"{self.id}.cnt" / f"task{n}"

    def generations(self, n: int) -> list[str]:
        """Task ``n``'s generation directories (``g1``, ``g2.partial`` ...), in order."""
        try:
            names = [p.name for p in self.task_dir(n).iterdir() if re.fullmatch(r"g\d+.*", p.name)]
        except FileNotFoundError:
            return []
        return sorted(names, key=lambda g: int(re.match(r"g(\d+)", g).group(1)))  # type: ignore[union-attr]

    def lines(self, n: int) -> list[str]:
        """Task ``n``'s output, whole lines only (the last one may be half written)."""
        try:
            text = (self.work / f"count.{n}.log").read_text()
        except FileNotFoundError:
            return []
        return text.split("\n")[:-1]

    def counted(self, n: int) -> list[int]:
        """The first number of each line (the count, or the C program's sequence)."""
        try:
            return [int(line.split()[0]) for line in self.lines(n)]
        except (IndexError, ValueError):
            return []

    def field(self, name: str) -> str:
        out = self.cluster.run("scontrol", "show", "job", str(self.id)).stdout
        match = re.search(rf"\b{name}=(\S*)", out)
        return match.group(1) if match else ""

    def record(self) -> object:
        return StepStore(self.work / ".sckpt", StepId(self.id, 0)).read()

    def registered(self, restart_count: int = 0) -> bool:
        rec = self.record() if (self.work / ".sckpt" / f"{self.id}.0.json").exists() else None
        tasks = [
            t
            for t in (rec.tasks.values() if rec is not None else [])  # type: ignore[attr-defined]
            if t.state == "running" and t.restart_count == restart_count and t.checkpointer
        ]
        return len(tasks) == 2 and bool(self.counted(0)) and bool(self.counted(1))

    def program_pid(self, n: int) -> int:
        return self.record().tasks[str(n)].program_pid  # type: ignore[attr-defined,no-any-return]


@pytest.fixture
def submit(
    dmtcp_install: object, shared_dir: Path, slurm_cluster: SlurmCluster
) -> Iterator[object]:
    jobs: list[int] = []

    def _submit(
        user: str | None = ALICE,
        run_args: str = "",
        image_root: Path | None = None,
        program: str = PYTHON_COUNTER,
        program_args: str = "",
    ) -> Job:
        work = shared_dir / f"work-{user or 'root'}"
        body = SCRIPT.format(
            sckpt=SCKPT, program=program, run_args=run_args, program_args=program_args
        ).replace("  ", " ")
        job_id = submit_script(slurm_cluster, work, body, user=user)
        job = Job(slurm_cluster, work, job_id, image_root or work)
        jobs.append(job.id)
        wait_for(job.registered, timeout=60)
        return job

    yield _submit
    cancel(slurm_cluster, *jobs)


def assert_every_count_once(job: Job, n: int, beyond: int) -> None:
    """Task ``n`` counted past ``beyond`` with every number present exactly once, in order."""
    wait_for(lambda: len(job.counted(n)) > beyond + 20, timeout=60)
    values = job.counted(n)
    assert values == list(range(1, len(values) + 1)), f"task {n}: a count lost or repeated"


@pytest.mark.parametrize("user", [ALICE, None], ids=["sckpt-alice", "root"])
def test_counter_create_keep_vacate_restart(
    submit, facade: Facade, shared_dir: Path, user: str | None
) -> None:  # type: ignore[no-untyped-def]
    job = submit(user=user)
    step = job.step
    # able whatever the program does with signals (it catches none); the column says how.
    assert facade.able(step).in_progress_since == 0
    seen = state(facade, step)
    assert (seen.kind, seen.checkpointer) == (CheckpointKind.ABLE, LABEL)
    listed = cli(shared_dir, "ls", "-s", "-j", str(job.id)).stdout
    assert f"able, {LABEL}" in listed
    # disable/enable keep the counter's meaning: two disables need two enables.
    facade.disable(step)
    facade.disable(step)
    facade.enable(step)
    with pytest.raises(Disabled):
        facade.create(step, max_wait=10)
    assert state(facade, step).kind == CheckpointKind.DISABLED
    facade.enable(step)
    assert cli(shared_dir, "able", step).stdout.strip() == "Yes"

    # Three creates: each task keeps its last two complete generations, nothing older.
    for _ in range(3):
        before = [len(job.counted(n)) for n in (0, 1)]
        facade.create(step, max_wait=60)
        for n in (0, 1):
            wait_for(lambda n=n, b=before[n]: len(job.counted(n)) > b + 5)  # runs on
    for n in (0, 1):
        gens = job.generations(n)
        assert [g for g in gens if not g.endswith(".partial")] == ["g2", "g3"], gens
        images = list((job.task_dir(n) / "g3").glob("ckpt_*.dmtcp"))
        assert len(images) == 1 and images[0].stat().st_size > 1 << 20
        assert images[0].stat().st_uid == (0 if user is None else _uid(user))
    seen = state(facade, step)
    assert seen.image_bytes > 2 << 20 and seen.checkpoint_seconds > 0
    assert job.field("JobState") == "RUNNING"

    # vacate, then restart: each task resumes from its own image, no count lost or repeated.
    wait_for(lambda: len(job.counted(0)) > 100)
    facade.vacate(step, max_wait=60)
    wait_for(lambda: job.field("JobState") == "PENDING", timeout=60)
    at_vacate = [len(job.counted(n)) for n in (0, 1)]
    facade.restart(str(job.id), stick=False)
    wait_for(lambda: job.field("JobState") == "RUNNING", timeout=60)
    wait_for(lambda: job.registered(restart_count=1), timeout=60)
    notes = [t.start_note for t in job.record().tasks.values()]  # type: ignore[attr-defined]
    assert all(n.startswith("resumed from generation 4") for n in notes), notes
    for n in (0, 1):
        assert_every_count_once(job, n, at_vacate[n])  # none started over from 1
    # The restarted program checkpoints again, into a new generation.
    facade.create(step, max_wait=60)
    for n in (0, 1):
        complete = [g for g in job.generations(n) if not g.endswith(".partial")]
        assert complete == ["g4", "g5"], complete
        assert list((job.task_dir(n) / "g5").glob("ckpt_*.dmtcp"))


@pytest.mark.parametrize("kind", ["c-threads", "bash-pipeline"])
def test_any_program_resumes_with_its_files_consistent(
    submit, facade: Facade, shared_dir: Path, kind: str
) -> None:  # type: ignore[no-untyped-def]
    """A C program with 4 threads appending to one open file, and a bash pipeline whose
    children do the work: create, vacate, restart; the file is whole records, in order."""
    if kind == "c-threads":
        binary = shared_dir / "threads"
        source = PROGRAM.parent / "threads.c"
        subprocess.run(["gcc", "-O1", "-pthread", "-o", str(binary), str(source)], check=True)
        program = str(binary)
    else:
        program = f"/bin/bash {PROGRAM.parent / 'pipeline.sh'}"
    job = submit(user=ALICE, program=program)
    assert state(facade, job.step).checkpointer == LABEL
    facade.create(job.step, max_wait=60)
    wait_for(lambda: len(job.counted(0)) > 100)
    facade.vacate(job.step, max_wait=60)
    wait_for(lambda: job.field("JobState") == "PENDING", timeout=60)
    at_vacate = [len(job.counted(n)) for n in (0, 1)]
    facade.restart(str(job.id), stick=False)
    wait_for(lambda: job.field("JobState") == "RUNNING", timeout=60)
    wait_for(lambda: job.registered(restart_count=1), timeout=60)
    for n in (0, 1):
        assert_every_count_once(job, n, at_vacate[n])
        if kind == "c-threads":
            lines = job.lines(n)
            assert all(re.fullmatch(r"\d+ [0-3]", line) for line in lines), "a record cut"
            assert {line.split()[1] for line in lines} == {"0", "1", "2", "3"}


def test_maxwait_and_scancel_during_a_checkpoint(submit, facade: Facade) -> None:  # type: ignore[no-untyped-def]
    """MaxWait: the error is recorded and the program goes on.  scancel while DMTCP writes:
    nothing half-written is ever called good (the last good image stays the one before)."""
    job = submit(user=ALICE, program_args="768")  # 768 MiB each: seconds to write
    with pytest.raises(CheckpointFailed) as late:
        facade.create(job.step, max_wait=1)
    assert late.value.code == errno.ETIME, late.value
    assert facade.error(job.step).code == errno.ETIME
    before = [len(job.counted(n)) for n in (0, 1)]
    for n in (0, 1):  # DMTCP finishes its image, then the program goes on
        wait_for(lambda n=n: len(job.counted(n)) > before[n] + 20, timeout=60)
        wait_for(lambda n=n: "g1" in job.generations(n), timeout=60)
    assert job.field("JobState") == "RUNNING"

    outcome: list[object] = []
    creating = threading.Thread(
        target=lambda: outcome.append(_attempt(facade, job.step)), daemon=True
    )
    creating.start()
    wait_for(
        lambda: any((job.task_dir(n) / "dmtcp").glob("*.temp") for n in (0, 1)),
        timeout=30,
        interval=0.02,
    )
    cancel(job.cluster, job.id)
    creating.join(timeout=120)
    # Slurm's SIGTERM may come after DMTCP finished writing (then g2 is whole and may be
    # called good), or before (then g2 stays partial): either way every generation called
    # complete holds whole images, and the index names a complete one.
    index = json.dumps(json.loads((job.work / ".sckpt" / f"{job.id}.images.json").read_text()))
    for n in (0, 1):
        complete = [g for g in job.generations(n) if not g.endswith(".partial")]
        assert complete in (["g1"], ["g1", "g2"]), complete
        for g in complete:
            files = sorted(p.name for p in (job.task_dir(n) / g).iterdir())
            assert not any(f.endswith(".temp") for f in files), files
            assert [f for f in files if f.endswith(".dmtcp")] and any(
                f.startswith("dmtcp_restart_script") for f in files
            ), files
        assert any(f"task{n}/{g}" in index for g in complete), index
        for partial in (g for g in job.generations(n) if g.endswith(".partial")):
            assert f"task{n}/{partial}" not in index


def _attempt(facade: Facade, step: str) -> object:
    try:
        return facade.create(step, max_wait=60)
    except Exception as exc:  # the job was cancelled under it: any refusal will do
        return exc


def _uid(user: str) -> int:
    return int(subprocess.run(["id", "-u", user], capture_output=True, text=True).stdout)


def test_another_user_cannot_command_the_coordinator(  # type: ignore[no-untyped-def]
    submit, facade: Facade, dmtcp_install, shared_dir: Path
) -> None:
    # One coordinator per task (a step's: test_coordinator_auth.py).
    job = submit(user=ALICE, run_args="--coordinator task")
    command = dmtcp_install.program("dmtcp_command")
    pid = wait_for(lambda: job.program_pid(0))  # recorded by the wrapper's first look
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    port = next(e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"DMTCP_COORD_PORT="))
    # The job's owner reaches her coordinator through the relay (so the port is the right one).
    mine = subprocess.run(
        ["runuser", "-u", ALICE, "--", command, "-h", "127.0.0.1", "-p", port, "--status"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "NUM_PEERS=1" in mine.stdout and "RUNNING=yes" in mine.stdout, mine
    # Nothing of DMTCP listens on the node's network: the coordinator is in its own namespace.
    listening = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
    assert "dmtcp_coord" not in listening
    assert f"127.0.0.1:{port} " in listening and f"0.0.0.0:{port} " not in listening
    before = [len(job.counted(n)) for n in (0, 1)]
    generations = job.generations(0)
    for verb in ("--kill", "--quit", "--checkpoint", "--status"):
        bob = subprocess.run(
            ["runuser", "-u", BOB, "--", command, "-h", "127.0.0.1", "-p", port, verb],
            capture_output=True,
            text=True,
            timeout=30,
        )
        # --quit expects no answer (dmtcp_command exits 0 whatever happened): what counts is
        # below, the job unharmed; the others must be refused outright.
        assert verb == "--quit" or bob.returncode != 0, (verb, bob)
        assert "NUM_PEERS" not in bob.stdout, (verb, bob)
    with subprocess.Popen(  # a raw connection that sends junk
        [
            "runuser",
            "-u",
            BOB,
            "--",
            "python3",
            "-c",
            "import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1])));"
            " s.sendall(b'x' * 4096)",
            port,
        ],
    ) as raw:
        raw.wait(timeout=30)
    for n in (0, 1):
        wait_for(lambda n=n: len(job.counted(n)) > before[n] + 50, timeout=30)  # unharmed
    assert job.generations(0) == generations  # bob's --checkpoint took none
    # The coordinator still obeys its owner; an operator's ImageDir gets the whole generation.
    elsewhere = shared_dir / "elsewhere"
    elsewhere.mkdir(mode=0o777)
    elsewhere.chmod(0o1777)
    facade.create(job.step, max_wait=60, image_dir=str(elsewhere))
    assert job.field("JobState") == "RUNNING"
    for n in (0, 1):
        copied = list((elsewhere / f"{job.id}.cnt" / f"task{n}").glob("g*/ckpt_*.dmtcp"))
        assert len(copied) == 1 and copied[0].parent.name == "g1", copied
        kept = next((job.task_dir(n) / "g1").glob("ckpt_*.dmtcp"))
        assert copied[0].read_bytes() == kept.read_bytes()


def test_a_full_image_directory_is_enospc_and_the_program_runs_on(
    submit, facade: Facade, shared_dir: Path
) -> None:  # type: ignore[no-untyped-def]
    small = shared_dir / "small"
    small.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=200m,mode=0755", "tmpfs", str(small)], check=True
    )
    try:
        subprocess.run(["chown", f"{ALICE}:{ALICE}", str(small)], check=True)
        job = submit(user=ALICE, run_args=f"--image-dir {small}", image_root=small)
        facade.create(job.step, max_wait=60)
        assert [g for g in job.generations(0) if not g.endswith(".partial")] == ["g1"]
        filler = small / "filler"
        free = os.statvfs(small).f_bavail * os.statvfs(small).f_frsize
        subprocess.run(
            ["runuser", "-u", ALICE, "--", "fallocate", "-l", str(free - (40 << 20)), str(filler)],
            check=True,
        )
        before = [len(job.counted(n)) for n in (0, 1)]
        with pytest.raises(CheckpointFailed) as failed:
            facade.create(job.step, max_wait=60)
        assert failed.value.code == errno.ENOSPC, failed.value
        assert "error(28)" in failed.value.hint
        assert facade.error(job.step).code == errno.ENOSPC
        for n in (0, 1):  # the program keeps running, the last good image is still g1
            wait_for(lambda n=n: len(job.counted(n)) > before[n] + 20, timeout=30)
            assert [g for g in job.generations(n) if not g.endswith(".partial")] == ["g1"]
        images = job.record().last_image  # type: ignore[attr-defined]
        assert all(p.endswith("/g1") for p in images.values()), images
        cancel(job.cluster, job.id)
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)
