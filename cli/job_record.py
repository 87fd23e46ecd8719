"""``sckpt show JOB``: one job's record, as ``scontrol show job`` prints the fields sckpt has.

An operator about to vacate, hold or cancel reads the job first: its state and reason,
times, limit and time left, partition, QOS, priority, nodes, resources, working directory,
output files, requeue flag, restart count and dependency.  The lines and key names are scontrol's
(``Key=Value``, indented continuation lines), in its order, for the fields sckpt reads;
``TimeLeft`` (squeue's ``%L``) and ``Checkpoint`` (the CKPT summary) are sckpt's own.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sckpt.backend.errors import InvalidJobId, SckptError
from sckpt.backend.model import TIME_UNLIMITED, Job, JobStdio, JobView, StepId

from sckpt.exit_codes import EXIT_OK

from . import output
from .squeue_format import memory_text, speaks_1905

if TYPE_CHECKING:
    from sckpt.backend.facade import Facade


def scontrol_secs(seconds: int) -> str:
    """scontrol's ``secs2time_str``: ``HH:MM:SS``, ``D-HH:MM:SS`` past a day."""
    days, rest = divmod(max(0, int(seconds)), 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def scontrol_time(unix_seconds: int) -> str:
    """scontrol's times: ISO 8601 local time, ``Unknown`` when not set."""
    if not unix_seconds:
        return "Unknown"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(unix_seconds))


def _limit(job: Job) -> str:
    if job.time_limit is None:  # NO_VAL: the partition's limit applies, as scontrol says
        return "Partition_Limit"
    if job.time_limit == TIME_UNLIMITED:
        return "UNLIMITED"
    return scontrol_secs(job.time_limit * 60)


def _left(job: Job, now: float) -> str:
    left = job.time_left(now)
    if job.time_limit is None or job.state.is_finished:
        return "N/A"
    return "UNLIMITED" if left is None else scontrol_secs(left)


def _or_null(text: str) -> str:
    return text or "(null)"


def _nodes(job: Job, release: str) -> str:
    """scontrol's NodeList: empty for a job without nodes, ``(null)`` on 19.05."""
    return "(null)" if not job.nodes and speaks_1905(release) else job.nodes


def render_text(view: JobView, stdio: JobStdio | None, now: float, release: str = "") -> str:
    """The record as scontrol lays it out (``stdio`` None: the output files unknown;
    ``release``: the controller's Slurm version, where scontrol's words differ by it)."""
    job = view.job
    first = f"JobId={job.job_id}"
    if job.is_array:
        task = job.array_task_str or job.array_task_id
        first += f" ArrayJobId={job.array_job_id} ArrayTaskId={task}"
    end = "Unknown" if job.time_limit == TIME_UNLIMITED and job.end_time > now else None
    lines = [
        f"{first} JobName={job.name}",
        f"UserId={job.user}({job.uid})",
        f"Priority={job.priority} Account={_or_null(job.account)} QOS={_or_null(job.qos)}",
        f"JobState={job.state.value} Reason={job.state_reason or 'None'} "
        f"Dependency={_or_null(job.dependency)}",
        f"Requeue={int(job.requeue)} Restarts={job.restart_count} BatchFlag={int(job.batch)}",
        f"RunTime={scontrol_secs(job.time_used(now))} TimeLimit={_limit(job)} "
        f"TimeLeft={_left(job, now)}",
        f"SubmitTime={scontrol_time(job.submit_time)}",
        f"StartTime={scontrol_time(job.start_time)} EndTime={end or scontrol_time(job.end_time)}",
        f"SuspendTime={scontrol_time(job.suspend_time) if job.suspend_time else 'None'} "
        f"SecsPreSuspend={job.pre_sus_time}",
        f"Partition={job.partition}",
        f"ReqNodeList={_or_null(job.required_nodes)}",
        f"NodeList={_nodes(job, release)}",
        f"NumNodes={job.num_nodes} NumCPUs={job.num_cpus} NumTasks={job.num_tasks}",
        f"TRES={_or_null(job.tres)}",
        f"MinMemory{'CPU' if job.memory_per_cpu else 'Node'}={memory_text(job.min_memory)}",
        *([f"Comment={job.comment}"] if job.comment else []),  # scontrol: only when set
        f"WorkDir={_or_null(job.work_dir)}",
    ]
    if stdio is not None:
        lines += [f"StdErr={_or_null(stdio.std_err)}", f"StdOut={_or_null(stdio.std_out)}"]
    lines.append(f"Checkpoint={output.job_checkpoint_summary(view)}")
    return "\n".join([output.clean(lines[0]), *(f"   {output.clean(x)}" for x in lines[1:])])


def render_json(view: JobView, stdio: JobStdio | None, now: float) -> dict[str, Any]:
    """``ls --json``'s job (its steps too), with the output files and the time left."""
    data = output.job_json(view, now)
    data["time_left"] = view.job.time_left(now)
    data["run_time"] = view.job.time_used(now)
    data["stdout"] = stdio.std_out if stdio is not None else None
    data["stderr"] = stdio.std_err if stdio is not None else None
    data["exit_code"] = EXIT_OK
    return data


def show_job(facade: Facade, target: StepId, *, as_json: bool) -> int:
    """Print the record of the job ``target`` names (an array task by its name)."""
    if not target.is_whole_job:
        target = StepId(target.job_id, cluster=target.cluster)
    record = facade.resolve(target)
    snapshot = facade.snapshot()
    view = next((v for v in snapshot.jobs if v.job.job_id == record.job_id), None)
    if view is None:
        raise InvalidJobId(hint=f"there is no job {target.job_text}")
    try:
        stdio: JobStdio | None = facade.job_stdio(StepId(record.job_id))
    except SckptError:
        stdio = None  # the record is still worth showing
    now = snapshot.taken_at or time.time()
    if as_json:
        output.to_stdout(output.dumps(render_json(view, stdio, now)))
    else:
        output.to_stdout(render_text(view, stdio, now, facade.info.slurm_version))
    return EXIT_OK
