"""Bad input on the real cluster (as ``sckpt-alice`` and a user only this module uses):
image directories the job's owner may not write, from the command line and the console;
and invalid command lines, which must not move that user's RPC count in ``sdiag``
("nothing invalid reaches Slurm").
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend.model import StepId
from sckpt.tui.dialogs.form import ActionForm
from sckpt.tui.screens.step import StepScreen
from textual.widgets import Input

from ..conftest import SlurmCluster
from ..helpers import probe_user_home, rpc_count, wait_for
from ..tui import conftest as tui
from ..tui.conftest import notifications, run_test, settle
from .bad_input import record_engine

# No user config (an empty $SCKPT_CONFIG), UTC times: the console tests' autouse fixture.
isolated = tui.isolated

SCKPT = Path(sys.executable).with_name("sckpt")
ROOT = Path(__file__).resolve().parents[2]
COUNTER = ROOT / "examples" / "counter.py"


# ------------------------------------------------------------------ the real cluster

ALICE = "sckpt-alice"
PROBE = "sckpt-badinput"
"""A user only this module runs sckpt as, so its sdiag RPC count is this module's alone."""


@pytest.fixture(scope="module")
def shared(slurm_cluster: SlurmCluster) -> Iterator[Path]:
    """A directory every test user can reach (0755), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="sckpt-badinput-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def sckpt_as(
    user: str | None, home: Path, config: Path, *argv: str | bytes
) -> subprocess.CompletedProcess[str]:
    """The installed ``sckpt`` against the shared cluster, as ``user`` (None: root)."""
    env = {
        "SLURM_CONF": os.environ["SLURM_CONF"],
        "SCKPT_CONFIG": str(config),
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "NO_COLOR": "1",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    cmd: list[str | bytes] = [str(SCKPT), *argv]
    if user is not None:
        cmd = ["runuser", "-u", user, "--", "env", *(f"{k}={v}" for k, v in env.items()), *cmd]
    done = subprocess.run(cmd, env=env, capture_output=True, timeout=300, cwd="/tmp")
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


@dataclass
class AliceJob:
    """A batch job of alice whose step 0 runs the example counter under ``sckpt run``."""

    id: int
    work: Path
    home: Path
    config: Path

    @property
    def step(self) -> str:
        return f"{self.id}.0"

    def state_files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((self.work / ".sckpt").glob("*"))}

    def audit(self) -> list[dict[str, Any]]:
        path = self.home / "state" / "sckpt" / "audit.log"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _alice_job(cluster: SlurmCluster, shared: Path, name: str) -> AliceJob:
    base = shared / name
    work, home = base / "work", base / "home"
    for directory in (base, work, home):
        directory.mkdir()
    subprocess.run(["chown", "-R", f"{ALICE}:{ALICE}", str(work), str(home)], check=True)
    base.chmod(0o755)
    config = base / "config.toml"
    config.write_text('engine = "cooperative"\n')
    config.chmod(0o644)
    step = (
        f"srun --overlap -n1 {SCKPT} run --name counter -- "
        f"python3 {COUNTER} --log {work}/log --interval 0.1"
    )
    out = cluster.run(
        "sbatch", "--parsable", "-J", f"badinput-{name}", "-o", "/dev/null", "-D", str(work),
        "--wrap", step, user=ALICE,
    ).stdout  # fmt: skip
    job = AliceJob(int(out.strip().split(";")[0]), work, home, config)
    wait_for(
        lambda: sckpt_as(ALICE, home, config, "able", job.step).stdout == "Yes\n",
        timeout=120,
        interval=0.5,
    )
    return job


def _step_running(cluster: SlurmCluster, job: AliceJob) -> bool:
    out = cluster.run("squeue", "-h", "-s", "-j", str(job.id), "-o", "%i", check=False).stdout
    return job.step in out.split()  # squeue -s lists running steps only


def _job_state(cluster: SlurmCluster, job: AliceJob) -> str:
    return cluster.run("squeue", "-h", "-j", str(job.id), "-o", "%T", check=False).stdout.strip()


@pytest.fixture(scope="module")
def alice_job(slurm_cluster: SlurmCluster, shared: Path) -> Iterator[AliceJob]:
    job = _alice_job(slurm_cluster, shared, "images")
    try:
        yield job
    finally:
        slurm_cluster.run("scancel", str(job.id), check=False)


@pytest.mark.slurm
def test_image_dirs_the_jobs_owner_may_not_write(
    slurm_cluster: SlurmCluster, shared: Path, alice_job: AliceJob
) -> None:
    """Refused with EACCES/ENOTDIR naming the directory; nothing recorded, nothing ended."""
    job = alice_job
    root_only = shared / "root-only"  # root's, 0755: alice cannot create anything in it
    root_only.mkdir()
    private = shared / "private"  # root's, 0700: alice cannot even enter it
    private.mkdir(mode=0o700)
    a_file = shared / "a-file"
    a_file.write_text("not a directory\n")
    cases = {
        str(root_only): ("EACCES", f"cannot write in {root_only}"),
        str(root_only / "new" / "deeper"): ("EACCES", f"cannot write in {root_only}"),
        str(private / "images"): ("EACCES", f"cannot enter {private}"),
        str(a_file / "images"): ("ENOTDIR", f"{a_file} is not a directory"),
    }
    before = job.state_files()
    for directory, (name, why) in cases.items():
        for user in (ALICE, None):  # the owner, and root acting on the owner's job
            for verb in ("create", "vacate"):
                argv = (verb, job.step, "--image-dir", directory, "--max-wait", "5")
                done = sckpt_as(user, job.home if user else shared, job.config, *argv)
                assert done.returncode == 1, (user, argv, done.stderr)
                assert done.stderr.count("\n") == 1, done.stderr
                assert name in done.stderr and why in done.stderr, done.stderr
                assert "Traceback" not in done.stderr
        # Nothing happened: no request in the state file, the step runs, the dir is empty.
        assert job.state_files() == before, directory
        assert _step_running(slurm_cluster, job)
    assert list(root_only.iterdir()) == [] and list(private.iterdir()) == []
    refusals = [line for line in job.audit() if line["operation"] in ("create", "vacate")]
    assert len(refusals) == 2 * len(cases)
    assert {line["result"]["name"] for line in refusals} <= {"EACCES", "ENOTDIR"}
    # The check can pass: a directory alice owns is used, the image lands in it.
    mine = shared / "alice-images"
    mine.mkdir()
    subprocess.run(["chown", f"{ALICE}:{ALICE}", str(mine)], check=True)
    done = sckpt_as(ALICE, job.home, job.config, "create", job.step, "--image-dir", str(mine))
    assert done.returncode == 0, done.stderr
    assert (mine / f"{job.id}.counter" / "task0" / "g1" / "state").is_file()  # <job>.<name>
    # Restart reads the images as alice too: a directory she cannot read is refused and the
    # job stays held, its state files untouched.
    done = sckpt_as(ALICE, job.home, job.config, "vacate", str(job.id), "--image-dir", str(mine))
    assert done.returncode == 0, done.stderr
    wait_for(lambda: _job_state(slurm_cluster, job) == "PENDING", timeout=120)
    held = job.state_files()
    for directory, why in {
        private: f"cannot read {private}",
        private / "images": f"cannot enter {private}",
    }.items():
        done = sckpt_as(
            ALICE, job.home, job.config, "restart", str(job.id), "--image-dir", str(directory)
        )
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert "EACCES" in done.stderr and why in done.stderr, done.stderr
    assert job.state_files() == held
    assert _job_state(slurm_cluster, job) == "PENDING"
    done = sckpt_as(ALICE, job.home, job.config, "restart", str(job.id), "--image-dir", str(mine))
    assert done.returncode == 0, done.stderr


@pytest.mark.slurm
def test_console_on_the_real_cluster_refuses_an_unwritable_image_dir_then_the_step_ends(
    slurm_cluster: SlurmCluster, shared: Path
) -> None:
    """The console (Pilot, cooperative engine, as root) on alice's step: both in-app errors."""
    from sckpt.backend.config import Settings
    from sckpt.backend.facade import open_facade
    from sckpt.tui.app import build_app

    job = _alice_job(slurm_cluster, shared, "console")
    root_only = shared / "console-root-only"
    root_only.mkdir()
    settings = Settings(audit_log=shared / "console-audit.log", refresh_interval=1.0)
    facade = open_facade(settings, engine="cooperative")
    recorder = record_engine(facade)
    app = build_app(facade, settings, focus=StepId(job.id, 0))

    async def drive() -> None:
        async with run_test(app, size=(120, 36)) as pilot:
            await settle(pilot)
            home = app.screen
            assert isinstance(home, StepScreen)
            before = job.state_files()
            await pilot.press("c")
            await pilot.pause()
            form = app.screen
            assert isinstance(form, ActionForm)
            form.query_one("#image-dir", Input).value = str(root_only)
            await pilot.press("enter")
            await settle(pilot)
            assert app.screen is home and app.is_running
            refused = [m for m in notifications(app) if f"create {job.step} refused" in m]
            assert refused and "EACCES" in refused[0] and str(root_only) in refused[0], (
                notifications(app)
            )
            assert job.state_files() == before
            assert _step_running(slurm_cluster, job)
            # The step ends while the form is open; confirming is a clear in-app error.
            await pilot.press("c")
            await pilot.pause()
            assert isinstance(app.screen, ActionForm)
            slurm_cluster.run("scancel", str(job.id))
            await asyncio.to_thread(wait_for, lambda: not _step_running(slurm_cluster, job), 60)
            await pilot.press("enter")
            await settle(pilot)
            assert app.screen is home and app.is_running
            ended = [m for m in notifications(app) if f"create {job.step} refused" in m]
            assert len(ended) == 2, notifications(app)
            assert re.search(r"ESLURM_(ALREADY_DONE|INVALID_JOB_ID)", ended[1]), ended[1]
            for message in notifications(app):
                assert "internal error" not in message, message
            await pilot.press("escape")
            await settle(pilot)
            assert app.screen is app.console_screen()

    try:
        asyncio.run(drive())
    finally:
        facade.close()
        slurm_cluster.run("scancel", str(job.id), check=False)
    assert recorder.invalid == []


