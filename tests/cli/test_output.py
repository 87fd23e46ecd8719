"""Formatting: scontrol's lines, squeue's columns, literal display of hostile text."""

from __future__ import annotations

import json
import time

import pytest
from sckpt.backend import progress
from sckpt.backend.errors import Disabled
from sckpt.backend.model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    CheckpointKind,
    CheckpointState,
    Job,
    JobState,
    JobView,
    Step,
    StepId,
    StepView,
)
from sckpt.cli import output as cli_output


def test_able_prints_yes_began_at_or_no() -> None:
    assert cli_output.able_line(AbleResult(StepId(5, 0))) == "Yes"
    assert cli_output.able_line(None) == "No"
    began = 1_700_000_000
    expected = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(began))
    assert cli_output.able_line(AbleResult(StepId(5, 0), began)) == f"Began at {expected}"


def test_error_prints_scontrols_line() -> None:
    error = CheckpointError(2037, "ESLURM_DISABLED", "Requested operation is presently disabled")
    assert cli_output.error_line(error) == (
        "error(2037): Requested operation is presently disabled"
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0:00"),
        (59, "0:59"),
        (61, "1:01"),
        (3600, "1:00:00"),
        (90061, "1-01:01:01"),
        (-5, "0:00"),
    ],
)
def test_elapsed_is_squeues_time_format(seconds: int, text: str) -> None:
    assert cli_output.format_elapsed(seconds) == text


def test_control_characters_are_shown_literally_never_sent_to_the_terminal() -> None:
    hostile = "job\x1b[2J\x1b]0;pwned\x07\nname\x9b"
    shown = cli_output.clean(hostile)
    assert "\x1b" not in shown and "\n" not in shown and "\x07" not in shown
    assert "\x9b" not in shown
    assert shown == "job\\x1b[2J\\x1b]0;pwned\\x07\\x0aname\\x9b"


def test_non_utf8_bytes_print_as_escapes() -> None:
    text = b"ab\xffcd".decode("utf-8", "surrogateescape")
    assert cli_output.clean(text) == "ab\\xffcd"


def test_table_escapes_cells_and_aligns_columns() -> None:
    text = cli_output.render_table(("A", "BB"), [("x\x1b", "1"), ("yyyyy", "2")], noheader=False)
    assert text.splitlines() == ["A      BB", "x\\x1b  1", "yyyyy  2"]
    assert cli_output.render_table(("A", "B"), [], noheader=True) == ""


def _state(kind: CheckpointKind, **extra: object) -> CheckpointState:
    return CheckpointState(kind=kind, **extra)  # type: ignore[arg-type]


def test_checkpoint_text_names_the_state_like_the_console() -> None:
    assert cli_output.checkpoint_text(_state(CheckpointKind.ABLE)) == "able"
    assert cli_output.checkpoint_text(_state(CheckpointKind.DISABLED, disable_count=2)) == (
        "disabled x2"
    )
    assert cli_output.checkpoint_text(
        _state(CheckpointKind.NOT_SUPPORTED, reason="not under sckpt run")
    ) == ("not supported: not under sckpt run")
    assert cli_output.checkpoint_text(
        _state(CheckpointKind.NOT_SUPPORTED, reason="not supported for this step: why")
    ) == ("not supported for this step: why")
    since = 1_700_000_000
    assert (
        cli_output.checkpoint_text(_state(CheckpointKind.IN_PROGRESS, in_progress_since=since))
        == f"in progress since {cli_output.format_time(since)}"
    )


def _job(state: JobState = JobState.RUNNING) -> Job:
    return Job(7, "n", "alice", 1000, "debug", state, nodes="node1", num_nodes=1, start_time=100)


def _step(number: int, kind: CheckpointKind) -> StepView:
    step = Step(StepId(7, number), "s", "alice", 1000, "debug", "RUNNING", nodes="node1")
    return StepView(step, _state(kind))


def test_job_summary_is_one_kind_or_a_tally() -> None:
    only_able = JobView(_job(), (_step(0, CheckpointKind.ABLE), _step(1, CheckpointKind.ABLE)))
    assert cli_output.job_checkpoint_summary(only_able) == "able"
    mixed = JobView(
        _job(),
        (
            _step(0, CheckpointKind.ABLE),
            _step(1, CheckpointKind.DISABLED),
            _step(2, CheckpointKind.ABLE),
        ),
    )
    assert cli_output.job_checkpoint_summary(mixed) == "1 disabled, 2 able"
    assert cli_output.job_checkpoint_summary(JobView(_job(JobState.PENDING))) == "pending"
    assert cli_output.job_checkpoint_summary(JobView(_job(JobState.COMPLETED))) == "ended"


def test_json_of_records_uses_step_id_text_and_enum_values() -> None:
    view = JobView(_job(), (_step(0, CheckpointKind.ABLE),))
    data = json.loads(cli_output.dumps(cli_output.job_json(view, 0.0)))
    assert data["job_id"] == 7 and data["state"] == "RUNNING" and data["state_short"] == "R"
    assert data["steps"][0]["step_id"] == "7.0"
    assert data["steps"][0]["checkpoint"]["kind"] == "able"


def test_action_line_names_target_and_refusing_steps() -> None:
    result = ActionResult(StepId(7), "create", per_step=((StepId(7, 0), 0), (StepId(7, 1), 2037)))
    assert cli_output.action_line(result) == (
        "7: create requested (steps answering an error: 7.1=2037)"
    )


def test_error_json_carries_code_name_and_exit_code() -> None:
    data = cli_output.error_json(Disabled())
    assert data["code"] == 2037 and data["name"] == "ESLURM_DISABLED" and data["exit_code"] == 1


def test_progress_words_are_the_backends_vocabulary() -> None:
    # One set of words for a checkpoint's progress (backend/progress.py): the CLI said
    # "accepted" where the console said "busy" or "in progress".
    assert progress.REQUESTED == "requested" and progress.failed(28) == "failed (28)"
    line = cli_output.action_line(ActionResult(StepId(7, 0), "create", "max_wait 10s"))
    assert line == "7.0: create requested: max_wait 10s"
    busy = JobView(
        _job(),
        (_step(0, CheckpointKind.IN_PROGRESS), _step(1, CheckpointKind.ABLE)),
    )
    assert cli_output.job_checkpoint_summary(busy) == "1 in progress, 1 able"


def test_an_engine_that_waited_says_completed_not_requested() -> None:
    """The cooperative engine waits for the checkpoint (up to MaxWait): its answer read
    "create requested: checkpoint completed after 2.0s; ..."."""
    result = ActionResult(
        StepId(7, 0), "create", detail="checkpoint completed after 2.0s; 7.0: image /ck/g1"
    )
    assert cli_output.action_line(result) == "7.0: create completed after 2.0s; 7.0: image /ck/g1"
    assert cli_output.waited_completed(result)
    plain = ActionResult(StepId(7, 0), "create", detail="max_wait 10s")
    assert cli_output.action_line(plain) == "7.0: create requested: max_wait 10s"
