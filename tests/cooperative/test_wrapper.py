"""``sckpt run`` outside Slurm's daemons: the job's environment is given, the console is a
store update plus the wake signal, exactly what the cooperative engine does."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sckpt.backend.checkpointing.generations import TaskImages
from sckpt.backend.checkpointing.options import parse_signal
from sckpt.backend.checkpointing.protocol import (
    ABANDONED_CODE,
    StepRecord,
    default_step_name,
    parse_status,
)
from sckpt.backend.checkpointing.records import blocked_refusal
from sckpt.backend.checkpointing.signal_checkpointer import signal_handler
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.errors import ESLURM_NOT_SUPPORTED
from sckpt.backend.model import StepId

from tests.cooperative.conftest import EXAMPLE, VENV_PYTHON
from tests.helpers import wait_for

WRAPPER = "sckpt.backend.checkpointing.wrapper"
"""``python -m`` runs ``sckpt run`` by this name."""
JOB = 900001


class Run:
    """A wrapper process around the example counter, in a fake job ``JOB.0``."""

    def __init__(
        self,
        work: Path,
        *counter_args: str,
        restart_count: int = 0,
        program: list[str] | None = None,
        name: str | None = "counter",
        step: int = 0,
        log: str = "count.log",
        procid: int = 0,
        wrapper_args: tuple[str, ...] = (),
    ) -> None:
        self.work = work
        self.log = work / log
        self.store = StepStore(work / ".sckpt", StepId(JOB, step))
        argv = [*(program or [sys.executable, str(EXAMPLE), "--log", str(self.log)]), *counter_args]
        self.image = work / f"{JOB}.{name or default_step_name(argv)}" / f"task{procid}"
        """Where this task's images go (the step's name: the same in every run)."""
        env = {
            **os.environ,
            "SLURM_JOB_ID": str(JOB),
            "SLURM_STEP_ID": str(step),
            "SLURM_PROCID": str(procid),
            "SCKPT_WORK_DIR": str(work),
            "SLURM_RESTART_COUNT": str(restart_count),
        }
        env.pop("SCKPT_STATE_DIR", None)
        self.proc = subprocess.Popen(
            [
                str(VENV_PYTHON),
                "-m",
                WRAPPER,
                "--poll",
                "0.5",
                "--grace",
                "0.5",
                *(["--name", name] if name else []),
                *wrapper_args,
                "--",
                *argv,
            ],
            env=env,
            cwd=work,
            stderr=subprocess.PIPE,
            text=True,
        )
        STARTED.append(self.proc)
        wait_for(lambda: self.registered(), timeout=20)
        self.program_pid = 0
        """The program's pid once the wrapper recorded it (``wait_for_handler``)."""
        if str(self.log) in argv:  # a counter: until it counts
            wait_for(lambda: self.counted() or self.proc.poll() is not None, timeout=20)

    def wait_for_handler(self, handler: str) -> None:
        """Until the wrapper recorded that the program's SIGUSR1 disposition is ``handler``."""
        wait_for(lambda: self.record().tasks["0"].handler == handler, timeout=20)
        self.program_pid = self.record().tasks["0"].program_pid

    def registered(self) -> bool:
        rec = self.store.read()
        return rec is not None and any(t.pid == self.proc.pid for t in rec.tasks.values())

    def record(self) -> StepRecord:
        rec = self.store.read()
        assert rec is not None
        return rec

    def checkpoint(self, max_wait: int = 10, wake: bool = True, image_dir: str = "") -> StepRecord:
        """What the engine's create does: record a request (``image_dir``: the operator's
        ImageDir leaf, ``<dir>/<job>.<name>``), wake the wrapper, wait for the outcome."""
        self.store.update(lambda r: r.begin_request("root", image_dir, max_wait, "create"))
        if wake:
            os.kill(self.proc.pid, signal.SIGURG)
        wait_for(lambda: self.record().in_progress is None, timeout=max_wait + 10)
        return self.record()

    def counted(self) -> list[int]:
        try:
            return [int(x) for x in self.log.read_text().split()]
        except FileNotFoundError:
            return []

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=20)
        return self.proc.returncode, err


STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture
def work(shared_dir: Path) -> Iterator[Path]:
    yield shared_dir
    # A failed test must not leave its wrapper and program running.
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            children = subprocess.run(
                ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
            ).stdout.split()
            for pid in [proc.pid, *map(int, children)]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.communicate(timeout=10)


