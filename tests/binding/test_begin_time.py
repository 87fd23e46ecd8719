"""``Binding.set_begin_time`` on the real cluster: what ``scontrol update StartTime=`` does.

The reference is Slurm's own view of the job: ``scontrol show job`` (EligibleTime, Reason)
and ``squeue --json`` (eligible_time, state_reason).  A job's begin time is its
EligibleTime; while it is in the future the job waits with Reason=BeginTime.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from sckpt.backend.errors import AccessDenied, InvalidJobId, SlurmError
from sckpt.backend.libslurm import Binding
from sckpt.backend.model import STEP_BATCH, Job, JobState, StepId

from tests.conftest import SlurmCluster
from tests.helpers import wait_for

from .conftest import Submit, python_as, scontrol_time, squeue_jobs

pytestmark = pytest.mark.slurm

NO_SUCH_JOB = 4_000_000
HOUR = 3600
_FIELD = re.compile(r"(\w+)=(\S*)")


def scontrol_job(cluster: SlurmCluster, job_id: int) -> dict[str, str]:
    """``scontrol -o show job JOB`` as {field: value} (the first value of a repeated field)."""
    out = cluster.run("scontrol", "-o", "show", "job", str(job_id))
    fields: dict[str, str] = {}
    for key, value in _FIELD.findall(out.stdout):
        fields.setdefault(key, value)
    return fields


def _job(binding: Binding, job_id: int) -> Job:
    return next(j for j in binding.load_jobs().jobs if j.job_id == job_id)


def _step_running(binding: Binding, step: StepId) -> bool:
    return any(s.step_id == step for s in binding.get_steps().steps)


def _squeue(cluster: SlurmCluster, job_id: int) -> dict[str, Any]:
    return squeue_jobs(cluster, {job_id})[job_id]


def _waiting_for_begin_time(cluster: SlurmCluster, job_id: int) -> dict[str, str]:
    """The job once Slurm shows it waiting for its begin time.

    Right after submission the reason can be another one for a moment: slurmctld tries the
    new job against the nodes first and says Resources while the node is still busy ending
    a job; its scheduler soon puts BeginTime back (backfill every bf_interval=5 s).
    """

    def waiting() -> dict[str, str] | None:
        ref = scontrol_job(cluster, job_id)
        return ref if ref["JobState"] == "PENDING" and ref["Reason"] == "BeginTime" else None

    return wait_for(waiting, timeout=60, interval=0.5)


def _set_now(binding: Binding, job_id: int) -> tuple[int, int]:
    """Call ``set_begin_time(job_id)``; the window of Unix seconds "now" fell in."""
    before = int(time.time())
    binding.set_begin_time(job_id)
    return before, int(time.time()) + 1


def _assert_eligible_now(cluster: SlurmCluster, job_id: int, window: tuple[int, int]) -> None:
    """Both of Slurm's commands show a begin time of "now" (within the call's window)."""
    ref = scontrol_job(cluster, job_id)
    assert window[0] <= scontrol_time(ref["EligibleTime"]) <= window[1], ref
    assert ref["Reason"] != "BeginTime", ref
    queued = _squeue(cluster, job_id)
    assert window[0] <= queued["eligible_time"] <= window[1], queued
    assert queued["state_reason"] != "BeginTime", queued


def test_future_begin_time_becomes_now_and_the_job_runs(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    alice = slurm_cluster.users[0]
    job_id = submit(
        "-n1", "-J", "bind-begin", "--begin=now+1hour", "--wrap", "sleep 300", user=alice
    )
    ref = _waiting_for_begin_time(slurm_cluster, job_id)
    submitted = scontrol_time(ref["SubmitTime"])
    assert scontrol_time(ref["EligibleTime"]) == submitted + HOUR
    assert scontrol_time(ref["StartTime"]) >= submitted + HOUR  # the expected start
    assert _squeue(slurm_cluster, job_id)["state_reason"] == "BeginTime"
    assert _job(binding, job_id).state_reason == "BeginTime"

    window = _set_now(binding, job_id)

    _assert_eligible_now(slurm_cluster, job_id, window)
    assert _job(binding, job_id).state_reason != "BeginTime"

    def running() -> bool:
        return _squeue(slurm_cluster, job_id)["job_state"] == "RUNNING"

    wait_for(running, timeout=60, interval=0.5)  # not an hour
    assert _job(binding, job_id).state is JobState.RUNNING


def test_a_requeued_held_job_begins_now_once_released(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    """The cooperative engine's restart: requeue-hold, clear the begin time, release."""
    alice = slurm_cluster.users[0]
    job_id = submit("-n1", "-J", "bind-begin-rq", "--requeue", "--wrap", "sleep 300", user=alice)
    wait_for(lambda: _step_running(binding, StepId(job_id, STEP_BATCH)), timeout=60)
    binding.requeue(job_id, hold=True)

    def settled() -> dict[str, str] | None:
        """Pending (no longer completing), held, with the begin time the requeue set."""
        ref = scontrol_job(slurm_cluster, job_id)
        return ref if ref["JobState"] == "PENDING" and ref["Priority"] == "0" else None

    ref = wait_for(settled, timeout=90, interval=0.5)
    # slurmd refuses a credential issued in the second its previous one was revoked (the
    # cooperative engine waits as long, CREDENTIAL_GAP): let the release start it later.
    time.sleep(2)
    assert scontrol_time(ref["EligibleTime"]) > time.time() + 60, ref  # Slurm's ~120 s
    held_reason = ref["Reason"]

    window = _set_now(binding, job_id)

    ref = scontrol_job(slurm_cluster, job_id)
    assert window[0] <= scontrol_time(ref["EligibleTime"]) <= window[1], ref
    # Only the begin time changed: the job is still held, for the same reason.
    assert ref["JobState"] == "PENDING" and ref["Priority"] == "0", ref
    assert ref["Reason"] == held_reason
    queued = _squeue(slurm_cluster, job_id)
    assert window[0] <= queued["eligible_time"] <= window[1] and queued["priority"] == 0
    assert _job(binding, job_id).held

    binding.release(job_id)

    def running() -> bool:
        return _squeue(slurm_cluster, job_id)["job_state"] == "RUNNING"

    wait_for(running, timeout=45, interval=0.5)  # well before the requeue's ~120 s
    job = _job(binding, job_id)
    assert job.state is JobState.RUNNING and job.restart_count >= 1 and not job.held


