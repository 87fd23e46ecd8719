"""``stuck.py`` on real processes: a stopped process is continued, a still one is named.

The frozen DMTCP checkpoint itself is in test_no_freeze.py (real cluster); here the limit's
rule with a real ``sleep`` for the task, a byte count the test controls and a ``ManualClock``
for the time of day the limit is read against (moved on, never waited for).
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from collections.abc import Iterator

import pytest
from sckpt.backend.checkpointing import stuck
from sckpt.backend.simulator import ManualClock

from tests.helpers import process_state, sleeping_process, wait_for


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    with sleeping_process() as child:
        yield child


def test_a_stopped_process_is_continued_then_a_still_checkpoint_is_named(sleeper) -> None:  # type: ignore[no-untyped-def]
    os.kill(sleeper.pid, signal.SIGSTOP)
    wait_for(lambda: process_state(sleeper.pid) == "T")
    clock = ManualClock()
    watch = stuck.Watch(clock)
    began = clock() - 30
    assert watch.check(0, began, lambda: [sleeper.pid], lambda: 0) is None  # no limit yet
    assert watch.check(clock() + 60, began, lambda: [sleeper.pid], lambda: 0) is None
    past = clock() - 1
    assert watch.check(past, began, lambda: [sleeper.pid], lambda: 0) is None
    wait_for(lambda: process_state(sleeper.pid) == "S")  # SIGCONT sent
    clock.advance(stuck.AFTER_CONTINUE / 2)  # whole seconds: exact on the fake clock
    assert watch.check(past, began, lambda: [sleeper.pid], lambda: 0) is None  # not yet
    clock.advance(stuck.AFTER_CONTINUE / 2)
    outcome = watch.check(past, began, lambda: [sleeper.pid], lambda: 0)
    assert outcome is not None
    code, words = outcome
    assert code == errno.ETIME
    assert f"pid {sleeper.pid} (sleep) was stopped (state T) before DMTCP's next barrier" in words
    assert words.endswith("it may still finish (that image is not used)")


def test_a_checkpoint_still_writing_is_left_alone(sleeper) -> None:  # type: ignore[no-untyped-def]
    clock = ManualClock()
    watch = stuck.Watch(clock)
    written = [0]

    def grows() -> int:
        written[0] += 4096
        return written[0]

    past = clock() - 1
    for _ in range(3):  # each look sees more bytes: never given up on
        assert watch.check(past, past, lambda: [sleeper.pid], grows) is None
        clock.advance(stuck.AFTER_CONTINUE)
    outcome = watch.check(past, past, lambda: [sleeper.pid], lambda: written[0])
    assert outcome is not None and outcome[0] == errno.ETIME
    assert f"pid {sleeper.pid} (sleep) state S, 1 thread: " in outcome[1]
    assert "cannot abandon a checkpoint" in outcome[1]


def test_the_limit_is_max_wait_less_a_margin_or_the_ceiling(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    class Checkpointer:
        give_up_at = 0.0

    c = Checkpointer()
    stuck.arm(c, 1000, 30)
    assert c.give_up_at == 1000 - stuck.MARGIN
    stuck.arm(c, 1000, 6)
    assert c.give_up_at == 998
    monkeypatch.setenv(stuck.ENV_CEILING, "15")
    clock = ManualClock()
    stuck.arm(c, 0, 0, clock)
    assert c.give_up_at == clock() + 15
    monkeypatch.setenv(stuck.ENV_CEILING, "5")  # out of range: the default
    assert stuck.ceiling() == stuck.CEILING
    stuck.arm(object(), 1000, 30)  # not Limited: nothing to set, no error


def test_a_checkpoint_without_max_wait_is_given_up_after_the_ceiling_in_fake_time(  # type: ignore[no-untyped-def]
    sleeper, monkeypatch
) -> None:
    """``--wait`` gives no deadline: the limit is the ceiling from when it was armed, on the
    wrapper's clock; one look at the limit, ``AFTER_CONTINUE`` more, then ETIME."""
    monkeypatch.setenv(stuck.ENV_CEILING, "15")
    clock = ManualClock()

    class Checkpointer:
        give_up_at = 0.0

    c, watch, began = Checkpointer(), stuck.Watch(clock), clock()
    stuck.arm(c, 0, 0, clock)
    clock.advance(14)
    assert watch.check(c.give_up_at, began, lambda: [sleeper.pid], lambda: 0) is None
    clock.advance(1)  # at the ceiling: looked at (nothing stopped to continue)
    assert watch.check(c.give_up_at, began, lambda: [sleeper.pid], lambda: 0) is None
    clock.advance(stuck.AFTER_CONTINUE)
    outcome = watch.check(c.give_up_at, began, lambda: [sleeper.pid], lambda: 0)
    assert outcome is not None and outcome[0] == errno.ETIME
    assert outcome[1].startswith(f"DMTCP's checkpoint did not finish in 17 s: pid {sleeper.pid}")