def test_checkpoint_writes_an_image_and_records_success(work: Path) -> None:
    run = Run(work)
    wait_for(lambda: len(run.counted()) >= 5)
    rec = run.checkpoint()
    image = run.image / "g1" / "state"  # the first generation, complete
    count, size = (int(x) for x in image.read_text().split())
    assert count >= 5 and size == sum(len(f"{i}\n") for i in range(1, count + 1))
    assert rec.error_code == 0 and rec.last_image == {"0": str(image.parent)}
    assert [h["operation"] for h in rec.history] == ["register", "create", "done"]
    assert run.proc.poll() is None  # create: the program keeps running
    status, err = run.stop()
    assert status == 143 and "starting from 0" in err
    assert run.record().tasks["0"].state == "ended"


def test_polling_alone_finds_a_request_when_the_wake_signal_is_lost(work: Path) -> None:
    run = Run(work)
    rec = run.checkpoint(wake=False)
    assert rec.error_code == 0 and rec.last_image
    run.stop()


def test_program_failure_is_recorded_with_its_code_and_message(work: Path) -> None:
    run = Run(work, "--fail", "42 disk quota exceeded")
    rec = run.checkpoint()
    assert (rec.error_code, rec.error_msg) == (42, "disk quota exceeded")
    assert rec.last_image == {}
    assert TaskImages(run.image).latest() is None  # nothing was called complete
    run.stop()


WAITS_FOR_ITS_SIGNAL = """
import os, signal, sys, time
asked = []
signal.signal(signal.SIGUSR1, lambda *_: asked.append(1))
while not asked:
    time.sleep(0.01)
"""
"""The start of a program that writes its status line by hand once it is asked."""

SLOW_WRITER = (
    WAITS_FOR_ITS_SIGNAL
    + """
with open(os.environ["SCKPT_CKPT_DONE"], "wb", buffering=0) as done:
    for byte in b"17 written one byte at a time":  # each on its own, 10 ms apart
        done.write(bytes([byte]))
        time.sleep(0.01)
time.sleep(60)
"""
)

HELD_BACK_WRITER = (
    WAITS_FOR_ITS_SIGNAL
    + """
with open(os.environ["SCKPT_CKPT_DONE"], "wb", buffering=0) as done:
    done.write(b"1")
    time.sleep(0.4)  # a writer the scheduler held back for many of the wrapper's turns
    done.write(b"7 held back mid-line")
    if sys.argv[1:] == ["keep-open"]:
        done.write(b"\\n")
        time.sleep(60)
time.sleep(60)
"""
)


def _outcome_of(work: Path, source: str, name: str, *args: str) -> tuple[int, str]:
    """The code and message a checkpoint of the program ``source`` recorded."""
    script = work / f"{name}.py"
    script.write_text(source)
    run = Run(work, program=[sys.executable, str(script), *args], name=name)
    run.wait_for_handler("caught")
    rec = run.checkpoint()
    run.stop()
    return rec.error_code, rec.error_msg


def test_a_status_line_is_read_once_its_writer_closed_it(work: Path) -> None:
    """A program that writes its status line slowly: the wrapper waits for it to close the
    file (a pause of 20 ms after the first bytes used to cut the message short)."""
    assert _outcome_of(work, SLOW_WRITER, "slow") == (17, "written one byte at a time")


@pytest.mark.parametrize("keep_open", [False, True], ids=["closes", "keeps-it-open"])
def test_a_writer_held_back_mid_line_is_not_cut_short(work: Path, keep_open: bool) -> None:
    """The wrapper's CI failure, made certain: the first byte, a pause of eight turns, the
    rest.  One that keeps the file open after its whole line completes all the same."""
    args = ["keep-open"] if keep_open else []
    assert _outcome_of(work, HELD_BACK_WRITER, "held", *args) == (17, "held back mid-line")


def test_restart_hands_the_image_and_the_count_continues_without_gaps(work: Path) -> None:
    run = Run(work)
    wait_for(lambda: len(run.counted()) >= 5)
    run.checkpoint()
    saved = int((run.image / "g1" / "state").read_text().split()[0])
    wait_for(lambda: len(run.counted()) >= saved + 3)  # progress after the checkpoint ...
    run.stop()
    with run.log.open("a") as log:
        log.write("-1\n")  # a marker the restarted counter's truncation removes
    again = Run(work, restart_count=1)  # ... is redone once after the restart
    wait_for(lambda: -1 not in again.counted() and len(again.counted()) >= saved + 5)
    _, err = again.stop()
    assert f"resumed from {saved}" in err
    values = again.counted()
    assert values == list(range(1, len(values) + 1))
    assert [h["operation"] for h in again.record().history][-1] == "resume"


