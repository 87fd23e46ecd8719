"""The console and Slurm accounting: ``f`` adds the finished jobs only accounting still knows,
and the step detail shows its job's records; both asked only when a person asks.

The simulated controller keeps its own accounting (``SimulatedCluster.accounting``): the
jobs it generated as already gone (ids below the first listed one) and each requeue of a
job.  Its calls are counted here to show no refresh asks it.
"""

from __future__ import annotations

from collections.abc import Callable

from sckpt.backend.model import StepId
from sckpt.tui.screens.console import ConsoleScreen
from sckpt.tui.screens.step import StepScreen

from .conftest import Console, notifications, run_test, screen_text, settle, submit_mine

SIZE = (120, 36)


def counting(c: Console) -> list[tuple[int, bool]]:
    """Record every accounting query the console makes: (job id, finished)."""
    return c.cluster.control.record_accounting_queries()


def only_in_accounting(c: Console) -> set[str]:
    listed = {job.job.job_id for job in c.facade.snapshot().jobs}
    ended = c.cluster.accounting(0, int(c.clock()) - 86400, finished=True)
    return {str(r.job_id) for r in ended if r.job_id not in listed}


async def test_f_shows_jobs_only_accounting_knows_and_hides_them_again(
    console: Callable[..., Console],
) -> None:
    c = console()
    gone = only_in_accounting(c)
    assert len(gone) == 4  # the simulated cluster's: max(4, 12 // 4)
    calls = counting(c)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, ConsoleScreen)
        c.app.refresh_now()
        await settle(pilot)
        assert calls == []  # refreshes never ask accounting
        assert not gone & set(screen.jobs_table.row_keys_in_order)
        await pilot.press("f")
        await settle(pilot)
        assert calls == [(0, True)]
        assert gone <= set(screen.jobs_table.row_keys_in_order)
        c.app.refresh_now()
        await settle(pilot)
        assert calls == [(0, True)]  # the rows stay; accounting is not asked again
        assert gone <= set(screen.jobs_table.row_keys_in_order)
        await pilot.press("f")
        await settle(pilot)
        assert not gone & set(screen.jobs_table.row_keys_in_order)
        assert calls == [(0, True)]


async def test_f_without_accounting_warns_and_still_shows_finished_jobs(
    console: Callable[..., Console],
) -> None:
    from sckpt.backend.errors import AccountingUnavailable

    c = console()
    c.cluster.control.refuse_accounting(
        AccountingUnavailable(message="Slurm accounting is not configured on this cluster")
    )
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, ConsoleScreen) and screen.show_finished
        assert any("not configured" in n for n in notifications(c.app))
        assert "+finished" in screen_text(c.app)


async def test_the_step_detail_shows_the_jobs_requeues(console: Callable[..., Console]) -> None:
    c = console()
    job_id = submit_mine(c.cluster, name="requeued")
    calls = counting(c)
    c.cluster.requeue_job(c.cluster.user("alice"), job_id, hold=False)
    c.clock.advance(200)  # the requeued job starts again after its begin time
    step = StepId(job_id, 0)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        assert calls == []
        c.app.open_step(step)
        await settle(pilot)
        assert isinstance(pilot.app.screen, StepScreen)
        assert calls == [(job_id, False)]
        text = screen_text(c.app)
        assert "Job history       2 records in accounting" in text
        lines = [line for line in text.splitlines() if "first run" in line or "restart 1" in line]
        assert "REQUEUED" in lines[0] and "RUNNING" in lines[1], lines


async def test_without_accounting_the_step_detail_says_so_in_one_line(
    console: Callable[..., Console],
) -> None:
    """Every step detail ended with a three-line ESLURM_DB_CONNECTION block."""
    from sckpt.backend.errors import ESLURM_DB_CONNECTION, AccountingUnavailable

    c = console()
    c.cluster.control.refuse_accounting(
        AccountingUnavailable(
            ESLURM_DB_CONNECTION,
            message="Slurm accounting is not configured on this cluster",
            hint="set AccountingStorageType=accounting_storage/slurmdbd",
        )
    )
    step = StepId(submit_mine(c.cluster), 0)
    async with run_test(c.app, size=SIZE) as pilot:
        await settle(pilot)
        c.app.open_step(step)
        await settle(pilot)
        text = screen_text(c.app)
        (line,) = [x for x in text.splitlines() if "Job history" in x]
        shown = line.split("Job history", 1)[1].strip()  # cut at the screen's edge
        said = "not available: Slurm accounting is not configured on this cluster (see sckpt "
        assert len(shown) > 40 and (said + "doctor)").startswith(shown.rstrip("…")), shown
        assert "ESLURM_DB_CONNECTION" not in text and "AccountingStorageType" not in text
