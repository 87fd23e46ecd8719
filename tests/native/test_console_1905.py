"""The console on the real Slurm 19.05.8, in tmux: keys change what ``scontrol`` then answers.

The console is opened on the step (``sckpt JOB.STEP``, its step screen), so every key acts on
that step without navigating to it.

``d`` moves the step's disable counter up: ``scontrol checkpoint able`` answers ``No``.
``c`` while disabled is refused (ESLURM_DISABLED, shown in the console).  ``e``: the real
controller then answers ``Began at <time of the refused create>``, and the console shows
"in progress, began N s ago (<that same time> <zone>)": ``checkpoint/ompi`` stamps the
attempt before it checks the counter, and nothing completes it (the semantics would say
``Yes``; the controller wins).  ``c`` again is accepted: srun reports the attempt back,
``able`` is ``Yes`` again and ``scontrol checkpoint error`` carries srun's pid.
"""

from __future__ import annotations

import os
import re
import time

import pytest

from ..tmux import Tmux
from .conftest import SCKPT, Native

pytestmark = pytest.mark.slurm


def _able(native: Native, step: str) -> str:
    return native.scontrol("checkpoint", "able", step).stdout.strip()


def _checkpoint(screen: str) -> str:
    """The step screen's "Checkpoint" line, without its label."""
    line = next((ln for ln in screen.splitlines() if ln.strip().startswith("Checkpoint ")), "")
    return line.strip().removeprefix("Checkpoint").strip()


def test_console_keys_change_what_scontrol_answers(native: Native) -> None:
    job = native.submit_step_job()
    step = f"{job}.0"
    env = native.cluster.env()
    passed = [f"{k}={env[k]}" for k in ("SLURM_CONF", "SLURM_INCLUDE_DIR", "SLURM_LIB_DIR", "PATH")]
    passed += [
        f"SCKPT_CONFIG={native.home / 'config.toml'}",
        f"HOME={native.home / 'root'}",
        f"XDG_STATE_HOME={native.home / 'root' / 'state'}",
        f"XDG_CACHE_HOME={native.home / 'root' / 'cache'}",
        "TERM=xterm-256color",
        *([f"TZ={os.environ['TZ']}"] if "TZ" in os.environ else []),  # as scontrol's clock
    ]
    try:
        assert _able(native, step) == "Yes"
        # `sckpt JOB.STEP` opens the console on that step's screen: the keys act on it.
        with Tmux(f"{SCKPT} {step}; echo SCKPT-EXIT=$?; sleep 30", 80, 24, env=passed) as term:
            term.wait(lambda s: "native" in s and "Slurm 19.05.8" in s and _checkpoint(s) == "able")
            assert f"Step              {step}" in term.screen()

            term.keys("d")
            term.wait(lambda s: _checkpoint(s) == "disabled")
            assert _able(native, step) == "No"

            term.keys("c")
            term.wait(lambda s: f"Create {step}" in s)
            term.keys("Enter")
            term.wait(lambda s: "ESLURM_DISABLED" in s)
            assert native.scontrol("checkpoint", "error", step).stdout == "error(0): \n"

            term.keys("e")
            began = ""
            for _ in range(50):
                began = _able(native, step)
                if began.startswith("Began at "):
                    break
                time.sleep(0.2)
            assert began.startswith("Began at "), began
            clock = began.rsplit("T", 1)[-1]  # 2026-11-23T18:54:34 -> 18:54:34
            term.wait(
                lambda s: (
                    _checkpoint(s).startswith("in progress, began ")
                    and f" {clock} " in _checkpoint(s)
                )
            )

            term.keys("c")
            term.wait(lambda s: f"Create {step}" in s)
            term.keys("Enter")
            error = ""
            for _ in range(50):
                error = native.scontrol("checkpoint", "error", step).stdout
                if re.fullmatch(r"error\(0\): \d+\n", error):
                    break
                time.sleep(0.2)
            assert re.fullmatch(r"error\(0\): \d+\n", error), error
            term.wait(lambda s: _checkpoint(s) == "able")
            assert _able(native, step) == "Yes"

            term.keys("q")
            screen = term.wait(lambda s: "SCKPT-EXIT=" in s)
            assert "SCKPT-EXIT=0" in screen and "Traceback" not in screen
    finally:
        native.cancel(job)