def test_killing_the_program_mid_checkpoint_keeps_the_previous_image(work: Path) -> None:
    run = Run(work)
    run.checkpoint()
    image = run.image / "g1" / "state"
    before = image.read_bytes()
    run.stop()
    slow = Run(work, "--slow", "30", restart_count=1)
    slow.store.update(lambda r: r.begin_request("root", "", 60, "create"))
    os.kill(slow.proc.pid, signal.SIGURG)
    tmp = slow.image / "current" / "state.tmp"  # the new generation, not g1
    wait_for(tmp.exists)
    program = int(
        subprocess.run(
            ["pgrep", "-P", str(slow.proc.pid)], capture_output=True, text=True
        ).stdout.split()[0]
    )
    os.kill(program, signal.SIGKILL)
    status, _ = slow.stop()
    assert status == -signal.SIGKILL  # the wrapper dies of the program's signal
    assert image.read_bytes() == before
    rec = slow.record()
    assert rec.in_progress is None and rec.error_code == ABANDONED_CODE
    assert rec.last_image == {"0": str(image.parent)}


def test_killing_the_wrapper_mid_checkpoint_keeps_the_image_and_times_out(work: Path) -> None:
    run = Run(work)
    run.checkpoint()
    image = run.image / "g1" / "state"
    before = image.read_bytes()
    run.stop()
    slow = Run(work, "--slow", "30", restart_count=1)
    slow.store.update(lambda r: r.begin_request("root", "", 2, "create"))
    os.kill(slow.proc.pid, signal.SIGURG)
    wait_for((slow.image / "current" / "state.tmp").exists)
    program = subprocess.run(
        ["pgrep", "-P", str(slow.proc.pid)], capture_output=True, text=True
    ).stdout.split()
    slow.proc.kill()
    slow.proc.communicate(timeout=10)
    # The program gets SIGTERM when its wrapper dies: no orphan outlives the task.
    wait_for(lambda: not Path(f"/proc/{program[0]}").exists() or _zombie(int(program[0])))
    # Whoever looks next past max_wait (console or wrapper) records it: looked at as at the
    # request's deadline, not slept until then.
    slow.store.update(lambda r: r.expire(r.in_progress.deadline if r.in_progress else None))
    rec = slow.record()
    assert rec.in_progress is None and rec.error_code == errno.ETIME
    assert image.read_bytes() == before


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


