"""``sckpt create|vacate --wait``: the command returns with the checkpoint's outcome.

The simulated controller here runs on the real clock (not a ``ManualClock``), so a scripted
checkpoint really takes its second or two and ``--wait`` really waits for it; the poll
interval is shortened so that no test sleeps long.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.facade import open_facade
from sckpt.backend.model import JobState, StepId
from sckpt.backend.simulator import SimulatedCluster
from sckpt.cli import WaitTiming

from tests.helpers import wait_for

from .conftest import CliEnv


@pytest.fixture
def live_cluster(cli_env: CliEnv) -> Iterator[SimulatedCluster]:
    """A simulated cluster on the wall clock, shared by every ``sckpt`` run of the test."""
    shared = SimulatedCluster(
        seed=3, n_jobs=0, users=("alice", "bob"), arrivals=False, demo_touches=False
    )
    cli_env.inject["facade_factory"] = functools.partial(open_facade, cluster=shared)
    cli_env.inject["wait"] = WaitTiming(poll_seconds=0.1)
    yield shared


def _step(cluster: SimulatedCluster, duration: float, code: int = 0) -> StepId:
    job = cluster.control.submit("alice", name="md", n_steps=1).job_id
    step = StepId(job, 0)
    cluster.control.script_checkpoint(step, duration=duration, code=code)
    return step


def test_create_wait_returns_when_the_checkpoint_completed(
    cli_env: CliEnv, live_cluster: SimulatedCluster
) -> None:
    step = _step(live_cluster, duration=2)  # ends 1 to 2 s from now (whole seconds)
    started = time.monotonic()
    result = cli_env.run("create", str(step), "--wait")
    took = time.monotonic() - started
    assert (result.code, result.out, result.err) == (0, f"{step}: create completed\n", "")
    assert took >= 1.0  # it waited for the checkpoint, not only for the request
    assert cli_env.run("able", str(step)).out == "Yes\n"
    (line,) = cli_env.audit()
    assert line["arguments"]["max_wait"] == 0  # --wait: no MaxWait bound


def test_create_wait_exits_1_with_the_recorded_error(
    cli_env: CliEnv, live_cluster: SimulatedCluster
) -> None:
    step = _step(live_cluster, duration=1, code=28)
    result = cli_env.run("create", str(step), "--wait")
    assert result.code == 1
    assert result.out == f"{step}: create failed (28)\n"
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert f"sckpt: create {step}: ENOSPC (28)" in result.err
    assert "error(28): No space left on device" in result.err


def test_create_wait_json_carries_the_outcome(
    cli_env: CliEnv, live_cluster: SimulatedCluster
) -> None:
    good = _step(live_cluster, duration=1)
    bad = _step(live_cluster, duration=1, code=28)
    result = cli_env.run("--json", "create", str(good), str(bad), "--wait")
    document = json.loads(result.out)
    assert result.code == 1 and document["exit_code"] == 1
    first, second = document["results"]
    assert (first["ok"], first["outcome"], first["text"]) == (
        True,
        "completed",
        f"{good}: create completed",
    )
    assert (second["ok"], second["outcome"]) == (False, "failed (28)")
    assert second["error"]["code"] == 28 and second["error"]["name"] == "ENOSPC"
    assert "error(28): No space left on device" in second["error"]["hint"]


def test_without_wait_the_request_is_reported_as_requested(
    cli_env: CliEnv, live_cluster: SimulatedCluster
) -> None:
    step = _step(live_cluster, duration=30)
    result = cli_env.run("--json", "create", str(step))
    (outcome,) = json.loads(result.out)["results"]
    assert outcome["outcome"] == "requested"
    assert cli_env.run("able", str(step)).out.startswith("Began at ")


def test_vacate_wait_reports_the_step_ended(
    cli_env: CliEnv, live_cluster: SimulatedCluster
) -> None:
    step = _step(live_cluster, duration=1)
    result = cli_env.run("vacate", str(step), "--wait")
    assert (result.code, result.out) == (0, f"{step}: vacate ended\n")
    assert live_cluster.job(step.job_id).state is JobState.RUNNING  # the batch step runs on
    gone = cli_env.run("able", str(step))
    assert gone.code == 1 and "ESLURM_INVALID_JOB_ID" in gone.err


def test_ctrl_c_during_the_wait_exits_130_and_the_checkpoint_goes_on(
    cli_env: CliEnv, live_cluster: SimulatedCluster
) -> None:
    step = _step(live_cluster, duration=60)

    def interrupted(_seconds: float) -> None:
        raise KeyboardInterrupt

    cli_env.inject["wait"] = WaitTiming(poll_seconds=0.1, sleep=interrupted)
    result = cli_env.run("create", str(step), "--wait")
    assert result.code == 130
    assert result.out == ""
    assert result.err == (
        f"sckpt: interrupted: stopped waiting; the create of {step} goes on "
        f"(see 'sckpt error {step}')\n"
    )
    assert live_cluster.step_state(step).in_progress_since  # nothing was cancelled


def test_ctrl_c_during_the_wait_with_json_still_prints_the_document(
    cli_env: CliEnv, live_cluster: SimulatedCluster
) -> None:
    first, second = _step(live_cluster, duration=60), _step(live_cluster, duration=60)

    def interrupted(_seconds: float) -> None:
        raise KeyboardInterrupt

    cli_env.inject["wait"] = WaitTiming(poll_seconds=0.1, sleep=interrupted)
    result = cli_env.run("--json", "create", str(first), str(second), "--wait")
    document = json.loads(result.out)
    assert result.code == 130 and document["exit_code"] == 130
    waited, skipped = document["results"]
    assert (waited["ok"], waited["outcome"]) == (False, "in progress")
    assert waited["error"]["name"] == "Interrupted" and waited["error"]["exit_code"] == 130
    assert skipped["error"]["message"].startswith("not attempted")
    assert not live_cluster.step_state(second).in_progress_since  # never asked
    assert result.err.count("\n") == 1


def test_wait_in_read_only_mode_is_refused_and_audited(
    cli_env: CliEnv, live_cluster: SimulatedCluster
) -> None:
    step = _step(live_cluster, duration=1)
    result = cli_env.run("--read-only", "create", str(step), "--wait")
    assert result.code == 1 and result.out == ""
    assert "read-only" in result.err and result.err.count("\n") == 1
    (line,) = cli_env.audit()
    assert line["result"]["name"] == "READ_ONLY"
    assert not live_cluster.step_state(step).in_progress_since


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["create", "{step}", "--wait", "--max-wait", "5"], "--wait waits with no MaxWait bound"),
        (["enable", "{step}", "--wait"], "unrecognized arguments: --wait"),
        (["tasks", "{step}", "--nodelist", "cn1", "--wait"], "unrecognized option '--wait'"),
        (["checkpoint", "create", "{step}", "--wait"], "--wait"),
    ],
    ids=["with --max-wait", "enable", "tasks", "historical"],
)
def test_wait_in_a_bad_combination_is_exit_2_and_does_nothing(
    cli_env: CliEnv, live_cluster: SimulatedCluster, argv: list[str], says: str
) -> None:
    step = _step(live_cluster, duration=1)
    result = cli_env.run(*(word.format(step=step) for word in argv))
    assert result.code == 2, result.err
    assert says in result.err and result.err.count("\n") == 1 and result.out == ""
    assert cli_env.audit() == []
    assert not live_cluster.step_state(step).in_progress_since


def test_sigint_to_the_installed_command_while_it_waits(cli_env: CliEnv) -> None:
    """The real thing: ``sckpt --demo create STEP --wait`` in its own process, SIGINT once
    the request is in the audit log (the demo's checkpoints take 2 s or more): exit 130,
    one line on stderr, no traceback."""
    sckpt = Path(sys.executable).with_name("sckpt")
    env = {**os.environ, "SCKPT_CONFIG": str(cli_env.config), "TZ": "UTC"}
    env.pop("SLURM_CONF", None)
    listing = subprocess.run(
        [str(sckpt), "--demo", "ls", "--json", "--steps"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    able = [
        f"{job['job_id']}.{step['step']}"
        for job in json.loads(listing.stdout)["jobs"]
        if job["state"] == "RUNNING"
        for step in job["steps"]
        if step["checkpoint"]["kind"] == "able" and str(step["step"]).isdigit()
    ]
    assert able, "the demo has no numbered step the acting user may checkpoint"
    target = able[0]
    process = subprocess.Popen(
        [str(sckpt), "--demo", "create", target, "--wait"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: cli_env.audit(demo=True), interval=0.05, what="the create requested")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert out == ""
    assert err == (
        f"sckpt: interrupted: stopped waiting; the create of {target} goes on "
        f"(see 'sckpt error {target}')\n"
    )


LIST_ABLE_STEPS = ("-s", "-h", "-t", "R", "--ckpt", "able", "-o", "%i")


def _demo_able_step(env: dict[str, str]) -> str:
    sckpt = str(Path(sys.executable).with_name("sckpt"))
    listing = subprocess.run(
        [sckpt, "--demo", "--as-user", "root", "ls", *LIST_ABLE_STEPS],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return next(x for x in listing.stdout.split() if x.split(".")[1].isdigit())


def test_wait_on_a_terminal_shows_elapsed_time_and_state(cli_env: CliEnv) -> None:
    # --wait polled silently; on a terminal's stderr it now shows where the checkpoint
    # stands and for how long, erased before the outcome; a pipe and --json get nothing extra.
    import pty

    sckpt = Path(sys.executable).with_name("sckpt")
    env = {**os.environ, "SCKPT_CONFIG": str(cli_env.config), "TZ": "UTC"}
    env.pop("SLURM_CONF", None)
    target = _demo_able_step(env)
    argv = [str(sckpt), "--demo", "--as-user", "root", "create", target, "--wait"]
    main, child = pty.openpty()
    try:
        done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=child, timeout=120)
        os.set_blocking(main, False)
        said = os.read(main, 1 << 16).decode()
        as_json = subprocess.run(
            [*argv[:-2], "--json", *argv[-2:]], env=env, stdout=subprocess.PIPE, stderr=child
        )
        with pytest.raises(BlockingIOError):
            os.read(main, 1 << 16)  # --json: nothing on the terminal
    finally:
        os.close(main)
        os.close(child)
    assert done.returncode == 0 and done.stdout == f"{target}: create completed\n".encode()
    assert f"\r\x1b[Ksckpt: create {target}: in progress, waited 1 s (Ctrl-C" in said, said
    assert said.endswith("\r\x1b[K"), said  # erased: the terminal's line is clean again
    assert json.loads(as_json.stdout)["results"][0]["outcome"] == "completed"
    piped = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert (piped.returncode, piped.stdout, piped.stderr) == (
        0,
        f"{target}: create completed\n",
        "",
    )
