"""The parser: usage errors are one line and exit 2, before any facade is opened."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sckpt.cli.parser import normalize

from sckpt import cli

from ..conftest import IN_CI


class BackendReached(AssertionError):
    """Raised if a command got as far as opening a facade."""


Main = Callable[[list[str]], int]


@pytest.fixture
def no_backend() -> Iterator[Main]:
    """``sckpt`` that fails loudly if the command under test opens a facade (or the doctor)."""
    opened: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        opened.append(repr((args, kwargs)))
        raise BackendReached("the backend was reached")

    yield lambda argv: cli.main(argv, facade_factory=refuse, doctor=refuse)
    assert opened == []


BAD_USAGE = [
    ["bogus"],
    ["create"],
    ["create", "12x"],
    ["create", "0"],
    ["create", "12.foo"],
    ["create", "12", "--max-wait", "65536"],
    ["create", "12", "--max-wait", "-1"],
    ["create", "12", "--max-wait", "ten"],
    ["create", "12", "--image-dir", "relative/dir"],
    ["create", "12", "--image-dir", "/a/../b"],
    ["create", "12", "--image-dir", "/a\nb"],
    ["create", "12", "--stick"],
    ["vacate", "12", "--nodelist", "n1"],
    ["restart", "12", "--max-wait", "3"],
    ["able", "12", "--image-dir", "/x"],
    ["able", "1", "2", "bad"],  # one bad target: nothing acts
    ["tasks", "12"],  # --nodelist is required
    ["tasks", "12", "--nodelist", "node;rm -rf /"],
    ["complete", "12", "--error-code", "x"],
    ["complete", "12", "--error-code", "4294967296"],
    ["complete", "12", "--error-msg", "a\x1bb"],
    ["complete", "12", "--begin-time", "yesterday"],
    ["ls", "--state", "RUNNINGX"],
    ["ls", "--job", "12.3"],
    ["ls", "--ckpt", "sometimes"],
    ["ls", "--bogus"],
    ["--engine", "magic", "ls"],
    ["--step", "abc"],
    ["abc.def"],
    ["12.x"],
    ["--step", "12.1", "ls"],
    ["checkpoint"],
    ["checkpoint", "x", "12"],
    ["checkpoint", "able"],
    ["checkpoint", "able", "12", "extra"],
    ["checkpoint", "create", "12", "MaxWait=abc"],
    ["checkpoint", "create", "12", "ImageDir=rel"],
    ["checkpoint", "create", "12x"],
    ["checkpoint", "requeue", "12"],
    ["ch", "re", "12"],
    ["completion"],
    ["completion", "fish"],
    ["--config"],
    ["--as-user"],
]


@pytest.mark.parametrize("argv", BAD_USAGE, ids=lambda a: " ".join(a) or "<empty>")
def test_bad_usage_exits_2_with_one_line_and_never_opens_the_backend(
    argv: list[str], no_backend: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    assert no_backend(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("sckpt: ")
    assert "Traceback" not in err


def test_debug_adds_the_traceback(no_backend: Main, capsys: pytest.CaptureFixture[str]) -> None:
    assert no_backend(["--debug", "create", "12x"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("sckpt: invalid job")


def test_debug_traceback_of_an_undecodable_argument_is_printed_not_raised(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A byte that is not UTF-8 reaches Python as a lone surrogate; a strict stderr (pytest's,
    # a pipe with PYTHONIOENCODING=utf-8) once raised while printing --debug's traceback.
    # (doctor takes no word: ls now takes filter words)
    assert cli.main(["doctor", "--debug", "\udc80"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "\\udc80" in err and err.rstrip().endswith("--help')")


def test_help_and_version_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    for command in cli.COMMANDS:
        assert command in text
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("sckpt ")
    for command in cli.COMMANDS:
        assert cli.main([command, "--help"]) == 0
        assert "usage: sckpt " + command in capsys.readouterr().out


def test_no_help_prints_a_doubled_percent(capsys: pytest.CaptureFixture[str]) -> None:
    # argparse %-formats help strings but prints a description as written: a "%%" meant for
    # the former showed literally in "ls --help".
    for command in ["", *cli.COMMANDS]:
        assert cli.main([command, "--help"] if command else ["--help"]) == 0
        text = capsys.readouterr().out
        assert "%%" not in text, command
    assert cli.main(["ls", "--help"]) == 0
    assert "(%= or Checkpoint" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["12.3"], ["--step", "12.3"]),
        (["--demo", "12"], ["--demo", "--step", "12"]),
        (["--as-user", "root", "12.batch"], ["--as-user", "root", "--step", "12.batch"]),
        (["CH", "able", "12"], ["checkpoint", "able", "12"]),
        (["--demo", "check", "cr", "1"], ["--demo", "checkpoint", "cr", "1"]),
        (["ls", "12"], ["ls", "12"]),
        (["create", "12"], ["create", "12"]),
        (["--config", "12", "ls"], ["--config", "12", "ls"]),
        ([], []),
    ],
)
def test_rewrite_maps_console_targets_and_the_checkpoint_keyword(
    argv: list[str], expected: list[str]
) -> None:
    assert normalize(argv) == expected


def test_bash_completion_is_valid_and_completes_commands_and_options(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    assert cli.main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    probe = (
        script
        + '\nCOMP_WORDS=(sckpt cr); COMP_CWORD=1; _shtab_sckpt; echo "${COMPREPLY[*]}"'
        + '\nCOMP_WORDS=(sckpt create --ma); COMP_CWORD=2; _shtab_sckpt; echo "${COMPREPLY[*]}"'
        + '\nCOMP_WORDS=(sckpt ls --st); COMP_CWORD=2; _shtab_sckpt; echo "${COMPREPLY[*]}"'
        + "\nCOMP_WORDS=(sckpt completion ''); COMP_CWORD=2; _shtab_sckpt;"
        + ' echo "${COMPREPLY[*]}"'
        + '\nCOMP_WORDS=(sckpt ls -t P); COMP_CWORD=3; _shtab_sckpt; echo "${COMPREPLY[*]}"'
        + '\nCOMP_WORDS=(sckpt ls --ckpt in); COMP_CWORD=3; _shtab_sckpt; echo "${COMPREPLY[*]}"'
    )
    answer = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    lines = answer.stdout.splitlines()
    assert lines[0].split() == ["create"]
    assert lines[1].split() == ["--max-wait"]
    assert set(lines[2].split()) == {"--start", "--state", "--steps"}  # squeue's three
    assert set(lines[3].split()) == {"bash", "zsh"}
    # the values of -t and --ckpt (an operator reached for them)
    assert set(lines[4].split()) == {"PD", "PR", "PENDING", "PREEMPTED"}
    assert lines[5].split() == ["in_progress"]


def test_zsh_completion_defines_the_function(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["completion", "zsh"]) == 0
    script = capsys.readouterr().out
    assert script.startswith("#compdef sckpt")
    for command in cli.COMMANDS:
        assert f"\n        {command}) _arguments" in script
    zsh = shutil.which("zsh")
    if zsh is None:
        if IN_CI:  # scripts/test installs zsh
            pytest.fail("zsh is missing in CI: scripts/test should have installed it")
        pytest.skip("zsh is not installed: checked the script's text only")
    checked = subprocess.run(
        [
            zsh,
            "-f",
            "-c",
            'autoload -U compinit && compinit -u -D && eval "$1" '
            "&& print ${+functions[_shtab_sckpt]}${+functions[_sckpt_states]}"
            "${+functions[_sckpt_ckpt_words]}",
            "zsh",
            script,
        ],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "111"  # the completion and the two value functions


def test_run_hands_every_word_after_it_to_the_wrapper() -> None:
    seen: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        seen.append(list(argv))
        return 42  # the wrapper exits like its program: any status passes through

    words = ["--signal", "USR2", "--poll", "0.5", "--", "./app", "--json", "12.3"]
    assert cli.main(["run", *words], wrapper=fake_main) == 42
    assert cli.main(["--engine", "native", "run", "--", "true"], wrapper=fake_main) == 42
    assert seen == [words, ["--", "true"]]
    # --demo was ignored and the program ran for real: refused (tests/cli/test_help_words.py)
    assert cli.main(["--demo", "run", "--", "true"], wrapper=fake_main) == 2
    assert len(seen) == 2


def test_run_keeps_the_global_options_given_before_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--read-only and --config before ``run`` reach the wrapper; nonsense there is refused."""
    seen: list[list[str]] = []

    def wrapper(argv: list[str]) -> int:
        seen.append(list(argv))
        return 0

    argv = ["--read-only", "--config", "/x.toml", "run", "--", "true"]
    assert cli.main(argv, wrapper=wrapper) == 0
    assert seen == [["--read-only", "--config", "/x.toml", "--", "true"]]
    assert cli.main(["--as-user", "root", "run", "--", "true"], wrapper=wrapper) == 2
    assert "--as-user cannot be used with 'sckpt run'" in capsys.readouterr().err
    assert cli.main(["--step", "12.0", "run", "--", "true"], wrapper=wrapper) == 2
    assert len(seen) == 1


