"""The transparent checkpointer: DMTCP checkpoints a task's unmodified program.

``sckpt run --transparent -- PROGRAM`` runs PROGRAM under ``dmtcp_launch`` (or, when the
task has a complete image, ``dmtcp_restart`` of it), with one private coordinator per step
or per task (``--coordinator``; ``dmtcp_coordinator.py``: reachable only by the job's
processes).  The wrapper stays
beside it exactly as for a cooperative program; only three things differ, and they are
this class's methods (the signal checkpointer's counterparts are in
``signal_checkpointer.py``; both are ``checkpointer.Checkpointer``):

* ``command``: what the wrapper starts (``dmtcp_launch ... PROGRAM`` / ``dmtcp_restart``);
* ``begin``: how a checkpoint is asked for (``dmtcp_command -c`` to the task's coordinator,
  after a free-space check, instead of a signal the program must catch);
* ``poll``: how its end is learnt (the coordinator's restart script lists every image, and
  each image has its final name, instead of the program writing its status file).  The
  wrapper then writes the status file itself, so everything after that (the generation
  renamed to ``g<N>`` only when complete, keep-last-K, the image index, another ImageDir)
  is the same code for both.

Why one coordinator per step by default: DMTCP checkpoints a group of processes that talk
through sockets (and reconnects them at restart) only when they all join one coordinator, so
a step whose tasks talk to each other (a server and its clients, workers and a scheduler)
needs one; and one coordinator and one relay for the step cost far less memory than one per
task (bench/README.md).  Task 0 starts it; the other tasks find it (or their node's relay)
in the step's record; task 0 alone asks for a checkpoint, once; each task still finds its
own images (the ones the coordinator's restart script lists in its ``task<rank>`` spool:
DMTCP 4.2.0's coordinator ``--ckptdir`` places only that script), so images stay mapped
by rank whatever nodes or step id the new run gets.  ``--coordinator task`` keeps one per
task (every coordinator on its task's node; tasks must not talk through sockets).

DMTCP writes the image into ``task<rank>/dmtcp`` (a real directory, never the ``current``
link: after a restart DMTCP resolves its checkpoint directory once, so a link would pin it
to one generation), and ``collect`` moves the finished files into the generation being
written (a rename on the same file system: no copy).

Why no compression by default: DMTCP's gzip costs 8x the time on incompressible memory and
saves nothing there (bench/README.md); ``--gzip`` on ``sckpt run`` turns it on.

Why the free-space check: DMTCP 4.2.0 treats a failed write of the image as fatal to the
*program* (``JASSERT`` then ``_exit``).  A checkpoint whose image (estimated as the resident
memory of the program's processes, plus a margin) would not fit is therefore refused with
ENOSPC before DMTCP is asked, and the program keeps running.  What remains: another writer
filling the file system during the checkpoint (README says so).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..config import Settings
from . import peers, stuck
from .checkpointer import TaskPlace, Unavailable
from .dmtcp import DmtcpInstall, checkpointer_label, find_dmtcp
from .dmtcp_coordinator import NodeRelay, PrivateCoordinator
from .processes import process_tree
from .protocol import HANDLER_CAUGHT, StepRecord, StoreError
from .store import job_secret

SPOOL = "dmtcp"
"""Per task: where DMTCP writes before the files move into the generation."""
RESTART_SCRIPT = "dmtcp_restart_script.sh"
IMAGE_GLOB = "ckpt_*.dmtcp"
SPACE_MARGIN = 1.10
SPACE_SLACK = 64 << 20
"""An image is about the resident memory of the program's processes; ask for 10 % and
64 MiB more than that before starting a checkpoint."""
COMMAND_TIMEOUT = 30.0
STEP_SPOOL = "dmtcp-step"
"""Per step (``--coordinator step``): the step coordinator's directory (its log and the
restart script it writes, which lists every image of every task)."""
COORDINATOR_WAIT = 60.0
"""How long a task waits for task 0's step coordinator (or its node's relay) to appear in
the step's record before it runs its program without checkpoints (and says why)."""
STEP, TASK = "step", "task"
_GIVEN = re.compile(r'^given_ckpt_files="([^"]*)"', re.MULTILINE)


