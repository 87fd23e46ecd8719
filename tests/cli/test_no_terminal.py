"""A console started without a terminal refuses at once (``cli/terminal.py``).

It used to write escape codes into the pipe and never exit (still running after 10 minutes):
``sckpt --demo </dev/null``, ``sckpt --demo 184201 | head``, cron, ``ssh host sckpt``.  Real
processes, each with a timeout, since a hang is the failure.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCKPT = Path(sys.executable).with_name("sckpt")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text(f'audit_log = "{tmp_path / "audit.log"}"\n')
    return {**os.environ, "SCKPT_CONFIG": str(config), "TERM": "xterm-256color"}


def _timed(argv: list[str], env: dict[str, str], **streams: object) -> tuple[float, object]:
    started = time.monotonic()
    done = subprocess.run(argv, env=env, timeout=20, check=False, **streams)  # type: ignore[call-overload]
    return time.monotonic() - started, done


def _baseline(env: dict[str, str]) -> float:
    """How long this machine takes to start sckpt at all (``--version``)."""
    elapsed, _ = _timed([str(SCKPT), "--version"], env, capture_output=True)
    return elapsed


def test_no_terminal_at_all_is_one_line_and_status_2(env: dict[str, str]) -> None:
    for argv in ([str(SCKPT), "--demo"], [str(SCKPT), "--demo", "184201"]):
        base = _baseline(env)
        elapsed, done = _timed(argv, env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        assert done.returncode == 2, done  # type: ignore[attr-defined]
        assert done.stdout == "", done  # type: ignore[attr-defined]
        err = done.stderr  # type: ignore[attr-defined]
        assert err.count("\n") == 1 and "\x1b" not in err, err
        assert err.startswith("sckpt: the console needs a terminal (stdin, stdout and stderr")
        assert "'sckpt ls'" in err and "--json" in err and "ssh -t" in err
        assert elapsed < base + 1.0, (elapsed, base)


def test_stdout_into_a_pipe_from_a_terminal_is_refused(env: dict[str, str]) -> None:
    # ``sckpt --demo 184201 | head`` typed at a terminal: stdin and stderr are the terminal.
    main, child = pty.openpty()
    try:
        base = _baseline(env)
        elapsed, done = _timed(
            [str(SCKPT), "--demo", "184201"],
            env,
            stdin=child,
            stderr=child,
            stdout=subprocess.PIPE,
        )
        assert done.returncode == 2 and done.stdout == b""  # type: ignore[attr-defined]
        os.set_blocking(main, False)
        said = os.read(main, 4096).decode()
        assert said.startswith("sckpt: the console needs a terminal (stdout is not one)"), said
        assert said.count("\n") == 1 and "\x1b" not in said, said
        assert elapsed < base + 1.0, (elapsed, base)
    finally:
        os.close(main)
        os.close(child)


NO_CONFIG = """
import importlib
import sys
from pathlib import Path

from sckpt import cli

_binding = importlib.import_module("sckpt.backend.libslurm.config_source")

_binding.DEFAULT_CONF = Path(sys.argv[1]) / "slurm.conf"
_binding.CONFIGLESS_CACHE = Path(sys.argv[1]) / "cache.conf"
sys.exit(cli.main(["ls"]))
"""
"""``sckpt ls`` where no Slurm configuration exists, in a process of its own: libslurm's
binding is loaded once per process, so in the test session's own process an earlier test's
binding would answer instead (this test failed only in the whole suite)."""


def test_the_unreachable_slurm_line_has_no_nested_parentheses(
    env: dict[str, str], tmp_path: Path
) -> None:
    # "... does not exist (set SLURM_CONF=/path/to/slurm.conf (or use `sckpt --demo`))"
    clean = {k: v for k, v in env.items() if k not in ("SLURM_CONF", "SLURM_CONF_SERVER")}
    done = subprocess.run(
        [sys.executable, "-c", NO_CONFIG, str(tmp_path / "none")],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, (done.stdout, done.stderr)
    err = done.stderr
    assert err.startswith("sckpt: cannot reach Slurm: no Slurm configuration"), err
    assert "or use `sckpt --demo`" in err
    depth, deepest = 0, 0
    for char in err:
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
    assert deepest == 1, err
