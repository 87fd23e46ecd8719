"""No transparent checkpoint freezes a job, and every ``--wait`` ends (real Slurm 22.05, DMTCP).

The programs: ``programs/tcp_talk.py`` (task 0 serves over TCP, task 1 asks 1, 2, 3 ...
and checks each answer; or every task asks a server outside the job) and
``programs/plain_counter.py``.  Jobs are sckpt-alice's, two tasks each, under
``sckpt run --transparent --coordinator task`` (one coordinator per task, the layout whose
talking tasks froze; the step coordinator's own tests are ``test_step_coordinator.py``); the
operator is root's ``sckpt`` command in another process.

A freeze DMTCP 4.2.0 really makes (a task connected to a server outside the job that never
answers DMTCP's drain marker) is made with ``SCKPT_PEERS_UNCHECKED=1`` in the job, the
test-only way past the refusal (``peers.py``): the cancel, requeue and ceiling tests need a
checkpoint that never ends on its own.  (Two tasks of the step talking to each other froze
too, but not every time: their two drains race.)
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.model import StepId

from tests.conftest import SlurmCluster
from tests.cooperative.conftest import ALICE, SCKPT, cancel, cli
from tests.helpers import wait_for

pytestmark = pytest.mark.slurm

PROGRAMS = Path(__file__).resolve().parent / "programs"
TALK = f"/usr/bin/python3 {PROGRAMS / 'tcp_talk.py'}"
CHAT = PROGRAMS / "tcp_chat.py"
"""Helper i33s's program (tests/cooperative/programs/tcp_chat.py): numbered messages and a
hash of the whole conversation."""
MESSAGES = 600
COUNTER = f"/usr/bin/python3 {PROGRAMS / 'plain_counter.py'}"
SCRIPT = """#!/bin/bash
#SBATCH -n 2
#SBATCH --requeue
#SBATCH --open-mode=append
{exports}
srun {sckpt} run --transparent --coordinator task --poll 0.5 --name talk -- {program} {args}
"""
FROZEN = "export SCKPT_PEERS_UNCHECKED=1 SCKPT_DMTCP_CEILING={ceiling}"


@dataclass
class Job:
    cluster: SlurmCluster
    work: Path
    id: int

    @property
    def step(self) -> str:
        return f"{self.id}.0"

    def lines(self, name: str) -> list[str]:
        try:
            return (self.work / name).read_text().split("\n")[:-1]
        except FileNotFoundError:
            return []

    def asked(self, rank: int = 1) -> list[int]:
        """The numbers task ``rank`` asked and got the right answer to, in order."""
        out = []
        for line in self.lines(f"talk.{rank}.log"):
            n, answer = line.split()
            assert int(answer) == 2 * int(n), line
            out.append(int(n))
        return out

    def counted(self, rank: int) -> list[int]:
        return [int(x) for x in self.lines(f"count.{rank}.log")]

    def field(self, name: str) -> str:
        out = self.cluster.run("scontrol", "show", "job", str(self.id), check=False).stdout
        match = re.search(rf"\b{name}=(\S*)", out)
        return match.group(1) if match else ""

    def record(self) -> object:
        return StepStore(self.work / ".sckpt", StepId(self.id, 0)).read()

    def generations(self, rank: int) -> list[str]:
        task = self.work / f"{self.id}.talk" / f"task{rank}"
        """Task ``rank``'s complete image generations (``g1`` ...; ``.partial`` ones left out)."""
        found = task.glob("g*") if task.is_dir() else []
        return sorted(p.name for p in found if not p.name.endswith(".partial"))


def exact(numbers: list[int]) -> bool:
    """Every number from 1 once, in order: no message lost or repeated."""
    return numbers == list(range(1, len(numbers) + 1))


