"""The demo's touches: what makes a generated cluster show every checkpoint state.

A step disabled once and one twice, a checkpoint in progress, an old error, an image in
another directory, an hourly checkpoint history on some running jobs, steps launched under
``sckpt run --transparent`` with their images, and three job arrays.  Drawn from the seed
(``random.Random(seed + 1)``) and from ``stable_hash`` of ids, never from the generator's
stream, so the generated jobs stay what they are without the touches.
"""

from __future__ import annotations

import errno
import random
from dataclasses import replace

from ..model import STEP_EXTERN, Job, JobState
from .autopolicy import AutoPolicies
from .catalog import (
    DEMO_AUTO_JOBS,
    DEMO_CHECKPOINTER,
    DEMO_HISTORY_JOBS,
    DEMO_POLICIES,
    TRANSPARENT_ONE_IN,
    stable_hash,
)
from .checkpoint_runs import CheckpointRuns
from .events import Timeline
from .population import Population
from .records import (
    HISTORY_LIMIT,
    JobRec,
    TransparentStep,
    numbered_of,
    record_event,
    strerror,
)

IN_PROGRESS_GRID = 600
"""The demo's checkpoint in progress began on this grid of seconds (stable across commands)."""
ARRAY_TASK_GAP = 1500
"""Seconds between the starts of the demo arrays' running tasks (not all 'now')."""


