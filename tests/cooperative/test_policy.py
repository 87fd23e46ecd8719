"""Automatic checkpoints without a cluster: the rules (``policy.py``), the autopilot that
carries them out (``autopilot.py``, with the controller, the requeue and the clock given to
it), and ``sckpt run``'s refusal of bad policy values before the program starts."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sckpt.backend.arguments import (
    EVERY_AUTO,
    validate_duration,
    validate_every,
    validate_restarts,
)
from sckpt.backend.checkpointing import policy
from sckpt.backend.checkpointing.autopilot import CHAIN_END_CODE, Autopilot
from sckpt.backend.checkpointing.options import (
    JobFacts,
    build_parser,
    parse_job_facts,
    run_policy,
    slurm_duration,
)
from sckpt.backend.checkpointing.protocol import (
    CAUSE_BEFORE_END,
    CAUSE_INTERVAL,
    CAUSE_SIGTERM,
    AutoPolicy,
    StepRecord,
    TaskInfo,
)
from sckpt.backend.checkpointing.store import StepStore
from sckpt.backend.config import settings_from_mapping
from sckpt.backend.errors import EALREADY, ESLURM_DISABLED, ConfigError, UsageError
from sckpt.backend.model import StepId

from tests.cooperative.conftest import VENV_PYTHON

STEP = StepId(700, 0)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("1d", 86400)],
)
def test_durations_are_read_as_they_are_typed(text: str, seconds: int) -> None:
    assert validate_duration(text, "--before-end") == seconds
    assert validate_every(text) == seconds


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("0", "must be longer than zero"),
        ("-5m", "expected a duration such as 90s"),
        ("1x", "expected a duration such as 90s"),
        ("", "expected a duration"),
        ("5s", "at least 10s"),
        ("400d", "at most 366 days"),
    ],
)
def test_bad_intervals_are_refused_in_one_sentence(text: str, said: str) -> None:
    with pytest.raises(UsageError) as caught:
        validate_every(text, "--every")
    assert said in caught.value.message and "--every" in caught.value.message


def test_auto_and_restart_counts() -> None:
    assert validate_every("AUTO") == EVERY_AUTO
    assert validate_restarts("3") == 3
    for bad in ("0", "-1", "x", 10_001):
        with pytest.raises(UsageError):
            validate_restarts(bad)


def test_young_daly_and_its_bounds() -> None:
    # sqrt(2 x 10 s x 86400 s) = 1314 s
    assert policy.young_daly(10, 86400) == 1314
    assert policy.young_daly(0.01, 100) == policy.AUTO_FLOOR
    assert policy.young_daly(10_000, 10**9) == policy.AUTO_CEILING
    auto = AutoPolicy(auto=True, mtbf=86400)
    assert policy.interval(auto, 0) == policy.young_daly(policy.ASSUMED_COST, 86400)
    assert policy.interval(auto, 40) == policy.young_daly(40, 86400) == 2629


def test_the_controllers_job_line_is_read() -> None:
    facts = parse_job_facts(
        "JobId=5 JobName=x JobState=RUNNING Reason=None Requeue=1 Restarts=2 BatchFlag=1 "
        "TimeLimit=1-02:00:00 EndTime=Unknown PreemptTime=2026-11-27T12:00:00 WorkDir=/w"
    )
    assert (facts.time_limit, facts.end_time, facts.restarts) == (93600, 0, 2)
    assert facts.batch and facts.requeue and facts.preempted and facts.work_dir == "/w"
    assert slurm_duration("UNLIMITED") == 0 and slurm_duration("05:00") == 300


def _record(**policy_values: int | bool) -> StepRecord:
    rec = StepRecord(job_id=STEP.job_id, step="0", policy=AutoPolicy(**policy_values))  # type: ignore[arg-type]
    rec.tasks["0"] = TaskInfo(0, "n1", 1, 0, "SIGUSR1", "/img/task0", handler="caught")
    return rec


def test_what_is_due_and_what_holds_it_back() -> None:
    rec = _record(every=60)
    rec.next_due = 1000
    assert policy.due(rec, 999, 0) == ""
    assert policy.due(rec, 1000, 0) == CAUSE_INTERVAL
    rec.disable_count = 1  # disabled: skipped, and due again as soon as it is enabled
    assert policy.due(rec, 2000, 0) == "" and rec.refusal()[0] == ESLURM_DISABLED
    rec.disable_count = 0
    assert policy.due(rec, 2000, 0) == CAUSE_INTERVAL
    rec.tasks["0"].busy_since = 1500  # the program still writes an earlier image
    code, why = rec.refusal()
    assert code == EALREADY and "has not finished the checkpoint it was asked for" in why
    assert policy.due(rec, 2000, 0) == ""


def test_before_end_is_due_once_a_run() -> None:
    rec = _record(before_end=60)
    rec.end_time = 1000
    assert policy.due(rec, 939, 0) == ""
    assert policy.due(rec, 940, 0) == CAUSE_BEFORE_END
    rec.before_end_run = 0
    assert policy.due(rec, 990, 0) == ""
    assert policy.due(rec, 990, 1) == CAUSE_BEFORE_END  # the next run's own


def test_requeue_decisions() -> None:
    rec = _record(before_end=60, max_restarts=2)
    rec.last_request, rec.last_results = "r1", {"0": [0, ""]}

    def decide(**kw: object) -> policy.Requeue:
        args: dict[str, object] = {"restart_count": 0, "batch": True, "reason": "before end"}
        args.update(kw)
        return policy.decide_requeue(rec, "r1", **args)  # type: ignore[arg-type]

    assert decide().go
    assert not decide(batch=False).go and "has no batch script" in decide(batch=False).why
    assert "2 restarts reached (--max-restarts 2)" in decide(restart_count=2).why
    rec.last_results = {"0": [28, "no space"]}
    assert "did not complete (task 0: no space)" in decide().why
    assert decide(need_image=False, reason="preemption").go  # a preemption requeues anyway
    rec.requeued_run = 0
    assert not decide(need_image=False).go  # one requeue a run


class Controller:
    """What the autopilot asks of Slurm, answered by the test."""

    def __init__(self, facts: JobFacts) -> None:
        self.facts = facts
        self.requeued: list[int] = []
        self.refuse = ""

    def look(self, job_id: int) -> JobFacts:
        return self.facts

    def requeue(self, job_id: int) -> str:
        if not self.refuse:
            self.requeued.append(job_id)
        return self.refuse


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _pilot(
    tmp_path: Path, start: AutoPolicy, facts: JobFacts
) -> tuple[Autopilot, Controller, Clock]:
    ctl, clock = Controller(facts), Clock(10_000.0)
    store = StepStore(tmp_path, STEP, owner=os.getuid())
    store.ensure_directory()
    pilot = Autopilot(
        store,
        STEP,
        0,
        start,
        facts=ctl.look,
        requeue=ctl.requeue,
        clock=clock,
        sleep=clock.sleep,
        kill_wait=lambda: 5,
    )
    pilot.first_look()

    def register(rec: StepRecord) -> None:
        rec.tasks["0"] = TaskInfo(0, "n1", os.getpid(), 0, "SIGUSR1", "/img/task0")
        pilot.register(rec, clock())

    store.update(register, create=True)
    return pilot, ctl, clock


def _answer(pilot: Autopilot, code: int = 0, seconds: float = 2.0) -> None:
    """What the task's wrapper does once its program answered: report, measure."""

    def change(rec: StepRecord) -> None:
        if not code:
            rec.last_image["0"] = "/img/task0/g1"
            rec.ckpt_seconds["0"] = seconds
        rec.report(0, code, "" if not code else "failed")

    pilot.store.update(change)


