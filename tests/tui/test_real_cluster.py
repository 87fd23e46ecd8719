"""The console on the real Slurm 22.05 cluster.

* Its job and step rows equal ``squeue``'s for jobs this test submitted (as sckpt-alice).
* A disable pressed in the console changes the real step's checkpoint state (cooperative
  engine: the state store next to the job), as a second, independent facade sees it.
* A vacate refused because the checkpoint failed leaves the job running, and the console
  then asks once more: No keeps it running, Yes vacates it anyway (``force``).

Only the jobs submitted here are looked at (others share the cluster); all are cancelled.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend import errors as E
from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import StepId
from sckpt.tui.app import build_app
from sckpt.tui.dialogs.confirm import Confirm

from tests.conftest import SlurmCluster
from tests.helpers import catches_signal, wait_for

from .conftest import notifications, run_test, screen_text, settle
from .console_keys import console_of, go_to_job, go_to_step, type_text

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
SCKPT = ROOT / ".venv" / "bin" / "sckpt"
COUNTER = f"/usr/bin/python3 {ROOT / 'examples' / 'counter.py'}"


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A directory the job owner can write (the cooperative store lives in the work dir).

    Sticky, as /tmp is: sckpt refuses a state directory under one that others may write
    and that is not sticky (they could swap the job's directory for a link).
    """
    path = Path(tempfile.mkdtemp(prefix="sckpt-tui-", dir="/tmp"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def my_jobs(
    slurm_cluster: SlurmCluster, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, list[int]]]:
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    name = f"tui-{uuid.uuid4().hex[:6]}"
    ids: list[int] = []
    try:
        # Step .0 runs the example counter under `sckpt run`: a program that catches its
        # checkpoint signal, so the cooperative engine can act on it.
        run = f"srun -n1 {SCKPT} run -- {COUNTER} --log {workdir}/c.log"
        for extra in (["--wrap", run], ["--hold", "--wrap", "sleep 600"]):
            out = slurm_cluster.run(
                "sbatch", "--parsable", "-p", "debug", "-J", name, "-D", str(workdir), *extra,
                user="sckpt-alice",
            )  # fmt: skip
            ids.append(int(out.stdout.strip().split(";")[0]))
        wait_for(lambda: catches_signal(workdir / ".sckpt", ids[0]), timeout=60)
        yield name, ids
    finally:
        slurm_cluster.run("scancel", *map(str, ids), check=False)


def _squeue_jobs(cluster: SlurmCluster, ids: list[int]) -> dict[str, tuple[str, ...]]:
    out = cluster.run("squeue", "-h", "-j", ",".join(map(str, ids)), "-o", "%i|%u|%j|%P|%t")
    rows = [line.split("|") for line in out.stdout.splitlines() if line]
    return {r[0]: tuple(r[1:]) for r in rows}


def _squeue_steps(cluster: SlurmCluster, job: int) -> dict[str, str]:
    out = cluster.run("squeue", "-s", "-h", "-j", str(job), "-o", "%i|%j")
    return dict(line.split("|", 1) for line in out.stdout.splitlines() if line)


async def test_console_rows_equal_squeue_and_disable_changes_the_real_step(
    slurm_cluster: SlurmCluster, my_jobs: tuple[str, list[int]], tmp_path: Path
) -> None:
    name, ids = my_jobs
    settings = Settings(audit_log=tmp_path / "audit.log", refresh_interval=3600)
    facade = open_facade(settings, engine="cooperative")
    other = open_facade(Settings(audit_log=tmp_path / "other.log"), engine="cooperative")
    app = build_app(facade, settings)
    try:
        async with run_test(app, size=(160, 50)) as pilot:
            await settle(pilot)
            await pilot.press("slash")
            await type_text(pilot, f"name:{name}")
            await pilot.press("enter")
            con = console_of(pilot)
            expected = _squeue_jobs(slurm_cluster, ids)
            shown: dict[str, tuple[str, ...]] = {}
            for key in con.jobs_table.row_keys_in_order:
                cells = con.jobs_table.cells_of(key)
                assert cells is not None
                shown[key] = tuple(cells[c].plain for c in ("user", "name", "partition", "state"))
            assert shown == expected
            # Steps of the running job: ids and names as squeue -s prints them.
            assert con.jobs_table.select_key(str(ids[0]))
            con.refresh_steps()
            await pilot.pause()
            steps = {
                key: con.steps_table.cells_of(key)["name"].plain  # type: ignore[index]
                for key in con.steps_table.row_keys_in_order
            }
            assert steps == _squeue_steps(slurm_cluster, ids[0])
            # Disable step .0 from the console: Enter into the steps, move to .0, press d.
            await pilot.press("enter")
            target = StepId(ids[0], 0)
            index = con.steps_table.row_keys_in_order.index(str(target))
            for _ in range(index):
                await pilot.press("down")
            assert con.selected_target() == target
            await pilot.press("d")
            await settle(pilot)
            with pytest.raises(E.Disabled):
                other.able(target)
            cells: Any = con.steps_table.cells_of(str(target))
            assert cells["checkpoint"].plain == "disabled ×1"  # noqa: RUF001
            await pilot.press("e")
            await settle(pilot)
            assert other.able(target).target == target
    finally:
        facade.close()
        other.close()


def _counter_job(cluster: SlurmCluster, workdir: Path, run: str) -> tuple[str, int]:
    """A batch job of sckpt-alice whose only command is ``run``: its name and id."""
    name = f"tui-{uuid.uuid4().hex[:6]}"
    out = cluster.run(
        "sbatch", "--parsable", "-J", name, "-D", str(workdir), "--wrap", run,
        user="sckpt-alice",
    )  # fmt: skip
    return name, int(out.stdout.strip().split(";")[0])


def _state_of(cluster: SlurmCluster, job: int) -> str:
    """squeue's ``%T|%r`` of ``job``: its state and the reason."""
    return cluster.run("squeue", "-h", "-j", str(job), "-o", "%T|%r").stdout.strip()


async def test_a_refused_vacate_asks_again_and_force_vacates(
    slurm_cluster: SlurmCluster, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    run = f"srun -n1 {SCKPT} run -- {COUNTER} --log {workdir}/c.log --fail '28 disk full'"
    name, job = _counter_job(slurm_cluster, workdir, run)
    target = StepId(job, 0)

    def job_state() -> str:
        return _state_of(slurm_cluster, job)

    settings = Settings(audit_log=tmp_path / "audit.log", refresh_interval=3600, max_wait=20)
    facade = open_facade(settings, engine="cooperative")
    app = build_app(facade, settings)
    try:
        wait_for(lambda: catches_signal(workdir / ".sckpt", job), timeout=60)
        async with run_test(app, size=(160, 50)) as pilot:
            await settle(pilot)
            await go_to_step(pilot, name, target)
            for answer, expected in (("n", "RUNNING|None"), ("y", "PENDING|")):
                await pilot.press("v")
                await pilot.pause()
                await pilot.press("enter")  # the form, as prefilled
                await pilot.pause()
                await pilot.press("y")  # "Vacate step ...?"
                await settle(pilot)
                assert isinstance(pilot.app.screen, Confirm), screen_text(app)
                assert f"Vacate step {target} ({name}) anyway?" in screen_text(app)
                question = pilot.app.screen.question.plain  # as shown, before wrapping
                assert "Not saved, it keeps running for now:" in question
                assert f"- {target} task 0 (pid" in question
                assert "error(28): disk full" in question
                assert "Yes ends it anyway: restart then starts these without an image" in question
                assert job_state() == "RUNNING|None"  # the refused vacate ended nothing
                await pilot.press(answer)
                await settle(pilot)
                wait_for(lambda e=expected: job_state().startswith(e), timeout=60)
            assert job_state() == "PENDING|job requeued in held state"  # squeue %r
            shown = " ".join(notifications(app))
            assert "vacate" in shown and "cancelled: it keeps running" in shown
            assert "forced: restart will start without an image" in shown
    finally:
        facade.close()
        slurm_cluster.run("scancel", str(job), check=False)


async def test_a_restart_without_its_image_asks_again_and_force_restarts(
    slurm_cluster: SlurmCluster, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25: a vacated job whose image was removed is not restarted as if it would
    resume.  The console says which task has no image and asks once more: No leaves the
    job held, Yes restarts it and the task starts from zero."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    run = f"srun -n1 {SCKPT} run --name c -- {COUNTER} --log {workdir}/c.log"
    name, job = _counter_job(slurm_cluster, workdir, run)
    image = workdir / f"{job}.c" / "task0" / "g1"

    def job_state() -> str:
        return _state_of(slurm_cluster, job)

    settings = Settings(audit_log=tmp_path / "audit.log", refresh_interval=3600, max_wait=20)
    facade = open_facade(settings, engine="cooperative")
    app = build_app(facade, settings)
    try:
        wait_for(lambda: catches_signal(workdir / ".sckpt", job), timeout=60)
        facade.vacate(StepId(job, 0), max_wait=20)
        wait_for(lambda: job_state() == "PENDING|job requeued in held state", timeout=90)
        assert image.is_dir()
        slurm_cluster.run("rm", "-rf", str(image), user="sckpt-alice")
        async with run_test(app, size=(160, 50)) as pilot:
            await settle(pilot)
            await go_to_job(pilot, name)
            for answer, expected in (("n", "PENDING|job requeued in held state"), ("y", "")):
                await pilot.press("r")
                await pilot.pause()
                await pilot.press("enter")  # the form, as prefilled
                await pilot.pause()
                await pilot.press("y")  # "Restart job ...?"
                await settle(pilot)
                assert isinstance(pilot.app.screen, Confirm), screen_text(app)
                question = pilot.app.screen.question.plain  # as shown, before wrapping
                assert question.startswith(f"Restart job {job} ({name})"), question
                assert "anyway?" in question.splitlines()[0]
                assert "No image to resume from, it stays as it is for now:" in question
                assert f"- {job}.0 task 0: its last image {image} does not exist" in question
                assert "Yes restarts it anyway: these tasks start from the beginning." in question
                await pilot.press(answer)
                await settle(pilot)
                if expected:
                    assert job_state() == expected  # the refused restart changed nothing
            wait_for(lambda: job_state().startswith("RUNNING"), timeout=90)
            shown = " ".join(notifications(app))
            assert f"restart {job} cancelled: it stays as it is" in shown
            assert f"starts from zero: {job}.0 task 0: its last image {image}" in shown
    finally:
        facade.close()
        slurm_cluster.run("scancel", str(job), check=False)
