"""``sckpt run [options] -- PROGRAM ARGS``: the successor of ``srun_cr`` for modern Slurm.

It runs as a step's task (``srun sckpt run -- ./app``) or around a batch script's program,
starts PROGRAM as its child and stays beside it until it ends.  Standard library plus
sckpt's config and audit modules, so it starts fast on compute nodes and never pulls in the
console or libslurm.

What it does, and why this way:

* **Registers the task** in the step's state file (``backend/store.py``): job, step,
  ``SLURM_PROCID``, node, pid, the program's checkpoint signal and image directory.  A step
  whose state file lists a running task is what the cooperative engine calls
  checkpoint-capable.
* **Names the step** (``--name``, by default the program's name and a hash of its command
  line) and **tells the program where images go**: ``SCKPT_IMAGE_DIR`` (a per-task
  directory ``<image root>/<job>.<name>/task<procid>``), ``SCKPT_CKPT_DONE`` (the status
  file) and ``SCKPT_CKPT_SIGNAL``; and, when a complete image of this task exists (the job
  was requeued and restarted), ``SLURM_RESTART_DIR`` with that image, as srun_cr did.  The
  image is found by the step's name in the job's image index (``store.ImageIndex``), so
  steps launched in the background find their own images whatever ids they get; records
  written before names existed are still read by step id.
* **Never kills the program with a checkpoint.**  It reads what the program does with its
  checkpoint signal (``SigCgt`` in ``/proc/PID/status``) every poll and records it, so the
  console can say "program does not catch SIGUSR1" and refuse before anything is sent; and
  it looks again right before sending: a program that does not catch the signal is not
  sent it, and the request records ESLURM_NOT_SUPPORTED for that task instead.
* **Learns of a request two ways.**  The console cannot reach the wrapper directly, so the
  engine writes the request into the state file and then signals the step with the *wake*
  signal (default SIGURG).  ``slurm_signal_job_step`` signals every process of the step's
  container, the program included; SIGURG's default action is "ignore", so a program that
  knows nothing of it is unaffected, and the wrapper does not forward it.  The wrapper also
  re-reads the state file every ``--poll`` seconds, so a lost or refused signal only delays
  the checkpoint.
* **Forwards every catchable signal** to the program, except the wake signal, SIGCHLD, signals
  the kernel generated for the wrapper itself, and signals sent by ``slurmstepd`` (those
  reach the program directly through the container: forwarding them would deliver twice).
  Signals are taken synchronously with ``sigtimedwait``, which also gives the sender's pid.
* **Learns when the image is complete** from the status file the program writes
  (``0`` or ``<code> <message>``, one line), records the outcome (highest code kept) and the
  image as the last complete one.  If the operator named another ImageDir, the finished
  image is copied there (temporary name, then rename).  If the program ends mid-checkpoint,
  ECANCELED is recorded; the previous image is untouched because programs write under a
  temporary name and rename.
* **Exits like the program**: same status, or the same signal re-raised.
* **Is refused in read-only mode** (``--read-only``, before or after ``run``, or
  ``read_only = true`` in the config): registering the task writes the step's state file and
  the wrapper then carries out checkpoint requests, which is exactly what read-only mode
  promises not to do.  Running PROGRAM without checkpoint support instead was rejected: a job
  would then run for days with no checkpoint and nobody told.  The refusal is one line on
  stderr, exit status 1 (read-only's status everywhere), an audit line, and nothing started
  or written under the state directory.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .audit import AuditLog, monotonic
from .config import Settings, load_settings
from .errors import ESLURM_NOT_SUPPORTED, ConfigError, ReadOnlyError, SckptError, UsageError
from .model import MAX_TEXT, STEP_BATCH, StepId
from .store import (
    ABANDONED_CODE,
    HANDLER_CAUGHT,
    HANDLER_DEFAULT,
    HANDLER_IGNORED,
    ImageIndex,
    Request,
    StepRecord,
    StepStore,
    StoreError,
    TaskInfo,
    check_step_name,
    default_step_name,
    handler_blocker,
    image_leaf,
    job_stores,
    state_dir_for,
)

DEFAULT_SIGNAL = "SIGUSR1"
DEFAULT_WAKE = "SIGURG"
DEFAULT_POLL = 1.0
DEFAULT_GRACE = 2.0
"""A signal that arrives before the program installed its handler would kill it."""
ACTIVE_POLL = 0.05
"""How often the status file is looked at while a checkpoint runs."""
HANDLER_POLL = 0.1
HANDLER_WATCH = 10.0
"""A program that does not catch its signal yet is looked at every HANDLER_POLL seconds for
its first HANDLER_WATCH seconds (programs install their handler as they start), then at
every ``--poll``."""
ENV_IMAGE_DIR = "SCKPT_IMAGE_DIR"
ENV_DONE = "SCKPT_CKPT_DONE"
ENV_SIGNAL = "SCKPT_CKPT_SIGNAL"
ENV_RESTART = "SLURM_RESTART_DIR"
ENV_WORK_DIR = "SCKPT_WORK_DIR"

# Signals the kernel raises for a fault in this very process: never block them.
_SYNCHRONOUS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP}
_SENT_BY_PROCESS = {
    getattr(os, "SI_USER", 0),
    getattr(os, "SI_QUEUE", -1),
    getattr(os, "SI_TKILL", -6),
}


def signal_handler(pid: int, sig: signal.Signals) -> str:
    """What process ``pid`` does with ``sig`` now: ``caught``, ``ignored`` or ``default``.

    Read from ``/proc/PID/status`` (``SigCgt``, ``SigIgn``: hexadecimal masks, bit N-1 for
    signal N), which shows the program the process runs now, whatever it exec'd into.
    ``""`` when the process is gone or the file cannot be read.
    """
    masks: dict[str, int] = {}
    try:
        with Path(f"/proc/{pid}/status").open(encoding="ascii", errors="replace") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("SigCgt", "SigIgn"):
                    masks[key] = int(value.strip(), 16)
    except (OSError, ValueError):
        return ""
    if len(masks) < 2:
        return ""
    bit = 1 << (int(sig) - 1)
    if masks["SigCgt"] & bit:
        return HANDLER_CAUGHT
    if masks["SigIgn"] & bit:
        return HANDLER_IGNORED
    return HANDLER_DEFAULT


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
        default=os.environ.get(ENV_SIGNAL, DEFAULT_SIGNAL),
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


def _step_from_env() -> StepId | None:
    """The step this task belongs to, from Slurm's environment (None outside a job)."""
    job = os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID")
    if not job or not job.isdigit():
        return None
    step_text = os.environ.get("SLURM_STEP_ID") or os.environ.get("SLURM_STEPID")
    step = int(step_text) if step_text and step_text.isdigit() else STEP_BATCH
    if step >= 0xFFFFFFF0:
        step = STEP_BATCH
    return StepId(int(job), step)


