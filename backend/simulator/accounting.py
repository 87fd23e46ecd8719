"""The simulated slurmdbd: each job's closed runs (requeued or ended), as slurmctld reports
them, and a seeded past of jobs that ended before the demo began.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import SlurmError
from ..model import Job, JobRecord, JobState
from ..rules import Caller
from .catalog import APPS, CPU_PARTITIONS, stable_hash
from .records import JobRec

_PAST_STATES = (JobState.COMPLETED,) * 6 + (
    JobState.FAILED,
    JobState.TIMEOUT,
    JobState.CANCELLED,
    JobState.OUT_OF_MEMORY,
)
"""How the seeded past's jobs ended (``_past_record``): mostly completed."""

_UNFINISHED = frozenset({"PENDING", "RUNNING", "SUSPENDED", "REQUEUED"})
"""Record states of runs that did not end the job (the finished-jobs window skips them)."""


def seeded_requeues(job_id: int) -> int:
    """How many times a job generated running was requeued before the demo began (0 for
    three in four; ``Accounting.seed`` writes their records)."""
    if stable_hash(job_id, 7) % 4:
        return 0
    return 1 + stable_hash(job_id, 8) % 2


class Accounting:
    """What slurmdbd knows of one simulated cluster's jobs."""

    def __init__(self, cluster_name: str, users: Sequence[Caller]) -> None:
        self.cluster_name = cluster_name
        self.users = tuple(users)
        self._acct: dict[int, list[JobRecord]] = {}
        """Each job's closed runs (requeued or ended), as slurmdbd keeps them."""
        self._past_ids = range(0)
        """Jobs that ended before the demo began, known only to accounting (seeded)."""
        self._past_now = 0
        """When the seeded past was drawn (its end times count back from it)."""
        self.refusal: SlurmError | None = None
        """The error every query is answered with (``SimulatorControl.refuse_accounting``)."""
        self.queries: list[tuple[int, bool]] | None = None
        """Each query's (job id, finished), once asked to record them."""

    def asked(self, job_id: int, finished: bool) -> None:
        """A query arrives: noted when queries are recorded, refused when told to."""
        if self.queries is not None:
            self.queries.append((job_id, finished))
        if self.refusal is not None:
            raise self.refusal

    def record(
        self,
        job: Job,
        end: int,
        state: str,
        exit_code: int = 0,
        earlier: tuple[int, int, int] | None = None,
    ) -> JobRecord:
        """The accounting record of one run of ``job`` (``end`` 0: still going);
        ``earlier``: (submit time, start time, restart count) of an earlier run of it
        instead of the job's own (the seeded past: no copy of the job is made for it)."""
        submit, start, restarts = earlier or (job.submit_time, job.start_time, job.restart_count)
        return JobRecord(
            job_id=job.job_id,
            cluster=self.cluster_name,
            name=job.name,
            user=job.user,
            uid=job.uid,
            partition=job.partition,
            state=state,
            exit_code=exit_code,
            submit_time=submit,
            eligible_time=submit,
            start_time=start,
            end_time=end,
            nodes=job.nodes or "None assigned",
            account=job.account,
            work_dir=job.work_dir,
            restart_count=restarts,
            array_job_id=job.array_job_id,
            array_task_id=job.array_task_id,
        )

    def close_run(self, job: Job, end: int, state: str, exit_code: int = 0) -> None:
        """Close the job's current run in accounting, as slurmctld reports it to slurmdbd."""
        self._acct.setdefault(job.job_id, []).append(self.record(job, end, state, exit_code))

    def keep_final_record(self, job: Job) -> None:
        """A finished job the controller forgets (MinJobAge) stays in accounting."""
        closed = self._acct.get(job.job_id, [])
        if not any(r.end_time == job.end_time and r.submit_time == job.submit_time for r in closed):
            exit_code = 1 if job.state is JobState.FAILED else 0
            self.close_run(job, job.end_time, job.state.value, exit_code)

    def seed(self, jobs: Mapping[int, JobRec], n_jobs: int, now: int, first_job_id: int) -> None:
        """A past for the demo: some running jobs were requeued before (a requeue, then a
        node failure: ``seeded_requeues``, which the generator gave their restart count),
        and jobs that ended during the last day are known only to accounting (the
        controller forgot them).  Drawn from ``stable_hash`` of the job ids, not from the
        generator's random stream, so the listing is what it was without them."""
        acct = self._acct
        for job_id, rec in jobs.items():  # generated in id order
            job = rec.job
            runs = job.restart_count
            if not runs or job.state is not JobState.RUNNING:
                continue
            first_submit = job.submit_time - runs * 1800 - 600
            closed = acct.setdefault(job_id, [])
            for k in range(runs):
                start = first_submit + 60 + k * 1800
                earlier = (first_submit if k == 0 else start - 120, start, k)
                state = "REQUEUED" if k == 0 else "NODE_FAIL"
                end = start + 900 + stable_hash(job_id, k) % 600
                closed.append(self.record(job, end, state, earlier=earlier))
        count = max(4, n_jobs // 4) if n_jobs else 0
        self._past_ids = range(max(1, first_job_id - count), first_job_id)
        self._past_now = now

    def _past_record(self, job_id: int) -> JobRecord:
        """The accounting record of a job of the seeded past (one of ``_past_ids``), made
        when asked: at 100,000 jobs its 25,000 records kept in memory were ~11 MB of the
        demo's for an ``f`` press or a ``history`` now and then."""
        user = self.users[stable_hash(job_id, 1) % len(self.users)]
        name = APPS[stable_hash(job_id, 2) % len(APPS)][0]
        state = _PAST_STATES[stable_hash(job_id, 3) % len(_PAST_STATES)]
        end = self._past_now - 600 - stable_hash(job_id, 4) % (20 * 3600)
        start = end - 120 - stable_hash(job_id, 5) % (6 * 3600)
        node = f"cn{1 + stable_hash(job_id, 6) % 32:03d}"
        job = Job(
            job_id=job_id,
            name=name,
            user=user.name,
            uid=user.uid,
            partition=CPU_PARTITIONS[stable_hash(job_id, 9) % len(CPU_PARTITIONS)],
            state=state,
            nodes=node,
            num_nodes=1,
            submit_time=start - 30 - stable_hash(job_id, 10) % 900,
            start_time=start,
            end_time=end,
            work_dir=f"/home/{user.name}/{name}",
            batch=True,
        )
        return self.record(job, end, state.value, 1 if state is JobState.FAILED else 0)

    def query(
        self,
        jobs: Mapping[int, JobRec],
        now: int,
        job_id: int,
        since: int,
        until: int = 0,
        finished: bool = False,
    ) -> tuple[JobRecord, ...]:
        """What slurmdbd answers: a job's records (``job_id``), or the jobs that ended in
        the window (``finished``), closed runs and each known job's current run."""
        end_of_window = until or now
        past = self._past_ids
        ids = [job_id] if job_id else sorted(set(self._acct) | set(jobs) | set(past))
        if job_id:  # an array's id names every task, as sacct -j ARRAY lists them all
            tasks = {jid for jid, rec in jobs.items() if rec.job.array_job_id == job_id}
            ids = sorted({job_id} | tasks)
        out: list[JobRecord] = []
        for jid in ids:
            records = list(self._acct.get(jid, ()))
            if jid in past:
                records.insert(0, self._past_record(jid))
            rec = jobs.get(jid)
            if rec is not None and not rec.job.state.is_finished:
                records.append(self.record(rec.job, 0, rec.job.state.value))
            elif rec is not None:
                final = rec.job
                if not any(r.end_time == final.end_time for r in records):
                    code = 1 if final.state is JobState.FAILED else 0
                    records.append(self.record(final, final.end_time, final.state.value, code))
            for r in records:
                if finished:
                    if r.state in _UNFINISHED or not since <= r.end_time <= end_of_window:
                        continue
                elif r.submit_time > end_of_window or (r.end_time and r.end_time < since):
                    continue
                out.append(r)
        return tuple(out)