@pytest.fixture(scope="module")
def probe(shared: Path) -> Path:
    return probe_user_home(PROBE, shared)


def _invalid_command_lines(configs: dict[str, Path]) -> list[list[str | bytes]]:
    """Paths, ids, numbers and configs that must all stop at exit 2 before Slurm."""
    paths: list[str | bytes] = [
        "/a/../b",
        "../x",
        "relative",
        "/" + "x" * 5000,
        b"/ck/\xff\xfe",
        "/ck\x1b[2J",
        "/ck\x9b1m",
        "/ck\nnext",
    ]
    lines: list[list[str | bytes]] = []
    for path in paths:
        lines.append(["create", "1.0", "--image-dir", path])
        lines.append(["vacate", "1", "--image-dir", path, "--max-wait", "5"])
        lines.append(["checkpoint", "create", "1.0", b"ImageDir=" + os.fsencode(path)])
    for target in ("0", "4294967281", "1.4294967296", "1.x", b"1.\xff", "-1", "1..0", ""):
        lines.append(["disable", target])
    for number in ("65536", "-1", "1e3", "0x10", "٣"):
        lines.append(["create", "1.0", "--max-wait", number])
    for config in configs.values():
        lines.append(["--config", str(config), "ls"])
        lines.append(["--config", str(config), "disable", "1.0"])
        lines.append(["--config", str(config)])  # the console
    return lines