def refuse_if_read_only(flag: bool, config: str | None, program: Sequence[str]) -> None:
    """Raise ``ReadOnlyError`` (after auditing it) when read-only mode is on.

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
        _note(f"{exc.message}; its read_only and audit_log settings are not applied")
        settings = Settings()
    if not (flag or settings.read_only):
        return
    step = _step_from_env()
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


def _job_work_dir(job_id: int) -> str:
    """The job's working directory: ``$SCKPT_WORK_DIR``, else scontrol's WorkDir, else cwd."""
    given = os.environ.get(ENV_WORK_DIR)
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


def _is_slurmstepd(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip().startswith("slurmstepd")
    except OSError:
        return False


def _note(message: str) -> None:
    sys.stderr.write(f"sckpt run: {message}\n")
    sys.stderr.flush()


class Wrapper:
    """One task's wrapper: registration, the child, signals and checkpoint requests."""

    def __init__(self, args: argparse.Namespace, program: list[str]) -> None:
        step_id = _step_from_env()
        if step_id is None:
            raise UsageError("sckpt run must run inside a Slurm job (SLURM_JOB_ID is not set)")
        self.step_id = step_id
        self.procid = int(os.environ.get("SLURM_PROCID", "0") or 0)
        self.restart_count = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
        self.host = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
        self.ckpt_signal = parse_signal(args.signal)
        self.wake_signal = parse_signal(args.wake_signal)
        if self.wake_signal == self.ckpt_signal:
            raise UsageError("--wake-signal must differ from --signal")
        if not 0.05 <= args.poll <= 3600:
            raise UsageError("--poll must be between 0.05 and 3600 seconds")
        self.poll = float(args.poll)
        if not 0 <= args.grace <= 3600:
            raise UsageError("--grace must be between 0 and 3600 seconds")
        self.grace = float(args.grace)
        self.started = 0.0
        self.deferred = False
        self.program = program
        try:
            self.name = check_step_name(args.name) if args.name else default_step_name(program)
        except ValueError as exc:
            raise UsageError(f"--name: {exc}") from None
        work_dir = _job_work_dir(self.step_id.job_id)
        state_dir = state_dir_for(work_dir, args.state_dir)
        self.store = StepStore(state_dir, self.step_id, owner=os.getuid())
        self.index = ImageIndex(state_dir, self.step_id.job_id, owner=os.getuid())
        self.image_root = args.image_dir or work_dir
        self.done_path = self.store.done_file(self.procid)
        self.handler = ""
        """What the program does with the checkpoint signal, as last recorded."""
        self.child: subprocess.Popen[bytes] | None = None
        self.active: Request | None = None
        self.restart_dir = ""

    @property
    def step_image_dir(self) -> str:
        return str(Path(self.image_root) / image_leaf(self.step_id, self.name))

    @property
    def image_dir(self) -> str:
        return str(Path(self.step_image_dir) / f"task{self.procid}")

    # ---- registration --------------------------------------------------------------------
    def _name_taken(self) -> bool:
        """Whether another running step of this run of the job already has this name.

        Two steps with the same command line would share one image directory and overwrite
        each other's images: the second gets ``<name>.<step>`` and is told to use --name.
        """
        for other in job_stores(self.store.directory, self.step_id.job_id, owner=os.getuid()):
            if other.path == self.store.path:
                continue
            with contextlib.suppress(StoreError):
                rec = other.read()
                if (
                    rec is not None
                    and rec.name == self.name
                    and any(t.restart_count == self.restart_count for t in rec.running_tasks)
                ):
                    return True
        return False

    def _previous_image(self, rec: StepRecord) -> str:
        """This task's last complete image: by step name, else (older records) by step id."""
        found = ""
        with contextlib.suppress(StoreError):
            found = self.index.image(self.name, self.procid)
        if not found and rec.name in ("", self.name):
            found = rec.last_image.get(str(self.procid), "")
        return found if found and Path(found).is_dir() else ""

    def register(self) -> None:
        self.store.ensure_directory()
        if self._name_taken():
            taken = self.name
            self.name = f"{self.name}.{self.step_id.step_text}"[:64]
            _note(
                f"another step of job {self.step_id.job_id} is named {taken}: this one's "
                f"images go to {self.step_image_dir}; give each step its own --name so a "
                "restart finds them whatever order the steps start in"
            )
        Path(self.image_dir).mkdir(parents=True, exist_ok=True, mode=0o755)

        def change(rec: StepRecord) -> str:
            for key, task in list(rec.tasks.items()):
                if task.restart_count != self.restart_count:
                    del rec.tasks[key]
            if rec.name and rec.name != self.name and rec.running_tasks:
                # Another task of this step registered first (srun --multi-prog runs other
                # programs in one step): one name, one image directory per step.
                self.name = rec.name
            previous = self._previous_image(rec)
            rec.rename(self.name)
            rec.tasks[str(self.procid)] = TaskInfo(
                procid=self.procid,
                host=self.host,
                pid=os.getpid(),
                since=int(time.time()),
                signal=self.ckpt_signal.name,
                image_dir=self.image_dir,
                restart_count=self.restart_count,
                wake=self.wake_signal.name,
            )
            if previous:
                rec.last_image[str(self.procid)] = previous
                rec.log("resume", f"task{self.procid}", 0, "", previous)
                return previous
            rec.log("register", f"task{self.procid}", 0, "", self.image_dir)
            return ""

        self.restart_dir = self.store.update(change, create=True, reset_corrupt=True)
        with contextlib.suppress(OSError):  # made above, unless the name was another task's
            Path(self.image_dir).mkdir(parents=True, exist_ok=True, mode=0o755)

    def _end(self, status: int) -> None:
        def change(rec: StepRecord) -> None:
            task = rec.tasks.get(str(self.procid))
            if task is not None and task.pid == os.getpid():
                task.state = "ended"
                task.ended_at = int(time.time())
                task.exit_status = status
            req = rec.in_progress
            if req is not None and self.procid in req.pending:
                ended = f"program ended (status {status}) before completing the checkpoint"
                rec.report(self.procid, ABANDONED_CODE, ended)

        try:
            self.store.update(change)
        except StoreError as exc:
            _note(f"could not record the end of the task: {exc}")

    # ---- the program's signal handler ----------------------------------------------------
    def look_at_handler(self) -> str:
        """Read what the program does with the checkpoint signal; record it when it changed.

        The console decides from this record whether the step is checkpointable (and says
        why not); the wrapper looks again right before it sends the signal.
        """
        if self.child is None:
            return ""
        handler = signal_handler(self.child.pid, self.ckpt_signal)
        if handler and handler != self.handler:
            pid = self.child.pid

            def change(rec: StepRecord) -> None:
                task = rec.tasks.get(str(self.procid))
                if task is not None and task.pid == os.getpid():
                    task.handler = handler
                    task.program_pid = pid

            try:
                self.store.update(change)
                self.handler = handler
            except StoreError as exc:
                _note(f"could not record whether the program catches the signal: {exc}")
        return handler

    def _refuse_signal(self, req: Request, handler: str, why: str) -> None:
        """Close this task's part of a request without signalling: the program would die.

        The task's ``handler`` is written again too: the record said "caught" (or the
        request would not have been made), and it was wrong.
        """
        pid = self.child.pid if self.child is not None else 0
        message = f"task {self.procid} (pid {pid} on {self.host}): {why}: not signalled"
        _note(f"checkpoint {req.request_id} refused: {message}")

        def change(rec: StepRecord) -> None:
            task = rec.tasks.get(str(self.procid))
            if task is not None and task.pid == os.getpid():
                task.handler = handler
            rec.report(self.procid, ESLURM_NOT_SUPPORTED, message, req.request_id)

        with contextlib.suppress(StoreError):
            self.store.update(change)

    # ---- requests ------------------------------------------------------------------------
    def check_request(self) -> None:
        """Read the state file; start a new request addressed to this task; expire old ones."""
        self.deferred = False
        try:
            rec = self.store.read()
        except StoreError as exc:
            _note(str(exc))
            return
        if rec is None:
            return
        req = rec.in_progress
        if req is not None and req.deadline and time.time() >= req.deadline:
            with contextlib.suppress(StoreError):
                self.store.update(lambda r: r.expire())
            return
        if req is None or self.procid not in req.pending:
            return
        if self.active is not None and self.active.request_id == req.request_id:
            return
        if time.monotonic() - self.started < self.grace:
            self.deferred = True  # looked at again on every turn until the grace ends
            return
        # Right before sending: a program that does not catch the signal would be killed by
        # it (whatever the record said a moment ago), so it is not sent.
        handler = self.look_at_handler()
        blocker = handler_blocker(handler, self.ckpt_signal.name)
        if blocker:
            self._refuse_signal(req, handler, blocker)  # no longer pending for this task
            return
        self.active = req
        with contextlib.suppress(FileNotFoundError):
            self.done_path.unlink()
        if self.child is not None and self.child.poll() is None:
            os.kill(self.child.pid, self.ckpt_signal)

        def mark(r: StepRecord) -> None:
            if r.in_progress is not None and r.in_progress.request_id == req.request_id:
                r.in_progress.signalled.append(self.procid)

        with contextlib.suppress(StoreError):
            self.store.update(mark)

    def check_done(self) -> None:
        """When the program's status file is complete, record the outcome."""
        req = self.active
        if req is None:
            return
        try:
            first = self.done_path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            first = f"{errno.EIO} cannot read {self.done_path}: {exc.strerror}".encode()
        time.sleep(0.02)  # let a writer finish its line
        with contextlib.suppress(OSError):
            first = self.done_path.read_bytes()
        if not first.strip():
            return
        code, message = parse_status(first)
        if code == 0:
            code, message = self._publish(req)
        with contextlib.suppress(FileNotFoundError):
            self.done_path.unlink()
        self.active = None
        image = self._image_for(req) if code == 0 else ""

        def change(rec: StepRecord) -> None:
            if code == 0:
                rec.last_image[str(self.procid)] = image
                rec.last_image_time = int(time.time())
            if not rec.report(self.procid, code, message, req.request_id):
                rec.log("late", f"task{self.procid}", code, message, image)

        try:
            # The index first: the step record's report is what a waiting create or vacate
            # returns on, so once it says "completed" the image is findable by name too
            # (recorded the other way round, create returned before the index existed).
            if image:
                self.index.remember(self.name, {str(self.procid): image})
            self.store.update(change)
        except StoreError as exc:
            _note(f"could not record the checkpoint outcome: {exc}")

    def _image_for(self, req: Request) -> str:
        if not req.image_dir or req.image_dir == self.step_image_dir:
            return self.image_dir
        return str(Path(req.image_dir) / f"task{self.procid}")

    def _publish(self, req: Request) -> tuple[int, str]:
        """Check the image exists; copy it to the operator's ImageDir when one was given."""
        source = Path(self.image_dir)
        try:
            if not any(p for p in source.iterdir() if not p.name.endswith(".tmp")):
                return errno.ENOENT, f"the program reported success but {source} is empty"
        except OSError as exc:
            return errno.ENOENT, f"image directory {source}: {exc.strerror}"
        target = Path(self._image_for(req))
        if target == source:
            return 0, ""
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(source, tmp, ignore=shutil.ignore_patterns("*.tmp"))
            old = target.with_name(f".{target.name}.{os.getpid()}.old")
            if target.exists():
                target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            return errno.EIO, f"cannot copy the image to {target}: {exc.strerror or exc}"
        return 0, ""

    # ---- the child and the loop ----------------------------------------------------------
    def run(self) -> int:
        try:
            self.register()
        except (StoreError, OSError) as exc:
            # The job matters more than its checkpoints: run the program anyway, directly.
            _note(f"{exc}; running {self.program[0]} WITHOUT checkpoint support")
            try:
                os.execvp(self.program[0], self.program)
            except OSError as err:
                raise UsageError(f"cannot start {self.program[0]!r}: {err.strerror}") from None
        env = dict(os.environ)
        env[ENV_IMAGE_DIR] = self.image_dir
        env[ENV_DONE] = str(self.done_path)
        env[ENV_SIGNAL] = self.ckpt_signal.name
        env.pop(ENV_RESTART, None)
        if self.restart_dir:
            env[ENV_RESTART] = self.restart_dir
        watched = set(signal.valid_signals()) - _SYNCHRONOUS - {signal.SIGKILL, signal.SIGSTOP}
        signal.pthread_sigmask(signal.SIG_BLOCK, watched)
        try:
            self.child = subprocess.Popen(
                self.program,
                env=env,
                preexec_fn=_unblock_all,  # the wrapper has no threads: preexec_fn is safe
            )
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
            self._end(127)
            raise UsageError(f"cannot start {self.program[0]!r}: {exc.strerror}") from None
        self.started = time.monotonic()
        status: int | None = None
        last_poll = 0.0
        while status is None:
            timeout = ACTIVE_POLL if self.active is not None else self.poll
            if time.monotonic() - self.started < self.grace:
                timeout = min(timeout, self.grace / 4 or ACTIVE_POLL)
            watching = (
                self.handler != HANDLER_CAUGHT and time.monotonic() - self.started < HANDLER_WATCH
            )
            if watching:
                timeout = min(timeout, HANDLER_POLL)
            info = signal.sigtimedwait(watched, timeout)
            if info is not None:
                self._on_signal(info)
            status = self.child.poll()
            now = time.monotonic()
            if info is not None and info.si_signo == self.wake_signal:
                last_poll = 0.0
            if now - last_poll >= self.poll or self.active is not None or self.deferred:
                last_poll = now
                self.look_at_handler()
                self.check_request()
                self.check_done()
            elif watching:
                self.look_at_handler()
        if self.active is not None:
            self.check_done()
        self._end(status)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
        if status < 0:  # die of the same signal, so Slurm records what the program did
            with contextlib.suppress(OSError, ValueError):
                signal.signal(-status, signal.SIG_DFL)  # SIGKILL has no handler to reset
            os.kill(os.getpid(), -status)
            return 128 - status
        return status

    def _on_signal(self, info: signal.struct_siginfo) -> None:
        sig = info.si_signo
        if sig in (signal.SIGCHLD, self.wake_signal):
            return
        if info.si_code not in _SENT_BY_PROCESS:
            return  # raised by the kernel for the wrapper itself (SIGPIPE, SIGXFSZ ...)
        if _is_slurmstepd(info.si_pid):
            return  # the container signal reached the program directly
        if self.child is not None and self.child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.child.pid, sig)


