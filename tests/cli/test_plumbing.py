"""Each command passes exactly its options to the facade, and maps each answer and refusal.

A recording facade stands in for the backend here so the test can see every argument; the
same commands run against the simulated cluster in test_simulated.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sckpt.backend.errors import (
    AccessDenied,
    ControllerUnreachable,
    Disabled,
    NotSupported,
    ReadOnlyError,
    SckptError,
    UsageError,
)
from sckpt.backend.model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    ClusterInfo,
    Snapshot,
    StepId,
)

from sckpt import cli


@dataclass
class RecordingFacade:
    """Answers from a script, records every call (operation, target, keyword arguments)."""

    answers: dict[str, Any] = field(default_factory=dict)
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    engine_name: str = "simulated"
    read_only: bool = False
    closed: bool = False
    opened: list[dict[str, Any]] = field(default_factory=list)
    """The flags of each opening (``open_facade``'s keywords)."""

    @property
    def info(self) -> ClusterInfo:
        return ClusterInfo("c", "22.05.8", self.engine_name, "alice", read_only=self.read_only)

    def _answer(self, operation: str, target: StepId, **kwargs: Any) -> Any:
        self.calls.append((operation, str(target), kwargs))
        answer = self.answers.get(f"{operation} {target}", self.answers.get(operation))
        if isinstance(answer, BaseException):
            raise answer
        if answer is None and operation not in ("able",):
            return ActionResult(target, operation)
        return answer if answer is not None else AbleResult(target)

    def expand_targets(self, targets: Any) -> list[StepId]:
        """No job arrays here: every target is its own record (as the facade's
        ``expand_targets`` answers for a listing without arrays)."""
        return list(targets)

    def snapshot(self) -> Snapshot:
        """An empty listing: no array's pending record to name (``actions``)."""
        return Snapshot(jobs=(), taken_at=0.0)

    def act(self, name: str, target: StepId, **values: Any) -> Any:
        """The facade's one way to act, dispatched to the recording methods below."""
        return getattr(self, name)(target, **values)

    def ask(self, name: str, target: StepId) -> Any:
        return getattr(self, name)(target)

    def able(self, target: StepId) -> Any:
        return self._answer("able", target)

    def error(self, target: StepId) -> Any:
        return self._answer("error", target)

    def create(self, target: StepId, max_wait: int | None, image_dir: str | None) -> Any:
        return self._answer("create", target, max_wait=max_wait, image_dir=image_dir)

    def vacate(
        self, target: StepId, max_wait: int | None, image_dir: str | None, force: bool = False
    ) -> Any:
        return self._answer("vacate", target, max_wait=max_wait, image_dir=image_dir)

    def restart(
        self, target: StepId, stick: bool, image_dir: str | None, force: bool = False
    ) -> Any:
        return self._answer("restart", target, stick=stick, image_dir=image_dir, force=force)

    def enable(self, target: StepId) -> Any:
        return self._answer("enable", target)

    def disable(self, target: StepId) -> Any:
        return self._answer("disable", target)

    def complete(self, target: StepId, begin_time: int, error_code: int, error_msg: str) -> Any:
        return self._answer(
            "complete", target, begin_time=begin_time, error_code=error_code, error_msg=error_msg
        )

    def tasks(
        self,
        target: StepId,
        begin_time: int,
        image_dir: str | None,
        max_wait: int | None,
        nodelist: str,
    ) -> Any:
        return self._answer(
            "tasks",
            target,
            begin_time=begin_time,
            image_dir=image_dir,
            max_wait=max_wait,
            nodelist=nodelist,
        )

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def facade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingFacade]:
    fake = RecordingFacade()
    config = tmp_path / "config.toml"  # no user configuration leaks in
    config.write_text(f'audit_log = "{tmp_path / "audit.log"}"\n')
    monkeypatch.setenv("SCKPT_CONFIG", str(config))
    yield fake
    if fake.opened:
        assert fake.closed, "the facade was not closed"


Main = Callable[[list[str]], int]


@pytest.fixture
def sckpt(facade: RecordingFacade) -> Main:
    """``sckpt`` in-process, every command's facade the recording one."""

    def open_fake(settings: object, **flags: Any) -> RecordingFacade:
        facade.opened.append(flags)
        return facade

    return lambda argv: cli.main(argv, facade_factory=open_fake)


