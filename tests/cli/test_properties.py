"""Property tests: no argv makes sckpt crash, and invalid input never reaches the backend.

Arbitrary argv (commands, options and values mixed with random text, lone surrogates as
non-UTF-8 bytes arrive, control characters) is run in-process against the simulated
cluster.  For every example:

* the exit code is 0, 1, 2 or 3;
* stderr has no traceback unless ``--debug`` was given, and each of its lines is one
  ``sckpt: ...`` message;
* a usage error (exit 2) leaves the audit log untouched: nothing was attempted;
* no audit line ever records a USAGE refusal: the facade never saw input the command line
  should have refused (its own validation is the second line of defence, not the first).

Real engines cannot be reached from here: the facade factory ``main`` is given binds a
simulated cluster whatever ``--engine`` says, and the console and ``sckpt run``'s wrapper
(which would execute a random program) are stubs; both have their own tests.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sckpt.backend.facade import open_facade
from sckpt.backend.operations import NAMES
from sckpt.backend.simulator import ManualClock, SimulatedCluster

from sckpt import cli

from .conftest import CliEnv

WORDS = [
    *cli.COMMANDS,
    "ch",
    "CHECK",
    "cr",
    "va",
    "re",
    "res",
    "a",
    "d",
    "en",
    "er",
    "co",
    "MaxWait=5",
    "maxwait=x",
    "ImageDir=/scratch/ck",
    "ImageDir=rel",
    "StickToNodes",
    "--demo",
    "--read-only",
    "--json",
    "--debug",
    "--as-user",
    "root",
    "alice",
    "bob",
    "--engine",
    "live",
    "native",
    "simulated",
    "--config",
    "--step",
    "--max-wait",
    "--image-dir",
    "--stick",
    "--nodelist",
    "--error-code",
    "--error-msg",
    "--begin-time",
    "now",
    "-s",
    "--steps",
    "-u",
    "--user",
    "--state",
    "R",
    "all",
    "--job",
    "--partition",
    "--mine",
    "--all",
    "-H",
    "--ckpt",
    "disabled",
    "bash",
    "zsh",
    "--",
    "-",
    "10",
    "0",
    "65536",
    "-1",
    "/tmp/x",
    "/a/../b",
    "cn001",
    "n[1-3]",
    "1.0",
    "1.batch",
]

_JOB_IDS = st.integers(min_value=0, max_value=2**33).map(str)
_TARGETS = st.builds(
    lambda job, step: f"{job}.{step}",
    st.integers(min_value=0, max_value=200_000),
    st.one_of(
        st.integers(min_value=0, max_value=5).map(str),
        st.sampled_from(["batch", "extern", "interactive", "x", ""]),
    ),
)
_SURROGATES = st.text(
    alphabet=st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF), min_size=1, max_size=3
)
_WORD = st.one_of(
    st.sampled_from(WORDS),
    _JOB_IDS,
    _TARGETS,
    st.text(max_size=12),
    st.text(alphabet=st.characters(max_codepoint=0x9F), max_size=6),
    _SURROGATES,
)
ARGV = st.lists(_WORD, max_size=8)


def _no_console(facade: Any, settings: Any, *, focus: Any) -> int:
    return 0


@pytest.fixture
def bounded(cli_env: CliEnv, tmp_path: Path) -> tuple[CliEnv, SimulatedCluster]:
    """Simulated cluster for every engine name; a stub for the console; tmp config."""
    cluster = SimulatedCluster(seed=5, n_jobs=30, clock=ManualClock(), arrivals=False)
    cli_env.inject.update(
        facade_factory=functools.partial(open_facade, cluster=cluster),
        console=_no_console,
        missing_terminal=lambda: "",  # pytest holds stdout
        wrapper=lambda words: 0,  # never run random programs
    )
    return cli_env, cluster


def _audit(env: CliEnv) -> list[dict[str, Any]]:
    """Both logs: the real one and the one ``--demo`` writes apart."""
    return env.audit() + env.audit(demo=True)


def _check(env: CliEnv, argv: list[str]) -> None:
    before = len(_audit(env))
    result = env.run(*argv)
    event(f"exit {result.code}")
    assert result.code in (0, 1, 2, 3), (argv, result)
    if "--debug" not in argv:
        assert "Traceback" not in result.err, (argv, result.err)
        for line in result.err.splitlines():
            assert line.startswith("sckpt: "), (argv, result.err)
    audit = _audit(env)
    if result.code == 2:
        assert len(audit) == before, (argv, audit[before:])
    assert all(line["result"]["name"] != "USAGE" for line in audit), (argv, audit)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=ARGV)
def test_arbitrary_argv_never_crashes_and_never_passes_bad_input_on(
    bounded: tuple[CliEnv, SimulatedCluster], argv: list[str]
) -> None:
    _check(bounded[0], argv)


_ACTION_ARGV = st.builds(
    lambda command, targets, options: [command, *targets, *options],
    st.sampled_from(NAMES),
    st.lists(
        st.one_of(_TARGETS, _JOB_IDS, st.sampled_from(["184201", "184201.0"])),
        min_size=1,
        max_size=3,
    ),
    st.lists(st.sampled_from(WORDS[30:]) | st.text(max_size=8), max_size=4),
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=_ACTION_ARGV)
def test_actions_with_random_targets_and_options(
    bounded: tuple[CliEnv, SimulatedCluster], argv: list[str]
) -> None:
    _check(bounded[0], argv)


_HISTORICAL = st.builds(
    lambda keyword, op, target, rest: [keyword, op, target, *rest],
    st.sampled_from(["checkpoint", "ch", "CHECKPOINT", "check"]),
    st.one_of(
        st.sampled_from(["a", "d", "en", "cr", "va", "re", "res", "er", "co", "x"]),
        st.text(max_size=6),
    ),
    st.one_of(_TARGETS, _JOB_IDS, st.text(max_size=8)),
    st.lists(
        st.one_of(
            st.sampled_from(["MaxWait=5", "ImageDir=/ck", "StickToNodes", "stick"]),
            st.builds(lambda v: f"MaxWait={v}", st.text(max_size=6)),
            st.builds(lambda v: f"ImageDir={v}", st.text(max_size=10)),
        ),
        max_size=3,
    ),
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(argv=_HISTORICAL)
def test_historical_syntax_with_random_words(
    bounded: tuple[CliEnv, SimulatedCluster], argv: list[str]
) -> None:
    _check(bounded[0], argv)