def test_run_without_a_program_is_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run"]) == 2
    assert "usage: sckpt run" in capsys.readouterr().err
    assert cli.main(["run", "--help"]) == 0


def test_the_console_gets_the_facade_the_flags_ask_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from pathlib import Path

    from sckpt.backend.model import STEP_BATCH, StepId

    config = Path(str(tmp_path)) / "config.toml"
    config.write_text(f'audit_log = "{Path(str(tmp_path)) / "audit.log"}"\n[demo]\njobs = 5\n')
    monkeypatch.setenv("SCKPT_CONFIG", str(config))
    seen: list[tuple[str, bool, str, StepId | None]] = []

    def fake_console(facade: object, settings: object, *, focus: StepId | None = None) -> int:
        info = facade.info  # type: ignore[attr-defined]
        seen.append((info.engine, info.read_only, info.acting_user, focus))
        return 0

    def sckpt(*argv: str) -> int:  # pytest holds stdout: no terminal to refuse on
        return cli.main(list(argv), console=fake_console, missing_terminal=lambda: "")

    assert sckpt("--demo") == 0
    assert sckpt("--demo", "--read-only", "--as-user", "bob", "184201.batch") == 0
    assert sckpt("--demo", "--step", "12.3") == 0
    assert seen == [
        ("simulated", False, seen[0][2], None),
        ("simulated", True, "bob", StepId(184201, STEP_BATCH)),
        ("simulated", False, seen[0][2], StepId(12, 3)),
    ]
    assert capsys.readouterr().err == ""