def test_an_explicit_time_is_set_and_a_past_one_means_now(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    job_id = submit("-n1", "-J", "bind-begin-at", "--hold", "--wrap", "sleep 300")
    later = int(time.time()) + 2 * HOUR
    binding.set_begin_time(job_id, later)
    ref = scontrol_job(slurm_cluster, job_id)
    assert scontrol_time(ref["EligibleTime"]) == later, ref
    assert _squeue(slurm_cluster, job_id)["eligible_time"] == later

    before = int(time.time())
    binding.set_begin_time(job_id, before - HOUR)  # as scontrol: a past time is now
    ref = scontrol_job(slurm_cluster, job_id)
    assert before <= scontrol_time(ref["EligibleTime"]) <= int(time.time()) + 1, ref

    binding.set_begin_time(job_id, later)
    window = _set_now(binding, job_id)  # 0
    _assert_eligible_now(slurm_cluster, job_id, window)

    with pytest.raises(ValueError):
        binding.set_begin_time(job_id, -1)


def test_a_missing_job_is_invalid_job_id(binding: Binding) -> None:
    with pytest.raises(InvalidJobId) as info:
        binding.set_begin_time(NO_SUCH_JOB)
    assert info.value.code == 2017 and info.value.name == "ESLURM_INVALID_JOB_ID"


def test_a_running_job_is_not_pending(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    job_id = submit("-n1", "-J", "bind-begin-run", "--wrap", "sleep 300")
    wait_for(lambda: _step_running(binding, StepId(job_id, STEP_BATCH)), timeout=60)
    with pytest.raises(SlurmError) as info:
        binding.set_begin_time(job_id)
    assert info.value.code == 2073 and info.value.name == "ESLURM_JOB_NOT_PENDING"
    # scontrol is refused the same way.
    done = slurm_cluster.run("scontrol", "update", f"JobId={job_id}", "StartTime=now", check=False)
    assert done.returncode == 1 and info.value.message in done.stderr, done.stderr
    assert _squeue(slurm_cluster, job_id)["job_state"] == "RUNNING"


_AS_USER = """
import json, sys
from sckpt.backend.errors import SckptError
from sckpt.backend.libslurm import get_binding
try:
    get_binding().set_begin_time(int(sys.argv[1]))
    print(json.dumps(["ok", 0, ""]))
except SckptError as exc:
    print(json.dumps([type(exc).__name__, getattr(exc, "code", 0), getattr(exc, "name", "")]))
"""


def _as_user(cluster: SlurmCluster, user: str, job_id: int) -> list[Any]:
    """``set_begin_time(job_id)`` in a process of ``user``: [error type, code, name]."""
    result: list[Any] = python_as(cluster, user, _AS_USER, str(job_id))
    return result


def test_another_users_job_is_access_denied_and_the_owner_may(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    alice, bob = slurm_cluster.users
    job_id = submit(
        "-n1", "-J", "bind-begin-alice", "--begin=now+1hour", "--wrap", "sleep 300", user=alice
    )
    eligible = _waiting_for_begin_time(slurm_cluster, job_id)["EligibleTime"]

    # slurmctld answers a non-owner's job update with ESLURM_USER_ID_MISSING.
    assert _as_user(slurm_cluster, bob, job_id) == ["AccessDenied", 2010, "ESLURM_USER_ID_MISSING"]
    ref = scontrol_job(slurm_cluster, job_id)
    assert ref["EligibleTime"] == eligible and ref["Reason"] == "BeginTime", ref
    # scontrol as bob is refused the same way.
    done = slurm_cluster.run(
        "scontrol", "update", f"JobId={job_id}", "StartTime=now", user=bob, check=False
    )
    assert done.returncode == 1 and "Invalid user id" in done.stderr, done.stderr
    assert scontrol_job(slurm_cluster, job_id)["EligibleTime"] == eligible

    # The owner, unprivileged, may.
    before = int(time.time())
    assert _as_user(slurm_cluster, alice, job_id) == ["ok", 0, ""]
    _assert_eligible_now(slurm_cluster, job_id, (before, int(time.time()) + 1))
    assert issubclass(AccessDenied, SlurmError)
