"""tui/multi_target.py's words: the confirmation and the summary stay readable at any count."""

from __future__ import annotations

from sckpt.backend.model import StepId
from sckpt.tui.multi_target import LISTED, REPORTED, Outcome, question, summary, targets_for


def test_whole_job_verbs_take_each_job_once_in_marking_order() -> None:
    marked = [StepId(7, 1), StepId(5), StepId(7, 0), StepId(5, 2)]
    assert targets_for("hold", marked) == [StepId(7), StepId(5)]
    assert targets_for("disable", marked) == marked
    assert targets_for("restart", [StepId(7, 1), StepId(7)]) == [StepId(7)]


def test_the_question_names_at_most_listed_targets_then_how_many_more() -> None:
    targets = [StepId(100 + i) for i in range(LISTED + 3)]
    text = question("hold", targets, lambda t: f"job {t} (n{t})").plain
    assert text.startswith(f"Hold {LISTED + 3} targets?")
    assert all(f"job {t} (n{t})" in text for t in targets[:LISTED])
    assert f"job {targets[LISTED]} " not in text and "and 3 more" in text


def test_the_summary_puts_failures_first_and_counts_the_rest() -> None:
    outcomes = [Outcome(StepId(i), True, "requested") for i in range(REPORTED + 2)]
    outcomes.append(Outcome(StepId(99), False, "hold 99 refused: ESLURM_ACCESS_DENIED (2002)"))
    text, failed = summary("hold", outcomes)
    lines = text.splitlines()
    head = f"hold on {REPORTED + 3} targets: {REPORTED + 2} requested, 1 refused or failed"
    assert failed and lines[0] == head
    assert lines[1] == "FAIL 99: hold 99 refused: ESLURM_ACCESS_DENIED (2002)"
    assert lines[-1] == "… and 3 more (each is in the audit log)"
    assert len(lines) == REPORTED + 2
