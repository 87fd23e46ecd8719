"""The native engine: Slurm's own checkpoint API (libslurm 19.05 and older) via the binding.

Listing is ``LiveEngine``'s.  The nine operations go straight to ``slurm_checkpoint_*``:
the controller applies its own rules and order of checks, so this engine adds none (the
facade has already validated the input, and refused a step where the row acts on the job:
restart's ``job_level``, with the controller's own answer).  Targets map one to one: the
whole job is ``NO_VAL``, ``.batch`` the batch script (the binding translates sckpt's
canonical step numbers to the release's).

The snapshot asks the controller ``able`` and ``error`` for each running step the caller may
ask about (the owner's or root's), because that is the only way the API reports checkpoint
state.  To keep a refresh bounded on big clusters at most ``max_probes`` steps are asked per
refresh (the others show ``unknown`` until their turn, top of the list first); an answer is
reused for ``probe_ttl`` seconds, then the oldest are asked again, and only the views of jobs
with new answers are rebuilt (``states_due``).  An action or a check on a job forgets its
answers.  Refusals come back with the controller's code only; the engine explains them with
``rules`` on its own listing (``_explain``).

Made for the name ``native`` by ``engines/registry.py``.
"""

from __future__ import annotations

import contextlib
import heapq
import time
from collections.abc import Callable, Sequence

from .. import rules
from ..errors import (
    ENOENT,
    ESLURM_DISABLED,
    ESLURM_INVALID_JOB_ID,
    ESLURM_NOT_SUPPORTED,
    NotSupported,
    SlurmError,
    describe,
)
from ..hostlist import expand_hostlist
from ..model import (
    AbleResult,
    ActionResult,
    CheckpointError,
    CheckpointKind,
    CheckpointState,
    Job,
    Snapshot,
    Step,
    StepId,
    StepView,
)
from ..operations import operation as find_operation
from ..slurm_api import SlurmAPI
from .live import AUTO_UNDER_RUN, LiveEngine

_NOT_ASKED = CheckpointState(CheckpointKind.UNKNOWN)