def test_each_target_is_acted_on_in_order_with_the_options(
    facade: RecordingFacade, sckpt: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["create", "12", "12.3", "12.batch", "--max-wait", "30", "--image-dir", "/ck"]
    assert sckpt(argv) == 0
    assert facade.calls == [
        ("create", target, {"max_wait": 30, "image_dir": "/ck"})
        for target in ("12", "12.3", "12.batch")
    ]
    assert capsys.readouterr().out.splitlines() == [
        "12: create requested",
        "12.3: create requested",
        "12.batch: create requested",
    ]


def test_defaults_are_left_to_the_facade(facade: RecordingFacade, sckpt: Main) -> None:
    assert sckpt(["vacate", "5.0"]) == 0
    assert facade.calls == [("vacate", "5.0", {"max_wait": None, "image_dir": None})]


def test_restart_passes_stick_and_image_dir(facade: RecordingFacade, sckpt: Main) -> None:
    assert sckpt(["restart", "5", "--stick", "--image-dir", "/i"]) == 0
    assert sckpt(["restart", "6"]) == 0
    assert sckpt(["restart", "7", "--force"]) == 0
    assert facade.calls == [
        ("restart", "5", {"stick": True, "image_dir": "/i", "force": False}),
        ("restart", "6", {"stick": False, "image_dir": None, "force": False}),
        ("restart", "7", {"stick": False, "image_dir": None, "force": True}),
    ]


def test_complete_and_tasks_pass_their_arguments(facade: RecordingFacade, sckpt: Main) -> None:
    argv = ["complete", "5.1", "--error-code", "7", "--error-msg", "disk full"]
    assert sckpt([*argv, "--begin-time", "1700000000"]) == 0
    assert sckpt(["tasks", "5.1", "--nodelist", "n[1-2]", "--max-wait", "9"]) == 0
    assert facade.calls[0] == (
        "complete",
        "5.1",
        {"begin_time": 1700000000, "error_code": 7, "error_msg": "disk full"},
    )
    operation, target, kwargs = facade.calls[1]
    assert (operation, target) == ("tasks", "5.1")
    assert kwargs["nodelist"] == "n[1-2]" and kwargs["max_wait"] == 9
    assert kwargs["image_dir"] is None


def test_able_prints_yes_began_and_no_and_no_is_not_an_error(
    facade: RecordingFacade, sckpt: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    facade.answers = {
        "able 1.0": AbleResult(StepId(1, 0)),
        "able 1.1": AbleResult(StepId(1, 1), 1_700_000_000),
        "able 1.2": Disabled(),
    }
    assert sckpt(["able", "1.2"]) == 0
    assert capsys.readouterr().out == "No\n"
    assert sckpt(["able", "1.0", "1.1", "1.2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "1.0: Yes"
    assert lines[1].startswith("1.1: Began at 2023-11-1")
    assert lines[2] == "1.2: No"


def test_error_prints_scontrols_line(
    facade: RecordingFacade, sckpt: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    facade.answers = {"error": CheckpointError(114, "EALREADY", "Operation already in progress")}
    assert sckpt(["error", "3.0"]) == 0
    assert capsys.readouterr().out == "error(114): Operation already in progress\n"


@pytest.mark.parametrize(
    ("refusal", "code", "name"),
    [
        (Disabled(), 1, "ESLURM_DISABLED"),
        (AccessDenied(), 1, "ESLURM_ACCESS_DENIED"),
        (NotSupported(hint="not under sckpt run"), 1, "ESLURM_NOT_SUPPORTED"),
        (ReadOnlyError("read-only mode: create refused"), 1, "read-only"),
        (ControllerUnreachable(), 3, "SLURM_COMMUNICATIONS_CONNECTION_ERROR"),
        (UsageError("image_dir is relative"), 2, "image_dir"),
    ],
)
def test_refusals_map_to_exit_codes_with_one_line_naming_the_error(
    facade: RecordingFacade,
    sckpt: Main,
    capsys: pytest.CaptureFixture[str],
    refusal: SckptError,
    code: int,
    name: str,
) -> None:
    facade.answers = {"create": refusal}
    assert sckpt(["create", "4.0"]) == code
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("sckpt: create 4.0: ") and name in err


def test_several_targets_report_each_and_exit_with_the_worst(
    facade: RecordingFacade, sckpt: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    facade.answers = {"disable 2.0": AccessDenied(), "disable 3.0": Disabled()}
    assert sckpt(["disable", "1.0", "2.0", "3.0", "4.0"]) == 1
    out, err = capsys.readouterr()
    assert [c[1] for c in facade.calls] == ["1.0", "2.0", "3.0", "4.0"]
    assert out.splitlines() == ["1.0: disable requested", "4.0: disable requested"]
    lines = err.splitlines()
    assert len(lines) == 2
    assert "2.0" in lines[0] and "ESLURM_ACCESS_DENIED" in lines[0]
    assert "3.0" in lines[1] and "ESLURM_DISABLED" in lines[1]
    facade.answers = {"enable 5": UsageError("bad"), "enable 6": ControllerUnreachable()}
    assert sckpt(["enable", "5", "6"]) == 3  # the worst wins: 3 > 2 > 1
    capsys.readouterr()


def test_json_reports_every_target_with_codes(
    facade: RecordingFacade, sckpt: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    facade.answers = {"able 1.1": Disabled(), "able 1.2": AccessDenied()}
    assert sckpt(["able", "1.0", "1.1", "1.2", "--json"]) == 1
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["exit_code"] == 1 and document["operation"] == "able"
    first, second, third = document["results"]
    assert first == {
        "target": "1.0",
        "operation": "able",
        "ok": True,
        "able": True,
        "in_progress": False,
        "in_progress_since": 0,
        "began_at": None,
        "text": "Yes",
    }
    assert second["ok"] is True and second["able"] is False and second["text"] == "No"
    assert second["disabled"]["code"] == 2037
    assert third["ok"] is False and third["error"]["name"] == "ESLURM_ACCESS_DENIED"
    assert third["error"]["code"] == 2002 and third["error"]["exit_code"] == 1
    assert err.count("\n") == 1


def test_historical_syntax_calls_the_same_operations(
    facade: RecordingFacade, sckpt: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sckpt(["checkpoint", "CR", "9.1", "maxwait=4", "imagedir=/d"]) == 0
    assert sckpt(["ch", "va", "9"]) == 0
    assert sckpt(["CHECKPOINT", "RES", "9", "Stick"]) == 0
    assert sckpt(["checkpoint", "d", "9.1"]) == 0
    assert sckpt(["checkpoint", "en", "9.1"]) == 0
    # scontrol printed nothing for the mutating operations
    assert capsys.readouterr().out == ""
    facade.answers = {"able": Disabled(), "error": CheckpointError(0, "SLURM_SUCCESS", "No error")}
    assert sckpt(["checkpoint", "a", "9.1"]) == 0
    assert sckpt(["checkpoint", "er", "9.1"]) == 0
    assert capsys.readouterr().out == "No\nerror(0): No error\n"
    assert facade.calls[:5] == [
        ("create", "9.1", {"max_wait": 4, "image_dir": "/d"}),
        ("vacate", "9", {"max_wait": None, "image_dir": None}),
        ("restart", "9", {"stick": True, "image_dir": None, "force": False}),
        ("disable", "9.1", {}),
        ("enable", "9.1", {}),
    ]


def test_an_unexpected_exception_is_one_line_and_exit_1(
    facade: RecordingFacade, sckpt: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    facade.answers = {"enable": ZeroDivisionError("boom")}
    assert sckpt(["enable", "1"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "sckpt: internal error: ZeroDivisionError: boom (run with --debug for the traceback)\n"
    )
    assert sckpt(["--debug", "enable", "1"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_keyboard_interrupt_exits_130(
    facade: RecordingFacade, sckpt: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    facade.answers = {"enable": KeyboardInterrupt()}
    assert sckpt(["enable", "1"]) == 130
    assert capsys.readouterr().err == "sckpt: interrupted\n"


def test_ls_on_a_stale_snapshot_prints_what_it_has_and_exits_3(
    facade: RecordingFacade,
    sckpt: Main,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sckpt.backend.model import Snapshot

    stale = Snapshot(jobs=(), taken_at=0.0, stale=True, error="slurmctld did not answer")
    monkeypatch.setattr(RecordingFacade, "snapshot", lambda self: stale, raising=False)
    assert sckpt(["ls", "--json"]) == 3
    out, err = capsys.readouterr()
    assert json.loads(out)["stale"] is True
    assert err == "sckpt: cannot reach Slurm: slurmctld did not answer\n"
    for text_form in (["ls"], ["ls", "--steps"]):
        # No data at all: no empty table (it would read as "no jobs"), the error alone.
        assert sckpt(text_form) == 3
        assert capsys.readouterr() == ("", "sckpt: cannot reach Slurm: slurmctld did not answer\n")


def test_after_slurm_does_not_answer_the_remaining_targets_are_not_attempted(
    facade: RecordingFacade, sckpt: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    facade.answers = {"disable 2.0": ControllerUnreachable()}
    assert sckpt(["disable", "1.0", "2.0", "3.0", "4.0", "--json"]) == 3
    out, err = capsys.readouterr()
    assert [call[1] for call in facade.calls] == ["1.0", "2.0"]  # no wait per later target
    results = json.loads(out)["results"]
    assert [r["ok"] for r in results] == [True, False, False, False]
    assert results[2]["error"]["kind"] == "NotAttempted" and results[2]["error"]["exit_code"] == 3
    lines = err.splitlines()
    assert len(lines) == 3 and lines[1].startswith("sckpt: disable 3.0: not attempted: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["create", "184201.0", "--max-wait", "70000"],
        ["hold", "184201.0"],
        ["create", "184201.0", "--bogus"],
        ["ls", "usr:bob"],
    ],
)
def test_every_json_refusal_prints_the_document(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--json`` usage errors printed only their stderr line, while other refusals gave a
    script its document with ``"name": "USAGE"``."""
    code = cli.main(["--demo", "--json", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith("sckpt: ")
    document = json.loads(out)
    assert document["exit_code"] == 2 and document["operation"] == argv[0]
    assert document["error"]["name"] == "USAGE" and document["error"]["code"] is None
    assert document["error"]["message"] in err