@pytest.fixture
def submit(
    dmtcp_install: object, shared_dir: Path, cluster_work: Path, slurm_cluster: SlurmCluster
) -> Iterator[object]:
    """Submit a job as alice and wait until both tasks talk (``cluster_work`` makes the
    audit directory ``cli`` writes into)."""
    jobs: list[int] = []

    def _submit(
        program: str,
        args: str = "",
        exports: str = "",
        ready: tuple[str, ...] = ("talk.0.log", "talk.1.log"),
    ) -> Job:
        work = shared_dir / f"job{len(jobs)}"
        work.mkdir()
        subprocess.run(["chown", f"{ALICE}:{ALICE}", str(work)], check=True)
        script = work / "job.sh"
        script.write_text(
            SCRIPT.format(
                sckpt=SCKPT,
                program=program,
                args=(args or "{work}").replace("{work}", str(work)),
                exports=exports,
            )
        )
        script.chmod(0o755)
        out = slurm_cluster.run(
            "sbatch", "--parsable", f"--chdir={work}", "-o", str(work / "out.txt"),
            str(script), user=ALICE, cwd=str(work),
        )  # fmt: skip
        job = Job(slurm_cluster, work, int(out.stdout.strip().split(";")[0]))
        jobs.append(job.id)
        wait_for(lambda: all(len(job.lines(n)) > 20 for n in ready), timeout=90)
        return job

    yield _submit
    cancel(slurm_cluster, *jobs)


def _progressing(job: Job, name: str) -> bool:
    before = len(job.lines(name))
    try:
        wait_for(lambda: len(job.lines(name)) > before + 10, timeout=15)
    except AssertionError:
        return False
    return True


def _uninterrupted_results(where: Path) -> list[str]:
    """The ``result last=N hash=H`` lines of the same conversation run without sckpt,
    DMTCP or Slurm: two local processes ranked as the step's tasks are."""
    ranks = []
    for rank in (0, 1):
        env = {**os.environ, "SLURM_PROCID": str(rank), "SLURM_NTASKS": "2"}
        argv = [
            sys.executable,
            str(CHAT),
            str(where / "rv"),
            str(where / "ref.%t"),
            str(MESSAGES),
            "0",
        ]
        ranks.append(subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL))
    assert [p.wait(timeout=120) for p in ranks] == [0, 0]
    return [(where / f"ref.{rank}").read_text().splitlines()[-1] for rank in (0, 1)]


def test_talking_tasks_are_refused_before_anything_stops(  # type: ignore[no-untyped-def]
    submit, shared_dir: Path, tmp_path: Path
) -> None:
    talk = f"{{work}}/rv {{work}}/chat.%t.log {MESSAGES} 0.02"
    job = submit(f"/usr/bin/python3 {CHAT}", talk, ready=("chat.1.log",))
    done = cli(shared_dir, "create", job.step, "--wait")
    assert done.returncode == 1, done
    assert done.stdout.strip() == f"{job.step}: create failed (18)"
    err = done.stderr
    assert f"sckpt: create {job.step}: EXDEV (18): connected outside this DMTCP computation" in err
    pids = {int(p) for p in re.findall(r"task [01] of the step \(pid (\d+), python3\)", err)}
    record = job.record()
    assert pids == {t.program_pid for t in record.tasks.values()}  # type: ignore[attr-defined]
    assert re.search(r"TCP [\d.]+:\d+ -> [\d.]+:\d+", err)
    assert "--coordinator step" in err and "the program runs on" in err
    # Nothing was stopped: the conversation goes on to its end, and its result is exactly an
    # uninterrupted run's; no image was made.
    assert _progressing(job, "chat.1.log")
    wait_for(lambda: job.field("JobState") == "COMPLETED", timeout=120)
    results = [job.lines(f"chat.{rank}.log")[-1] for rank in (0, 1)]
    assert results == _uninterrupted_results(tmp_path)
    assert results[0].startswith(f"result last={MESSAGES} hash=")
    assert job.generations(0) == job.generations(1) == []