class NativeEngine(LiveEngine):
    """``slurm_checkpoint_*`` through a ``SlurmAPI``; the controller enforces the rules."""

    name = "native"
    runs_checkpoints = True
    volatile_states = True

    def __init__(
        self,
        binding: SlurmAPI,
        max_probes: int = 200,
        probe_ttl: float = 2.0,
        *,
        name: str = "native",
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(binding, clock)
        self.name = name
        self.max_probes = max_probes
        self.probe_ttl = probe_ttl
        self._probes: dict[tuple[int, int], tuple[float, CheckpointState]] = {}
        """(job id, step) -> (when asked, the answer), oldest first (ints hash fast)."""
        self._now = 0.0
        self._probed = 0
        self._snapshot_caller: rules.Caller | None = None
        self._starved: set[int] = set()
        """Jobs with steps left unasked (probe budget) or forgotten: asked next time."""

    # ------------------------------------------------------------------ snapshot

    def checkpoint_state(self, job: Job, step: Step) -> CheckpointState:
        self._now = self.clock()
        return self.step_views(job, (step,))[0].checkpoint

    def step_views(self, job: Job, steps: Sequence[Step]) -> tuple[StepView, ...]:
        """The column from the job's state when it decides (one object for all its steps),
        else from the controller's answers (``_asked``)."""
        by_job = rules.column_for_job(job)
        if by_job is not None:
            shared = CheckpointState(by_job[0], reason=by_job[1])
            return tuple(StepView(step, shared) for step in steps)
        caller = self._snapshot_caller
        if caller is None or caller.is_root or caller.uid == job.uid:
            return tuple(StepView(step, self._asked(job, step)) for step in steps)
        # The controller would refuse (ESLURM_ACCESS_DENIED) what the caller may not ask.
        refused = rules.not_asked(job)
        return tuple(
            StepView(step, self._asked(job, step))
            if rules.may_act(step.step_id, job, caller)
            else StepView(step, refused)
            for step in steps
        )

    def _asked(self, job: Job, step: Step) -> CheckpointState:
        """The step's last answer while fresh, else ask (``probe_ttl``, ``max_probes``)."""
        now = self._now
        key = (step.step_id.job_id, step.step_id.step)
        cached = self._probes.get(key)
        if cached is not None and now - cached[0] < self.probe_ttl:
            return cached[1]
        if self._probed >= self.max_probes:
            self._starved.add(job.job_id)  # ask on a later refresh
            return cached[1] if cached else _NOT_ASKED
        self._probed += 1
        state = self._probe(step.step_id)
        self._probes.pop(key, None)  # kept oldest first: states_due stops early
        self._probes[key] = (now, state)
        return state

    def _probe(self, step: StepId) -> CheckpointState:
        """``able`` then ``error`` for one step, as the console's checkpoint column."""
        last = None
        try:
            code, message = self.binding.ckpt_error(step)
            if code:
                last = CheckpointError(code, describe(code)[0], message)
        except SlurmError:
            last = None
        try:
            since = int(self.binding.ckpt_able(step))
        except SlurmError as refused:
            if refused.code == ESLURM_DISABLED:
                return CheckpointState(CheckpointKind.DISABLED, last_error=last)
            if refused.code == ESLURM_NOT_SUPPORTED:
                return CheckpointState(
                    CheckpointKind.NOT_SUPPORTED, reason=refused.hint or refused.message
                )
            return CheckpointState(CheckpointKind.UNKNOWN, reason=str(refused), last_error=last)
        kind = rules.column_for_step(0, bool(since))
        return CheckpointState(kind, in_progress_since=since, last_error=last)

    def states_due(self) -> set[int] | None:
        """Jobs with an answer older than ``probe_ttl``, or left unasked (probe budget) or
        forgotten (after an action): only their views are built again."""
        now = self.clock()
        due: set[int] = set()
        for (job_id, _step), (asked, _state) in self._probes.items():  # oldest answer first
            if now - asked < self.probe_ttl or len(due) >= self.max_probes:
                break
            due.add(job_id)
        room = max(0, self.max_probes - len(due))
        chosen = heapq.nsmallest(room, self._starved)  # the top of the list first
        self._starved.difference_update(chosen)
        due.update(chosen)
        return due

    def refresh(self) -> bool:
        """``LiveEngine.refresh``; a changed listing drops the answers of steps gone."""
        with self._lock:
            before = self._steps_by_job
            changed = super().refresh()
            if changed:
                # Per answer, a look at its job's steps only when they changed (a tuple
                # comparison, identity first), not a set of every step of the queue.
                now = self._steps_by_job
                kept = {}
                for key, answer in self._probes.items():
                    listed = now.get(key[0])
                    if listed is None:
                        continue
                    if listed == before.get(key[0]) or any(
                        s.step_id.step == key[1] for s in listed
                    ):
                        kept[key] = answer
                self._probes = kept
            return changed

    def snapshot(self) -> Snapshot:
        """``LiveEngine.snapshot``, with this refresh's probe budget, time and caller."""
        with self._lock:
            self._probed = 0
            self._now = self.clock()
            self._snapshot_caller = self.caller()
            try:
                return super().snapshot()
            finally:
                self._snapshot_caller = None

    # ------------------------------------------------------------------ explaining refusals

    def _forget(self, target: StepId) -> None:
        """Drop the job's answers: the next snapshot asks again."""
        with self._lock:
            for key in [k for k in self._probes if k[0] == target.job_id]:
                del self._probes[key]
            self._starved.add(target.job_id)

    def _running_steps(self, target: StepId) -> list[Step]:
        """The steps a whole-job request acts on, from the listing (``rules``)."""
        with self._lock:
            self.refresh()
            steps = list(self._steps_by_job.get(target.job_id, ()))
        return rules.steps_acted_on(target, steps, lambda s: s)

    def _step_codes(
        self, steps: list[Step], operation: str, sent_at: int
    ) -> list[tuple[StepId, int]]:
        """What each step answered ``operation`` sent at ``sent_at``, from ``able`` now.

        A checkpoint that began at or after ``sent_at`` is the request's own, not a refusal.
        """
        codes = []
        for step in steps:
            try:
                since = int(self.binding.ckpt_able(step.step_id))
                disabled = 0
            except SlurmError as refused:
                since, disabled = 0, int(refused.code == ESLURM_DISABLED)
                if not disabled:
                    codes.append((step.step_id, refused.code))
                    continue
            if find_operation(operation).disabled_is_answer:
                codes.append((step.step_id, rules.able_code(disabled)))
            else:
                earlier = 0 < since < sent_at
                codes.append((step.step_id, rules.checkpoint_code(disabled, earlier)))
        return codes

    def _explain(
        self, target: StepId, operation: str, refused: SlurmError, sent_at: int
    ) -> SlurmError:
        """Say why the controller refused, as far as the listing and the rules tell.

        The API answers with a code only.  The engine runs the same rules (``rules``) on
        what it lists: when they give the controller's code, their reason is the hint; a
        whole-job refusal names what each running step answered (asked with ``able``).
        """
        if refused.hint:
            return refused
        row = find_operation(operation)
        try:
            if row.resumes:
                self.check_restart(target)
            else:
                self.check_target(target)
        except SlurmError as ours:
            if ours.code == refused.code:
                refused.hint = ours.hint
                return refused
        if row.resumes and refused.code == ENOENT:
            return refused  # restart() names the directory it looked in
        if target.is_whole_job and refused.code != ESLURM_NOT_SUPPORTED:
            codes = self._step_codes(self._running_steps(target), operation, sent_at)
            if any(code == refused.code for _sid, code in codes):
                refused.hint = rules.refusal_hint(codes)
                return refused
        if refused.code == ESLURM_NOT_SUPPORTED:
            with contextlib.suppress(SlurmError):
                plugin = self.controller_config().checkpoint_type
                if plugin:
                    refused.hint = f"CheckpointType is {plugin}"
        return refused

    def _request(
        self, target: StepId, operation: str, call: Callable[[], object], detail: str = ""
    ) -> ActionResult:
        """Send one request; on success the result names the steps a whole job reached."""
        sent_at = int(self.clock())
        try:
            call()
        except SlurmError as refused:
            raise self._explain(target, operation, refused, sent_at) from None
        finally:
            self._forget(target)
        per_step: tuple[tuple[StepId, int], ...] = ()
        if target.is_whole_job and find_operation(operation).on_every_step:
            with contextlib.suppress(SlurmError):
                per_step = tuple((s.step_id, 0) for s in self._running_steps(target))
        return ActionResult(target, operation, detail, per_step)

    # ------------------------------------------------------------------ operations

    def able(self, target: StepId) -> AbleResult:
        self._forget(target)  # a fresh answer: the next snapshot asks again too
        try:
            return AbleResult(target, int(self.binding.ckpt_able(target)))
        except SlurmError as refused:
            raise self._explain(target, "able", refused, int(self.clock())) from None

    def error(self, target: StepId) -> CheckpointError:
        self._forget(target)
        try:
            code, message = self.binding.ckpt_error(target)
        except SlurmError as refused:
            raise self._explain(target, "error", refused, int(self.clock())) from None
        return CheckpointError(code, describe(code)[0], message)

    def create(self, target: StepId, max_wait: int, image_dir: str | None) -> ActionResult:
        return self._request(
            target,
            "create",
            lambda: self.binding.ckpt_create(target, max_wait, image_dir),
            _wait_detail(max_wait, image_dir),
        )

    def vacate(
        self, target: StepId, max_wait: int, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        return self._request(
            target,
            "vacate",
            lambda: self.binding.ckpt_vacate(target, max_wait, image_dir),
            _wait_detail(max_wait, image_dir),
        )

    def restart(
        self, target: StepId, stick: bool, image_dir: str | None, force: bool = False
    ) -> ActionResult:
        with self._lock:
            self.refresh()
            known = self._by_job.get(target.job_id)
        where = f" on {known.nodes}" if stick and known is not None and known.nodes else ""
        try:
            return self._request(
                target,
                "restart",
                lambda: self.binding.ckpt_restart(target, stick, image_dir),
                f"resubmitted as job {target.job_id}{where}",
            )
        except SlurmError as refused:
            if refused.code == ENOENT and not refused.hint:
                refused.hint = rules.no_image_hint(target.job_id, image_dir)
            raise

    def enable(self, target: StepId) -> ActionResult:
        return self._request(target, "enable", lambda: self.binding.ckpt_enable(target))

    def disable(self, target: StepId) -> ActionResult:
        return self._request(target, "disable", lambda: self.binding.ckpt_disable(target))

    def complete(
        self, target: StepId, begin_time: int, error_code: int, error_msg: str
    ) -> ActionResult:
        return self._request(
            target,
            "complete",
            lambda: self.binding.ckpt_complete(target, begin_time, error_code, error_msg),
        )

    def tasks(
        self, target: StepId, begin_time: int, image_dir: str, max_wait: int, nodelist: str
    ) -> ActionResult:
        nodes = nodelist
        if not nodes:
            with self._lock:
                self.refresh()
                steps = [
                    s
                    for s in self._steps_by_job.get(target.job_id, ())
                    if target.is_whole_job or s.step_id.step == target.step
                ]
            nodes = ",".join(s.nodes for s in steps if s.nodes)
        try:
            return self._request(
                target,
                "tasks",
                lambda: self.binding.ckpt_tasks(target, begin_time, image_dir, max_wait, nodes),
                f"nodes {nodes}",
            )
        except SlurmError as refused:
            if nodelist and refused.code == ESLURM_INVALID_JOB_ID and not refused.hint:
                refused.hint = self._nodes_outside(target, nodelist)
            raise

    def auto(
        self, target: StepId, every: int | None, before_end: int | None, off: bool
    ) -> ActionResult:
        """Slurm <= 19.05 took an interval at launch (``srun --checkpoint=INTERVAL``) and
        has no call that changes it: refused after the controller's checks."""
        self.check_target(target)
        raise NotSupported(
            hint=f"{AUTO_UNDER_RUN}; this Slurm's interval is set at launch only "
            "(srun --checkpoint=INTERVAL) and no call changes it"
        )

    def _nodes_outside(self, target: StepId, nodelist: str) -> str:
        """Why slurmd answered ESLURM_INVALID_JOB_ID to ``tasks``: the node list names a node
        a step does not run on (``rules.tasks_hint``); "" when every node is the step's."""
        wanted = expand_hostlist(nodelist)
        with contextlib.suppress(SlurmError):
            for step in self._running_steps(target):
                nodes = expand_hostlist(step.nodes)
                if rules.tasks_code(nodes, wanted):
                    return rules.tasks_hint(step.step_id, nodes, wanted, step.nodes)
        return ""


def _wait_detail(max_wait: int, image_dir: str | None) -> str:
    return f"max_wait {max_wait}s" + (f", image dir {image_dir}" if image_dir else "")
