"""``sckpt run [options] -- PROGRAM ARGS``: the successor of ``srun_cr`` for modern Slurm.

It runs as a step's task (``srun sckpt run -- ./app``) or around a batch script's program,
starts PROGRAM as its child and stays beside it until it ends.  Standard library plus
sckpt's config and audit modules, so it starts fast on compute nodes and never pulls in the
console or libslurm (``tests/test_layering.py`` checks it).  Its options and the read-only
refusal are in ``options.py``, the files it shares with the console in ``protocol.py`` and
``store.py``; how the program is checkpointed is a ``Checkpointer`` (``checkpointer.py``),
picked once: the signal the program catches (``signal_checkpointer.py``), or DMTCP with
``--transparent`` (``transparent.py``).  The wrapper calls only that interface.

What it does, and why this way:

* **Registers the task** in the step's state file (``store.py``): job, step,
  ``SLURM_PROCID``, node, pid, the program's checkpoint signal and image directory.  A step
  whose state file lists a running task is what the cooperative engine calls
  checkpoint-capable.
* **Names the step** (``--name``, by default the program's name and a hash of its command
  line) and **tells the program where images go**: ``SCKPT_IMAGE_DIR`` (the link
  ``<image root>/<job>.<name>/task<procid>/current``, pointed at a new, empty generation
  before each checkpoint: ``generations.py``), ``SCKPT_CKPT_DONE`` (the status
  file) and ``SCKPT_CKPT_SIGNAL``; and, when a complete image of this task exists (the job
  was requeued and restarted), ``SLURM_RESTART_DIR`` with that generation, as srun_cr did.
  The image is found by the step's name in the job's image index (``store.ImageIndex``),
  so steps launched in the background find their own images whatever ids they get; records
  written before names existed are still read by step id.  An image that is missing,
  unreadable or empty is never handed over: the task starts fresh and its record says so
  (``start_note``, and the step's error when a restart lost it).
* **Never kills the program with a checkpoint.**  It reads what the program does with its
  checkpoint signal (``SigCgt`` in ``/proc/PID/status``) every poll and records it, so the
  console can say "program does not catch SIGUSR1" and refuse before anything is sent; and
  right before sending it stops the program, reads the handler again, sends the signal
  only if it is caught, and lets the program continue (``SignalCheckpointer.begin``): a
  stopped program cannot ``exec`` into a build without the handler in between.
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
  (``0`` or ``<code> <message>``, one line; under DMTCP the wrapper writes it once the
  checkpointer's ``poll`` says the images are whole), records the outcome (highest code kept) and,
  only on ``0``, renames the generation to ``g<N>`` and records it as the last complete
  image; older generations beyond ``keep_images`` go then.  If the operator named another
  ImageDir, the generation is copied there whole first.  If the program ends mid-checkpoint,
  ECANCELED is recorded; the half-written generation is never called complete and the
  previous one is untouched.
* **Says when checkpointing is off.**  When the task cannot be registered or its image
  directory made, the program still runs (the job matters more), and the step's record says
  why (the task's ``off``, the step's error), so the console shows it, not only stderr.
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
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..config import ENV_SIGNAL, Settings
from ..errors import ESLURM_NOT_SUPPORTED, SckptError, UsageError
from . import stuck
from .autopilot import Autopilot
from .checkpointer import Checkpointer, NotSent, TaskPlace, Unavailable
from .generations import (
    TaskImages,
    copy_generation,
    generation_bytes,
    generation_of,
    image_problem,
)
from .mpi import inherited_fds, transparent_env
from .options import (
    build_parser,
    check_before_end,
    job_work_dir,
    note,
    parse_signal,
    policy_words,
    refuse_if_read_only,
    run_policy,
    step_from_env,
)
from .protocol import (
    ABANDONED_CODE,
    ENV_DONE,
    ENV_IMAGE_DIR,
    ENV_RESTART,
    HANDLER_CAUGHT,
    AutoPolicy,
    Request,
    StepRecord,
    StoreError,
    TaskInfo,
    check_step_name,
    default_step_name,
    handler_blocker,
    image_leaf,
    parse_status,
    recorded_image,
    state_dir_for,
    status_line,
)
from .signal_checkpointer import SignalCheckpointer
from .status_file import StatusFile
from .store import ImageIndex, StepStore, job_stores

ACTIVE_POLL = 0.05
"""How often the status file is looked at while a checkpoint runs."""
HANDLER_POLL = 0.1
HANDLER_WATCH = 10.0
"""A program that does not catch its signal yet is looked at every HANDLER_POLL seconds for
its first HANDLER_WATCH seconds (programs install their handler as they start), then at
every ``--poll``."""

# Signals the kernel raises for a fault in this very process: never block them.
_SYNCHRONOUS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP}
_SENT_BY_PROCESS = {
    getattr(os, "SI_USER", 0),
    getattr(os, "SI_QUEUE", -1),
    getattr(os, "SI_TKILL", -6),
}


class Wrapper:
    """One task's wrapper: registration, the child, signals and checkpoint requests."""

    def __init__(
        self,
        args: argparse.Namespace,
        program: list[str],
        settings: Settings | None = None,
        checkpointer: Checkpointer | None = None,
        start_policy: AutoPolicy | None = None,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        """The time of day written in the record (registration, ends, images, deadlines)."""
        self.monotonic = monotonic
        """What every timing decision reads: the grace, the handler watch, the duration
        of a checkpoint and a still-open status line's ``STILL_OPEN_QUIET``; a test gives
        its own and moves it on (tests/backend/test_wrapper_time.py)."""
        step_id = step_from_env()
        if step_id is None:
            raise UsageError(
                "sckpt run must run inside a Slurm job (SLURM_JOB_ID is not set): "
                "start it as a job step, srun sckpt run -- PROGRAM, or in an sbatch script"
            )
        check_program(program[0])
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
        self.off = ""
        """Why checkpointing is off for this task from its start ("" while it is on)."""
        self.program = program
        try:
            self.name = check_step_name(args.name) if args.name else default_step_name(program)
        except ValueError as exc:
            raise UsageError(f"--name: {exc}") from None
        self.keep = (settings or Settings()).keep_images
        work_dir = job_work_dir(self.step_id.job_id)
        state_dir = state_dir_for(work_dir, args.state_dir)
        self.store = StepStore(state_dir, self.step_id, owner=os.getuid())
        self.index = ImageIndex(state_dir, self.step_id.job_id, owner=os.getuid())
        self.image_root = args.image_dir or work_dir
        self.done_path = self.store.done_file(self.procid)
        self.handler = ""
        """What the program does with the checkpoint signal, as last recorded."""
        self.child: subprocess.Popen[bytes] | None = None
        self.active: Request | None = None
        self.partial: Path | None = None
        """The generation the active request's image is written into."""
        self.restart_dir = ""
        self.checkpointer: Checkpointer = checkpointer or SignalCheckpointer(
            self.ckpt_signal, monotonic=monotonic
        )
        """How the program is checkpointed: the signal it catches, or ``--transparent``'s."""
        self.begun = 0.0
        """When the active checkpoint was asked for (monotonic): its duration is measured."""
        self.status = StatusFile(self.done_path, self.monotonic)
        """The program's status line, read once it is whole (``status_file``)."""
        start_policy = start_policy or AutoPolicy()
        if start_policy.before_end:
            check_before_end(self.step_id.job_id, start_policy.before_end)
        self.autopilot = (
            Autopilot(self.store, self.step_id, self.restart_count, start_policy, clock=clock)
            if self.procid == 0
            else None
        )
        """Task 0's wrapper makes the step's automatic checkpoints (``autopilot.py``)."""

    @property
    def step_image_dir(self) -> str:
        return str(Path(self.image_root) / image_leaf(self.step_id, self.name))

    @property
    def image_dir(self) -> str:
        """This task's directory of image generations (``task<rank>``)."""
        return str(Path(self.step_image_dir) / f"task{self.procid}")

    @property
    def images(self) -> TaskImages:
        return TaskImages(self.image_dir, self.keep)

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

    def _previous_image(self, rec: StepRecord, index: dict[str, dict[str, str]]) -> tuple[str, str]:
        """This task's last complete image and how the task starts, in words.

        The image is looked up by the one rule restart uses too (``protocol.recorded_image``),
        then looked at: one that is missing, unreadable or empty is never handed over, and
        the words say so (they become the task's ``start_note`` and, then, its error).
        """
        found = recorded_image(index, self.name, rec, self.procid)
        if not found:
            if self.restart_count:
                return "", "started fresh: no image was recorded for this task"
            return "", "started fresh"
        code, why = image_problem(found)
        if code:
            return "", f"started fresh: its last image {why}"
        number = generation_of(found)
        if number:
            return found, f"resumed from generation {number} ({found})"
        return found, f"resumed from {found}"

    def _task(self, *, resumed_from: str = "", start_note: str = "", off: str = "") -> TaskInfo:
        """This task's registration: how it started, or why checkpointing is off."""
        return TaskInfo(
            procid=self.procid,
            host=self.host,
            pid=os.getpid(),
            since=int(self.clock()),
            signal=self.ckpt_signal.name,
            image_dir=self.image_dir,
            restart_count=self.restart_count,
            wake=self.wake_signal.name,
            resumed_from=resumed_from,
            start_note=start_note,
            off=off,
            checkpointer=self.checkpointer.label,
        )

    def register(self) -> None:
        self.store.ensure_directory()
        if self._name_taken():
            taken = self.name
            self.name = f"{self.name}.{self.step_id.step_text}"[:64]
            note(
                f"another step of job {self.step_id.job_id} is named {taken}: this one's "
                f"images go to {self.step_image_dir}; give each step its own --name so a "
                "restart finds them whatever order the steps start in"
            )
        try:
            index = self.index.read()
        except StoreError as exc:  # records still hold their images by step id
            note(f"{exc.message}; looking for this task's image in its step record only")
            index = {}
        who = f"task{self.procid}"

        def change(rec: StepRecord) -> str:
            for key, task in list(rec.tasks.items()):
                if task.restart_count != self.restart_count:
                    del rec.tasks[key]
            if rec.name and rec.name != self.name and rec.running_tasks:
                # Another task of this step registered first (srun --multi-prog runs other
                # programs in one step): one name, one image directory per step.
                self.name = rec.name
            previous, note = self._previous_image(rec, index)
            rec.rename(self.name, clock=self.clock)
            rec.coordinator = self.checkpointer.coordinator_kind
            if self.autopilot is not None:
                self.autopilot.register(rec, self.clock())
            rec.tasks[str(self.procid)] = self._task(resumed_from=previous, start_note=note)
            if previous:
                rec.last_image[str(self.procid)] = previous
                rec.log("resume", who, 0, note, previous, clock=self.clock)
                return previous
            rec.last_image.pop(str(self.procid), None)
            lost = note.startswith("started fresh: ") and self.restart_count > 0
            code = errno.ENOENT if lost else 0
            if code:  # an operator asked for a restart and this task lost its image
                rec.keep_highest(code, f"task {self.procid} {note}")
            # where this task's images go, as the history said before generations
            first = "fresh" if self.restart_count else "register"
            rec.log(first, who, code, note, self.image_dir, clock=self.clock)
            return ""

        if self.autopilot is not None:
            self.autopilot.first_look()
        self.restart_dir = self.store.update(
            change, create=True, reset_corrupt=True, clock=self.clock
        )
        try:
            self.images.ready()  # the first generation the program's link points at
        except OSError as exc:
            self.off = f"its image directory {self.image_dir} cannot be made: {exc.strerror}"
            self.switch_off(self.off, exc.errno or errno.EIO)

    def switch_off(self, why: str, code: int, *, locked: bool = True) -> bool:
        """Record that checkpointing is off for this task, and why, where the operator sees
        it: the task's ``off`` (the column and ``able`` say so), the step's error (``error``)
        and its history.  ``locked=False`` when the store's lock itself is what failed: a
        single unlocked write then, since saying it matters more than a lost update.
        Returns whether it was recorded."""
        message = f"task {self.procid}: checkpointing is off: {why}"

        def change(rec: StepRecord) -> None:
            for key, task in list(rec.tasks.items()):
                if task.restart_count != self.restart_count:
                    del rec.tasks[key]
            rec.tasks[str(self.procid)] = self._task(
                off=why, start_note=f"checkpointing is off: {why}"
            )
            rec.keep_highest(code, message)
            rec.log("off", f"task{self.procid}", code, message, clock=self.clock)

        try:
            self.store.update(change, create=True, locked=locked)
        except StoreError as exc:
            note(f"{message}; and that could not be recorded: {exc.message}")
            return False
        return True

    def _end(self, status: int) -> None:
        def change(rec: StepRecord) -> None:
            task = rec.tasks.get(str(self.procid))
            if task is not None and task.pid == os.getpid():
                task.state = "ended"
                task.ended_at = int(self.clock())
                task.exit_status = status
            req = rec.in_progress
            if req is not None and self.procid in req.pending:
                ended = f"program ended (status {status}) before completing the checkpoint"
                rec.report(self.procid, ABANDONED_CODE, ended, clock=self.clock)

        try:
            self.store.update(change)
        except StoreError as exc:
            note(f"could not record the end of the task: {exc}")
        # After the record says so: a step's coordinator waits here for the other tasks.
        self.checkpointer.close()

    # ---- the program's signal handler ----------------------------------------------------
    def look_at_handler(self) -> str:
        """Read what the program does with the checkpoint signal; record it when it changed.

        The console decides from this record whether the step is checkpointable (and says
        why not); the wrapper looks again, with the program stopped, before it sends the
        signal (``Checkpointer.begin``).
        """
        if self.child is None:
            return ""
        return self._record_handler(self.checkpointer.handler(self.child.pid))

    def _record_handler(self, handler: str) -> str:
        if handler and handler != self.handler and self.child is not None:
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
                note(f"could not record whether the program catches the signal: {exc}")
        return handler

    def _refuse_signal(self, req: Request, handler: str, why: str) -> None:
        """Close this task's part of a request without signalling: the program would die.

        The task's ``handler`` is written again too: the record said "caught" (or the
        request would not have been made), and it was wrong.
        """
        pid = self.child.pid if self.child is not None else 0
        message = f"task {self.procid} (pid {pid} on {self.host}): {why}: not signalled"
        note(f"checkpoint {req.request_id} refused: {message}")
        self._report(req, ESLURM_NOT_SUPPORTED, message, handler=handler)

    def _report(self, req: Request, code: int, message: str, handler: str = "") -> None:
        """Close this task's part of ``req`` with an outcome (and its handler, when seen)."""

        def change(rec: StepRecord) -> None:
            task = rec.tasks.get(str(self.procid))
            if handler and task is not None and task.pid == os.getpid():
                task.handler = handler
            rec.report(self.procid, code, message, req.request_id, clock=self.clock)

        with contextlib.suppress(StoreError):
            self.store.update(change)

    # ---- requests ------------------------------------------------------------------------
    def check_request(self) -> None:
        """Read the state file; start a new request addressed to this task; expire old ones."""
        self.deferred = False
        try:
            rec = self.store.read()
        except StoreError as exc:
            note(str(exc))
            return
        if rec is None:
            return
        req = rec.in_progress
        if req is not None and req.deadline and self.clock() >= req.deadline:
            with contextlib.suppress(StoreError):
                self.store.update(lambda r: r.expire(int(self.clock())))
            return
        if req is None or self.procid not in req.pending:
            return
        if self.active is not None:
            # This request, or a newer one while the program still writes the image of an
            # older (expired) one: the new one waits until it answers, never moves
            # ``current`` under it.
            return
        if self.monotonic() - self.started < self.grace:
            self.deferred = True  # looked at again on every turn until the grace ends
            return
        cut = incomplete_cut(rec, self.restart_count)
        if cut:
            message = f"task {self.procid}: a cut must include every task: {cut}"
            note(f"checkpoint {req.request_id} refused: {message}")
            self._report(req, ESLURM_NOT_SUPPORTED, message)
            return
        # What the record says first (no stop for a program known not to catch the signal).
        handler = self.look_at_handler()
        blocker = handler_blocker(handler, self.ckpt_signal.name)
        if blocker:
            self._refuse_signal(req, handler, blocker)  # no longer pending for this task
            return
        try:
            partial = self.images.ready()
        except OSError as exc:
            where = f"a new image directory in {self.image_dir}"
            self._report(req, exc.errno or errno.EIO, f"cannot make {where}: {exc.strerror}")
            return
        with contextlib.suppress(FileNotFoundError):
            self.done_path.unlink()
        if self.child is None or self.child.poll() is not None:
            return
        # the stuck-checkpoint limit
        stuck.arm(self.checkpointer, req.deadline, req.max_wait, self.clock)
        try:
            code, message = self.checkpointer.begin(self.child.pid, since=req.start)
        except NotSent as not_sent:
            if not self._record_handler(not_sent.handler):
                self.deferred = True  # stopped by someone else, or would not stop: next turn
            else:  # changed since the record was read (an exec): not sent
                self._refuse_signal(req, not_sent.handler, not_sent.why)
            return
        self._record_handler(HANDLER_CAUGHT)
        if code:  # it could not start (no space, DMTCP said no): the task's outcome
            note(f"checkpoint not taken: {message}")
            self._write_status(status_line(code, message))
        self.active = req
        self.partial = partial
        self.begun = self.monotonic()
        asked = int(self.clock())

        def mark(r: StepRecord) -> None:
            if r.in_progress is not None and r.in_progress.request_id == req.request_id:
                r.in_progress.signalled.append(self.procid)
            task = r.tasks.get(str(self.procid))
            if task is not None and task.pid == os.getpid():
                task.busy_since = asked
                task.outside = list(getattr(self.checkpointer, "outside", []))  # peers.py

        with contextlib.suppress(StoreError):
            self.store.update(mark)

    def check_done(self) -> None:
        """When the program's status file is complete, record the outcome."""
        req = self.active
        if req is None:
            return
        if not self.done_path.exists():
            self._ask_checkpointer()
        first = self.status.whole_line(self.child.pid if self.child is not None else None)
        if first is None:
            return  # the next turn (``ACTIVE_POLL``) looks again
        code, message = parse_status(first)
        image = ""
        if code == 0:
            code, message, image = self._publish(req)
        with contextlib.suppress(FileNotFoundError):
            self.done_path.unlink()
        self.active = None
        self.partial = None
        # The program's own save is timed from the request to its status line; DMTCP's
        # checkpointer measured its own (``_record_image``).
        measured = None
        if code == 0 and not self.checkpointer.label:
            measured = (round(self.monotonic() - self.begun, 3), generation_bytes(image))

        one_cut = self.checkpointer.coordinator_kind == "step"
        cut: dict[str, str] = {}

        def change(rec: StepRecord) -> None:
            task = rec.tasks.get(str(self.procid))
            if task is not None and task.pid == os.getpid():
                task.busy_since = 0
            if measured is not None:
                rec.ckpt_seconds[str(self.procid)], rec.image_bytes[str(self.procid)] = measured
            if code == 0 and one_cut:
                run, now = self.restart_count, int(self.clock())
                cut.update(_whole_cut(rec, req.request_id, self.procid, image, run, now))
            elif code == 0:
                rec.last_image[str(self.procid)] = image
                rec.last_image_time = int(self.clock())
            if not rec.report(self.procid, code, message, req.request_id, clock=self.clock):
                rec.log("late", f"task{self.procid}", code, message, image, clock=self.clock)

        try:
            # The index first: the step record's report is what a waiting create or vacate
            # returns on, so once it says "completed" the image is findable by name too
            # (recorded the other way round, create returned before the index existed).
            if image and not one_cut:
                self.index.remember(self.name, {str(self.procid): image})
            self.store.update(change)
            if cut:  # the last task of a whole cut: every task's image at once
                self.index.remember(self.name, cut)
        except StoreError as exc:
            note(f"could not record the checkpoint outcome: {exc}")

    def _ask_checkpointer(self) -> None:
        """A checkpointer that learns the outcome itself (DMTCP) writes it as the status line
        a program would; then the same code completes the generation for both.  The signal
        checkpointer's ``poll`` leaves it to the program."""
        outcome = self.checkpointer.poll()
        if outcome is None:
            return
        code, message = outcome
        if code == 0 and self.partial is not None:
            try:
                size = self.checkpointer.collect(self.partial)
                self._record_image(size, self.checkpointer.last_seconds)
            except OSError as exc:
                code = exc.errno or errno.EIO
                message = f"cannot move the image into {self.partial}: {exc.strerror}"
        self._write_status(status_line(code, message))

    def _write_status(self, line: str) -> None:
        tmp = self.done_path.with_name(self.done_path.name + ".tmp")
        tmp.write_text(line + "\n")
        tmp.rename(self.done_path)

    def _record_image(self, size: int, seconds: float) -> None:
        def change(rec: StepRecord) -> None:
            rec.image_bytes[str(self.procid)] = size
            rec.ckpt_seconds[str(self.procid)] = round(seconds, 3)

        with contextlib.suppress(StoreError):
            self.store.update(change)

    def _publish(self, req: Request) -> tuple[int, str, str]:
        """Make the generation just written the task's last good image: ``(0, "", path)``,
        or ``(code, why, "")`` and the previous image stays the last good one.

        The generation must hold something; with an operator's ImageDir it is copied there
        whole (``copy_generation``) before anything is called complete, so a full ImageDir
        (ENOSPC) leaves both the copy and the local generation incomplete.
        """
        partial = self.partial
        if partial is None:
            return errno.EINVAL, "no image directory was prepared for this checkpoint", ""
        code, why = image_problem(partial)
        if code:
            return code, f"the program reported success but {why}", ""
        published = ""
        if req.image_dir and req.image_dir != self.step_image_dir:
            target = Path(req.image_dir) / f"task{self.procid}"
            try:
                published = str(copy_generation(partial, target, self.keep))
            except OSError as exc:
                reason = exc.strerror or str(exc)
                return exc.errno or errno.EIO, f"cannot copy the image to {target}: {reason}", ""
        try:
            complete = self.images.commit(partial)
        except OSError as exc:
            return exc.errno or errno.EIO, f"cannot complete {partial}: {exc.strerror}", ""
        return 0, "", published or str(complete)

    # ---- the child and the loop ----------------------------------------------------------
    def command(self, env: dict[str, str]) -> list[str]:
        """What is started as the task's program, as the checkpointer says (PROGRAM, or
        DMTCP around it), after it is ready (``prepare`` may add to ``env``).  When it
        cannot get ready, the program runs without checkpointing (the job matters more) and
        the task's record says why, as for an image directory that cannot be made (then the
        checkpointer is not even readied: the record keeps that first cause)."""
        if self.off:
            note(f"{self.off}; running {self.program[0]} WITHOUT checkpoint support")
            return self.program
        localid = int(os.environ.get("SLURM_LOCALID", "0") or 0)
        self.checkpointer.bind(
            TaskPlace(self.store, self.procid, localid, self.restart_count, self.host)
        )
        try:
            env.update(self.checkpointer.prepare(Path(self.image_dir)))
        except Unavailable as exc:
            self.switch_off(exc.why, exc.code)
            note(f"{exc.why}; running {self.program[0]} WITHOUT checkpoint support")
            return self.program
        return self.checkpointer.command(self.program, self.restart_dir)

    def run(self) -> int:
        try:
            self.register()
        except (StoreError, OSError) as exc:
            # The job matters more than its checkpoints: run the program anyway, directly,
            # and say so where the operator looks (the step's record), not only on stderr.
            why = exc.message if isinstance(exc, StoreError) else str(exc.strerror or exc)
            code = exc.errno or errno.EIO
            recorded = self.switch_off(why, code, locked=False)
            told = "" if recorded else " (this could not be recorded for the console)"
            note(f"{why}; running {self.program[0]} WITHOUT checkpoint support{told}")
            try:
                os.execvp(self.program[0], self.program)
            except OSError as err:
                raise UsageError(f"cannot start {self.program[0]!r}: {err.strerror}") from None
        env = dict(os.environ)
        env[ENV_IMAGE_DIR] = str(self.images.link)
        env[ENV_DONE] = str(self.done_path)
        env[ENV_SIGNAL] = self.ckpt_signal.name
        env.pop(ENV_RESTART, None)
        if self.restart_dir:
            env[ENV_RESTART] = self.restart_dir
        watched = set(signal.valid_signals()) - _SYNCHRONOUS - {signal.SIGKILL, signal.SIGSTOP}
        signal.pthread_sigmask(signal.SIG_BLOCK, watched)
        try:
            self.child = subprocess.Popen(
                self.command(env),
                env=env,
                preexec_fn=_unblock_all,  # the wrapper has no threads: preexec_fn is safe
                pass_fds=inherited_fds(env),  # an MPI rank's PMI connection (mpi.py)
            )
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
            self._end(127)
            raise UsageError(f"cannot start {self.program[0]!r}: {exc.strerror}") from None
        self.started = self.monotonic()
        status: int | None = None
        last_poll = 0.0
        while status is None:
            timeout = ACTIVE_POLL if self.active is not None else self.poll
            if self.monotonic() - self.started < self.grace:
                timeout = min(timeout, self.grace / 4 or ACTIVE_POLL)
            watching = (
                self.handler != HANDLER_CAUGHT and self.monotonic() - self.started < HANDLER_WATCH
            )
            if watching or self.deferred:
                timeout = min(timeout, HANDLER_POLL)
            info = signal.sigtimedwait(watched, timeout)
            if info is not None:
                self._on_signal(info)
            status = self.child.poll()
            now = self.monotonic()
            if info is not None and info.si_signo == self.wake_signal:
                last_poll = 0.0
            if now - last_poll >= self.poll or self.active is not None or self.deferred:
                last_poll = now
                self.look_at_handler()
                self.check_request()
                self.check_done()
                # Automatic checkpoints start at the poll after they are due (``--poll``).
                if self.autopilot is not None and self.autopilot.turn(self.child.poll() is None):
                    self.check_request()  # its own part of the checkpoint it just started
            elif watching:
                self.look_at_handler()
        if self.active is not None:
            self.check_done()
        self._end(status)
        if self.autopilot is not None:
            self.autopilot.finish()
        # Signals still pending were meant for a program that is gone: they stay blocked
        # (and go with the wrapper), so one that arrived as the program ended (scancel's
        # SIGTERM after a SIGKILL) cannot make the wrapper die of something else.
        if status < 0:  # die of the same signal, so Slurm records what the program did
            with contextlib.suppress(OSError, ValueError):
                signal.signal(-status, signal.SIG_DFL)  # SIGKILL has no handler to reset
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {-status})
            os.kill(os.getpid(), -status)
            return 128 - status
        return status

    def _on_signal(self, info: signal.struct_siginfo) -> None:
        sig = info.si_signo
        if sig in (signal.SIGCHLD, self.wake_signal):
            return
        # Preemption, scancel or the time limit, from slurmstepd or anyone: a checkpoint
        # first when one fits in the grace left (the program gets the signal as before).
        autopilot, child = self.autopilot, self.child
        if (
            sig == signal.SIGTERM
            and autopilot is not None
            and child is not None
            and autopilot.on_sigterm(child.poll() is None)
        ):
            self.check_request()
        if info.si_code not in _SENT_BY_PROCESS:
            return  # raised by the kernel for the wrapper itself (SIGPIPE, SIGXFSZ ...)
        if _is_slurmstepd(info.si_pid):
            return  # the container signal reached the program directly
        if self.child is not None and self.child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.child.pid, sig)


