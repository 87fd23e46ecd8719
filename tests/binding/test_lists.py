"""Jobs, steps and step processes through the binding equal what Slurm's own tools report."""

from __future__ import annotations

import subprocess
import time

import pytest
from sckpt.backend.engines.live import LiveEngine
from sckpt.backend.errors import InvalidJobId
from sckpt.backend.libslurm import Binding, JobsResult
from sckpt.backend.model import STEP_BATCH, STEP_EXTERN, JobState, StepId

from tests.conftest import SlurmCluster
from tests.helpers import wait_for

from .conftest import Submit, scontrol_steps, scontrol_time, squeue_jobs, step_container_pids

pytestmark = pytest.mark.slurm

TWO_STEPS = "srun --overlap -n1 -J first sleep 300 & srun --overlap -n2 -J second sleep 300 & wait"


def _running_steps(binding: Binding, job_id: int, want: int) -> list[object]:
    steps = [s for s in binding.get_steps().steps if s.step_id.job_id == job_id]
    return steps if len(steps) >= want else []


def test_jobs_equal_squeue_json(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    alice = slurm_cluster.users[0]
    running = submit("-n3", "-J", "bind-run", "--wrap", TWO_STEPS)
    held = submit("-n1", "-J", "bind-held", "--hold", "-p", "long", "--wrap", "sleep 300")
    theirs = submit("-n1", "-J", "bind-alice", "--wrap", "sleep 300", user=alice)
    ids = {running, held, theirs}
    wait_for(lambda: _running_steps(binding, running, 3), timeout=60)
    wait_for(lambda: _running_steps(binding, theirs, 1), timeout=60)

    result = binding.load_jobs()
    reference = squeue_jobs(slurm_cluster, ids)
    ours = {j.job_id: j for j in result.jobs if j.job_id in ids}
    assert result.changed and set(ours) == ids == set(reference)
    for job_id, job in ours.items():
        ref = reference[job_id]
        assert job.name == ref["name"]
        assert job.user == ref["user_name"] and job.uid == ref["user_id"]
        assert job.partition == ref["partition"]
        assert job.state.value == ref["job_state"]
        assert job.state_reason == ref["state_reason"]
        assert job.nodes == ref["nodes"]
        assert job.num_nodes == ref["node_count"]
        assert job.num_cpus == ref["cpus"]
        assert job.num_tasks == ref["tasks"]
        assert job.start_time == ref["start_time"]
        assert job.submit_time == ref["submit_time"]
        assert job.batch == ref["batch_flag"]
        assert job.held == (ref["priority"] == 0)
        assert job.work_dir == ref["current_working_directory"]
    assert ours[held].held and ours[held].state is JobState.PENDING
    assert ours[running].state is JobState.RUNNING and not ours[running].held
    assert ours[theirs].user == alice


def test_steps_equal_scontrol_show_step(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    job_id = submit("-n3", "-J", "bind-steps", "--wrap", TWO_STEPS)
    wait_for(lambda: _running_steps(binding, job_id, 3), timeout=60)
    ours = {str(s.step_id): s for s in binding.get_steps().steps if s.step_id.job_id == job_id}
    reference = scontrol_steps(slurm_cluster, job_id)
    expected = {f"{job_id}.batch", f"{job_id}.0", f"{job_id}.1"}
    if binding.ctl_conf().prolog_contain:  # PrologFlags=Contain adds the .extern step
        expected.add(f"{job_id}.extern")
        assert ours[f"{job_id}.extern"].step_id == StepId(job_id, STEP_EXTERN)
    assert set(ours) == set(reference) == expected
    assert ours[f"{job_id}.batch"].step_id == StepId(job_id, STEP_BATCH)
    for key, step in ours.items():
        ref = reference[key]
        assert step.name == ref["Name"]
        assert step.state == ref["State"]
        assert step.partition == ref["Partition"]
        assert step.nodes == ref["NodeList"]
        assert step.num_tasks == int(ref["Tasks"])
        assert step.num_cpus == int(ref["CPUs"])
        assert step.start_time == scontrol_time(ref["StartTime"])
        assert ref["UserId"] in (str(step.uid), f"{step.user}({step.uid})")
    assert {ours[f"{job_id}.0"].name, ours[f"{job_id}.1"].name} == {"first", "second"}


def test_extern_steps_follow_prolog_flags(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    """``.extern`` steps exist only with PrologFlags=Contain; the binding agrees with scontrol."""
    job_id = submit("-n1", "-J", "bind-extern", "--wrap", "srun sleep 300")
    contain = binding.ctl_conf().prolog_contain
    # batch and .0, plus .extern under Contain: wait for all, so no step starts between reads
    wait_for(lambda: _running_steps(binding, job_id, 3 if contain else 2), timeout=60)
    ours = {str(s.step_id) for s in binding.get_steps().steps if s.step_id.job_id == job_id}
    reference = set(scontrol_steps(slurm_cluster, job_id))
    assert ours == reference
    assert (f"{job_id}.extern" in ours) == contain


def test_no_change_then_full_list_after_submission(binding: Binding, submit: Submit) -> None:
    # Other jobs on the shared cluster may still be changing: wait for a quiet moment.
    def quiet() -> JobsResult | None:
        first = binding.load_jobs()
        again = binding.load_jobs(first.last_update)
        return first if not again.changed and again.jobs == () else None

    first = wait_for(quiet, timeout=60, interval=1)
    assert first is not None

    def steps_quiet() -> bool:
        steps = binding.get_steps()
        return not binding.get_steps(steps.last_update).changed

    wait_for(steps_quiet, timeout=60, interval=1)

    job_id = submit("-n1", "-J", "bind-new", "--hold", "--wrap", "sleep 1")
    after = binding.load_jobs(first.last_update)
    assert after.changed and after.last_update >= first.last_update
    assert job_id in {j.job_id for j in after.jobs}


def test_step_changes_bump_the_job_list(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    """What ``LiveEngine.refresh`` relies on: a new or ended step changes the job list too,
    so the steps need asking only when the jobs changed."""
    job_id = submit("-n1", "-J", "bind-stepbump", "--wrap", "sleep 300")
    batch = StepId(job_id, STEP_BATCH)
    wait_for(lambda: batch in {s.step_id for s in binding.get_steps().steps}, timeout=60)

    def quiet() -> JobsResult | None:
        jobs = binding.load_jobs()
        return jobs if not binding.load_jobs(jobs.last_update).changed else None

    jobs = wait_for(quiet, timeout=60, interval=1)
    srun = subprocess.Popen(
        ["srun", f"--jobid={job_id}", "--overlap", "-J", "bump", "sleep", "300"],
        env=slurm_cluster.env(),
        cwd="/tmp",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        new_step = StepId(job_id, 0)
        wait_for(lambda: new_step in {s.step_id for s in binding.get_steps().steps}, timeout=60)
        started = binding.load_jobs(jobs.last_update)
        assert started.changed  # the step's start moved the job list's clock
        jobs = wait_for(quiet, timeout=60, interval=1)
    finally:
        srun.kill()
        srun.wait(timeout=60)
    wait_for(lambda: new_step not in {s.step_id for s in binding.get_steps().steps}, timeout=60)
    assert binding.load_jobs(jobs.last_update).changed  # and so did its end


def test_an_idle_refresh_is_one_rpc(
    binding: Binding, submit: Submit, slurm_cluster: SlurmCluster
) -> None:
    """An unchanged cluster: each refresh asks for jobs only (sdiag counts what it got)."""
    job_id = submit("-n1", "-J", "bind-onerpc", "--wrap", "sleep 300")
    wait_for(
        lambda: StepId(job_id, STEP_BATCH) in {s.step_id for s in binding.get_steps().steps},
        timeout=60,
    )
    engine = LiveEngine(binding)
    engine.refresh()

    def counts() -> dict[str, int]:
        out = subprocess.run(
            ["sdiag"], capture_output=True, text=True, check=True, env=slurm_cluster.env()
        ).stdout
        found = dict.fromkeys(("REQUEST_JOB_INFO", "REQUEST_JOB_STEP_INFO"), 0)
        # Only the per-message-type counters: the pending-RPC and per-user sections that
        # follow can name the same message types with other counts.
        out = out.split("Remote Procedure Call statistics by message type", 1)[1]
        out = out.split("Remote Procedure Call statistics by user", 1)[0]
        for line in out.splitlines():
            name, _, rest = line.strip().partition(" ")
            if name in found:
                found[name] = int(rest.split("count:")[1].split()[0])
        return found

    # Every refresh asks for jobs; only one whose jobs answer changed asks for steps.  Jobs
    # of earlier tests may still be ending (each end changes the listing), so the round is
    # repeated, a second apart, until it held at least one unchanged refresh.
    deadline = time.monotonic() + 120
    while True:
        before = counts()
        changed = [engine.refresh() for _ in range(5)]
        after = counts()
        assert after["REQUEST_JOB_INFO"] - before["REQUEST_JOB_INFO"] == 5
        steps_asked = after["REQUEST_JOB_STEP_INFO"] - before["REQUEST_JOB_STEP_INFO"]
        assert steps_asked == sum(changed), (changed, steps_asked)
        if not all(changed):
            break
        if time.monotonic() > deadline:
            raise AssertionError("no refresh found the cluster unchanged in two minutes")
        time.sleep(1)


def test_step_pids_equal_proc(binding: Binding, submit: Submit) -> None:
    job_id = submit("-n3", "-J", "bind-pids", "--wrap", TWO_STEPS)
    wait_for(lambda: _running_steps(binding, job_id, 3), timeout=60)
    # Each numbered step runs one sleep per task; the batch step the shell and two sruns.
    for step, text in (
        (StepId(job_id, 0), "0"),
        (StepId(job_id, 1), "1"),
        (StepId(job_id, STEP_BATCH), "batch"),
    ):
        seen: list[object] = []

        def settled(step: StepId = step, text: str = text, seen: list[object] = seen) -> bool:
            try:  # slurmd may not know a step the controller already lists
                procs = binding.step_pids(step)
            except InvalidJobId as exc:
                seen[:] = [exc]
                return False
            tasks = {s.step_id: s.num_tasks for s in binding.get_steps().steps}
            least = 3 if step.is_batch else tasks[step]
            listed = {pid for node in procs.nodes for pid in node.pids}
            real = step_container_pids(job_id, text)
            seen[:] = [listed, real, least]
            return len(listed) >= least and listed == real

        try:
            wait_for(settled, timeout=60)
        except AssertionError as exc:
            raise AssertionError(f"{step}: binding, /proc, tasks: {seen}") from exc
        procs = binding.step_pids(step)
        assert [n.node for n in procs.nodes] == ["sckpt-node"]
        assert procs.step_id == step
        assert procs.proctrack_type == binding.ctl_conf().proctrack_type


def test_controller_facts(binding: Binding, slurm_cluster: SlurmCluster) -> None:
    shown = {}
    for line in slurm_cluster.run("scontrol", "show", "config").stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            shown[key.strip()] = value.strip()
    conf = binding.ctl_conf()
    assert conf.cluster_name == shown["ClusterName"] == "sckpt-test"
    assert conf.version == shown["SLURM_VERSION"] == binding.header_version
    assert conf.switch_type == shown["SwitchType"]
    assert conf.proctrack_type == shown["ProctrackType"]
    assert conf.slurmctld_port == int(shown["SlurmctldPort"])
    assert binding.ping() > 0
