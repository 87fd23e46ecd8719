"""The action runner: the facade's calls in thread workers, their answers as Messages.

The facade may block on libslurm, so nothing the console asks of it runs on the UI
thread.  As harlequin runs a query in a worker and posts what came back, each call here
runs in a thread worker of the app and posts the facade's answer, raw, as a Message
(``messages.py``): ``ActionDone`` and ``CheckAnswered`` to the app, which says what came
of them (``reports.py``); the data the screens show (a step's extras, accounting's
finished jobs and history) to every screen through ``broadcast``; a read of a job's
output file to the output screen that asked.  No text for the operator is made here.

Called by the app (``SckptApp.run_operation`` and the loaders the screens ask for through
``context.ScreenContext``); calls the facade.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from sckpt.backend import history, operations
from sckpt.backend.each_target import OneByOne
from sckpt.backend.errors import AccountingUnavailable, SckptError, SlurmError
from sckpt.backend.facade import Facade
from sckpt.backend.model import AbleResult, CheckpointError, StepId
from textual.app import App
from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import Worker

from .messages import (
    ActionDone,
    CheckAnswered,
    ExtrasLoaded,
    FinishedLoaded,
    HistoryLoaded,
    OutputLoaded,
    OutputRequest,
)
from .params import ActionParams

Broadcast = Callable[[Callable[[], Message]], None]
"""Posts a message made by its argument to every screen (``SckptApp.broadcast``)."""


class ActionRunner:
    """Runs ``facade``'s calls in thread workers of ``app`` and posts their answers."""

    def __init__(self, app: App[Any], facade: Facade, broadcast: Broadcast) -> None:
        self.app = app
        self.facade = facade
        self.broadcast = broadcast

    def _thread(
        self, work: Callable[[], None], name: str, group: str, **options: Any
    ) -> Worker[None]:
        """``work`` in a thread worker called ``name`` (what an internal error names)."""
        return self.app.run_worker(
            work, name=name, thread=True, exit_on_error=False, group=group, **options
        )

    def _to_screens(self, make: Callable[[], Message]) -> None:
        self.app.call_from_thread(self.broadcast, make)

    # ------------------------------------------------------------------ actions

    def act(
        self,
        operation: str,
        targets: Sequence[StepId],
        params: ActionParams | None,
        *,
        several: bool,
    ) -> Worker[None]:
        """Run ``operation`` on each of ``targets``, one facade call each (each refused or
        audited on its own: ``each_target.OneByOne``), and post every answer in one
        ``ActionDone``.

        ``Facade.act`` takes the operation's name and its ``arguments``
        (``backend/operations.py``), which the form's ``params`` hold.  The reading
        operations (able, error) are ``check``'s.
        """
        chosen = tuple(targets)

        def run() -> None:
            op = operations.operation(operation)
            values = params.values_for(op) if params is not None else {}
            answers = OneByOne(self.facade, op, values).each(chosen)
            self.app.post_message(ActionDone(operation, tuple(answers), params, several))

        name = "run_operation_many" if several else "run_operation"
        return self._thread(run, name, "actions")

    def check(self, target: StepId) -> Worker[None]:
        """``x``: ask able and error again for one row.  A refusal of able by sckpt itself
        (not by Slurm) is the whole answer: error is not asked then."""

        def run() -> None:
            able: AbleResult | SckptError
            error: CheckpointError | SckptError | None
            try:
                able = self.facade.able(target)
            except SlurmError as exc:
                able = exc
            except SckptError as exc:
                self.app.post_message(CheckAnswered(target, exc, None))
                return
            try:
                error = self.facade.error(target)
            except SckptError as exc:
                error = exc
            self.app.post_message(CheckAnswered(target, able, error))

        return self._thread(run, "run_check", "actions")

    # ------------------------------------------------------------------ data on demand

    def load_step_extras(self, target: StepId) -> Worker[None]:
        """The step's processes and interconnect (or why not), to the screens."""

        def run() -> None:
            processes: object
            interconnect: object
            try:
                processes = self.facade.step_processes(target)
            except SckptError as exc:
                processes = str(exc)
            try:
                interconnect = self.facade.interconnect(target)
            except SckptError as exc:
                interconnect = str(exc)
            self._to_screens(partial(ExtrasLoaded, target, processes, interconnect))

        return self._thread(run, "load_step_extras", "extras")

    def load_finished(self) -> Worker[None]:
        """Finished jobs from accounting (``f``): asked once per press, never by a refresh."""

        def run() -> None:
            try:
                found = self.facade.finished_jobs()
            except SckptError as exc:
                self._to_screens(partial(FinishedLoaded, (), str(exc)))
                return
            views = tuple(v for r in found.records if (v := history.finished_view(r)) is not None)
            self._to_screens(partial(FinishedLoaded, views))

        return self._thread(run, "load_finished", "accounting", exclusive=True)

    def load_job_history(self, job_id: int) -> Worker[None]:
        """A job's records from accounting, for the step detail (asked when it opens)."""

        def run() -> None:
            try:
                found = self.facade.history(str(job_id))
            except AccountingUnavailable as exc:
                # One line, its message only: the code, name, message and hint of
                # ESLURM_DB_CONNECTION took three lines at the end of every step detail of
                # a cluster without accounting ('sckpt doctor' says how to enable it).
                why = f"not available: {exc.message} (see sckpt doctor)"
                self._to_screens(partial(HistoryLoaded, job_id, None, why))
                return
            except SckptError as exc:
                self._to_screens(partial(HistoryLoaded, job_id, None, str(exc)))
                return
            self._to_screens(partial(HistoryLoaded, job_id, found))

        return self._thread(run, "load_job_history", "history")

    def load_output(self, request: OutputRequest, reply_to: MessagePump) -> Worker[None]:
        """A read of a job's output file (``o``), answered to ``reply_to`` (the output
        screen) by ``OutputLoaded``: the paths when not known yet or the state is to be
        asked again, then the bytes (the file may sit on a slow network file system)."""

        def run() -> None:
            stdio = request.stdio
            try:
                if stdio is None or request.ask_state:
                    stdio = self.facade.job_stdio(request.job)
            except SckptError as exc:
                reply_to.post_message(OutputLoaded(request, None, None, str(exc)))
                return
            read = self.facade.read_output(stdio, request.stream, request.offset)
            reply_to.post_message(OutputLoaded(request, stdio, read))

        return self._thread(run, "load_output", "output")