def resident_bytes(pids: Sequence[int]) -> int:
    """Sum of ``VmRSS`` and ``VmSwap`` of the processes (what DMTCP will write, roughly)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmSwap"):
                    total += int(value.split()[0]) * 1024
    return total


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _size(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB"


class DmtcpCheckpointer:
    """One task's DMTCP: coordinator, launch/restart command, checkpoint start and end."""

    kind = "transparent"

    def __init__(
        self,
        install: DmtcpInstall,
        task_dir: str | os.PathLike[str],
        *,
        gzip: bool = False,
        coordinator: str = TASK,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.clock = clock
        """The time of day: when a checkpoint began (images older than that are not its
        own) and its stuck limit (``stuck.Watch``)."""
        self.monotonic = monotonic
        self.sleep = sleep
        """What ``COORDINATOR_WAIT`` and the coordinator's start are measured and waited
        with: a test's fake clock runs them out with no real wait
        (tests/backend/test_checkpointing_time.py)."""
        self.install = install
        self.spool = Path(task_dir) / SPOOL
        self.gzip = gzip
        self.coordinator_kind = coordinator
        self.place: TaskPlace | None = None
        self.coordinator: PrivateCoordinator | NodeRelay | None = None
        self.port = 0
        self.began = 0.0
        self.last_seconds = 0.0
        self.outside: list[str] = []
        """Connections to outside the computation at the last checkpoint (``peers.py``)."""
        self.give_up_at = 0.0
        """When the checkpoint asked for is given up on (``stuck.arm``; 0: never)."""
        self.watch = stuck.Watch(clock)
        self.root = 0
        """The first process of the computation being checkpointed (``begin``'s ``pid``)."""

    @property
    def step_mode(self) -> bool:
        return self.coordinator_kind == STEP and self.place is not None

    @property
    def script_dir(self) -> Path:
        """Where the coordinator writes its restart script: the task's spool, or the
        step's directory beside the tasks' ones."""
        return self.spool.parent.parent / STEP_SPOOL if self.step_mode else self.spool

    def bind(self, place: TaskPlace) -> None:
        """``Checkpointer.bind``: the step this task belongs to (step mode needs it)."""
        self.place = place

    @property
    def label(self) -> str:
        """``transparent (DMTCP 4.2.0)``: the words of the checkpoint column and detail."""
        return checkpointer_label(self.install)

    def prepare(self, task_dir: Path) -> dict[str, str]:
        """``Checkpointer.prepare``: DMTCP writes into ``task_dir/dmtcp``; start its
        coordinator (``Unavailable`` when it cannot start)."""
        self.spool = Path(task_dir) / SPOOL
        try:
            self.spool.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            why = f"DMTCP's directory {self.spool} cannot be made: {exc.strerror or exc}"
            raise Unavailable(exc.errno or errno.EIO, why) from None
        try:
            return self.env()
        except OSError as exc:
            why = f"DMTCP's coordinator cannot start: {exc.strerror or exc}"
            raise Unavailable(exc.errno or errno.EIO, why) from None
        except StoreError as exc:
            why = f"DMTCP's coordinator cannot start: {exc.message}"
            raise Unavailable(exc.errno or errno.EIO, why) from None

    def handler(self, pid: int) -> str:
        """``caught``: no signal is sent, so whatever the program does with one, it can be
        checkpointed (the console shows the label instead)."""
        return HANDLER_CAUGHT

    def env(self) -> dict[str, str]:
        """Start (or find) the coordinator; the environment DMTCP's programs need."""
        self.spool.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.step_mode:
            self._join_step()
        else:
            coordinator = PrivateCoordinator(
                self.install.program("dmtcp_coordinator"),
                self.spool,
                self.spool / "coordinator.log",
                monotonic=self.monotonic,
                sleep=self.sleep,
            )
            self.port = coordinator.start()
            self.coordinator = coordinator
        return {
            **self.command_env(),
            "DMTCP_CHECKPOINT_DIR": str(self.spool),
            "DMTCP_GZIP": "1" if self.gzip else "0",
        }

    def _join_step(self) -> None:
        """Step mode: task 0 starts the step coordinator; the first task (SLURM_LOCALID 0)
        of every other node starts its node relay; every task then uses its node's port,
        as published in the step's record (``coord_ports``)."""
        place = self.place
        assert place is not None
        store = place.store
        secret = job_secret(store.directory, store.step.job_id, os.getuid())
        if place.procid == 0:
            self.script_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            step = PrivateCoordinator(
                self.install.program("dmtcp_coordinator"),
                self.script_dir,
                self.script_dir / "coordinator.log",
                secret=secret,
                monotonic=self.monotonic,
                sleep=self.sleep,
            )
            self.port = step.start()
            self.coordinator = step
            public = f"{_node_address()}:{step.public_port}"
            self._publish(lambda rec: _set_step(rec, place, public, self.port))
            return
        rec = self._wait_for(lambda r: bool(r.coord_public))
        if place.node in rec.coord_ports:
            self.port = rec.coord_ports[place.node]
            return
        if place.localid == 0:
            host, _, port = rec.coord_public.rpartition(":")
            relay = NodeRelay((host, int(port)), secret, monotonic=self.monotonic)
            self.port = relay.start()
            self.coordinator = relay
            self._publish(lambda r: r.coord_ports.update({place.node: self.port}))
            return
        self.port = self._wait_for(lambda r: place.node in r.coord_ports).coord_ports[place.node]

    def _publish(self, change: Callable[[StepRecord], object]) -> None:
        assert self.place is not None
        try:
            self.place.store.update(change)
        except StoreError as exc:
            raise OSError(exc.errno or errno.EIO, exc.message) from None

    def _wait_for(self, ready: Callable[[StepRecord], bool]) -> StepRecord:
        """The step's record once ``ready(record)`` holds for this run (bounded)."""
        place = self.place
        assert place is not None
        deadline = self.monotonic() + COORDINATOR_WAIT
        while self.monotonic() < deadline:
            with contextlib.suppress(StoreError):
                rec = place.store.read()
                if rec is not None and rec.coord_run == place.run and ready(rec):
                    return rec
            self.sleep(0.1)
        raise OSError(
            errno.ETIME,
            f"task 0's step coordinator did not appear in the step's record within "
            f"{COORDINATOR_WAIT:.0f} s",
        )

    def command(self, program: Sequence[str], restart_dir: str = "") -> list[str]:
        """``dmtcp_restart`` of the images in ``restart_dir``, else ``dmtcp_launch PROGRAM``.

        ``--join-coordinator``: never start a coordinator of its own (one would listen on
        every address, for anyone)."""
        images = sorted(str(p) for p in Path(restart_dir).glob(IMAGE_GLOB)) if restart_dir else []
        common = ["--join-coordinator", "--ckptdir", str(self.spool)]
        if images:
            return [self.install.program("dmtcp_restart"), *common, *images]
        gzip = "--gzip" if self.gzip else "--no-gzip"
        return [self.install.program("dmtcp_launch"), *common, gzip, *program]

    def command_env(self) -> dict[str, str]:
        if not self.port:
            return {}
        return {"DMTCP_COORD_HOST": "127.0.0.1", "DMTCP_COORD_PORT": str(self.port)}

    def begin(self, pid: int, since: float = 0.0, also: Sequence[Path] = ()) -> tuple[int, str]:
        """Ask for a checkpoint of the computation whose first process is ``pid``.

        ``(0, "")`` once asked; else the code and why it was not (nothing was asked then,
        and the program runs on untouched).  ``also``: other directories the image will
        be copied to (an operator's ImageDir), checked for space too.
        """
        code, why, self.outside = peers.before_checkpoint(
            process_tree(pid), self.command_env(), step_wide=self.step_mode
        )
        if code:
            return code, why
        need = int(resident_bytes(process_tree(pid)) * SPACE_MARGIN) + SPACE_SLACK
        for where in (self.spool, *also):
            with contextlib.suppress(OSError):
                free = free_bytes(where if where.exists() else where.parent)
                if free < need:
                    return errno.ENOSPC, (
                        f"No space left on device: the image needs about {_size(need)} and "
                        f"{where} has {_size(free)} free; not checkpointed, the program runs on"
                    )
        self.began = since or self.clock()
        if self.step_mode and self.place is not None and self.place.procid != 0:
            # Task 0 asks the step's coordinator once for every task; this task's images
            # are the ones the restart script lists in its spool (``images``).
            self._clear_spool(before=self.began - 1)
            return 0, ""
        self._clear_spool()
        if self.step_mode:
            for old in self.script_dir.glob("dmtcp_restart_script*.sh"):
                with contextlib.suppress(OSError):
                    old.unlink()
        self.root, self.watch = pid, stuck.Watch(self.clock)
        try:
            done = subprocess.run(
                [self.install.program("dmtcp_command"), "--checkpoint"],
                env={**os.environ, **self.command_env()},
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return errno.ETIMEDOUT, "dmtcp_command did not answer in 30 s"
        except OSError as exc:
            return exc.errno or errno.EIO, f"cannot run dmtcp_command: {exc.strerror}"
        if done.returncode != 0:
            said = " ".join((done.stderr or done.stdout).split())[:300] or f"exit {done.returncode}"
            return errno.EIO, f"DMTCP refused the checkpoint: {said}"
        return 0, ""

    def images(self) -> list[Path] | None:
        """The images of the checkpoint just taken, once every one is complete; else None."""
        script = self.script_dir / RESTART_SCRIPT
        try:
            if script.lstat().st_mtime < self.began - 1:
                return None
            text = script.read_text(errors="replace")
        except OSError:
            return None
        match = _GIVEN.search(text)
        if not match:
            return None
        listed = [Path(p) for p in match.group(1).split()]
        if self.step_mode:  # every task's images: this task's are those in its spool
            mine = self.spool.resolve()
            listed = [p for p in listed if p.parent.resolve() == mine]
        if not listed or any(not p.is_file() for p in listed):
            return None
        if any(self.spool.glob("*.temp")):
            return None
        return listed

    def poll(self) -> tuple[int, str] | None:
        """None while the checkpoint runs; ``(0, "")`` once its images are whole on disk."""
        listed = self.images()
        if listed is None:
            return self.watch.check(
                self.give_up_at,
                self.began,
                lambda: process_tree(self.root),
                lambda: stuck.written(self.spool),
            )
        for image in listed:
            try:
                fd = os.open(image, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                return exc.errno or errno.EIO, f"cannot flush {image}: {exc.strerror}"
        self.last_seconds = self.clock() - self.began
        return 0, ""

    def collect(self, into: Path) -> int:
        """Move the finished images and their restart script into ``into``; their bytes."""
        listed = self.images() or []
        total = 0
        script = self.script_dir / RESTART_SCRIPT
        real = script.resolve() if script.is_symlink() else script
        for path in listed:
            if path.is_file():
                total += path.stat().st_size
                path.rename(into / path.name)
        if self.step_mode:  # the step's script: every task copies it, none takes it
            with contextlib.suppress(OSError):
                shutil.copyfile(real, into / real.name)
            return total
        if real.is_file():
            real.rename(into / real.name)
        with contextlib.suppress(FileNotFoundError):
            script.unlink()
        return total

    def _clear_spool(self, before: float = 0.0) -> None:
        """Leftovers of a checkpoint that did not complete never mix with the next one
        (``before``: only files older than that, for a task of a step whose images may
        already be on their way)."""
        for pattern in (IMAGE_GLOB, "*.temp", "dmtcp_restart_script*.sh"):
            for path in self.spool.glob(pattern):
                with contextlib.suppress(OSError):
                    if not before or path.stat().st_mtime < before:
                        path.unlink()

    def close(self) -> None:
        """End the coordinator or relay this task started; in step mode once the step's
        other tasks have left it (their DMTCP processes are its clients)."""
        if self.coordinator is not None:
            self.coordinator.close(drain=self.step_mode)
            self.coordinator = None


def _node_address() -> str:
    """The address other nodes reach this one at (its name's, else loopback)."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _set_step(rec: StepRecord, place: TaskPlace, public: str, port: int) -> None:
    rec.coord_run = place.run
    rec.coord_public = public
    rec.coord_ports = {place.node: port}


def transparent_checkpointer(
    settings: Settings, *, gzip: bool = False, coordinator: str = STEP
) -> DmtcpCheckpointer:
    """The checkpointer of ``sckpt run --transparent``; ``DmtcpMissing`` (one line, exit 3)
    before anything is started when this machine has no usable DMTCP."""
    install = find_dmtcp(settings.dmtcp_dir)
    return DmtcpCheckpointer(install, Path(), gzip=gzip, coordinator=coordinator)
