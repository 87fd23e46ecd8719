"""What tests do to a simulated cluster: move its clock, submit jobs, force outcomes.

``SimulatedCluster.control`` gives one.  These are not Slurm calls (no client sends them):
they stand for what happens outside the controller on a real cluster (time passing, a user
running sbatch, an operator's scontrol, a checkpoint that fails, a record copied by hand),
so the tests reach them by public names, in one place, and the controller's own API stays
what slurmctld offers.  Each hook calls the public methods of the part it concerns.
The tests read the cluster's state through the controller's views
(``snapshot``, ``job``, ``step_state``, ``jobs_where``, ``records``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import SlurmError
from ..model import Job, JobState, StepId
from .accounting import Accounting
from .checkpoint import CheckpointController
from .checkpoint_runs import CheckpointRuns
from .clock import ManualClock
from .events import Timeline
from .lifecycle import Lifecycle
from .population import Population
from .records import SavedRecord
from .state import ClusterState
from .views import Views


@dataclass(frozen=True, eq=False, repr=False)
class SimulatorControl:
    """The test hooks of one simulated cluster, on the parts it is made of."""

    state: ClusterState
    timeline: Timeline
    population: Population
    lifecycle: Lifecycle
    checkpoints: CheckpointController
    runs: CheckpointRuns
    views: Views
    dbd: Accounting

    def advance(self, seconds: float) -> None:
        """Move the cluster's ``ManualClock`` forward and apply what happened meanwhile."""
        clock = self.state.clock
        if not isinstance(clock, ManualClock):
            raise TypeError("advance() needs the cluster to run on a ManualClock")
        with self.state.lock:
            clock.advance(seconds)
            self.timeline.tick()

    def submit(
        self,
        user: str,
        *,
        name: str = "job",
        state: JobState = JobState.RUNNING,
        batch: bool = True,
        n_steps: int = 1,
        duration: int = 3600,
        partition: str = "batch",
        work_dir: str = "",
        held: bool = False,
        comment: str = "",
        account: str = "",
    ) -> Job:
        """Add one job in a given state; running jobs get their steps now."""
        return self.population.submit(
            user,
            name=name,
            state=state,
            batch=batch,
            n_steps=n_steps,
            duration=duration,
            partition=partition,
            work_dir=work_dir,
            held=held,
            comment=comment,
            account=account,
        )

    def submit_array(
        self,
        user: str,
        tasks: str,
        *,
        running: int = 0,
        max_tasks: int = 0,
        held: bool = False,
        name: str = "array",
        n_steps: int = 1,
        duration: int = 3600,
        partition: str = "batch",
    ) -> tuple[Job, ...]:
        """A job array as ``sbatch --array=TASKS[%MAX_TASKS]`` makes it
        (``Population.submit_array``); the records, array record last."""
        return self.population.submit_array(
            user,
            tasks,
            running=running,
            max_tasks=max_tasks,
            held=held,
            name=name,
            n_steps=n_steps,
            duration=duration,
            partition=partition,
        )

    def script_checkpoint(self, target: StepId, duration: float, code: int = 0) -> None:
        """Force how long the step's checkpoints take and the code they end with."""
        self.runs.script(target, duration, code)

    def set_job_state(self, job_id: int, state: JobState) -> None:
        """Force a job's state (suspend/resume/finish) as an operator would."""
        with self.state.lock:
            self.timeline.tick()
            rec = self.state.jobs[job_id]
            now = int(self.state.clock())
            if state.is_finished:
                self.lifecycle.end_job(rec, now, state)
            else:
                rec.job = _suspended_or_resumed(rec.job, state, now)
                for srec in rec.steps.values():
                    srec.step = replace(srec.step, state=str(state))
            self.state.dirty.add(job_id)
            self.state.version += 1

    def set_output_paths(self, job_id: int, std_out: str, std_err: str = "") -> None:
        """Where job ``job_id`` writes (as ``sbatch -o/-e`` would set it); the console tests
        point it at files they write."""
        self.views.set_output_paths(job_id, std_out, std_err)

    def refuse_accounting(self, error: SlurmError | None) -> None:
        """Make the simulated slurmdbd answer every query with ``error``, as a cluster
        without accounting does (None: it answers again)."""
        self.dbd.refusal = error

    def record_accounting_queries(self) -> list[tuple[int, bool]]:
        """From now on, note every accounting query as (job id, finished) in the list
        returned (the console asks accounting only when it must)."""
        queries: list[tuple[int, bool]] = []
        self.dbd.queries = queries
        return queries

    def put_record(self, path: str, record: SavedRecord) -> None:
        """Place a saved record at ``path`` (a copied or foreign file: restart's EINVAL)."""
        self.checkpoints.put_record(path, record)


def _suspended_or_resumed(job: Job, state: JobState, now: int) -> Job:
    """``job`` in ``state`` with Slurm's suspend bookkeeping: suspending adds the time run
    since the start (or the last resume) to ``pre_sus_time``; both stamp ``suspend_time``,
    so TIME stops while suspended and leaves the suspended time out once resumed."""
    if state is JobState.SUSPENDED and job.state is JobState.RUNNING:
        ran = now - (job.suspend_time or job.start_time)
        return replace(job, state=state, suspend_time=now, pre_sus_time=job.pre_sus_time + ran)
    if state is JobState.RUNNING and job.state is JobState.SUSPENDED:
        return replace(job, state=state, suspend_time=now)
    return replace(job, state=state)
