"""The native engine on a real Slurm 19.05.8, answer for answer beside ``scontrol checkpoint``.

The oracle is 19.05's own ``scontrol`` on the same cluster (``checkpoint/ompi``), run on a
twin job whenever the operation changes state, so both sides see the same history.  "The
same answer" means: the same exit status, the same standard output, and sckpt's error line
carries scontrol's message (sckpt writes ``sckpt: OP TARGET: ESLURM_NAME (code): message``
where scontrol writes ``scontrol_checkpoint error: message``).

Where the real controller differs from ``checkpoint-semantics.md``, the controller is right
for the native engine; the differences seen here:

* a whole job (no ``.step``) is refused by ``checkpoint/ompi`` for every operation with
  ESLURM_NOT_SUPPORTED, where the semantics apply the operation to every step;
* so is the batch step (scontrol can only name it by number, ``JOB.4294967294``; sckpt
  says ``JOB.batch`` and sends the same number);
* ``able`` never reports "Began at" with this plugin: ``create`` asks srun to run
  ``ompi-checkpoint`` and the controller records no checkpoint in progress, and ``error``
  then answers ``error(0): <srun's pid>``, not an empty message;
* ``vacate`` is accepted and leaves the step running when the checkpoint program cannot
  run (no Open MPI here), where the semantics end the step;
* ``restart`` of a step is ESLURM_NOT_SUPPORTED; of a running job ESLURM_JOB_NOT_FINISHED;
* ``complete`` with no checkpoint in progress is ESLURM_ALREADY_DONE.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..helpers import wait_for
from .conftest import BATCH_1905, Native

pytestmark = pytest.mark.slurm

SCONTROL_ERROR = "scontrol_checkpoint error: "


def assert_same_answer(
    ours: subprocess.CompletedProcess[str],
    theirs: subprocess.CompletedProcess[str],
    what: str,
    same_output: bool = True,
) -> None:
    """Exit status and standard output equal; sckpt's error line holds scontrol's message.

    ``same_output=False`` for sckpt's own syntax (``sckpt complete``), which says what it did
    where scontrol prints nothing.
    """
    detail = f"{what}: sckpt {ours!r}\nscontrol {theirs!r}"
    assert ours.returncode == theirs.returncode, detail
    if same_output:
        assert ours.stdout == theirs.stdout, detail
    message = theirs.stderr.strip()
    if message:
        assert message.startswith(SCONTROL_ERROR), detail
        assert message.removeprefix(SCONTROL_ERROR) in ours.stderr, detail
        assert "Traceback" not in ours.stderr
    else:
        assert ours.stderr == "", detail


@pytest.fixture(scope="module")
def jobs(native: Native) -> Iterator[dict[str, int]]:
    """A running job with a step, and a finished one, for the read-only answers."""
    running = native.submit_step_job()
    done = native.cluster.run("sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true")
    finished = int(done.stdout.strip())
    wait_for(lambda: native.job_state(finished) == "", timeout=60)
    yield {"running": running, "finished": finished}
    native.cancel(running)


@pytest.fixture
def twins(native: Native) -> Iterator[tuple[int, int]]:
    """Two identical jobs with a running step 0: one for sckpt, one for scontrol."""
    mine, twin = native.submit_step_job(), native.submit_step_job()
    yield mine, twin
    native.cancel(mine, twin)


def _targets(jobs: dict[str, int]) -> list[tuple[str, str]]:
    """(sckpt's name, scontrol's name) of every kind of target."""
    run, fin = jobs["running"], jobs["finished"]
    return [
        (f"{run}.0", f"{run}.0"),  # a numbered step
        (f"{run}", f"{run}"),  # the whole job
        (f"{run}.batch", f"{run}.{BATCH_1905}"),  # the batch step
        (f"{run}.7", f"{run}.7"),  # a step that does not exist
        ("999999", "999999"),  # an unknown job
        ("999999.0", "999999.0"),
        (f"{fin}", f"{fin}"),  # a finished job
        (f"{fin}.0", f"{fin}.0"),
    ]


def test_doctor_reports_the_api_and_auto_chooses_native(
    native: Native, jobs: dict[str, int]
) -> None:
    doctor = native.sckpt("doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "Slurm 19.05.8" in doctor.stdout
    assert "slurmctld 19.05.8" in doctor.stdout
    assert 'present (all 9 slurm_checkpoint_* calls): engine = "auto" chooses the native' in (
        doctor.stdout.replace("\n", " ")
    )
    report = json.loads(native.sckpt("doctor", "--json").stdout)
    assert report["report"]["checkpoint_api"] is True
    able = json.loads(native.sckpt("--json", "able", f"{jobs['running']}.0").stdout)
    assert able["engine"] == "native"


@pytest.mark.parametrize("op", ["able", "error"])
def test_read_only_answers_match_scontrol_for_every_target(
    native: Native, jobs: dict[str, int], op: str
) -> None:
    for ours_name, theirs_name in _targets(jobs):
        ours = native.sckpt("checkpoint", op, ours_name)
        theirs = native.scontrol("checkpoint", op, theirs_name)
        assert_same_answer(ours, theirs, f"{op} {ours_name}")


def test_changes_match_scontrol_step_by_step(native: Native, twins: tuple[int, int]) -> None:
    """The disable counter, enable below zero, create and what able/error say after each."""
    mine, twin = twins
    sequence = [
        ("able",),
        ("disable",),
        ("able",),
        ("disable",),
        ("enable",),
        ("able",),  # still disabled: a counter, not a flag
        ("enable",),
        ("able",),
        ("enable",),  # below zero
        ("able",),
        ("create",),
        ("able",),
        ("error",),
        ("create", "MaxWait=5", "ImageDir=/tmp"),
        ("disable",),
        ("create",),  # refused while disabled
        ("enable",),
    ]
    for op, *args in sequence:
        for suffix in ("", ".batch"):
            theirs_suffix = suffix and f".{BATCH_1905}"
            step = ".0" if not suffix else ""
            ours = native.sckpt("checkpoint", op, f"{mine}{step}{suffix}", *args)
            theirs = native.scontrol("checkpoint", op, f"{twin}{step}{theirs_suffix}", *args)
            if op == "error":
                # After create the message is srun's pid: equal in form, not in digits.
                ours.stdout = re.sub(r"\): \d+$", "): PID", ours.stdout.strip()) + "\n"
                theirs.stdout = re.sub(r"\): \d+$", "): PID", theirs.stdout.strip()) + "\n"
            assert_same_answer(ours, theirs, f"{op} {' '.join(args)} {suffix or '.0'}")
    for op in ("disable", "enable", "create", "vacate", "restart"):
        assert_same_answer(
            native.sckpt("checkpoint", op, str(mine)),
            native.scontrol("checkpoint", op, str(twin)),
            f"{op} of the whole job",
        )


def test_vacate_matches_scontrol_and_leaves_the_same_steps(
    native: Native, twins: tuple[int, int]
) -> None:
    mine, twin = twins
    ours = native.sckpt("checkpoint", "vacate", f"{mine}.0", "MaxWait=3")
    theirs = native.scontrol("checkpoint", "vacate", f"{twin}.0", "MaxWait=3")
    assert_same_answer(ours, theirs, "vacate")

    def shape(job: int) -> tuple[str, list[str]]:
        return native.job_state(job), [s.split(".", 1)[1].lower() for s in native.steps(job)]

    # The controller settles (the plugin's attempt runs in srun); then both jobs agree.
    wait_for(lambda: shape(mine) == shape(twin), timeout=30)
    assert shape(mine)[0] == "RUNNING"
    assert_same_answer(
        native.sckpt("checkpoint", "able", f"{mine}.0"),
        native.scontrol("checkpoint", "able", f"{twin}.0"),
        "able after vacate",
    )


def test_restart_matches_scontrol(native: Native, jobs: dict[str, int]) -> None:
    run, fin = jobs["running"], jobs["finished"]
    for target in (f"{run}", f"{run}.0", f"{fin}", "999999"):
        for args in ((), ("StickToNodes",)):
            assert_same_answer(
                native.sckpt("checkpoint", "restart", target, *args),
                native.scontrol("checkpoint", "restart", target, *args),
                f"restart {target} {args}",
            )


def test_complete_matches_scontrol(native: Native, twins: tuple[int, int]) -> None:
    """scontrol's test-only ``complete`` sends error 1, "test error message 1"; sckpt's
    historical syntax refuses it and points at ``sckpt complete``, which sends the same."""
    mine, twin = twins
    refused = native.sckpt("checkpoint", "complete", f"{mine}.0")
    assert refused.returncode == 2 and "sckpt complete" in refused.stderr
    ours = native.sckpt(
        "complete", f"{mine}.0", "--error-code", "1", "--error-msg", "test error message 1"
    )
    theirs = native.scontrol("checkpoint", "complete", f"{twin}.0")
    assert_same_answer(ours, theirs, "complete", same_output=False)
    assert_same_answer(
        native.sckpt("checkpoint", "error", f"{mine}.0"),
        native.scontrol("checkpoint", "error", f"{twin}.0"),
        "error after complete",
    )


def test_requeue_is_refused_where_scontrol_asks_the_plugin(
    native: Native, jobs: dict[str, int]
) -> None:
    """No engine offers requeue (README); 19.05's ompi plugin cannot do it either."""
    ours = native.sckpt("checkpoint", "requeue", str(jobs["running"]))
    theirs = native.scontrol("checkpoint", "requeue", str(jobs["running"]))
    assert ours.returncode == 2 and "sckpt vacate" in ours.stderr
    assert theirs.returncode == 1 and theirs.stderr.startswith(SCONTROL_ERROR)


