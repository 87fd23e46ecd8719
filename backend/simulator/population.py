"""Data generation: the jobs a simulated cluster starts with and the ones it is given.

A seeded cluster of ``n_jobs`` jobs in every state (``Population.generate``), a job's
nodes and steps when it starts, and the jobs and arrays submitted later (the tests'
``SimulatorControl.submit`` and ``submit_array``, the demo's arrays: ``touches.py``).

Scale: 100,000 jobs and ~300,000 steps are built in about 1.3 s: one random draw per job
cut into choices (``catalog.Bits``), and each record built once, every field given, through
``construct.fast_init`` (``records.make_job``...).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import UsageError
from ..hostlist import compress_range, expand_hostlist
from ..model import (
    STEP_BATCH,
    STEP_EXTERN,
    Job,
    JobState,
    compress_task_ids,
    expand_task_ranges,
)
from ..rules import Caller
from .accounting import seeded_requeues
from .catalog import (
    APPS,
    COMMENTS,
    CPU_NODES,
    CPU_PARTITIONS,
    NUMBERED,
    PENDING_REASONS,
    REQUIRED_STATES,
    STATE_WEIGHTS,
    Bits,
    gres,
    node_memory_mb,
    tres,
)
from .events import Timeline
from .records import JobRec, StepRec, make_job, make_step, make_step_id, with_allocation
from .state import ClusterState


class Population:
    """The jobs: generated from the seed, the demo's, and the ones submitted."""

    def __init__(self, state: ClusterState, timeline: Timeline, n_jobs: int) -> None:
        self.state = state
        self.timeline = timeline
        self.rng = random.Random(state.settings.seed)
        """The generator's stream: every generated job's draw, and the arrivals'."""
        self._families = node_families(n_jobs)
        """Node families: kind -> (prefix, width of the number, count)."""

    def allocate(
        self, kind: str, bits: Bits, required: str = "", n_nodes: int = 0
    ) -> tuple[str, int, int, str]:
        """A contiguous block of nodes: (nodelist, node count, cpus per node, first node).

        ``n_nodes`` (not 0): that many, as the job asked when it was submitted; a job that
        runs again after a requeue or a restart keeps its shape (``JobRec.n_nodes``).
        """
        prefix, width, count = self._families[kind]
        cpn = 64 if kind == "cpu" else 32
        if required:
            names = expand_hostlist(required)
            return required, len(names), cpn, names[0]
        if not n_nodes:  # drawn
            n_nodes = CPU_NODES[bits.take(len(CPU_NODES))] if kind == "cpu" else 1 + bits.take(2)
        n = n_nodes
        n = min(n, count)
        first = 1 + bits.take(count - n + 1)
        return (
            compress_range(prefix, first, first + n - 1, width),
            n,
            cpn,
            f"{prefix}{first:0{width}d}",
        )

    def new_job(self, rng: random.Random, state: JobState, now: float) -> JobRec:
        """One job in ``state``; every choice comes from one draw of ``rng`` (fast, stable),
        and its record is built once, directly in its final state (100,000 jobs: every
        object counts)."""
        bits = Bits(rng.getrandbits(192))
        job_id = self.state.next_job_id
        self.state.next_job_id += 1
        user = self.state.settings.users[bits.take(len(self.state.settings.users))]
        app = bits.take(len(APPS))
        name, _exe, kind = APPS[app]
        partition = CPU_PARTITIONS[bits.take(len(CPU_PARTITIONS))] if kind == "cpu" else kind
        home = "/home" if bits.take(10) < 6 else "/scratch"
        batch = bits.take(100) < 85
        duration = 600 + bits.take(36 * 3600 - 600)
        n_numbered = NUMBERED[bits.take(len(NUMBERED))] if batch else 1
        if batch and self.state.settings.numbered_steps is not None:
            n_numbered = self.state.settings.numbered_steps
        fails = bits.take(10) == 0
        submit = int(now) - 30 - bits.take(6 * 3600)
        drawn = _Drawn(job_id, user, app, kind, partition, f"{home}/{user.name}/{name}", batch)
        if state is JobState.RUNNING or state is JobState.SUSPENDED:
            job, duration = self._running_job(drawn, bits, state, int(now), submit, duration)
        elif state is JobState.PENDING:
            job = self._pending_job(drawn, bits, now, submit, duration)
        else:
            job = self._finished_job(drawn, bits, state, int(now), submit, duration)
        rec = JobRec(job, app, duration, fails, n_numbered)
        self.state.jobs[job_id] = rec
        if drawn.placed is not None:  # running: its steps now
            rec.n_nodes = drawn.placed[1]
            self._make_steps(rec, drawn.placed, job.start_time, job.suspend_time != 0)
        else:
            self.state.dirty.add(job_id)
        return rec

    def _running_job(
        self, drawn: _Drawn, bits: Bits, state: JobState, now: int, submit: int, duration: int
    ) -> tuple[Job, int]:
        """A job generated running (or suspended) since a drawn start, on drawn nodes
        (``drawn.placed``), and its run time (redrawn if it would have ended already)."""
        start = max(submit + 5, now - 60 - bits.take(20 * 3600))
        if start + duration <= now:  # running means it ends in the future
            duration = now - start + 120 + bits.take(8 * 3600)
        placed = drawn.placed = self.allocate(drawn.kind, bits)
        cpus = placed[1] * placed[2]
        shape = tres(drawn.partition, placed[1], cpus)
        job = drawn.job(
            state=state,
            nodes=placed[0],
            n_nodes=placed[1],
            cpus=cpus,
            num_tasks=cpus,
            times=(submit, start, start + duration),
            restarts=seeded_requeues(drawn.job_id) if state is JobState.RUNNING else 0,
            tres_req=shape,
            tres_alloc=shape,
            suspended_at=suspended_at(start, now) if state is JobState.SUSPENDED else 0,
            duration=duration,
        )
        return job, duration

    def _pending_job(
        self, drawn: _Drawn, bits: Bits, now: float, submit: int, duration: int
    ) -> Job:
        """A pending job: its reason, and for Priority and Resources the time the backfill
        scheduler expects it to start (its start event, and squeue --start's estimate)."""
        reason = PENDING_REASONS[bits.take(len(PENDING_REASONS))]
        expected = 0
        if reason in ("Priority", "Resources"):
            at = now + 20 + bits.take(880)
            self.timeline.push(at, "start", drawn.job_id)  # token 0: a new record's
            expected = int(at)
        cpus = 32 if drawn.kind == "gpu" else 64
        return drawn.job(
            state=JobState.PENDING,
            reason=reason,
            n_nodes=1,  # squeue's NODES for a pending job is what it asked for
            cpus=cpus,
            times=(submit, expected, 0),
            held=reason == "JobHeldUser",
            tres_req=tres(drawn.partition, 1, cpus),
            duration=duration,
        )

    def _finished_job(
        self, drawn: _Drawn, bits: Bits, state: JobState, now: int, submit: int, duration: int
    ) -> Job:
        """A job generated already ended (completed, failed, cancelled): drawn times and
        nodes, what it asked for while pending (``tres_req``) and what it was given."""
        start = submit + 5 + bits.take(1200)
        end = min(now - 5, start + 30 + bits.take(4 * 3600))
        nodes, n_nodes, cpn, _first = self.allocate(drawn.kind, bits)
        return drawn.job(
            state=state,
            reason="NonZeroExitCode" if state is JobState.FAILED else "",
            nodes=nodes,
            n_nodes=n_nodes,
            cpus=n_nodes * cpn,
            num_tasks=n_nodes * cpn,
            times=(submit, min(start, end), end),
            tres_req=tres(drawn.partition, 1, 32 if drawn.kind == "gpu" else 64),
            tres_alloc=tres(drawn.partition, n_nodes, n_nodes * cpn),
            duration=duration,
        )

    def start(self, rec: JobRec, start: int, bits: Bits, suspended: bool = False) -> None:
        """PENDING -> RUNNING at ``start``: nodes, the batch/extern/numbered steps, the end."""
        kind = APPS[rec.app][2]
        placed = self.allocate(kind, bits, rec.job.required_nodes, rec.n_nodes)
        rec.n_nodes = placed[1]
        state = JobState.SUSPENDED if suspended else JobState.RUNNING
        rec.job = with_allocation(
            rec.job,
            state,
            "",
            placed[0],
            placed[1],
            placed[1] * placed[2],
            start,
            start + rec.duration,
        )
        if suspended:
            rec.job = _suspended(rec.job, start)
        self._make_steps(rec, placed, start, suspended)

    def _make_steps(
        self, rec: JobRec, placed: tuple[str, int, int, str], start: int, suspended: bool
    ) -> None:
        """The steps of a job that just started, and the event that ends it."""
        job = rec.job
        _name, exe, kind = APPS[rec.app]
        nodes, n_nodes, cpn, first_node = placed
        cpus = n_nodes * cpn
        rec.token += 1
        jid = job.job_id
        user, uid, partition, work_dir = job.user, job.uid, job.partition, job.work_dir
        step_state = "SUSPENDED" if suspended else "RUNNING"
        steps: dict[int, StepRec] = {}
        # squeue's order: batch, extern, then the numbered steps (every field given:
        # ``make_step``; StepId's het_comp, cluster and array fields are its defaults).
        if job.batch:
            steps[STEP_BATCH] = StepRec(
                make_step(make_step_id(jid, STEP_BATCH), "batch", user, uid, partition,
                          step_state, first_node, 1, cpn, start),
                work_dir,
            )  # fmt: skip
        if self.state.settings.prolog_contain:
            steps[STEP_EXTERN] = StepRec(
                make_step(make_step_id(jid, STEP_EXTERN), "extern", user, uid, partition,
                          step_state, nodes, n_nodes, n_nodes, start),
                work_dir,
            )  # fmt: skip
        network = "ib" if kind == "cpu" and n_nodes > 1 else ""
        for number in range(rec.n_numbered):
            steps[number] = StepRec(
                make_step(make_step_id(jid, number), exe, user, uid, partition, step_state,
                          nodes, cpus, cpus, start + 2 + number * 30, 0, network),
                work_dir,
            )  # fmt: skip
        rec.steps = steps
        self.state.dirty.add(jid)
        self.timeline.push(float(start + rec.duration), "end", jid, token=rec.token)

    def generate(self, n_jobs: int) -> None:
        """The seeded jobs, and the first arrival (``draw_states``, ``generate_jobs`` and
        ``first_arrival`` in one go)."""
        self.generate_jobs(self.draw_states(n_jobs))
        self.first_arrival()

    def draw_states(self, n_jobs: int) -> list[JobState]:
        """The state of each of the ``n_jobs`` seeded jobs, in id order: the generator
        stream's first draws (every job's own draws follow, ``generate_jobs``)."""
        states = self.rng.choices(
            [s for s, _ in STATE_WEIGHTS], weights=[w for _, w in STATE_WEIGHTS], k=n_jobs
        )
        # Every state at least once (when there are enough jobs), at spread positions.
        for k, state in enumerate(REQUIRED_STATES):
            if n_jobs >= len(REQUIRED_STATES) and state not in states:
                states[(k * 7) % n_jobs] = state
        return states

    def generate_jobs(self, states: Sequence[JobState]) -> None:
        """The next seeded jobs, one in each of ``states``, at the time the cluster was made
        (a cluster built in two parts calls this once per part: ``staging.py``; its clock
        stands still meanwhile)."""
        rng = self.rng
        now = self.state.now
        for state in states:
            self.new_job(rng, state, now)

    def first_arrival(self) -> None:
        """After the seeded jobs: when the first new job arrives (the stream's next draw)."""
        if self.state.settings.arrivals:
            self.timeline.push(self.state.now + self.rng.randint(45, 180), "arrive", 0)

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
        reuse_id: int = 0,
    ) -> Job:
        """Add one job in a given state (``SimulatorControl.submit``); running jobs get their
        steps now.  ``reuse_id``: the job's id is that one (an array's own record), not a
        new one."""
        with self.state.lock:
            self.timeline.tick()
            now = int(self.state.clock())
            owner = self.state.user(user)
            job_id = reuse_id or self.state.next_job_id
            if not reuse_id:
                self.state.next_job_id += 1
            job = Job(
                job_id=job_id,
                name=name,
                user=owner.name,
                uid=owner.uid,
                partition=partition,
                state=JobState.PENDING,
                submit_time=now,
                work_dir=work_dir or f"/home/{user}/{name}",
                comment=comment,
                account=account,
                batch=batch,
                held=held,
                state_reason="JobHeldUser" if held else "Priority",
                time_limit=limit_minutes(duration),
                priority=0 if held else priority_of(job_id),
                qos="normal",
                min_memory=node_memory_mb(partition),
            )
            rec = JobRec(job, 0, duration, False, n_steps)
            self.state.jobs[job_id] = rec
            self.state.dirty.add(job_id)
            bits = Bits(random.Random(job_id).getrandbits(128))
            if state in (JobState.RUNNING, JobState.SUSPENDED):
                self.start(rec, now, bits, suspended=state is JobState.SUSPENDED)
            elif state is not JobState.PENDING:
                nodes, n_nodes, cpn, _first = self.allocate("cpu", bits)
                rec.job = with_allocation(
                    job, state, "", nodes, n_nodes, n_nodes * cpn, now - 60, now
                )
            self.state.version += 1
            return rec.job

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
        """A job array as ``sbatch --array=TASKS[%MAX_TASKS]`` makes it (for the tests'
        ``SimulatorControl`` and the demo's arrays), laid out as slurmctld keeps one: the
        first ``running`` tasks split off into records of their own with new job ids; the
        tasks still pending stay in one record under the array's own id (``array_task_str``
        ``5-50%2``); when none is left pending, that record is the last task's.  Returns the
        records, array record last.
        """
        ids = expand_task_ranges(tasks)
        if not ids or not 0 <= running <= len(ids):
            raise UsageError("submit_array: a non-empty task range and 0..len running tasks")
        with self.state.lock:
            array_id = self.state.next_job_id
            self.state.next_job_id += 1
            made: list[Job] = []
            started = ids[:running]
            rest = ids[running:]
            for k, task in enumerate(started):
                last_one = not rest and k == len(started) - 1
                job = self.submit(
                    user,
                    name=name,
                    n_steps=n_steps,
                    duration=duration,
                    partition=partition,
                    reuse_id=array_id if last_one else 0,
                )
                made.append(self._relabel(job.job_id, array_id, task, "", max_tasks))
            if rest:
                job = self.submit(
                    user,
                    name=name,
                    state=JobState.PENDING,
                    n_steps=n_steps,
                    duration=duration,
                    partition=partition,
                    held=held,
                    reuse_id=array_id,
                )
                limited = max_tasks and running >= max_tasks and not held
                text = compress_task_ids(rest) + (f"%{max_tasks}" if max_tasks else "")
                made.append(self._relabel(job.job_id, array_id, None, text, max_tasks))
                if limited:
                    rec = self.state.jobs[array_id]
                    rec.job = replace(rec.job, state_reason="JobArrayTaskLimit")
                    made[-1] = rec.job
            self.state.version += 1
            return tuple(made)

    def _relabel(
        self,
        job_id: int,
        array_id: int,
        task: int | None,
        text: str,
        max_tasks: int,
    ) -> Job:
        rec = self.state.jobs[job_id]
        rec.job = replace(
            rec.job,
            array_job_id=array_id,
            array_task_id=task,
            array_task_str=text,
            array_max_tasks=max_tasks,
        )
        self.state.dirty.add(job_id)
        return rec.job


