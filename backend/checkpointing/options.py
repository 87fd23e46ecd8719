"""What ``sckpt run`` is given before it starts anything: its options and its job.

Its command line (``build_parser``, also behind the CLI's ``run``), the step it runs in
and the job's working directory (from Slurm's environment, else ``scontrol``), and the
read-only refusal, checked first so that a refused run leaves no trace but its audit line.
Standard library plus sckpt's config and audit modules, like the rest of the wrapper.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ..audit import AuditLog, monotonic
from ..config import Settings, environment, load_settings
from ..errors import ConfigError, ReadOnlyError, SckptError, UsageError
from ..model import STEP_BATCH, StepId
from .protocol import DEFAULT_SIGNAL, DEFAULT_WAKE

DEFAULT_POLL = 1.0
DEFAULT_GRACE = 2.0
"""A signal that arrives before the program installed its handler would kill it."""


def parse_signal(text: str) -> signal.Signals:
    """``USR1``, ``SIGUSR1`` or ``10`` -> the signal; ``UsageError`` otherwise."""
    value = text.strip().upper()
    try:
        if value.isdigit():
            sig = signal.Signals(int(value))
        else:
            sig = signal.Signals[value if value.startswith("SIG") else "SIG" + value]
    except (KeyError, ValueError):
        raise UsageError(f"unknown signal {text!r}: expected a name such as SIGUSR1") from None
    if sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
        raise UsageError(f"{sig.name} cannot be used here: expected a catchable signal")
    return sig


def build_parser() -> argparse.ArgumentParser:
    """The options of ``sckpt run`` (also used by the CLI's ``run`` sub-command)."""
    parser = argparse.ArgumentParser(
        prog="sckpt run",
        description="Run PROGRAM as a checkpoint-capable Slurm task (the successor of srun_cr).",
    )
    parser.add_argument(
        "--signal",
        default=environment().checkpoint_signal or DEFAULT_SIGNAL,
        help="signal that asks PROGRAM to checkpoint (default SIGUSR1)",
    )
    parser.add_argument(
        "--wake-signal",
        default=DEFAULT_WAKE,
        help="signal the console sends the step to wake the wrapper (default SIGURG)",
    )
    parser.add_argument(
        "--state-dir",
        default=None,
        help="where the step's state file lives (default: $SCKPT_STATE_DIR, else "
        "<job work dir>/.sckpt); consoles must look in the same place",
    )
    parser.add_argument(
        "--image-dir",
        default=None,
        help="root of the image directories (default: the job's working directory)",
    )
    parser.add_argument(
        "--name",
        default=None,
        help="the step's name for its images: <image root>/<job>.<name>/task<rank> "
        "(default: the program's name and a hash of its command line, the same in every "
        "run, so a restarted job's steps find their images whatever order they start in)",
    )
    parser.add_argument(
        "--poll",
        type=float,
        default=DEFAULT_POLL,
        help="seconds between two reads of the state file (default 1)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE,
        help="seconds after the program starts before it is sent a checkpoint signal "
        "(time to install its handler; default 2)",
    )
    parser.add_argument(
        "--transparent",
        action="store_true",
        help="checkpoint PROGRAM without its cooperation, under DMTCP "
        "(backend/checkpointing/transparent.py): it need not catch any signal",
    )
    parser.add_argument(
        "--gzip",
        action="store_true",
        help="with --transparent: compress the images (DMTCP's gzip; slower, see bench/README)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="refuse to run (also read_only = true in the config): the wrapper writes the "
        "step's state file and carries out checkpoint requests; the refusal is audited",
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        default=None,
        help="configuration file (default: $SCKPT_CONFIG, else the XDG config path)",
    )
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS")
    return parser


def step_from_env() -> StepId | None:
    """The step this task belongs to, from Slurm's environment (None outside a job)."""
    job = os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID")
    if not job or not job.isdigit():
        return None
    step_text = os.environ.get("SLURM_STEP_ID") or os.environ.get("SLURM_STEPID")
    step = int(step_text) if step_text and step_text.isdigit() else STEP_BATCH
    if step >= 0xFFFFFFF0:
        step = STEP_BATCH
    return StepId(int(job), step)


def refuse_if_read_only(flag: bool, config: str | None, program: Sequence[str]) -> Settings:
    """Raise ``ReadOnlyError`` (after auditing it) when read-only mode is on; else return
    the settings the wrapper then runs with (``keep_images``).

    Checked before anything else happens (no ``scontrol``, no state directory, no child), so
    a refused run leaves no trace but the audit line.  The config is read even without the
    flag because ``read_only = true`` there must mean the same as ``--read-only``.

    A config named with ``--config`` must load (``ConfigError``, exit 2).  One found through
    ``$SCKPT_CONFIG`` or the default path that cannot be read or is invalid only earns a
    warning: sbatch copies the submitter's environment into the job, so ``$SCKPT_CONFIG``
    may name a file the compute node or the job's user cannot read, and a job must not fail
    at start over the console's settings (its ``read_only`` is then unknown: not applied).
    """
    started = monotonic()
    try:
        settings = load_settings(config)
    except ConfigError as exc:
        if config is not None:
            raise
        note(f"{exc.message}; its read_only and audit_log settings are not applied")
        settings = Settings()
    if not (flag or settings.read_only):
        return settings
    step = step_from_env()
    target = str(step) if step is not None else "-"
    what = f"run {target}" if step is not None else "run"  # outside a step: no "run -"
    refused = ReadOnlyError(
        f"{what} refused: sckpt is in read-only mode; {program[0]} was not started, since "
        "sckpt run writes the step's state file and carries out checkpoint requests",
        "start it without --read-only, and with read_only = false in the config",
    )
    audit = AuditLog(settings.audit_log, settings.audit_required)
    try:
        reservation = audit.reserve()
    except SckptError as exc:  # a log failure never hides the refusal: say both
        refused.hint = f"{refused.hint}; the refusal is not audited: {exc.message}"
        raise refused from None
    record = audit.record(
        engine="wrapper",
        operation="run",
        target=target,
        arguments={"program": list(program)[:20]},
        code=None,
        name="READ_ONLY",
        message=refused.message,
        duration=monotonic() - started,
    )
    problem = audit.write(reservation, record)
    if problem:
        refused.hint = f"{refused.hint}; the refusal is not audited: {problem}"
    raise refused


def job_work_dir(job_id: int) -> str:
    """The job's working directory: ``$SCKPT_WORK_DIR``, else scontrol's WorkDir, else cwd."""
    given = environment().work_dir
    if given:
        return given
    try:
        out = subprocess.run(
            ["scontrol", "show", "job", "-o", str(job_id)],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        ).stdout
        match = re.search(r"\bWorkDir=(\S+)", out)
        if match:
            return match.group(1)
    except (OSError, subprocess.SubprocessError):
        pass
    return str(Path.cwd())


def note(message: str) -> None:
    sys.stderr.write(f"sckpt run: {message}\n")
    sys.stderr.flush()