class EchoServer:
    """A TCP server outside the job, answering ``2n`` to ``n``; notes anything else it got."""

    def __init__(self, port: int = 0) -> None:
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.junk: list[bytes] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader, contextlib.suppress(OSError):
            for line in reader:  # until the job's task goes (reset, or closed)
                if not line.strip().isdigit():
                    self.junk.append(line)  # DMTCP's drain marker: never answered
                    continue
                conn.sendall(f"{2 * int(line)}\n".encode())

    def close(self) -> None:
        self.listener.close()


def test_a_server_outside_the_job_is_refused_and_named(submit, shared_dir: Path) -> None:  # type: ignore[no-untyped-def]
    server = EchoServer()
    try:
        job = submit(TALK, f"{{work}} 127.0.0.1:{server.port}")
        done = cli(shared_dir, "create", job.step, "--wait")
        assert done.returncode == 1, done
        assert "EXDEV (18): connected outside this DMTCP computation (pid " in done.stderr
        assert f"-> 127.0.0.1:{server.port})" in done.stderr  # the server's address
        assert "--coordinator step" not in done.stderr
        for rank in (0, 1):
            assert _progressing(job, f"talk.{rank}.log")
            assert exact(job.asked(rank))
        assert server.junk == []  # DMTCP's drain marker never reached the server
    finally:
        server.close()


def test_a_connection_dmtcp_treats_as_external_is_checkpointed_and_named(  # type: ignore[no-untyped-def]
    submit, shared_dir: Path, facade
) -> None:
    server = EchoServer(port=389)  # LDAP's port: DMTCP 4.2.0 leaves it alone, dead at restart
    try:
        job = submit(TALK, "{work} 127.0.0.1:389")
        done = cli(shared_dir, "create", job.step, "--wait")
        assert done.returncode == 0, done
        assert done.stdout == f"{job.step}: create completed\n"
        notes = sorted(done.stderr.splitlines())
        assert len(notes) == 2, done.stderr
        for rank, note in enumerate(notes):
            assert note.startswith(f"sckpt: create {job.step}: {job.step} task {rank} pid "), note
            assert note.endswith(
                "-> 127.0.0.1:389: not restored by DMTCP (a dead socket after a restart)"
            ), note
        seen = next(
            s.checkpoint
            for v in facade.snapshot().jobs
            if v.job.job_id == job.id
            for s in v.steps
            if s.step.step_id.step == 0
        )
        assert sorted(w.split()[1] for w in seen.outside) == ["0", "1"], seen.outside
        for rank in (0, 1):
            assert _progressing(job, f"talk.{rank}.log")
            assert exact(job.asked(rank))
            assert job.generations(rank) == ["g1"]
        assert server.junk == []
    finally:
        server.close()


@pytest.fixture
def frozen(submit) -> Iterator[Callable[..., Job]]:  # type: ignore[no-untyped-def]
    """A job whose next checkpoint freezes for good: each task talks to a server outside
    the job that never answers DMTCP's drain marker, and the refusal is bypassed."""
    server = EchoServer()

    def _frozen(ceiling: int = 600) -> Job:
        exports = FROZEN.format(ceiling=ceiling)
        return submit(TALK, f"{{work}} 127.0.0.1:{server.port}", exports=exports)

    yield _frozen
    server.close()