_PR_SET_PDEATHSIG = 1


def _unblock_all() -> None:
    """In the child before exec: default signal mask, and SIGTERM if the wrapper dies.

    Without the death signal a program whose wrapper was killed would be orphaned, and
    proctrack/linuxproc (which follows parent links) would lose it: it would outlive its job.
    """
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def parse_status(raw: bytes) -> tuple[int, str]:
    """``0`` -> success; ``<code> <message>`` -> that error; anything else is EINVAL."""
    text = raw.decode("utf-8", "replace").strip().splitlines()[0].strip() if raw.strip() else ""
    head, _, rest = text.partition(" ")
    if head.isdigit():
        code = int(head)
        if code == 0:
            return 0, ""
        message = rest.strip()[:MAX_TEXT]
        if not message and code < 1000:
            message = os.strerror(code)
        return code, message
    shown = text[:80]
    return errno.EINVAL, f"unreadable checkpoint status {shown!r}: expected '0' or '<code> <msg>'"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``sckpt run`` / ``python -m sckpt.backend.wrapper``."""
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        _note("usage: sckpt run [options] -- PROGRAM [ARGS...]")
        return 2
    try:
        refuse_if_read_only(args.read_only, args.config, program)
        return Wrapper(args, program).run()
    except SckptError as exc:
        _note(str(exc))
        return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