@pytest.mark.slurm
def test_invalid_input_moves_no_rpc_counter(
    slurm_cluster: SlurmCluster, shared: Path, probe: Path
) -> None:
    configs = {
        "junk": b"\x00\xff\x80junk",
        "toml": b"[keys\n",
        "value": b"max_wait = 70000\n",
        "image": b'image_dir = "/a/../b"\n',
        "nonutf8": b'image_dir = "/ck/\xff"\n',
    }
    paths = {}
    for name, content in configs.items():
        paths[name] = probe / f"{name}.toml"
        paths[name].write_bytes(content)
        paths[name].chmod(0o644)
    good = probe / "good.toml"
    good.write_text("")
    good.chmod(0o644)
    lines = _invalid_command_lines(paths)
    before = rpc_count(slurm_cluster, PROBE)
    for argv in lines:
        done = sckpt_as(PROBE, probe, good, *argv)
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("sckpt: "), done.stderr
    assert rpc_count(slurm_cluster, PROBE) == before, "an invalid command line reached Slurm"
    # The probe sees RPCs: one valid listing by the same user is counted.
    listed = sckpt_as(PROBE, probe, good, "ls", "-H", "-j", "1")
    assert listed.returncode == 0, listed.stderr
    assert rpc_count(slurm_cluster, PROBE) > before