_TASKS_ORACLE = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # its plugins need its symbols
f = lib.slurm_checkpoint_tasks
f.argtypes = [ctypes.c_uint32, ctypes.c_uint16, ctypes.c_long, ctypes.c_char_p,
              ctypes.c_uint16, ctypes.c_char_p]
rc = f(int(sys.argv[2]), int(sys.argv[3]), 0, b"/tmp", 10, sys.argv[4].encode())
print(rc, lib.slurm_get_errno() if rc else 0)
"""


def test_tasks_matches_libslurm_1905(native: Native, jobs: dict[str, int]) -> None:
    """``scontrol`` has no ``tasks``: the oracle is 19.05's libslurm called directly."""
    lib = str(native.cluster.prefix / "lib" / "libslurm.so")
    for job, step, nodes in ((jobs["running"], 0, "sckpt-node"), (999999, 0, "sckpt-node")):
        oracle = subprocess.run(
            [sys.executable, "-c", _TASKS_ORACLE, lib, str(job), str(step), nodes],
            env=native.cluster.env(),
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        rc, errno = map(int, oracle.stdout.split())
        ours = native.sckpt(
            "--json", "tasks", f"{job}.{step}", "--nodelist", nodes, "--image-dir", "/tmp"
        )
        if rc == 0:
            assert ours.returncode == 0, ours.stderr
        else:
            assert ours.returncode == 1, ours.stderr
            error = json.loads(ours.stdout)["results"][0]["error"]
            assert error["code"] == errno, (error, errno)


def test_another_users_job_as_an_unprivileged_user(native: Native, jobs: dict[str, int]) -> None:
    alice = native.cluster.users[0]
    target = f"{jobs['running']}.0"
    for op in ("able", "error", "disable", "enable", "create"):
        assert_same_answer(
            native.sckpt("checkpoint", op, target, user=alice),
            native.scontrol("checkpoint", op, target, user=alice),
            f"{op} by {alice} on root's step",
        )


def test_ls_lists_what_squeue_1905_lists(native: Native, jobs: dict[str, int]) -> None:
    alice = native.cluster.users[0]
    hers = native.submit_step_job(user=alice)
    pending = int(
        native.cluster.run(
            "sbatch", "--parsable", "-H", "-o", "/dev/null", "--wrap", "true"
        ).stdout.strip()
    )
    try:
        ours = native.sckpt("ls", "-H")
        assert ours.returncode == 0, ours.stderr
        squeue = native.cluster.run("squeue", "-h", "-o", "%i %u %t %N").stdout
        theirs = sorted(tuple(line.split()) for line in squeue.splitlines())
        rows = sorted(
            # squeue's %N is empty while a job has no nodes; sckpt says why in parentheses
            (r[0], r[3], r[4]) if r[7].startswith("(") else (r[0], r[3], r[4], r[7])
            for r in (line.split() for line in ours.stdout.splitlines())
        )
        assert rows == theirs
        assert {str(hers), str(pending), str(jobs["running"])} <= {r[0] for r in rows}

        steps = native.sckpt("ls", "-s", "-H")
        assert steps.returncode == 0, steps.stderr
        ours_steps = sorted(line.split()[0].lower() for line in steps.stdout.splitlines())
        squeue_steps = native.cluster.run("squeue", "-s", "-h", "-o", "%i").stdout.split()
        assert ours_steps == sorted(s.lower() for s in squeue_steps)
        assert f"{hers}.0" in ours_steps and f"{hers}.batch" in ours_steps
    finally:
        native.cancel(hers, pending)


def test_libslurm_1905_with_another_releases_headers_is_refused(native: Native) -> None:
    """19.05's libslurm with this machine's 22.05 headers: refused, both releases named."""
    if not Path("/usr/include/slurm/slurm.h").is_file():
        pytest.skip("no system Slurm headers on this machine")
    for argv in (("ls",), ("doctor",)):
        done = native.sckpt(*argv, SLURM_INCLUDE_DIR="/usr/include")
        said = done.stdout + done.stderr
        assert done.returncode != 0, said
        assert "is Slurm 19.05.8" in said and "/usr/include/slurm are Slurm 22.05" in said, said
        assert "SLURM_LIB_DIR and SLURM_INCLUDE_DIR" in said and "Traceback" not in said