def _record_of(pilot: Autopilot) -> StepRecord:
    rec = pilot.store.read()
    assert rec is not None
    return rec


def test_an_interval_checkpoint_starts_by_itself_and_is_never_doubled(tmp_path: Path) -> None:
    pilot, _ctl, clock = _pilot(tmp_path, AutoPolicy(every=60), JobFacts(batch=True))
    assert _record_of(pilot).next_due == 10_060
    assert not pilot.turn(True)
    clock.now = 10_060
    assert pilot.turn(True)
    rec = _record_of(pilot)
    assert rec.in_progress is not None and rec.in_progress.cause == CAUSE_INTERVAL
    assert rec.next_due == 10_120  # the next one counts from this one's start
    clock.now = 10_200
    assert not pilot.turn(True)  # still running: not doubled
    _answer(pilot, code=errno.ENOSPC)  # a failure is tried again at the next due time
    assert pilot.turn(True)
    assert _record_of(pilot).history[-1]["cause"] == CAUSE_INTERVAL


def test_a_disabled_step_is_checkpointed_once_it_is_enabled(tmp_path: Path) -> None:
    pilot, _ctl, clock = _pilot(tmp_path, AutoPolicy(every=60), JobFacts(batch=True))
    pilot.store.update(lambda r: setattr(r, "disable_count", 1))
    clock.now = 10_500
    assert not pilot.turn(True)
    pilot.store.update(lambda r: setattr(r, "disable_count", 0))
    assert pilot.turn(True)


