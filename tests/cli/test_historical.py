"""scontrol's historical ``checkpoint`` syntax: prefix matching, arguments, refusals."""

from __future__ import annotations

import pytest
from sckpt.backend.errors import UsageError
from sckpt.cli.historical import (
    HistoricalRequest,
    is_checkpoint_keyword,
    match_operation,
    parse_historical,
)

# (typed, resolved) pairs following scontrol 19.05: able/disable from 1 letter, others from 2,
# tried in scontrol's order, so "re" is requeue and "res" is restart.
MATCHES = [
    ("a", "able"),
    ("AB", "able"),
    ("Able", "able"),
    ("d", "disable"),
    ("DIS", "disable"),
    ("en", "enable"),
    ("ENABLE", "enable"),
    ("cr", "create"),
    ("Create", "create"),
    ("va", "vacate"),
    ("vAcAtE", "vacate"),
    ("re", "requeue"),
    ("req", "requeue"),
    ("res", "restart"),
    ("restart", "restart"),
    ("er", "error"),
    ("Error", "error"),
    ("co", "complete"),
]


@pytest.mark.parametrize(("typed", "resolved"), MATCHES)
def test_operation_prefixes_match_like_scontrol(typed: str, resolved: str) -> None:
    assert match_operation(typed) == resolved


@pytest.mark.parametrize("typed", ["", "e", "c", "v", "r", "x", "ablex", "creates", "errors", "q"])
def test_too_short_or_unknown_operations_are_refused(typed: str) -> None:
    with pytest.raises(UsageError, match="invalid checkpoint operation"):
        match_operation(typed)


@pytest.mark.parametrize("word", ["ch", "CH", "check", "Checkpoint", "CHECKPOINT"])
def test_checkpoint_keyword_matches_from_two_letters(word: str) -> None:
    assert is_checkpoint_keyword(word)


@pytest.mark.parametrize("word", ["c", "checkpoints", "chx", "able", "complete", "create"])
def test_other_words_are_not_the_checkpoint_keyword(word: str) -> None:
    assert not is_checkpoint_keyword(word)


def test_create_takes_maxwait_and_imagedir_in_any_case() -> None:
    request = parse_historical(["cr", "12.3", "maxwait=30", "IMAGEDIR=/scratch/ck"])
    assert request == HistoricalRequest("create", "12.3", max_wait="30", image_dir="/scratch/ck")


def test_vacate_takes_the_same_arguments() -> None:
    request = parse_historical(["VACATE", "12", "MaxWait=0", "ImageDir=/x"])
    assert request == HistoricalRequest("vacate", "12", max_wait="0", image_dir="/x")


@pytest.mark.parametrize("stick", ["StickToNodes", "stick", "STICKTO", "sticktonodes"])
def test_restart_takes_stick_to_nodes_abbreviated_to_five_letters(stick: str) -> None:
    request = parse_historical(["res", "12", stick, "ImageDir=/a/b"])
    assert request == HistoricalRequest("restart", "12", image_dir="/a/b", stick=True)


@pytest.mark.parametrize(
    "words",
    [
        ["res", "12", "Stic"],  # shorter than scontrol's 5 letters
        ["res", "12", "StickXYZ"],  # not StickToNodes
        ["res", "12", "MaxWait=3"],  # restart has no MaxWait
        ["cr", "12", "StickToNodes"],  # create has no stick
        ["able", "12", "MaxWait=3"],  # able takes nothing
        ["error", "12", "ImageDir=/x"],
        ["enable", "12", "x"],
        ["disable", "12", "x"],
        ["cr", "12", "MaxWait"],  # no '='
        ["cr", "12", "Image=/x"],
    ],
)
def test_arguments_an_operation_does_not_take_are_refused(words: list[str]) -> None:
    with pytest.raises(UsageError, match="invalid input"):
        parse_historical(words)


def test_requeue_is_refused_with_what_to_run_instead() -> None:
    with pytest.raises(UsageError, match=r"vacate JOB'.*restart JOB"):
        parse_historical(["requeue", "12", "MaxWait=5"])


def test_complete_points_to_the_modern_command() -> None:
    with pytest.raises(UsageError, match="sckpt complete TARGET --error-code"):
        parse_historical(["complete", "12"])


@pytest.mark.parametrize("words", [[], ["able"], ["cr"]])
def test_missing_operation_or_job_id_is_refused(words: list[str]) -> None:
    with pytest.raises(UsageError):
        parse_historical(words)