class DemoTouches:
    """The demo's touches on the generated jobs (``SimulatedCluster(demo_touches=True)``)
    and its job arrays (``arrays=True``), made once while the cluster is built."""

    def __init__(
        self,
        population: Population,
        timeline: Timeline,
        runs: CheckpointRuns,
        policies: AutoPolicies,
    ) -> None:
        self.state = population.state
        self.population = population
        self.timeline = timeline
        self.runs = runs
        self.policies = policies

    def touch(self) -> None:
        """Make the demo show every checkpoint state: disabled, in progress, an old error."""
        running = [r for r in self.state.jobs.values() if r.job.state is JobState.RUNNING]
        if not running:
            return
        now = int(self.state.now)
        rng = random.Random(self.state.settings.seed + 1)
        picks = rng.sample(running, min(len(running), 6))
        for i, rec in enumerate(picks):
            numbered = [s for k, s in rec.steps.items() if k < STEP_EXTERN - 16]
            srec = numbered[0] if numbered else next(iter(rec.steps.values()))
            if i in (0, 1):
                srec.disable_count = i + 1
                record_event(srec, now - 600 * (i + 1), "disable", rec.job.user, 0)
            elif i == 2:
                # Began on a 10-minute grid, not 4 s before this process started: each
                # command builds the demo afresh, and a begin time that moved with it made
                # 'complete --begin-time' from a hint fail a second later.
                began = max(now - now % IN_PROGRESS_GRID - 4, srec.step.start_time + 60)
                srec.ckpt_start = began
                srec.ckpt_count = 1
                srec.ckpt_token = 1
                srec.image_dir = self.runs.image_path(rec, srec, None)
                record_event(srec, began, "create", rec.job.user, 0, srec.image_dir)
                step = srec.step.step_id.step
                self.timeline.push(float(now + 26), "ckpt_done", rec.job.job_id, step, 1)
            elif i == 3:
                failed_at = max(now - 1800, (now + srec.step.start_time) // 2)  # once it ran
                srec.error_code = errno.ENOSPC
                srec.error_msg = strerror(errno.ENOSPC)
                srec.last_ckpt = failed_at
                srec.image_dir = self.runs.image_path(rec, srec, None)
                record_event(srec, failed_at, "create", rec.job.user, errno.ENOSPC, srec.image_dir)
            elif i == 4:
                srec.last_ckpt = now - 900
                srec.image_dir = self.runs.image_path(rec, srec, "/scratch/ckpt")
                record_event(srec, now - 930, "create", rec.job.user, 0, srec.image_dir)
                record_event(srec, now - 900, "done", "", 0, srec.image_dir)
            self.state.dirty.add(rec.job.job_id)
        self._demo_hourly(running, picks, now)
        self._demo_transparent(running, picks, now)
        self._demo_auto(now)

    def _demo_hourly(self, running: list[JobRec], picks: list[JobRec], now: int) -> None:
        """A checkpoint history, as a job checkpointed hourly (by a cron job or by its owner)
        would have: ``history`` and the step detail show events for every running job that
        ran an hour, not only for the touched ones.  At most ``DEMO_HISTORY_JOBS`` jobs, so
        a cluster of 100,000 jobs stays as light as before."""
        touched = {rec.job.job_id for rec in picks}
        chosen = [r for r in running if r.job.job_id not in touched]
        for rec in chosen[:DEMO_HISTORY_JOBS]:
            numbered = [s for k, s in rec.steps.items() if k < STEP_EXTERN - 16]
            if not numbered:
                continue
            srec = numbered[0]
            first = srec.step.start_time + 3600
            times = list(range(first, now - 60, 3600))[-(HISTORY_LIMIT // 2) :]
            if not times:
                continue
            srec.image_dir = self.runs.image_path(rec, srec, None)
            for t in times:  # each requested, then ended as the controller logs it
                record_event(srec, t - 30, "create", rec.job.user, 0, srec.image_dir)
                record_event(srec, t, "done", "", 0, srec.image_dir)
            srec.last_ckpt = times[-1]
            self.state.dirty.add(rec.job.job_id)

    def _demo_transparent(self, running: list[JobRec], picks: list[JobRec], now: int) -> None:
        """One running job in ``TRANSPARENT_ONE_IN`` (a hash of the seed and its id, so no
        other job's draws change) runs its numbered steps under ``sckpt run --transparent``:
        the console shows them as it shows such steps on a real cluster.  The first user
        (the acting user's place, ``demo_users_for``) has at least one such job, since the
        console shows only the caller's own steps' checkpoint state."""
        touched = {rec.job.job_id for rec in picks}
        eligible = [r for r in running if r.job.job_id not in touched and numbered_of(r)]
        for rec in eligible:
            if not stable_hash(self.state.settings.seed, rec.job.job_id, 26) % TRANSPARENT_ONE_IN:
                self._mark_transparent(rec, now, len(self.state.transparent) < DEMO_HISTORY_JOBS)
        first = self.state.settings.users[0].name
        if not any(
            rec.job.user == first for rec in eligible if rec.job.job_id in self.state.transparent
        ):
            # Their newest running job: the oldest ones, at the top of the list, keep what
            # the demo showed before (the README's picture, the snapshot tests).
            mine = next((rec for rec in reversed(eligible) if rec.job.user == first), None)
            if mine is not None:
                self._mark_transparent(mine, now, True)

    def _mark_transparent(self, rec: JobRec, now: int, history: bool) -> None:
        """The job's numbered steps run under ``sckpt run --transparent``; a step that ran
        an hour has an hourly image history (``g1``, ``g2``...), the last with its size.
        Without ``history`` (past the first ``DEMO_HISTORY_JOBS`` jobs) only the last image
        is recorded, so that a cluster of 100,000 jobs builds about as fast as before."""
        numbered = numbered_of(rec)
        marked: dict[int, TransparentStep] = {}
        self.state.transparent[rec.job.job_id] = marked
        for srec in numbered:
            step = srec.step
            # Each step its own --name, as sckpt run asks of several steps of one job.
            name = step.name if len(numbered) == 1 else f"{step.name}-{step.step_id.step}"
            times = range(step.start_time + 3600, now - 60, 3600)
            kept = times[-HISTORY_LIMIT:] if history else times[-1:]
            earlier = len(times) - len(kept)  # generations before the ones recorded here
            srec.ckpt_count += earlier
            marked[step.step_id.step] = TransparentStep(name, DEMO_CHECKPOINTER, earlier)
            srec.history = None  # a transparent step's images, not the plugin's
            srec.last_ckpt = 0
            for t in kept:
                srec.ckpt_count += 1
                took = self.runs.checkpoint_outcome(rec, srec)[0]
                srec.image_dir = self.runs.image_path(rec, srec, None)
                record_event(srec, t - int(took), "create", rec.job.user, 0, srec.image_dir)
                record_event(srec, t, "done", "", 0, srec.image_dir)
                self.runs.image_done(rec, srec, t, took)
        self.state.dirty.add(rec.job.job_id)

    def _demo_auto(self, now: int) -> None:
        """Some steps under ``sckpt run`` run under a policy (``DEMO_POLICIES``, drawn by a
        hash of the seed and the job's id): their interval checkpoints happen by themselves
        as the clock moves (``autopolicy.py``), and their due times with them.  The first
        ``DEMO_AUTO_JOBS`` transparent jobs, each policy in turn, and as many of the first
        user's (whom the demo acts as, so the console shows theirs)."""
        first = self.state.settings.users[0].name
        chosen = mine = 0
        for job_id, marked in self.state.transparent.items():
            rec = self.state.jobs[job_id]
            if rec.job.user == first and mine < DEMO_AUTO_JOBS:
                mine += 1
            elif chosen >= DEMO_AUTO_JOBS:
                continue
            pick = DEMO_POLICIES[chosen % len(DEMO_POLICIES)]
            chosen += 1
            for step in marked:
                spread = stable_hash(self.state.settings.seed, job_id, step, 33)
                due = now + 60 + spread % pick.every if pick.every else 0
                self.policies.put_policy(rec, step, pick, due)

    def arrays(self) -> None:
        """The demo's job arrays: three tasks running, a range held by its run limit behind
        two running tasks, and a held array of 50 (``sbatch --array=1-50%2 --hold``)."""
        users = [u.name for u in self.state.settings.users]
        made = [
            *self.population.submit_array(users[0], "1-3", running=3, name="sweep", n_steps=1),
            *self.population.submit_array(
                users[1 % len(users)], "1-20", running=2, max_tasks=2, name="scan"
            ),
            *self.population.submit_array(
                users[2 % len(users)], "1-50", max_tasks=2, held=True, name="param"
            ),
        ]
        self._stagger_array_starts(made)

    def _stagger_array_starts(self, made: list[Job]) -> None:
        """The demo arrays' running tasks started one after another (``ARRAY_TASK_GAP``
        apart, the last one a few minutes ago), not all at the moment the demo began; each
        array was submitted before its first task started, and its pending record asks for
        a node (squeue's NODES, which said 0)."""
        by_array: dict[int, list[Job]] = {}
        for job in made:
            if job.state is JobState.RUNNING:
                by_array.setdefault(job.array_job_id, []).append(job)
        for tasks in by_array.values():
            tasks.sort(key=lambda j: j.array_task_id or 0)
            submitted = tasks[0].start_time - ARRAY_TASK_GAP * len(tasks) - 60
            for k, job in enumerate(tasks):
                ago = ARRAY_TASK_GAP * (len(tasks) - 1 - k) + ARRAY_TASK_GAP // 5
                rec = self.state.jobs[job.job_id]
                rec.job = replace(
                    rec.job, submit_time=submitted, start_time=rec.job.start_time - ago
                )
                for srec in rec.steps.values():
                    srec.step = replace(srec.step, start_time=srec.step.start_time - ago)
                self.state.dirty.add(job.job_id)
            pending = self.state.jobs.get(tasks[0].array_job_id)
            if pending is not None and pending.job.state is JobState.PENDING:
                pending.job = replace(pending.job, submit_time=submitted)
        for job in made:
            rec = self.state.jobs[job.job_id]
            if rec.job.state is JobState.PENDING and not rec.job.num_nodes:
                rec.job = replace(rec.job, num_nodes=1)
                self.state.dirty.add(job.job_id)
