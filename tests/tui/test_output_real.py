"""The console's ``o`` on the real Slurm 22.05 cluster: alice's job's file, as written.

The job and its file come from ``tests/cli/test_output_real.py``'s ``writer``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import StepId
from sckpt.tui.app import build_app
from sckpt.tui.screens.output import OutputScreen

from tests.cli.test_output_real import shared_dir, writer
from tests.conftest import SlurmCluster

from .conftest import screen_text, settle

pytestmark = pytest.mark.slurm
__all__ = ["shared_dir", "writer"]


async def test_console_o_shows_the_real_file(
    slurm_cluster: SlurmCluster,
    writer: tuple[int, Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    job, path, _go = writer
    settings = Settings(audit_log=tmp_path / "audit.log", refresh_interval=3600)
    facade = open_facade(settings)
    app = build_app(facade, settings)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            console = app.console_screen()
            assert console is not None
            console.select_target(StepId(job))
            console.jobs_table.focus()
            await pilot.press("o")
            await settle(pilot)
            assert isinstance(app.screen, OutputScreen)
            text = screen_text(app)
            shown = [line.rstrip() for line in text.splitlines()]
            last = path.read_text().splitlines()[-5:]
            for line in last:
                assert line in shown
            assert re.search(rf"Output of job {job} \(out-\w+\)\s+stdout\s+RUNNING", text)
    finally:
        facade.close()