def demo_comment(job_id: int) -> str:
    """A generated job's comment, from its id alone: the random draws (and so every other
    field of a seeded cluster) stay what they were before jobs had comments."""
    return COMMENTS[(job_id // 3) % len(COMMENTS)] if job_id % 3 == 0 else ""


@dataclass(slots=True)
class _Drawn:
    """What a generated job's first draws decided, which its record is built from
    (``Population.new_job``), and the nodes a running one was placed on."""

    job_id: int
    user: Caller
    app: int
    kind: str
    partition: str
    work_dir: str
    batch: bool
    placed: tuple[str, int, int, str] | None = None

    def job(
        self,
        *,
        state: JobState,
        cpus: int,
        times: tuple[int, int, int],
        duration: int,
        tres_req: str,
        reason: str = "",
        nodes: str = "",
        n_nodes: int,
        num_tasks: int = 0,
        held: bool = False,
        restarts: int = 0,
        tres_alloc: str = "",
        suspended_at: int = 0,
    ) -> Job:
        """The job's record: every field given once, in ``Job``'s order (``make_job``).
        ``times``: submit, start and end; ``suspended_at``: 0, or when it was suspended
        (Slurm then keeps the time it had run, ``pre_sus_time``)."""
        job_id, partition, (submit, start, end) = self.job_id, self.partition, times
        return make_job(
            job_id, APPS[self.app][0], self.user.name, self.user.uid, partition, state,
            reason, nodes, n_nodes, cpus, num_tasks, submit, start, end, self.work_dir,
            demo_comment(job_id), held, restarts, self.batch,
            "", "", 0, None, "", 0,  # required_nodes, account, no array task
            tres_req, gres(partition), tres_alloc, "",  # ... sched_nodes
            suspended_at, suspended_at - start if suspended_at else 0,
            limit_minutes(duration), 0 if held else priority_of(job_id), "normal",
            "", node_memory_mb(partition), False, True,  # dependency ... memory_per_cpu, requeue
        )  # fmt: skip


def _suspended(job: Job, now: int) -> Job:
    """``job`` suspended at ``suspended_at``: Slurm then keeps the time it ran
    (``pre_sus_time``), which is its TIME until it resumes."""
    at = suspended_at(job.start_time, now)
    return replace(job, suspend_time=at, pre_sus_time=at - job.start_time)


def suspended_at(start: int, now: int) -> int:
    """When a job the simulator makes suspended (generated so, or submitted so) was
    suspended: two thirds of the way between its start and ``now``.  (Derived from the
    times, not drawn, so the demo's other content stays as it was.)"""
    return start + (now - start) * 2 // 3


@functools.cache
def _limit_of_hours(hours: int) -> int:
    return hours * 60  # one int object per limit for 100,000 jobs, not one each


def limit_minutes(duration: int) -> int:
    """A simulated job's time limit: its run time rounded up to whole hours, as sbatch
    ``--time`` is usually given (the job ends before it; squeue's TIME_LEFT stays positive)."""
    return _limit_of_hours(-(-duration // 3600))


def priority_of(job_id: int) -> int:
    """A simulated job's priority as priority/basic gives it: the older the job, the
    higher (0 is held)."""
    return PRIORITY_TOP - job_id % 100_000


PRIORITY_TOP = 4_294_901_760
"""priority/basic's first priority (it counts down from there, one per job)."""


def node_families(n_jobs: int) -> dict[str, tuple[str, int, int]]:
    """The cluster's node families for ``n_jobs`` jobs: kind -> (name prefix, width of the
    number, node count); a bigger cluster has more nodes (``cn001``... ``gpu01``...)."""
    cpu = max(32, n_jobs // 3)
    gpu = max(8, n_jobs // 40)
    bigmem = max(2, n_jobs // 200)
    return {
        "cpu": ("cn", max(3, len(str(cpu))), cpu),
        "gpu": ("gpu", 2 if n_jobs < 400 else len(str(gpu)), gpu),
        "bigmem": ("bigmem", 2 if n_jobs < 400 else len(str(bigmem)), bigmem),
    }
