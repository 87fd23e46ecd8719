"""The console's second question (``reports.force_question``) is built from the
operation's row (``operations.ForceWords``): vacate's and restart's read word for word as
they did when ``reports.py`` compared the name with "restart"."""

from __future__ import annotations

import errno

from sckpt.backend.errors import NotRequeueable, UnsafeRestart, UnsafeVacate
from sckpt.backend.model import StepId
from sckpt.tui.reports import force_declined, force_question

LOSS = ("task 1 on node2: its checkpoint failed",)


def test_vacate_asks_whether_to_end_what_is_not_saved() -> None:
    question = force_question("vacate", "step 7.0 (n)", UnsafeVacate(losses=LOSS)).plain
    assert question == (
        "Vacate step 7.0 (n) anyway?\n\nNot saved, it keeps running for now:\n"
        "- task 1 on node2: its checkpoint failed\n\n"
        "Yes ends it anyway: restart then starts these without an image."
    )
    assert force_declined("vacate", StepId(7, 0)) == "vacate 7.0 cancelled: it keeps running"


def test_a_vacate_for_good_says_restart_cannot_bring_it_back() -> None:
    refused = NotRequeueable(message="no batch script")
    question = force_question("vacate", "job 7 (n)", refused).plain
    assert question == (
        "Vacate job 7 (n) anyway?\n\nIt keeps running for now:\n"
        f"- {refused.name} ({refused.code}): no batch script\n\n"
        "Yes ends it anyway, after its checkpoint: restart cannot bring it back. "
        "A create saves an image and leaves it running."
    )


def test_restart_asks_whether_to_start_tasks_from_the_beginning() -> None:
    refused = UnsafeRestart(errno.ENOENT, losses=("task 0: image missing",))
    question = force_question("restart", "job 7 (n)", refused).plain
    assert question == (
        "Restart job 7 (n) anyway?\n\nNo image to resume from, it stays as it is for now:\n"
        "- task 0: image missing\n\n"
        "Yes restarts it anyway: these tasks start from the beginning."
    )
    assert force_declined("restart", StepId(7)) == "restart 7 cancelled: it stays as it is"
