"""Several targets at once: space marks rows, one action key acts on all of them.

On the simulated cluster as alice: the marks are visible (``*`` on each marked row, the
count in the header), one confirmation names every target, each target goes through the
facade (its state afterwards is the controller's, each has its audit line, read-only
refuses each), one notification reports each target's outcome, and Escape or the action
clears the marks.
"""

from __future__ import annotations

from typing import Any, cast

from sckpt.backend.engines.base import Engine
from sckpt.backend.errors import ControllerUnreachable
from sckpt.backend.model import ActionResult, JobState, StepId
from sckpt.tui.dialogs.confirm import Confirm

from .conftest import notifications, run_test, screen_text, settle, submit_mine
from .console_keys import console_of, go_to_job
from .test_jobctl import audit_lines


async def _mark_jobs(pilot: Any, name: str) -> list[StepId]:
    """Filter on ``name``; mark the first two rows with space (cursor moved by ``down``)."""
    await go_to_job(pilot, name)
    con = console_of(pilot)
    con.jobs_table.move_cursor(row=0)
    await pilot.press("space", "down", "space")
    await pilot.pause()
    return [StepId(int(key)) for key in con.jobs_table.row_keys_in_order[:2]]


async def _hold_marked(pilot: Any, name: str, answer: str) -> list[StepId]:
    """Mark the first two rows of ``name`` (``_mark_jobs``), press H, answer the question
    (``y`` or ``n``), and wait for what that does."""
    await settle(pilot)
    marked = await _mark_jobs(pilot, name)
    await pilot.press("H")
    await pilot.pause()
    await pilot.press(answer)
    await settle(pilot)
    return marked


def _row_of(text: str, job: StepId) -> str:
    """The jobs table's line of ``job`` (its id is the first column)."""
    return next(line for line in text.splitlines() if line[1:].startswith(f"{job.job_id} "))


async def test_hold_two_marked_jobs_with_one_confirmation(console: Any) -> None:
    c = console()
    first = submit_mine(c.cluster, name="multi-a", n_steps=1)
    second = submit_mine(c.cluster, name="multi-b", n_steps=1)
    # 160 columns: at 80 the header is cut before its note (the console's layout work)
    async with run_test(c.app, size=(160, 50)) as pilot:
        await settle(pilot)
        marked = await _mark_jobs(pilot, "multi")
        assert set(marked) == {StepId(first), StepId(second)}
        text = screen_text(c.app)
        assert "2 marked" in text
        for job in marked:
            assert _row_of(text, job).startswith("*")
        await pilot.press("H")
        await pilot.pause()
        assert isinstance(c.app.screen, Confirm)
        question = screen_text(c.app)
        assert "Hold 2 targets?" in question
        assert f"job {first} (multi-a)" in question and f"job {second} (multi-b)" in question
        await pilot.press("y")
        await settle(pilot)
        jobs = {v.job.job_id: v.job for v in c.facade.snapshot().jobs}
        assert jobs[first].held and jobs[second].held
        said = "\n".join(notifications(c.app))
        assert "hold on 2 targets: 2 requested, 0 refused or failed" in said
        assert f"ok   {first}: requested" in said and f"ok   {second}: requested" in said
        assert [(x["operation"], x["target"]) for x in audit_lines(c)] == [
            ("hold", str(first)),
            ("hold", str(second)),
        ]
        assert console_of(pilot).marks == {}  # the action cleared them
        assert "marked" not in screen_text(c.app).splitlines()[0]


async def test_each_target_reports_its_own_refusal(console: Any) -> None:
    """One of the two is bob's: alice's is held, bob's refused with Slurm's words."""
    c = console()
    mine = submit_mine(c.cluster, name="mixed-mine", n_steps=1)
    bobs = c.cluster.control.submit("bob", name="mixed-bob", state=JobState.RUNNING).job_id
    async with run_test(c.app, size=(160, 50)) as pilot:
        await _hold_marked(pilot, "mixed", "y")
        jobs = {v.job.job_id: v.job for v in c.facade.snapshot().jobs}
        assert jobs[mine].held and not jobs[bobs].held
        said = "\n".join(notifications(c.app))
        assert "hold on 2 targets: 1 requested, 1 refused or failed" in said
        assert f"FAIL {bobs}: hold {bobs} refused: ESLURM_USER_ID_MISSING" in said
        results = {x["target"]: x["result"]["name"] for x in audit_lines(c)}
        assert results[str(bobs)] == "ESLURM_USER_ID_MISSING"


