"""The step detail shows the job's ``sbatch --comment`` (simulated cluster).

Sites put the project, a ticket or "ask me before cancelling" in the comment: the operator
reads it where the actions are.  Hostile comments on a real job are in
tests/reliability/test_security_display.py.
"""

from __future__ import annotations

from collections.abc import Callable

from sckpt.backend.model import JobState, StepId
from sckpt.tui.screens.step import StepScreen

from .conftest import ME, Console, screen_text, settle


def _comment_lines(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines()]
    return [line.split(None, 1)[1] for line in lines if line.startswith("Comment ")]


async def test_step_detail_shows_the_job_comment_or_none(console: Callable[..., Console]) -> None:
    c = console(n_jobs=0)
    noted = c.cluster.submit(
        ME, name="noted", state=JobState.RUNNING, comment="ticket #42 [b]x[/b]"
    ).job_id
    plain = c.cluster.submit(ME, name="plain", state=JobState.RUNNING).job_id
    async with c.app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        shown = []
        for job_id in (noted, plain):
            c.app.open_step(StepId(job_id, 0))
            await settle(pilot)
            assert isinstance(c.app.screen, StepScreen)
            shown.append(_comment_lines(screen_text(c.app)))
            await pilot.press("escape")
            await settle(pilot)
    assert shown == [["ticket #42 [b]x[/b]"], ["(none)"]]


def test_one_demo_job_in_three_has_a_comment(console: Callable[..., Console]) -> None:
    c = console(n_jobs=48, seed=42)
    comments = [view.job.comment for view in c.facade.snapshot().jobs]
    assert 10 <= sum(1 for text in comments if text) <= 20