def test_auto_interval_follows_the_measured_cost(tmp_path: Path) -> None:
    start = AutoPolicy(auto=True, mtbf=3600)
    pilot, _ctl, clock = _pilot(tmp_path, start, JobFacts(batch=True))
    first = _record_of(pilot).policy.every
    assert first == policy.young_daly(policy.ASSUMED_COST, 3600) == 268
    clock.now += first
    started = clock.now
    assert pilot.turn(True)
    _answer(pilot, seconds=50.0)
    clock.now += 1
    assert not pilot.turn(True)  # worked out again after the checkpoint ...
    rec = _record_of(pilot)
    assert rec.policy.every == policy.young_daly(50.0, 3600) == 600
    assert rec.next_due == started + 600  # ... and counted from its start


def test_before_end_checkpoints_then_requeues_once(tmp_path: Path) -> None:
    facts = JobFacts(end_time=10_300, time_limit=600, batch=True, requeue=True)
    pilot, ctl, clock = _pilot(tmp_path, AutoPolicy(before_end=120, max_restarts=5), facts)
    assert _record_of(pilot).end_time == 10_300
    clock.now = 10_179
    assert not pilot.turn(True)
    clock.now = 10_181
    assert pilot.turn(True)
    assert _record_of(pilot).in_progress.cause == CAUSE_BEFORE_END  # type: ignore[union-attr]
    assert not pilot.turn(True) and ctl.requeued == []  # not before every task reported
    _answer(pilot)
    pilot.turn(True)
    pilot.turn(True)
    assert ctl.requeued == [STEP.job_id]
    rec = _record_of(pilot)
    assert rec.requeued_run == 0 and rec.history[-1]["operation"] == "requeue"


def test_a_moved_end_time_is_read_again(tmp_path: Path) -> None:
    facts = JobFacts(end_time=20_000, time_limit=20_000, batch=True)
    pilot, ctl, clock = _pilot(tmp_path, AutoPolicy(before_end=60), facts)
    ctl.facts = JobFacts(end_time=10_350, time_limit=700, batch=True)  # TimeLimit= lowered
    clock.now = pilot.next_look - 1
    assert not pilot.turn(True)
    clock.now = pilot.next_look  # at most LOOK_CEILING later: read again, and now due
    assert pilot.turn(True)
    assert _record_of(pilot).end_time == 10_350


def test_a_failed_before_end_checkpoint_ends_the_chain_in_the_steps_error(tmp_path: Path) -> None:
    facts = JobFacts(end_time=10_100, time_limit=600, batch=True)
    pilot, ctl, clock = _pilot(tmp_path, AutoPolicy(before_end=60), facts)
    clock.now = 10_050
    assert pilot.turn(True)
    _answer(pilot, code=errno.ENOSPC)
    pilot.turn(True)
    rec = _record_of(pilot)
    assert ctl.requeued == [] and "did not complete" in rec.chain_end
    assert rec.error_code == CHAIN_END_CODE and "requeue chain ended" in rec.error_msg


def test_max_restarts_ends_the_chain(tmp_path: Path) -> None:
    facts = JobFacts(end_time=10_100, time_limit=600, batch=True)
    ctl, clock = Controller(facts), Clock(10_000.0)
    store = StepStore(tmp_path, STEP, owner=os.getuid())
    store.ensure_directory()
    start = AutoPolicy(before_end=60, max_restarts=3)
    pilot = Autopilot(
        store, STEP, 3, start, facts=ctl.look, requeue=ctl.requeue, clock=clock, kill_wait=lambda: 5
    )
    pilot.first_look()

    def register(rec: StepRecord) -> None:
        rec.tasks["0"] = TaskInfo(0, "n1", os.getpid(), 0, "SIGUSR1", "/i", restart_count=3)
        pilot.register(rec, clock())

    store.update(register, create=True)
    clock.now = 10_050
    assert pilot.turn(True)
    _answer(pilot)
    pilot.turn(True)
    assert ctl.requeued == [] and "3 restarts reached" in _record_of(pilot).chain_end


def test_a_preemption_checkpoints_in_its_grace_and_requeues(tmp_path: Path) -> None:
    pilot, ctl, clock = _pilot(tmp_path, AutoPolicy(every=600), JobFacts(batch=True))
    pilot.store.update(lambda r: r.ckpt_seconds.update({"0": 4.0}))
    ctl.facts = JobFacts(end_time=int(clock.now) + 20, batch=True, preempted=True)
    assert pilot.on_sigterm(True)
    assert _record_of(pilot).in_progress.cause == CAUSE_SIGTERM  # type: ignore[union-attr]
    _answer(pilot)
    pilot.turn(True)
    assert ctl.requeued == [STEP.job_id]


def test_a_preemption_whose_grace_is_too_short_requeues_without_a_checkpoint(
    tmp_path: Path,
) -> None:
    pilot, ctl, clock = _pilot(tmp_path, AutoPolicy(every=600), JobFacts(batch=True))
    pilot.store.update(lambda r: r.ckpt_seconds.update({"0": 30.0}))  # 45 s > 20 + 5 s
    ctl.facts = JobFacts(end_time=int(clock.now) + 20, batch=True, preempted=True)
    assert not pilot.on_sigterm(True)
    assert ctl.requeued == [STEP.job_id]  # resumes from its last periodic image


