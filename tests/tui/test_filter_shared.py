"""One filter, two front ends: the console's ``/`` box and ``sckpt ls FILTER`` select the same
jobs from the same cluster (``backend/filters.py``), whatever each prints in its cells.

The console cuts its checkpoint summary (``1 dis``), ``ls`` spells it out (``1 disabled``):
``ckpt:disabled`` once showed an empty console while ``ls`` listed 5 jobs, and ``ckpt:dis``
worked in the console only by matching the cut cell text.
"""

from __future__ import annotations

import functools
from typing import Any

from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.backend.model import JobState
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for
from sckpt.tui.app import build_app
from sckpt.tui.screens.console import ConsoleScreen

from sckpt import cli

from .conftest import settle

ME = "root"
"""The operator: other users' steps show their state (as alice they would show ``unknown``)."""

FILTERS = [
    "ckpt:disabled",
    "ckpt:dis",
    "ckpt:able",
    "ckpt:failed",
    "ckpt:error",
    "ckpt:in-progress",
    "ckpt:pending",
    "disabled",
    "user:bob state:R",
    "checkpoint:able part:long",
]


def _demo_cluster() -> SimulatedCluster:
    """The demo's cluster as ``sckpt --demo`` builds it (seed 42, 48 jobs), on a still clock."""
    return SimulatedCluster(
        seed=42, n_jobs=48, clock=ManualClock(), users=demo_users_for(ME), arrivals=False
    )


def _ls_ids(cluster: SimulatedCluster, capsys: Any, words: str) -> set[int]:
    capsys.readouterr()
    on_cluster = functools.partial(open_facade, cluster=cluster)
    code = cli.main(["--as-user", ME, "ls", "-h", *words.split()], facade_factory=on_cluster)
    out, err = capsys.readouterr()
    assert code == 0, err
    return {int(line.split()[0]) for line in out.splitlines()}


async def test_console_and_ls_select_the_same_jobs(capsys: Any, tmp_path: Any) -> None:
    cluster = _demo_cluster()
    expected = {words: _ls_ids(cluster, capsys, words) for words in FILTERS}
    # The README's and ls --help's own example, on the demo: five jobs, and the cut word too.
    assert len(expected["ckpt:disabled"]) == 5
    assert expected["ckpt:dis"] == expected["ckpt:disabled"] == expected["disabled"]
    assert expected["ckpt:failed"] == expected["ckpt:error"] and expected["ckpt:failed"]
    assert expected["ckpt:able"] and expected["ckpt:pending"]
    settings = Settings(refresh_interval=3600.0, audit_log=tmp_path / "audit.log")
    facade = open_facade(settings, as_user=ME, cluster=cluster)
    app = build_app(facade, settings, clock=cluster.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        screen = app.console_screen()
        assert isinstance(screen, ConsoleScreen)
        for words, ids in expected.items():
            await pilot.press("slash", "ctrl+a", "ctrl+k", *words, "enter")
            await pilot.pause()
            shown = {int(key) for key in screen.jobs_table.row_keys_in_order}
            assert shown == ids, words


async def test_console_and_ls_show_the_same_jobs_by_default(capsys: Any, tmp_path: Any) -> None:
    """The console listed jobs that had finished before it started (184229 CD, 184234 CA)
    with no ``+finished``, which ``ls`` hides: one default set.  A job it watched finish
    still lingers, and ``f`` shows the others."""
    cluster = _demo_cluster()
    expected = _ls_ids(cluster, capsys, "")
    finished = {v.job.job_id for v in cluster.snapshot().jobs if v.job.state.is_finished}
    assert finished and not finished & expected
    settings = Settings(refresh_interval=3600.0, audit_log=tmp_path / "audit.log")
    facade = open_facade(settings, as_user=ME, cluster=cluster)
    app = build_app(facade, settings, clock=cluster.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        screen = app.console_screen()
        assert isinstance(screen, ConsoleScreen)
        assert {int(key) for key in screen.jobs_table.row_keys_in_order} == expected
        watched = min(expected)
        cluster.control.set_job_state(watched, JobState.COMPLETED)
        app.refresh_now()
        await settle(pilot)
        assert watched in {int(key) for key in screen.jobs_table.row_keys_in_order}
        await pilot.press("f")
        await settle(pilot)
        shown = {int(key) for key in screen.jobs_table.row_keys_in_order}
        assert finished <= shown