async def test_no_keeps_the_marks_and_escape_clears_them(console: Any) -> None:
    c = console()
    submit_mine(c.cluster, name="keep-a", n_steps=1)
    submit_mine(c.cluster, name="keep-b", n_steps=1)
    async with run_test(c.app, size=(80, 24)) as pilot:
        marked = await _hold_marked(pilot, "keep", "n")
        assert list(console_of(pilot).marks) == marked
        assert audit_lines(c) == []
        await pilot.press("space")  # unmark the row under the cursor
        assert list(console_of(pilot).marks) == marked[:1]
        await pilot.press("escape")
        await pilot.pause()
        assert console_of(pilot).marks == {}
        assert not any(line.startswith("*") for line in screen_text(c.app).splitlines())


async def test_read_only_refuses_marked_targets_as_it_refuses_one(console: Any) -> None:
    """Read-only: the key says so and nothing reaches the facade, as with one selected row
    (tests/reliability/test_security_readonly.py counts the audit lines of both)."""
    c = console(read_only=True)
    first = submit_mine(c.cluster, name="ro-a", n_steps=1)
    second = submit_mine(c.cluster, name="ro-b", n_steps=1)
    async with run_test(c.app, size=(80, 24)) as pilot:
        await settle(pilot)
        await _mark_jobs(pilot, "ro-")
        await pilot.press("H")
        await settle(pilot)
        assert not isinstance(c.app.screen, Confirm)
        jobs = {v.job.job_id: v.job for v in c.facade.snapshot().jobs}
        assert not jobs[first].held and not jobs[second].held
        said = "\n".join(notifications(c.app))
        assert "read-only: hold is not allowed" in said
        assert audit_lines(c) == []


async def test_marked_steps_take_a_checkpoint_action(console: Any) -> None:
    """Steps marked in the steps table: disable acts on each step."""
    c = console()
    job = submit_mine(c.cluster, name="steps-mark", n_steps=2)
    async with run_test(c.app, size=(80, 24)) as pilot:
        await settle(pilot)
        await go_to_job(pilot, "steps-mark")
        await pilot.press("enter")  # into the steps
        con = console_of(pilot)
        keys = con.steps_table.row_keys_in_order
        numbered = [k for k in keys if k.split(".")[1].isdigit()]
        for key in numbered:
            con.steps_table.select_key(key)
            await pilot.press("space")
        await pilot.press("d")
        await pilot.pause()
        assert "Disable 2 targets?" in screen_text(c.app)
        await pilot.press("y")
        await settle(pilot)
        steps = {
            str(s.step.step_id): s.checkpoint.kind.value
            for v in c.facade.snapshot().jobs
            if v.job.job_id == job
            for s in v.steps
        }
        assert [steps[k] for k in numbered] == ["disabled", "disabled"]


async def test_after_slurm_does_not_answer_the_later_marked_targets_are_not_asked(
    console: Any,
) -> None:
    """As the command line does (``each_target.OneByOne``): the controller does not answer
    the first hold, so the second target is reported not attempted, never asked."""
    c = console()
    first = submit_mine(c.cluster, name="mute-a", n_steps=1)
    second = submit_mine(c.cluster, name="mute-b", n_steps=1)
    asked: list[int] = []

    class SilentOnHold:
        def __init__(self, inner: Engine) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

        def hold(self, target: StepId) -> ActionResult:
            asked.append(target.job_id)
            raise ControllerUnreachable(hint="slurmctld did not answer (test)")

    c.facade.wrap_engine(lambda inner: cast(Engine, SilentOnHold(inner)))
    async with run_test(c.app, size=(160, 50)) as pilot:
        marked = await _hold_marked(pilot, "mute-", "y")
        assert asked == [marked[0].job_id]
        said = "\n".join(notifications(c.app))
        assert "hold on 2 targets: 0 requested, 2 refused or failed" in said
        assert f"FAIL {marked[1]}: hold {marked[1]}: not attempted: Slurm did not answer" in said
        jobs = {v.job.job_id: v.job for v in c.facade.snapshot().jobs}
        assert not jobs[first].held and not jobs[second].held