def _whole_cut(
    rec: StepRecord, request_id: str, procid: int, image: str, run: int, now: int
) -> dict[str, str]:
    """Step coordinator: task ``procid``'s image joins the cut of ``request_id``; once every
    task of this run has one, they become every task's last image together (returned, for
    the index), late (after MaxWait) or not: they are one DMTCP checkpoint.  Until then, and
    for ever when a task's image never completes (its program killed while writing), the
    previous cut stays the restart point of every task: a generation of the step is complete
    only when every task's is."""
    if rec.cut_request != request_id:
        rec.cut_request, rec.cut_images = request_id, {}
    rec.cut_images[str(procid)] = image
    tasks = {k for k, t in rec.tasks.items() if t.restart_count == run}
    if not tasks <= set(rec.cut_images):
        return {}
    rec.last_image.update(rec.cut_images)
    rec.last_image_time = now
    return dict(rec.cut_images)


def incomplete_cut(rec: StepRecord, run: int) -> str:
    """Why a checkpoint of a step with one coordinator cannot be one cut of every task ("" when
    it can): the request leaves tasks out, or a task has ended or not registered yet.
    Images of some tasks only would restart the others against peers that moved on."""
    if rec.coordinator != "step" or rec.in_progress is None:
        return ""
    tasks = {int(k): t for k, t in rec.tasks.items() if t.restart_count == run}
    ended = sorted(p for p, t in tasks.items() if t.state != "running")
    if ended:
        return f"task {ended[0]} has ended"
    total = int(os.environ.get("SLURM_NTASKS", "0") or 0)
    if total and len(tasks) < total:
        return f"only {len(tasks)} of the step's {total} tasks have registered"
    left_out = sorted(set(tasks) - set(rec.in_progress.pending) - set(rec.in_progress.signalled))
    left_out = [p for p in left_out if str(p) not in rec.in_progress.results]
    if left_out:
        return f"the request leaves out task {left_out[0]}"
    return ""


