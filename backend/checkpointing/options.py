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
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from .. import rules
from ..arguments import (
    DEFAULT_MAX_RESTARTS,
    validate_duration,
    validate_every,
    validate_restarts,
)
from ..audit import AuditLog, monotonic
from ..config import Settings, environment, load_settings
from ..errors import ConfigError, ReadOnlyError, SckptError, UsageError
from ..model import STEP_BATCH, StepId
from .policy import check_before_end_limit, policy_of
from .protocol import DEFAULT_SIGNAL, DEFAULT_WAKE, AutoPolicy

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


POLICY_OPTIONS = ("--every", "--before-end", "--max-restarts")


class _Parser(argparse.ArgumentParser):
    """``sckpt run``'s parser: a mistake is one line and exit 2 (``UsageError``), as every
    other refusal of the wrapper, not argparse's usage block."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def policy_words(argv: Sequence[str]) -> list[str]:
    """``--every -5m`` as ``--every=-5m`` (before ``--``): argparse would take a value that
    starts with a dash for another option, and say only "expected one argument"; joined,
    the value is checked and refused by what it is."""
    words = list(argv)
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            return out + words[i:]
        value = words[i + 1] if i + 1 < len(words) else ""
        if word in POLICY_OPTIONS and value.startswith("-") and value != "--":
            out.append(f"{word}={value}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def build_parser() -> argparse.ArgumentParser:
    """The options of ``sckpt run`` (also used by the CLI's ``run`` sub-command)."""
    parser = _Parser(
        prog="sckpt run",
        description="Run PROGRAM as a checkpoint-capable Slurm task (the successor of srun_cr).",
    )
    _wrapper_options(parser)
    _policy_options(parser)
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


def _wrapper_options(parser: argparse.ArgumentParser) -> None:
    """How the wrapper runs its program: signals, where state and images go, and DMTCP."""
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
        help="checkpoint PROGRAM without its cooperation, under DMTCP: it need not catch "
        "any signal (the project's README, 'Checkpoint any program')",
    )
    parser.add_argument(
        "--coordinator",
        choices=("step", "task"),
        default="step",
        help="with --transparent: one DMTCP coordinator for the whole step (default: its "
        "tasks may talk to each other; a checkpoint is one cut of every task) or one per "
        "task (tasks must not talk through sockets)",
    )
    parser.add_argument(
        "--gzip",
        action="store_true",
        help="with --transparent: compress the images (smaller, but slower to write)",
    )


def _policy_options(parser: argparse.ArgumentParser) -> None:
    """The step's automatic checkpoints (``POLICY_OPTIONS``), from argv or the environment."""
    parser.add_argument(
        "--every",
        metavar="DURATION",
        default=None,
        help="checkpoint every DURATION by itself (90s, 30m, 2h), or 'auto': the interval "
        "that wastes least, sqrt(2 x checkpoint time x MTBF) (default: $SCKPT_EVERY, else "
        "the config's [auto] every, else none)",
    )
    parser.add_argument(
        "--before-end",
        metavar="DURATION",
        default=None,
        help="checkpoint every task DURATION before the job's end time, then requeue a "
        "batch job so it continues from that image (default: $SCKPT_BEFORE_END, else "
        "[auto] before_end, else none)",
    )
    parser.add_argument(
        "--max-restarts",
        metavar="N",
        default=None,
        help="end a --before-end chain once Slurm's restart count reaches N (default: "
        f"$SCKPT_MAX_RESTARTS, else [auto] max_restarts, else {DEFAULT_MAX_RESTARTS})",
    )


def run_policy(args: argparse.Namespace, settings: Settings) -> AutoPolicy:
    """The automatic-checkpoint policy ``sckpt run`` starts with: each value from its
    option, else ``$SCKPT_*`` (a batch script's), else the config's ``[auto]``.

    A bad value is a ``UsageError`` (one line, exit 2) before anything starts.
    """
    env = environment()

    def pick(option: str | None, variable: str | None, name: str) -> tuple[object, str]:
        if option is not None:
            return option, f"--{name}"
        if variable is not None:
            return variable, f"$SCKPT_{name.upper().replace('-', '_')}"
        return None, name

    every, where = pick(args.every, env.every, "every")
    every_s = validate_every(every, where) if every is not None else settings.auto_every
    end, where = pick(args.before_end, env.before_end, "before-end")
    end_s = validate_duration(end, where) if end is not None else settings.auto_before_end
    cap, where = pick(args.max_restarts, env.max_restarts, "max-restarts")
    cap_n = validate_restarts(cap, where) if cap is not None else settings.auto_max_restarts
    return policy_of(every_s, end_s, cap_n, settings.auto_mtbf, "sckpt run")