def test_signals_are_forwarded_to_the_program(work: Path) -> None:
    marker = work / "got"
    script = work / "trap.sh"
    script.write_text(
        f"#!/bin/bash\ntrap 'echo USR2 >> {marker}' USR2\n"
        f"trap 'echo HUP >> {marker}; exit 7' HUP\nwhile true; do sleep 0.1; done\n"
    )
    script.chmod(0o755)
    env = {**os.environ, "SLURM_JOB_ID": str(JOB), "SCKPT_WORK_DIR": str(work)}
    # As slurmstepd starts it: SIGHUP at its default even when this test runs under nohup
    # (an ignored signal is discarded before the wrapper can take it, and bash cannot
    # trap a signal ignored at its start).
    proc = subprocess.Popen(
        [str(VENV_PYTHON), "-m", WRAPPER, "--", str(script)],
        env=env,
        cwd=work,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    store = StepStore(work / ".sckpt", StepId(JOB, 0xFFFFFFFB))  # no SLURM_STEP_ID: batch

    def program() -> int:
        rec = store.read() if store.path.exists() else None
        task = rec.tasks.get("0") if rec is not None else None
        return task.program_pid if task is not None else 0

    pid = wait_for(program)
    # Forwarded once bash has set its trap (before, USR2 would end the script).
    wait_for(lambda: signal_handler(pid, signal.SIGUSR2) == "caught")
    proc.send_signal(signal.SIGUSR2)
    wait_for(lambda: marker.exists() and "USR2" in marker.read_text())
    proc.send_signal(signal.SIGURG)  # the wake signal is not forwarded
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(timeout=20) == 7  # the program's exit status is the wrapper's
    assert marker.read_text().split() == ["USR2", "HUP"]


def test_outside_a_job_it_says_so(work: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    out = subprocess.run(
        [str(VENV_PYTHON), "-m", WRAPPER, "--", "true"],
        env=env,
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert out.returncode == 2
    assert "must run inside a Slurm job" in out.stderr and "Traceback" not in out.stderr
    assert "srun sckpt run -- PROGRAM" in out.stderr  # issue 34, 18: how to start it
    bad = subprocess.run(
        [str(VENV_PYTHON), "-m", WRAPPER, "--signal", "NOPE", "--", "true"],
        env={**env, "SLURM_JOB_ID": "5"},
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert bad.returncode == 2 and "unknown signal 'NOPE'" in bad.stderr


@pytest.mark.usefixtures("dmtcp_install")
def test_a_program_that_cannot_start_is_refused_the_same_way_under_dmtcp(work: Path) -> None:
    # issue 34, 18: under --transparent a missing program exited 99 (255 without the x bit)
    # with no message and left task0/{dmtcp,g1.partial,current}; without it: one line, 2.
    plain = work / "plain.txt"
    plain.write_text("echo not executable\n")
    env = {
        **os.environ,
        "SLURM_JOB_ID": str(JOB),
        "SLURM_STEP_ID": "0",
        "SCKPT_WORK_DIR": str(work),
    }
    for program, why in (
        ("/nonexistent/prog", "No such file or directory"),
        ("no-such-program-anywhere", "No such file or directory"),
        (str(plain), "Permission denied"),
        (str(work), "Permission denied"),
    ):
        answers = []
        for mode in ([], ["--transparent"]):
            out = subprocess.run(
                [str(VENV_PYTHON), "-m", WRAPPER, *mode, "--", program],
                env=env,
                capture_output=True,
                text=True,
                cwd=work,
                timeout=60,
            )
            answers.append((out.returncode, out.stderr))
            assert sorted(p.name for p in work.iterdir()) == ["plain.txt"], (mode, program)
        line = f"sckpt run: cannot start {program!r}: {why}\n"
        assert answers == [(2, line), (2, line)], program


@pytest.mark.usefixtures("dmtcp_install")
def test_a_read_only_image_dir_under_dmtcp_is_named_as_such(work: Path) -> None:
    # issue 34, 18: a read-only --image-dir under --transparent read "DMTCP's coordinator
    # cannot start: Permission denied", and the refusal advised signal handlers.
    mine, read_only = work / "alice", work / "read-only"
    mine.mkdir()
    read_only.mkdir(mode=0o555)
    subprocess.run(["chown", "sckpt-alice", str(mine)], check=True)
    locked = work / "locked"  # a PATH directory alice cannot search is passed over
    locked.mkdir(mode=0o700)
    env = {
        "SLURM_JOB_ID": str(JOB),
        "SLURM_STEP_ID": "0",
        "SCKPT_WORK_DIR": str(mine),
        "PATH": f"{locked}:/usr/bin:/bin",
    }
    out = subprocess.run(
        ["runuser", "-u", "sckpt-alice", "--", "env", *(f"{k}={v}" for k, v in env.items()),
         str(VENV_PYTHON), "-m", WRAPPER, "--transparent", "--image-dir", str(read_only),
         "--", "sh", "-c", "echo ran; exit 3"],
        capture_output=True, text=True, cwd=mine, timeout=60,
    )  # fmt: skip
    assert (out.returncode, out.stdout) == (3, "ran\n"), out.stderr  # the job matters more
    image_dir = read_only / f"{JOB}.{default_step_name(['sh', '-c', 'echo ran; exit 3'])}"
    why = f"its image directory {image_dir}/task0 cannot be made: Permission denied"
    assert out.stderr == f"sckpt run: {why}; running sh WITHOUT checkpoint support\n"
    task = StepStore(mine / ".sckpt", StepId(JOB, 0)).read()
    assert task is not None and task.tasks["0"].off == why
    assert task.error_msg == f"task 0: checkpointing is off: {why}"
    refusal = blocked_refusal(
        [(StepId(JOB, 0), task.tasks["0"], task.tasks["0"].checkpoint_blocker())]
    )
    assert refusal.hint.endswith(f"checkpointing is off for this task: {why}; nothing was sent")
    handler = replace(task.tasks["0"], off="", checkpointer="", handler="default")
    advice = blocked_refusal([(StepId(JOB, 0), handler, handler.checkpoint_blocker())]).hint
    assert "program does not catch SIGUSR1" in advice and "sckpt run --transparent" in advice


def test_the_c_counter_follows_the_same_contract(work: Path) -> None:
    binary = work / "counter"
    subprocess.run(
        ["cc", "-O2", "-Wall", "-Werror", "-o", str(binary), str(EXAMPLE.with_suffix(".c"))],
        check=True,
    )
    run = Run(work, program=[str(binary), str(work / "count.log")])
    wait_for(lambda: len(run.counted()) >= 5)
    rec = run.checkpoint()
    assert rec.error_code == 0
    saved, size = (int(x) for x in (run.image / "g1" / "state").read_text().split())
    assert size == sum(len(f"{i}\n") for i in range(1, saved + 1))
    wait_for(lambda: len(run.counted()) >= saved + 3)
    run.stop()
    with run.log.open("a") as log:
        log.write("-1\n")  # a marker the restarted counter's truncation removes
    again = Run(work, restart_count=1, program=[str(binary), str(work / "count.log")])
    wait_for(lambda: -1 not in again.counted() and len(again.counted()) >= saved + 5)
    _, err = again.stop()
    assert f"resumed from {saved}" in err
    values = again.counted()
    assert values == list(range(1, len(values) + 1))


def test_an_unusable_state_dir_still_runs_the_program(work: Path) -> None:
    blocker = work / "not-a-dir"
    blocker.write_text("")
    env = {**os.environ, "SLURM_JOB_ID": str(JOB), "SCKPT_WORK_DIR": str(work)}
    wrapper = [str(VENV_PYTHON), "-m", WRAPPER, "--state-dir", str(blocker / "x")]
    out = subprocess.run(
        [*wrapper, "--", "sh", "-c", "echo ran; exit 3"],
        env=env,
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert out.returncode == 3 and out.stdout == "ran\n"
    assert "WITHOUT checkpoint support" in out.stderr and "Traceback" not in out.stderr


def test_status_and_signal_parsing() -> None:
    assert parse_status(b"0\n") == (0, "")
    assert parse_status(b"42 disk quota exceeded\n") == (42, "disk quota exceeded")
    assert parse_status(b"28") == (28, os.strerror(28))
    code, message = parse_status(b"oops")
    assert code == errno.EINVAL and "unreadable" in message
    assert parse_signal("usr1") == signal.SIGUSR1
    assert parse_signal("SIGTERM") == signal.SIGTERM
    assert parse_signal("12") == signal.SIGUSR2


def test_a_config_it_cannot_load_warns_unless_named_with_config(work: Path) -> None:
    """sbatch copies the submitter's $SCKPT_CONFIG into the job: a file the job cannot read
    there must not stop the program; a file named on the wrapper's command line must load."""
    missing = work / "missing.toml"
    env = {**os.environ, "SLURM_JOB_ID": str(JOB), "SCKPT_WORK_DIR": str(work)}
    wrapper = [str(VENV_PYTHON), "-m", WRAPPER]
    out = subprocess.run(
        [*wrapper, "--", "sh", "-c", "echo ran; exit 3"],
        env={**env, "SCKPT_CONFIG": str(missing)},
        capture_output=True,
        text=True,
        cwd=work,
        timeout=60,
    )
    assert (out.returncode, out.stdout) == (3, "ran\n"), out.stderr
    assert f"config file {missing} does not exist; its read_only" in out.stderr
    named = subprocess.run(
        [*wrapper, "--config", str(missing), "--", "sh", "-c", "echo ran"],
        env=env,
        capture_output=True,
        text=True,
        cwd=work,
        timeout=60,
    )
    assert (named.returncode, named.stdout) == (2, ""), named.stderr
    assert f"config file {missing} does not exist" in named.stderr


def test_a_program_that_does_not_catch_the_signal_is_never_sent_it(work: Path) -> None:
    """The record may say otherwise (written a moment earlier, or forged): the wrapper looks
    at the program right before sending, and a program that would die is not signalled."""
    run = Run(work, program=["/bin/sleep", "60"])
    run.wait_for_handler("default")
    assert signal_handler(run.program_pid, signal.SIGUSR1) == "default"

    def stale(rec: StepRecord) -> None:
        rec.tasks["0"].handler = "caught"  # what a stale record would say
        rec.begin_request("root", "", 10, "create")

    run.store.update(stale)
    os.kill(run.proc.pid, signal.SIGURG)
    wait_for(lambda: run.record().in_progress is None, timeout=10)
    rec = run.record()
    assert rec.error_code == ESLURM_NOT_SUPPORTED
    assert rec.error_msg == (
        f"task 0 (pid {run.program_pid} on {rec.tasks['0'].host}): program does not catch "
        "SIGUSR1 (it would be killed by it): not signalled"
    )
    assert rec.last_results == {"0": [ESLURM_NOT_SUPPORTED, rec.error_msg]}
    assert Path(f"/proc/{run.program_pid}").exists() and run.proc.poll() is None
    assert rec.tasks["0"].handler == "default"  # looked at again and recorded
    status, _ = run.stop()
    assert status == -signal.SIGTERM  # sleep died of the SIGTERM sent to stop it, not USR1


def test_a_handler_installed_late_and_an_ignored_signal_are_recorded(work: Path) -> None:
    late = Run(
        work,
        program=["/bin/bash", "-c", f"sleep 1.5; exec {sys.executable} {EXAMPLE} --log {work}/l"],
    )
    late.wait_for_handler("default")
    pid = late.program_pid
    late.wait_for_handler("caught")  # after the exec, the same pid
    assert late.program_pid == pid
    late.stop()
    ignored = Run(
        work,
        program=["/bin/bash", "-c", "trap '' USR1; exec sleep 60"],
        step=1,
        name="ignores",
    )
    ignored.wait_for_handler("ignored")
    assert ignored.record().tasks["0"].checkpoint_blocker() == (
        "program ignores SIGUSR1 (it would never checkpoint)"
    )
    ignored.stop()


def test_steps_that_swap_ids_after_a_restart_resume_from_their_own_images(work: Path) -> None:
    """Unnamed steps are named by their command line; the image index finds each one's."""
    a = Run(work, name=None, step=0, log="a.log")
    b = Run(work, name=None, step=1, log="b.log")
    names = {run.image: run.record().name for run in (a, b)}
    assert [run.image.parent.name for run in (a, b)] == [f"{JOB}.{names[r.image]}" for r in (a, b)]
    assert a.image != b.image
    saved = {}
    left = {}
    for run in (a, b):
        wait_for(lambda run=run: len(run.counted()) >= 5)
        run.checkpoint()
        saved[run.image] = int((run.image / "g1" / "state").read_text().split()[0])
        run.stop()
        left[run.image] = len(run.counted())
    # the restarted job starts them the other way round: b gets step 0, a step 1
    b2 = Run(work, name=None, step=0, log="b.log", restart_count=1)
    a2 = Run(work, name=None, step=1, log="a.log", restart_count=1)
    assert (b2.record().name, a2.record().name) == (names[b.image], names[a.image])
    for first, again in ((a, a2), (b, b2)):
        # The log still holds what the first run counted after its checkpoint: counts past
        # that are the restarted program's own (it reports its start before counting).
        wait_for(lambda again=again, first=first: len(again.counted()) >= left[first.image] + 3)
        _, err = again.stop()
        assert f"resumed from {saved[first.image]} ({first.image / 'g1'})" in err
        values = again.counted()
        assert values == list(range(1, len(values) + 1))


def test_a_step_name_that_is_not_one_path_component_is_refused(work: Path) -> None:
    env = {**os.environ, "SLURM_JOB_ID": str(JOB), "SCKPT_WORK_DIR": str(work)}
    for bad in ("../x", "a/b", ".hidden", "x" * 65, ""):
        out = subprocess.run(
            [str(VENV_PYTHON), "-m", WRAPPER, "--name", bad, "--", "true"],
            env=env,
            capture_output=True,
            text=True,
            cwd=work,
            timeout=60,
        )
        if bad == "":
            assert out.returncode == 0, out  # empty: the default name
            continue
        assert out.returncode == 2 and "invalid step name" in out.stderr, out
        assert not (work / ".sckpt").exists() or not list((work / ".sckpt").glob("*.json"))


def test_a_record_written_before_step_names_still_resumes_by_step_id(work: Path) -> None:
    """State files from before ``--name`` have no name: their image is found by step id."""
    old_image = work / f"{JOB}.0" / "task0"  # the reference's <job>.<step> leaf
    old_image.mkdir(parents=True)
    (old_image / "state").write_text("7 14\n")
    (work / "count.log").write_text("".join(f"{i}\n" for i in range(1, 8)))
    store = StepStore(work / ".sckpt", StepId(JOB, 0))
    store.ensure_directory()

    def legacy(rec: StepRecord) -> None:
        rec.last_image = {"0": str(old_image)}  # no name, as every record had

    store.update(legacy, create=True)
    assert store.read().name == ""  # type: ignore[union-attr]
    run = Run(work, restart_count=1)
    wait_for(lambda: len(run.counted()) >= 10)
    _, err = run.stop()
    assert f"resumed from 7 ({old_image})" in err
    values = run.counted()
    assert values == list(range(1, len(values) + 1))
    rec = run.record()
    assert rec.name == "counter" and rec.last_image == {"0": str(old_image)}


def test_the_tasks_of_one_step_share_its_name_whatever_they_run(work: Path) -> None:
    """srun --multi-prog runs other programs (other default names) in one step: the first
    task's name is the step's, and every task's images go under it."""
    first = Run(work, name="alpha", log="a.log")
    second = Run(work, name="beta", log="b.log", procid=1)
    rec = first.record()
    assert rec.name == "alpha"
    assert rec.tasks["1"].image_dir == str(work / f"{JOB}.alpha" / "task1")
    assert (work / f"{JOB}.alpha" / "task1").is_dir()
    for run in (first, second):
        run.stop()


# ---- image generations (issue 25) -------------------------------------------------------
TWO_FILES = Path(__file__).with_name("two_files.py")


def _complete(task_dir: Path) -> list[str]:
    return sorted(g.path.name for g in TaskImages(task_dir).generations() if g.complete)


def test_keep_last_k_after_five_checkpoints(work: Path) -> None:
    """Each checkpoint is a new generation; after five, the last two (keep_images's default)
    stay, older ones are gone, and the link points at a new, empty one."""
    run = Run(work)
    for n in range(1, 6):
        wait_for(lambda: len(run.counted()) >= 2)
        rec = run.checkpoint()
        assert rec.error_code == 0 and rec.last_image == {"0": str(run.image / f"g{n}")}
    assert _complete(run.image) == ["g4", "g5"]
    assert [p.name for p in run.image.iterdir() if p.name.endswith(".partial")] == ["g6.partial"]
    assert (run.image / "current").readlink() == Path("g6.partial")
    assert not any((run.image / "g6.partial").iterdir())
    counts = [int((run.image / g / "state").read_text().split()[0]) for g in ("g4", "g5")]
    assert counts[0] < counts[1]  # two different checkpoints, oldest first
    index = json.loads((work / ".sckpt" / f"{JOB}.images.json").read_text())
    assert index["images"]["counter"] == {"0": str(run.image / "g5")}
    run.stop()


def test_an_interrupted_two_file_checkpoint_resumes_from_the_previous_generation(
    work: Path,
) -> None:
    """The second checkpoint dies between its two files: the restart gets both files of the
    first one, never the new part1 beside the old part2."""
    log = work / "two.log"
    program = [sys.executable, str(TWO_FILES), "--log", str(log), "--slow", "30"]
    run = Run(work, program=program)
    wait_for(lambda: log.exists() and len(log.read_text().split()) >= 5)
    assert run.checkpoint().error_code == 0
    first = run.image / "g1"
    saved = {p: (first / p).read_bytes() for p in ("part1", "part2")}
    assert saved["part1"] == saved["part2"]
    wait_for(lambda: len(log.read_text().split()) >= int(saved["part1"]) + 5)
    run.store.update(lambda r: r.begin_request("root", "", 60, "create"))
    os.kill(run.proc.pid, signal.SIGURG)
    wait_for((run.image / "g2.partial" / "part1").exists)  # half written: part2 missing
    assert not (run.image / "g2.partial" / "part2").exists()
    os.kill(run.record().tasks["0"].program_pid, signal.SIGKILL)
    run.stop()
    assert {p: (first / p).read_bytes() for p in saved} == saved
    rec = run.record()
    assert rec.error_code == ABANDONED_CODE and rec.last_image == {"0": str(first)}
    counted = len(log.read_text().split())
    again = Run(work, restart_count=1, program=program)
    # It says how it started before its first count: stop it only after that count.
    wait_for(lambda: len(log.read_text().split()) > counted or again.proc.poll() is not None)
    _, err = again.stop()
    one, two = (int(v) for v in saved.values())
    assert f"two_files: resumed part1={one} part2={two} ({first})" in err
    task = again.record().tasks["0"]
    assert task.resumed_from == str(first)
    assert task.start_note == f"resumed from generation 1 ({first})"


def test_a_removed_image_starts_fresh_and_the_record_says_why(work: Path) -> None:
    """No empty directory is ever handed over as an image: the task starts from zero, and
    its record (start note, the step's error, history) says so."""
    run = Run(work)
    wait_for(lambda: len(run.counted()) >= 3)
    run.checkpoint()
    run.stop()
    shutil.rmtree(run.image / "g1")
    again = Run(work, restart_count=1, log="again.log")  # Run waits for its first count
    _, err = again.stop()
    assert "starting from 0" in err and "resumed" not in err
    rec = again.record()
    task = rec.tasks["0"]
    gone = run.image / "g1"
    assert task.resumed_from == "" and task.start_note == (
        f"started fresh: its last image {gone} does not exist"
    )
    assert rec.error_code == errno.ENOENT
    assert rec.error_msg == f"task 0 started fresh: its last image {gone} does not exist"
    assert rec.history[-1]["operation"] == "fresh" and rec.last_image == {}


def test_a_refused_lock_runs_the_program_and_records_that_checkpointing_is_off(
    work: Path,
) -> None:
    """A lock file replaced by a link is refused (the wrapper never follows it): the program
    runs anyway, and the step's record, not only stderr, says checkpointing is off."""
    state = work / ".sckpt"
    state.mkdir()
    (state / f"{JOB}.0.lock").symlink_to("/etc/hostname")
    before = Path("/etc/hostname").stat()
    run = Run(work)
    _, err = run.stop()
    assert "WITHOUT checkpoint support" in err and "Traceback" not in err
    rec = run.record()
    task = rec.tasks["0"]
    assert "symbolic link (refused)" in task.off
    assert task.checkpoint_blocker().startswith("checkpointing is off for this task: ")
    assert rec.error_code == errno.ELOOP
    assert rec.error_msg.startswith("task 0: checkpointing is off: cannot lock ")
    assert run.counted()  # the program ran
    after = Path("/etc/hostname").stat()
    assert (after.st_uid, after.st_mode, after.st_size) == (
        before.st_uid,
        before.st_mode,
        before.st_size,
    )


@pytest.fixture
def tiny_fs(shared_dir: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (root mounts it): a file system that fills up."""
    where = shared_dir / "tiny"
    where.mkdir()
    options = "size=1m,mode=0755"
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(fs: Path) -> None:
    with contextlib.suppress(OSError), (fs / "filler").open("wb") as f:
        while True:
            f.write(b"x" * 65536)
            f.flush()


def test_a_full_image_dir_is_enospc_in_one_sentence_and_keeps_the_last_image(
    work: Path, tiny_fs: Path
) -> None:
    run = Run(work)
    leaf = tiny_fs / f"{JOB}.counter"
    wait_for(lambda: len(run.counted()) >= 3)
    assert run.checkpoint(image_dir=str(leaf)).error_code == 0
    copied = leaf / "task0" / "g1"
    assert run.record().last_image == {"0": str(copied)}
    before = (copied / "state").read_bytes()
    _fill(tiny_fs)
    rec = run.checkpoint(image_dir=str(leaf))
    assert rec.error_code == errno.ENOSPC
    assert rec.error_msg == f"cannot copy the image to {leaf / 'task0'}: No space left on device"
    assert rec.last_image == {"0": str(copied)}  # still the last good one
    assert (copied / "state").read_bytes() == before
    assert _complete(leaf / "task0") == ["g1"]
    assert run.proc.poll() is None  # the program goes on
    run.stop()


EXEC_RACE = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
/* Re-executes itself without pause, alternating between a build that catches SIGUSR1 and
   one that does not: the window the wrapper's look-then-signal used to leave open. */
static void on_usr1(int sig) {
    (void)sig;
    const char *dir = getenv("SCKPT_IMAGE_DIR"), *done = getenv("SCKPT_CKPT_DONE");
    char path[4096];
    snprintf(path, sizeof path, "%s/state", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) { (void)!write(fd, "1\n", 2); close(fd); }
    fd = open(done, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) { (void)!write(fd, "0\n", 2); close(fd); }
}
int main(int argc, char **argv) {
    int catches = argc > 1 && strcmp(argv[1], "catch") == 0;
    long rounds = argc > 2 ? atol(argv[2]) : 0;
    if (catches) signal(SIGUSR1, on_usr1);
    struct timespec pause = {0, 200000};  /* 0.2 ms in each build */
    nanosleep(&pause, NULL);
    char next[32];
    snprintf(next, sizeof next, "%ld", rounds + 1);
    execl("/proc/self/exe", argv[0], catches ? "nocatch" : "catch", next, (char *)NULL);
    return 1;
}
"""


def test_a_program_that_re_execs_itself_is_never_killed_by_a_checkpoint(work: Path) -> None:
    """Stop, look, signal, continue: a program flipping between a build with the handler
    and one without (thousands of execs a second) is asked 40 times and never killed; each
    request either completes (the handler was in place) or is refused."""
    source = work / "reexec.c"
    source.write_text(EXEC_RACE)
    binary = work / "reexec"
    subprocess.run(["cc", "-O2", "-o", str(binary), str(source)], check=True)
    run = Run(work, program=[str(binary), "catch", "0"])
    outcomes = []
    for _ in range(40):
        rec = run.checkpoint(max_wait=5)
        outcomes.append(rec.error_code)
        assert run.proc.poll() is None, f"the program died: {run.proc.returncode}"
    assert set(outcomes) <= {0, ESLURM_NOT_SUPPORTED, errno.ETIME}
    status, _ = run.stop()
    assert status == -signal.SIGTERM  # it died of the SIGTERM sent to stop it, not of USR1