def test_targets_complete_with_the_ids_squeue_lists(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    from pathlib import Path

    bin_dir = Path(str(tmp_path))
    fake = bin_dir / "squeue"
    # stands in for squeue: jobs without -s, steps with -s (as `squeue -h [-s] -o %i` prints)
    fake.write_text('#!/bin/sh\ncase "$*" in *-s*) echo 12.0; echo 12.batch;; *) echo 12;; esac\n')
    fake.chmod(0o755)
    assert cli.main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    probe = (
        script
        + '\nCOMP_WORDS=(sckpt vacate 12); COMP_CWORD=2; _shtab_sckpt; echo "${COMPREPLY[*]}"'
    )
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    answer = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, env=env)
    assert sorted(answer.stdout.split()) == ["12", "12.0", "12.batch"]
    assert cli.main(["completion", "zsh"]) == 0
    assert "_sckpt_targets() {" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("command", "sentence"),
    [
        ("able", "Say whether checkpoints can be issued (Yes, Began at <time>, No)."),
        ("vacate", "(a batch job is requeued held on modern Slurm)."),
        ("create", "Checkpoint and continue."),
    ],
)
def test_subcommand_help_keeps_the_case_of_the_summary(
    capsys: pytest.CaptureFixture[str], command: str, sentence: str
) -> None:
    # Only the first letter is upper-cased: str.capitalize() printed "(yes, began at <time>,
    # no)" and "modern slurm".
    assert cli.main([command, "--help"]) == 0
    assert sentence in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--demo", "craete", "1.0"], "unknown command 'craete': did you mean create?"),
        (["--demo", "create", "1.0", "--maxwait", "5"], "did you mean '--max-wait'?"),
        (["--demo", "create", "1.0", "--maxwait=5"], "did you mean '--max-wait'?"),
        (["ls", "--userr", "bob"], "unrecognized option '--userr': did you mean '--user'?"),
        (["--demo", "checkpoint", "e", "1.0"], "'e': ambiguous: enable, error"),
        (["--demo", "checkpoint", "craete", "1.0"], "'craete': did you mean create?"),
        (["checkpoint", "v", "1.0"], "'v': too short: type at least 'va' for vacate"),
    ],
)
def test_a_mistyped_command_option_or_operation_gets_the_nearest_name(
    argv: list[str], said: str, no_backend: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    assert no_backend(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and said in err, err


def test_a_word_near_no_command_still_lists_them_all(
    no_backend: Main, capsys: pytest.CaptureFixture[str]
) -> None:
    assert no_backend(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'frobnicate': expected one of able, error, create" in err


def test_read_only_run_outside_a_step_names_no_dash_target(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    # It printed "run - refused" (the audit log's "-" for no step) outside a Slurm job.
    from pathlib import Path

    for name in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_STEP_ID", "SLURM_STEPID"):
        monkeypatch.delenv(name, raising=False)
    config = Path(str(tmp_path)) / "config.toml"
    config.write_text(f'audit_log = "{Path(str(tmp_path)) / "audit.log"}"\n')
    assert cli.main(["--read-only", "--config", str(config), "run", "--", "true"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sckpt run: run refused: sckpt is in read-only mode; true was not")
    assert " - " not in err and err.count("(") == 1, err


def test_cancel_with_a_signal_says_the_signal_was_sent_not_cancel() -> None:
    from sckpt.backend.model import ActionResult, StepId
    from sckpt.cli.output import action_line

    signalled = ActionResult(StepId(42), "cancel", detail="signal SIGUSR1 sent")
    assert action_line(signalled) == "42: signal SIGUSR1 sent"
    assert action_line(ActionResult(StepId(42), "cancel")) == "42: cancel requested"