def check_before_end(job_id: int, before_end: int) -> None:
    """Refuse a ``--before-end`` that cannot work, before the program starts: one as long as
    the job's time limit (the checkpoint would come at once, and again after every
    requeue).  A job Slurm cannot requeue (not a batch job) is checkpointed before its end
    but not requeued, and told so."""
    facts = job_facts(job_id)
    if facts is None:
        note("--before-end: the controller did not say when this job ends; asking again later")
        return
    check_before_end_limit(before_end, facts.time_limit, job_id, "--before-end")
    refusal = rules.batch_only(job_id, facts.batch)
    if refusal:
        note(f"--before-end: {refusal}: its tasks are checkpointed before its end, then it ends")


def step_from_env() -> StepId | None:
    """The step this task belongs to, from Slurm's environment (None outside a job)."""
    job = os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID")
    if not job or not job.isdigit():
        return None
    step_text = os.environ.get("SLURM_STEP_ID") or os.environ.get("SLURM_STEPID")
    step = int(step_text) if step_text and step_text.isdigit() else STEP_BATCH
    if step >= 0xFFFFFFF0:
        step = STEP_BATCH
    array_job = os.environ.get("SLURM_ARRAY_JOB_ID", "")
    array_task = os.environ.get("SLURM_ARRAY_TASK_ID", "")
    if array_job.isdigit() and array_task.isdigit():  # named as squeue names it: 9_1.0
        return StepId(int(job), step, array_job_id=int(array_job), array_task_id=int(array_task))
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
    facts = job_facts(job_id)
    return facts.work_dir if facts is not None and facts.work_dir else str(Path.cwd())


@dataclass(frozen=True)
class JobFacts:
    """What the controller says of the wrapper's job (``scontrol show job``), for the
    automatic checkpoints: when it ends, whether it can be requeued, whether a preemption
    is under way.  The controller, not the submit options: ``--time-min`` and
    ``scontrol update TimeLimit=`` move the end time."""

    end_time: int = 0
    """0: unknown (pending, or no limit)."""
    time_limit: int = 0
    """Seconds; 0: unlimited or unknown."""
    batch: bool = False
    requeue: bool = False
    preempted: bool = False
    """A preemption has begun (``PreemptTime`` is set): the end time is now + GraceTime."""
    preempt_time: int = 0
    partition: str = ""
    restarts: int = 0
    work_dir: str = ""
    state: str = ""


def job_facts(job_id: int) -> JobFacts | None:
    """``scontrol show job -o JOB`` read into ``JobFacts``; None when it cannot be asked
    (no scontrol on the node, a controller that does not answer in 20 s)."""
    try:
        out = subprocess.run(
            ["scontrol", "show", "job", "-o", str(job_id)],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_job_facts(out) if "JobId=" in out else None


def parse_job_facts(line: str) -> JobFacts:
    """One ``scontrol show job -o`` line -> ``JobFacts`` (fields it lacks stay unknown)."""

    def field(key: str) -> str:
        match = re.search(rf"(?:^|\s){key}=(\S*)", line)
        return match.group(1) if match else ""

    restarts = field("Restarts")
    return JobFacts(
        end_time=slurm_time(field("EndTime")),
        time_limit=slurm_duration(field("TimeLimit")),
        batch=field("BatchFlag") == "1",
        requeue=field("Requeue") == "1",
        preempted=field("PreemptTime") not in ("", "None", "Unknown"),
        preempt_time=slurm_time(field("PreemptTime")),
        partition=field("Partition"),
        restarts=int(restarts) if restarts.isdigit() else 0,
        work_dir=field("WorkDir"),
        state=field("JobState"),
    )


def slurm_time(text: str) -> int:
    """``2026-11-27T12:00:00`` (the controller's local time) -> Unix seconds; 0 for
    ``Unknown``, ``None`` or anything else."""
    try:
        return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))
    except (ValueError, OverflowError):
        return 0


def slurm_duration(text: str) -> int:
    """``[D-]HH:MM:SS`` or ``MM:SS`` -> seconds; 0 for ``UNLIMITED`` and anything else."""
    days, _, clock = text.rpartition("-")
    parts = clock.split(":")
    if not clock or not all(p.isdigit() for p in parts) or not 2 <= len(parts) <= 3:
        return 0
    if days and not days.isdigit():
        return 0
    numbers = [int(p) for p in parts]
    if len(numbers) == 2:
        numbers.insert(0, 0)
    hours, minutes, seconds = numbers
    return (int(days or 0) * 24 + hours) * 3600 + minutes * 60 + seconds


def note(message: str) -> None:
    sys.stderr.write(f"sckpt run: {message}\n")
    sys.stderr.flush()