def _create_wait(shared_dir: Path, job: Job) -> subprocess.Popen[str]:
    """``sckpt create STEP --wait`` in the background (``cli`` writes its config)."""
    cli(shared_dir, "--version")
    env = {**os.environ, "SCKPT_CONFIG": str(shared_dir / "audit" / "root.toml")}
    return subprocess.Popen(
        [str(SCKPT), "create", job.step, "--wait"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/tmp",
    )  # fmt: skip


def _stays_still(job: Job, name: str, seconds: float = 3.0) -> bool:
    """Whether ``name`` stops growing: no line added for ``seconds`` within 20 s."""
    last = [len(job.lines(name)), time.monotonic()]

    def still() -> bool:
        now = len(job.lines(name))
        if now != last[0]:
            last[:] = [now, time.monotonic()]
        return time.monotonic() - last[1] >= seconds

    try:
        wait_for(still, timeout=20, interval=0.25)
    except AssertionError:
        return False
    return True


def _until_frozen(job: Job) -> None:
    """Both tasks were asked for the checkpoint and the conversation stopped inside it."""

    def asked() -> bool:
        req = job.record().in_progress  # type: ignore[attr-defined]
        return req is not None and sorted(req.signalled) == [0, 1]

    wait_for(asked, timeout=30)
    assert _stays_still(job, "talk.1.log")


def test_create_wait_ends_when_the_job_is_cancelled(frozen, shared_dir: Path) -> None:  # type: ignore[no-untyped-def]
    job = frozen()
    waiting = _create_wait(shared_dir, job)
    _until_frozen(job)
    assert waiting.poll() is None
    job.cluster.run("scancel", str(job.id))
    out, err = waiting.communicate(timeout=30)  # not the 600 s ceiling
    assert waiting.returncode == 5, (out, err)
    assert err.strip() == (
        f"sckpt: create {job.step}: ESLURM_ALREADY_DONE (2021): job {job.id} was cancelled; "
        "no outcome can come of the checkpoint any more: stopped waiting"
    )
    err_now = job.record().checkpoint_error()  # type: ignore[attr-defined]
    assert err_now.code == 125 and "was cancelled during the checkpoint" in err_now.message


def test_create_wait_ends_when_someone_requeues_the_job(frozen, shared_dir: Path) -> None:  # type: ignore[no-untyped-def]
    job = frozen()
    waiting = _create_wait(shared_dir, job)
    _until_frozen(job)
    job.cluster.run("scontrol", "requeue", str(job.id))
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 6, (out, err)
    assert f"sckpt: create {job.step}: ESLURM_ALREADY_DONE (2021): job {job.id} was requeued" in err
    assert err.count("\n") == 1


def test_a_stuck_checkpoint_ends_the_wait_at_the_ceiling_naming_what_was_stuck(  # type: ignore[no-untyped-def]
    frozen, shared_dir: Path
) -> None:
    job = frozen(ceiling=15)
    done = cli(shared_dir, "create", job.step, "--wait")
    assert done.returncode == 1, done
    assert done.stdout.strip() == f"{job.step}: create failed (62)"
    assert f"sckpt: create {job.step}: ETIME (62): DMTCP's checkpoint did not finish in " in (
        done.stderr
    )
    assert re.search(r"pid \d+ \(python3\) state S, 2 threads: ", done.stderr)
    assert "Still draining socket... perhaps remote host is not running under DMTCP? (fd " in (
        done.stderr
    )
    assert "cannot abandon a checkpoint, so the program stays stopped" in done.stderr
    recorded = cli(shared_dir, "error", job.step).stdout
    assert recorded.startswith("error(62): DMTCP's checkpoint did not finish in ")
    # What the README says: nothing frees this one; the job is still there to cancel.
    assert _stays_still(job, "talk.1.log")
    assert job.field("JobState") == "RUNNING"


def test_a_process_stopped_in_the_checkpoint_is_continued_and_runs_on(  # type: ignore[no-untyped-def]
    submit, shared_dir: Path
) -> None:
    job = submit(COUNTER, "{work}/count.%t.log", ready=("count.0.log", "count.1.log"))
    record = job.record()
    program = record.tasks["0"].program_pid  # type: ignore[attr-defined]
    os.kill(program, signal.SIGSTOP)  # as a debugger or job control would
    before = len(job.counted(1))
    done = cli(shared_dir, "create", job.step, "--max-wait", "15")
    assert done.returncode == 0, done
    assert done.stdout.startswith(f"{job.step}: create completed after "), done.stdout
    for rank in (0, 1):
        assert _progressing(job, f"count.{rank}.log")
        assert exact(job.counted(rank))
        assert job.generations(rank) == ["g1"]
    assert len(job.counted(1)) > before