def test_after_a_preemption_the_end_waits_for_the_checkpoint_then_requeues(
    tmp_path: Path,
) -> None:
    pilot, ctl, clock = _pilot(tmp_path, AutoPolicy(every=600), JobFacts(batch=True))
    pilot.store.update(lambda r: r.ckpt_seconds.update({"0": 4.0}))
    ctl.facts = JobFacts(end_time=int(clock.now) + 20, batch=True, preempted=True)
    assert pilot.on_sigterm(True)

    def sleep(seconds: float) -> None:  # the task's answer arrives during the third wait
        clock.sleep(seconds)
        if len(clock.slept) == 3:
            _answer(pilot)

    pilot.sleep = sleep
    pilot.finish()
    assert len(clock.slept) == 3 and ctl.requeued == [STEP.job_id]


def test_a_checkpoint_that_never_closes_is_waited_for_at_most_kill_wait(tmp_path: Path) -> None:
    pilot, ctl, clock = _pilot(tmp_path, AutoPolicy(every=600), JobFacts(batch=True))
    pilot.store.update(lambda r: r.ckpt_seconds.update({"0": 4.0}))
    ctl.facts = JobFacts(end_time=int(clock.now) + 20, batch=True, preempted=True)
    assert pilot.on_sigterm(True)
    pilot.finish()  # the program died mid-checkpoint: the record keeps the request
    assert _record_of(pilot).in_progress is not None
    assert 5.0 <= sum(clock.slept) < 5.0 + 0.2 * 2  # KillWait (5 s), not more


def test_a_scancel_is_not_a_preemption(tmp_path: Path) -> None:
    pilot, ctl, clock = _pilot(tmp_path, AutoPolicy(every=600), JobFacts(batch=True))
    ctl.facts = JobFacts(end_time=int(clock.now), batch=True, preempted=False)
    pilot.on_sigterm(True)
    _answer(pilot)
    pilot.turn(True)
    pilot.finish()
    assert ctl.requeued == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--every", "0"], "--every '0': must be longer than zero"),
        (["--every", "-5m"], "--every '-5m': expected a duration such as 90s"),
        (["--every", "1x"], "--every '1x': expected a duration such as 90s"),
        (["--before-end", "soon"], "--before-end 'soon': expected a duration"),
        (["--max-restarts", "0"], "--max-restarts '0': expected a whole number from 1"),
    ],
)
def test_bad_policy_values_are_one_line_and_exit_2_before_the_program_starts(
    tmp_path: Path, args: list[str], said: str
) -> None:
    marker = tmp_path / "started"
    env = {
        **os.environ,
        "SLURM_JOB_ID": "900002",
        "SLURM_STEP_ID": "0",
        "SCKPT_WORK_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [
            *(str(VENV_PYTHON), "-m", "sckpt.backend.checkpointing.wrapper", *args, "--"),
            *(sys.executable, "-c", f"open({str(marker)!r}, 'w')"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr
    assert not marker.exists() and not (tmp_path / ".sckpt").exists()


def test_a_policy_comes_from_the_option_else_the_environment_else_the_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = settings_from_mapping({"auto": {"every": "1h", "before_end": "10m", "mtbf": "7d"}})
    assert (site.auto_every, site.auto_before_end, site.auto_mtbf) == (3600, 600, 604800)
    for name in ("SCKPT_EVERY", "SCKPT_BEFORE_END", "SCKPT_MAX_RESTARTS"):
        monkeypatch.delenv(name, raising=False)
    parser = build_parser()
    plain = run_policy(parser.parse_args(["--", "prog"]), site)
    assert (plain.every, plain.before_end, plain.mtbf) == (3600, 600, 604800)
    monkeypatch.setenv("SCKPT_EVERY", "auto")
    monkeypatch.setenv("SCKPT_MAX_RESTARTS", "3")
    from_env = run_policy(parser.parse_args(["--", "prog"]), site)
    assert (from_env.auto, from_env.max_restarts, from_env.before_end) == (True, 3, 600)
    given = run_policy(parser.parse_args(["--every", "20m", "--", "prog"]), site)
    assert (given.every, given.auto, given.set_by) == (1200, False, "sckpt run")
    monkeypatch.setenv("SCKPT_BEFORE_END", "soon")
    with pytest.raises(UsageError) as caught:
        run_policy(parser.parse_args(["--", "prog"]), site)
    assert "$SCKPT_BEFORE_END 'soon'" in caught.value.message
    with pytest.raises(ConfigError, match=r"key 'auto\.every': invalid auto\.every '0'"):
        settings_from_mapping({"auto": {"every": "0"}})
