"""``sckpt run --transparent``: the wrapper with DMTCP as its checkpointer.

``Wrapper`` (``wrapper.py``) does everything around a checkpoint: registration, the step's
record, requests, generations, the image index, signals, the exit status.  This subclass
overrides the wrapper's points where the signal is used and drives a ``Checkpointer``
(``checkpointer.py``; here ``transparent.DmtcpCheckpointer``) there instead:

* ``command``: ``prepare`` it, then start what its ``command`` says (``dmtcp_launch`` /
  ``dmtcp_restart`` around the program);
* ``_send_if_caught``: its ``begin`` (``dmtcp_command``); a refusal (no space, DMTCP said no)
  is written as the task's status line, as a cooperative program would write it;
* ``check_done``: once its ``poll`` says the image is whole, ``collect`` it into the
  generation being written and write ``0``; the wrapper's own code then completes the
  generation;
* ``_end``: its ``close``.

``able`` is Yes whatever the program does with signals: the task's record names its
checkpointer (``transparent (DMTCP 4.2.0)``), which the console shows instead of a signal.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
from pathlib import Path

from ..config import Settings
from .checkpointer import Checkpointer
from .dmtcp import find_dmtcp
from .protocol import HANDLER_CAUGHT, StepRecord, StoreError, TaskInfo
from .transparent import DmtcpCheckpointer
from .wrapper import Wrapper, _note


class TransparentWrapper(Wrapper):
    """One task's wrapper whose program runs under DMTCP."""

    def __init__(
        self,
        args: argparse.Namespace,
        program: list[str],
        settings: Settings,
        checkpointer: Checkpointer,
    ) -> None:
        super().__init__(args, program, settings)
        self.checkpointer = checkpointer

    # ---- what is started -----------------------------------------------------------------
    def command(self, env: dict[str, str]) -> list[str]:
        """``dmtcp_launch``/``dmtcp_restart`` with the task's private coordinator.  When that
        coordinator cannot start, the program runs without checkpointing (the job matters
        more) and the task's record says why, as for an image directory that cannot be made.
        """
        try:
            env.update(self.checkpointer.prepare(Path(self.image_dir)))
        except OSError as exc:
            why = f"DMTCP's coordinator cannot start: {exc.strerror or exc}"
            self.switch_off(why, exc.errno or errno.EIO)
            _note(f"{why}; running {self.program[0]} WITHOUT checkpoint support")
            return self.program
        return self.checkpointer.command(self.program, self.restart_dir)

    def _task(self, *, resumed_from: str = "", start_note: str = "", off: str = "") -> TaskInfo:
        task = super()._task(resumed_from=resumed_from, start_note=start_note, off=off)
        task.checkpointer = self.checkpointer.label
        return task

    # ---- able: whatever the program does with signals ------------------------------------
    def look_at_handler(self) -> str:
        if self.child is None:
            return ""
        return self._record_handler(HANDLER_CAUGHT)

    # ---- a checkpoint --------------------------------------------------------------------
    def _send_if_caught(self, pid: int) -> str:
        code, message = self.checkpointer.begin(pid)
        if code:
            _note(f"checkpoint not taken: {message}")
            self._write_status(f"{code} {message}")
        return HANDLER_CAUGHT

    def _write_status(self, line: str) -> None:
        tmp = self.done_path.with_name(self.done_path.name + ".tmp")
        tmp.write_text(line + "\n")
        tmp.rename(self.done_path)

    def check_done(self) -> None:
        if self.active is not None and not self.done_path.exists():
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
            self._write_status("0" if code == 0 else f"{code} {message}")
        super().check_done()

    def _record_image(self, size: int, seconds: float) -> None:
        def change(rec: StepRecord) -> None:
            rec.image_bytes[str(self.procid)] = size
            rec.ckpt_seconds[str(self.procid)] = round(seconds, 3)

        with contextlib.suppress(StoreError):
            self.store.update(change)

    def _end(self, status: int) -> None:
        self.checkpointer.close()
        super()._end(status)


def transparent_wrapper(
    args: argparse.Namespace, program: list[str], settings: Settings
) -> TransparentWrapper:
    """The wrapper for ``--transparent``; ``DmtcpMissing`` (one line, exit 3) before anything
    is started when this machine has no usable DMTCP."""
    install = find_dmtcp(settings.dmtcp_dir)
    checkpointer = DmtcpCheckpointer(install, Path(), gzip=args.gzip)
    return TransparentWrapper(args, program, settings, checkpointer)
