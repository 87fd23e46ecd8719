"""``sckpt history JOB``: a job's records from Slurm's accounting, as a table or ``--json``.

slurmdbd keeps each requeue or restart of a job as a record of its own (``sacct
--duplicates``); the table shows one line per record, oldest first, then the checkpoint
events of the job's steps where the engine keeps them (the cooperative store, the simulated
controller).  Without accounting the command says so in one line and exits 3, like any
"cannot reach" failure; with ``--json`` the document carries the error object instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sckpt.backend import history as job_history
from sckpt.backend import operations, progress
from sckpt.backend.errors import SckptError
from sckpt.backend.model import CheckpointEvent, JobHistory, StepId

from sckpt.exit_codes import EXIT_OK

from . import output

if TYPE_CHECKING:
    from sckpt.backend.facade import Facade

HEADER = ("RUN", "JOBID", "STATE", "EXITCODE", "SUBMIT", "START", "END", "NODELIST", "PARTITION")
EVENT_HEADER = ("TIME", "STEP", "OPERATION", "CAUSE", "BY", "RESULT")
"""The checkpoint events' table: CAUSE says what started a checkpoint (``operator``, or
the step's own policy: ``interval``, ``before end``, ``SIGTERM``; ``-`` where the engine
does not say), RESULT an ``auto`` line's new policy."""


def render_text(found: JobHistory, *, noheader: bool = False) -> str:
    """One line per record (sacct's words for state, exit code and times), then the
    checkpoint events, and a note when the limit cut older records off."""
    labels = job_history.run_labels(found.records, found.skipped)
    rows = [
        [
            labels[index],
            job_history.record_id(r),
            job_history.state_text(r),
            job_history.exit_text(r),
            job_history.date_text(r.submit_time),
            job_history.date_text(r.start_time),
            job_history.date_text(r.end_time),
            r.nodes,
            r.partition,
        ]
        for index, r in enumerate(found.records)
    ]
    header: tuple[str, ...] = HEADER
    if len({r.cluster for r in found.records}) > 1:  # -M: one job id on several clusters
        header = ("CLUSTER", *HEADER)
        rows = [[r.cluster, *row] for r, row in zip(found.records, rows, strict=True)]
    text = output.render_table(header, rows, noheader=noheader)
    if found.checkpoints:
        events = [
            [
                job_history.date_text(e.event.time),
                str(e.step_id),
                e.event.operation,
                e.event.cause or "-",
                e.event.by,
                _auto_result(e.event) or result,
            ]
            for e, result in job_history.checkpoint_results(found.checkpoints)
        ]
        text += "\n\n" + output.render_table(EVENT_HEADER, events, noheader=noheader)
    if found.truncated:
        text += f"\n(only the newest {found.limit} records: more with --limit)"
    return text


def _auto_result(event: CheckpointEvent) -> str:
    """A policy line's RESULT (``auto``'s, of ``kind`` "policy"): the policy it set (""
    for any other line, whose RESULT is whether its checkpoint completed:
    ``backend/history.checkpoint_results``; a ``done`` line is no operation's)."""
    row = operations.BY_NAME.get(event.operation)
    if row is not None and row.kind == "policy" and not event.code:
        return event.message or "changed"
    return ""


def render_json(found: JobHistory) -> dict[str, Any]:
    """The history document: the records (with sacct's state and exit code texts), the
    checkpoint events and the bounds the query ran with."""
    data: dict[str, Any] = output.to_jsonable(found)
    for record, shown in zip(data["records"], found.records, strict=True):
        record["state_text"] = job_history.state_text(shown)
        record["exit_text"] = job_history.exit_text(shown)
        record["id"] = job_history.record_id(shown)  # sacct's JobID: 123 or 7_3
    results = {id(e): result for e, result in job_history.checkpoint_results(found.checkpoints)}
    for event, shown_event in zip(data["checkpoints"], found.checkpoints, strict=True):
        # the table's RESULT; a done merged into its request has its own outcome
        done = progress.failed(shown_event.event.code) if shown_event.event.code else None
        event["result"] = results.get(id(shown_event), done or progress.COMPLETED)
    data["exit_code"] = EXIT_OK
    return data


def run_history(
    facade: Facade, job: StepId, since: str | None, limit: int | None, *, as_json: bool
) -> int:
    """Ask, print, and return the exit code (the error's own, on failure).  An array task
    (``7_3``) is looked up in the listing first: accounting knows it by its own job id."""
    try:
        found = facade.history(job, since=since, limit=limit)
    except SckptError as failure:
        if not as_json:
            raise
        output.to_stdout(output.dumps(failure_json(job.job_id, failure)))
        return failure.exit_code
    if as_json:
        output.to_stdout(output.dumps(render_json(found)))
    else:
        output.to_stdout(render_text(found))
    return EXIT_OK


def failure_json(job_id: int, failure: SckptError) -> dict[str, Any]:
    """``--json``'s document when there is no history to show: the error object."""
    return {
        "job_id": job_id,
        "records": [],
        "error": output.error_json(failure),
        "exit_code": failure.exit_code,
    }
