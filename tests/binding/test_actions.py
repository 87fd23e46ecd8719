"""Actions through the binding have their effect on the real cluster, and refusals are typed."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from sckpt.backend.errors import AccessDenied, InvalidJobId, SlurmError
from sckpt.backend.libslurm import Binding
from sckpt.backend.model import STEP_BATCH, JobState, StepId

from tests.conftest import SlurmCluster
from tests.helpers import wait_for

from .conftest import Submit, python_as, squeue_jobs

pytestmark = pytest.mark.slurm

NO_SUCH_JOB = 4_000_000


def _job(binding: Binding, job_id: int) -> object:
    return next((j for j in binding.load_jobs().jobs if j.job_id == job_id), None)


def _step_running(binding: Binding, step: StepId) -> bool:
    return any(s.step_id == step for s in binding.get_steps().steps)


def _has_pids(binding: Binding, step: StepId) -> bool:
    """True once slurmd reports the step's processes (it may not know the step for a moment
    after the controller lists it: a loaded machine answers ESLURM_INVALID_JOB_ID then)."""
    try:
        nodes = binding.step_pids(step).nodes
    except InvalidJobId:
        return False
    return bool(nodes and nodes[0].pids)


def test_signal_reaches_the_step(binding: Binding, submit: Submit, tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    marker = tmp_path / "got-usr1"
    program = (
        f'srun -n1 bash -c \'trap "echo usr1 > {marker}; exit 0" USR1; '
        "while :; do sleep 0.2; done'"
    )
    job_id = submit("-n1", "-J", "bind-signal", "--wrap", program)
    step = StepId(job_id, 0)
    wait_for(lambda: _step_running(binding, step), timeout=60)
    wait_for(lambda: _has_pids(binding, step))
    binding.signal_step(step, signal.SIGUSR1)
    wait_for(marker.exists, timeout=30)
    assert marker.read_text().strip() == "usr1"


def test_kill_step_ends_only_that_step(binding: Binding, submit: Submit) -> None:
    job_id = submit("-n1", "-J", "bind-kill", "--wrap", "srun -n1 sleep 300; sleep 300")
    step = StepId(job_id, 0)
    wait_for(lambda: _step_running(binding, step), timeout=60)
    binding.kill_step(step, signal.SIGKILL)
    wait_for(lambda: not _step_running(binding, step), timeout=60)
    assert _step_running(binding, StepId(job_id, STEP_BATCH))


def test_requeue_hold_then_release(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    job_id = submit("-n1", "-J", "bind-requeue", "--requeue", "--wrap", "sleep 300")
    wait_for(lambda: _step_running(binding, StepId(job_id, STEP_BATCH)), timeout=60)

    binding.requeue(job_id, hold=True)

    def pending_held() -> bool:
        ref = squeue_jobs(slurm_cluster, {job_id}).get(job_id)
        return ref is not None and ref["job_state"] == "PENDING" and ref["priority"] == 0

    wait_for(pending_held, timeout=90, interval=1)
    job = _job(binding, job_id)
    assert job is not None and job.state is JobState.PENDING and job.held  # type: ignore[attr-defined]

    binding.release(job_id)
    released = squeue_jobs(slurm_cluster, {job_id})[job_id]
    assert released["priority"] != 0
    # Slurm makes a requeued job eligible only ~120 s later (BeginTime); bring that forward
    # with scontrol so the test need not wait, then the released job must run again.  The
    # requeue's completion may set the begin time again afterwards: clear it while it waits.
    slurm_cluster.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")

    def running_again() -> bool:
        ref = squeue_jobs(slurm_cluster, {job_id}).get(job_id)
        waiting = ref is not None and ref["job_state"] == "PENDING"
        if waiting and ref is not None and ref.get("state_reason") == "BeginTime":
            slurm_cluster.run("scontrol", "update", f"JobId={job_id}", "StartTime=now", check=False)
        return ref is not None and ref["job_state"] == "RUNNING"

    wait_for(running_again, timeout=120, interval=1)
    job = _job(binding, job_id)
    assert job is not None and not job.held and job.restart_count >= 1  # type: ignore[attr-defined]


def test_required_nodes_are_set(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    job_id = submit("-n1", "-J", "bind-reqnodes", "--hold", "--wrap", "sleep 300")
    binding.set_required_nodes(job_id, slurm_cluster.node)
    ref = squeue_jobs(slurm_cluster, {job_id})[job_id]
    assert ref["required_nodes"] == slurm_cluster.node
    job = _job(binding, job_id)
    assert job is not None and job.required_nodes == slurm_cluster.node  # type: ignore[attr-defined]


def test_requeue_without_hold_puts_job_back_to_pending_or_running(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    job_id = submit("-n1", "-J", "bind-requeue2", "--requeue", "--wrap", "sleep 300")
    wait_for(lambda: _step_running(binding, StepId(job_id, STEP_BATCH)), timeout=60)
    binding.requeue(job_id, hold=False)

    def requeued() -> bool:
        job = _job(binding, job_id)
        return job is not None and job.restart_count >= 1 and not job.held  # type: ignore[attr-defined]

    wait_for(requeued, timeout=90, interval=1)


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.signal_step(StepId(NO_SUCH_JOB, 0), signal.SIGUSR1),
        lambda b: b.kill_step(StepId(NO_SUCH_JOB, 0), signal.SIGKILL),
        lambda b: b.requeue(NO_SUCH_JOB, hold=True),
        lambda b: b.requeue(NO_SUCH_JOB),
        lambda b: b.release(NO_SUCH_JOB),
        lambda b: b.set_required_nodes(NO_SUCH_JOB, "sckpt-node"),
    ],
    ids=["signal", "kill", "requeuehold", "requeue", "release", "reqnodes"],
)
def test_nonexistent_ids_are_invalid_job_id(binding: Binding, call: object) -> None:
    with pytest.raises(InvalidJobId) as info:
        call(binding)  # type: ignore[operator]
    assert info.value.code == 2017 and info.value.name == "ESLURM_INVALID_JOB_ID"


_AS_OTHER_USER = """
import json, signal, sys
from sckpt.backend.errors import SckptError
from sckpt.backend.libslurm import get_binding
from sckpt.backend.model import StepId
job = int(sys.argv[1])
b = get_binding()
calls = {
    "signal": lambda: b.signal_step(StepId(job, 0), signal.SIGUSR1),
    "kill": lambda: b.kill_step(StepId(job, 0), signal.SIGKILL),
    "requeuehold": lambda: b.requeue(job, hold=True),
    "release": lambda: b.release(job),
    "reqnodes": lambda: b.set_required_nodes(job, "sckpt-node"),
    "pids": lambda: b.step_pids(StepId(job, 0)),
}
out = {}
for name, call in calls.items():
    try:
        call()
        out[name] = ["ok", 0]
    except SckptError as exc:
        out[name] = [type(exc).__name__, getattr(exc, "code", 0)]
print(json.dumps(out))
"""


def test_other_users_job_is_access_denied(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    alice = slurm_cluster.users[0]
    job_id = submit("-n1", "-J", "bind-root-job", "--wrap", "srun -n1 sleep 300")
    wait_for(lambda: _step_running(binding, StepId(job_id, 0)), timeout=60)
    results = python_as(slurm_cluster, alice, _AS_OTHER_USER, str(job_id))
    # slurmctld answers requeue with ESLURM_ACCESS_DENIED and the others (update, step
    # signal; slurmd for pids) with ESLURM_USER_ID_MISSING: both are AccessDenied.
    for name in ("signal", "kill", "requeuehold", "release", "reqnodes", "pids"):
        assert results[name][0] == "AccessDenied", (name, results)
        assert results[name][1] in (2002, 2010), (name, results)
    assert results["requeuehold"] == ["AccessDenied", 2002]
    # Nothing happened to the job.
    assert _step_running(binding, StepId(job_id, 0))
    job = next(j for j in binding.load_jobs().jobs if j.job_id == job_id)
    assert job.state is JobState.RUNNING and not job.held
    assert issubclass(AccessDenied, SlurmError)