def _is_slurmstepd(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip().startswith("slurmstepd")
    except OSError:
        return False


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


def check_program(name: str) -> None:
    """Refuse a program ``exec`` cannot start before anything is registered or started.

    It looks where ``execvp`` looks (``PATH`` when the name has no slash), so the line is the
    one the failed start would give, with ``--transparent`` (where DMTCP would only fail
    later, exit 99, leaving an image directory behind) as without it.
    """
    paths = [Path(name)] if "/" in name else [Path(d or ".") / name for d in os.get_exec_path()]
    why = errno.ENOENT
    for path in paths:
        try:
            mode = path.stat().st_mode
        except OSError:  # missing, or a PATH directory this user cannot search
            continue
        if stat.S_ISREG(mode) and os.access(path, os.X_OK):
            return
        why = errno.EACCES  # execve's answer for a file without x, or a directory
    raise UsageError(f"cannot start {name!r}: {os.strerror(why)}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``sckpt run`` / ``python -m sckpt.backend.checkpointing.wrapper``."""
    parser = build_parser()
    try:
        args = parser.parse_args(policy_words(sys.argv[1:] if argv is None else argv))
    except SckptError as exc:
        note(str(exc))
        return exc.exit_code
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        note("usage: sckpt run [options] -- PROGRAM [ARGS...]")
        return 2
    try:
        settings = refuse_if_read_only(args.read_only, args.config, program)
        start_policy = run_policy(args, settings)
        checkpointer = None  # the signal the program catches
        if args.transparent:
            from .transparent import transparent_checkpointer

            # An MPI launch DMTCP cannot restart exactly is refused here (exit 2, nothing
            # started); a working one gets the environment it needs (mpi.py).
            os.environ.update(transparent_env(program, os.environ))
            checkpointer = transparent_checkpointer(
                settings, gzip=args.gzip, coordinator=args.coordinator
            )
        return Wrapper(args, program, settings, checkpointer, start_policy).run()
    except SckptError as exc:
        note(str(exc))
        return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
