"""A program still writing the image of an expired request (issue 32's third fault), and
the interval timer of ``sckpt run --every``, in a fake job (no cluster: ``test_wrapper.Run``).

Before the fix a second request, made while the program still wrote the first one's image,
moved ``current`` to a new ``g<N>.partial``; the program's rename into the old one then
failed, and both checkpoints ended ENOENT.
"""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

from sckpt.backend.checkpointing.protocol import CAUSE_INTERVAL, CAUSE_OPERATOR

from tests.cooperative.test_wrapper import Run, work  # noqa: F401 (a fixture)
from tests.helpers import wait_for


def test_a_request_while_the_program_writes_an_expired_one_waits_for_it(
    work: Path,  # noqa: F811 (the fixture)
) -> None:
    run = Run(work, "--slow", "6")
    wait_for(lambda: len(run.counted()) >= 5)
    run.store.update(lambda r: r.begin_request("root", "", 3, "create"))
    os.kill(run.proc.pid, signal.SIGURG)
    wait_for((run.image / "current" / "state.tmp").exists, timeout=10)
    wait_for(lambda: run.record().in_progress is None, timeout=10)  # expired: ETIME
    rec = run.record()
    assert rec.error_code == errno.ETIME
    code, why = rec.refusal()  # what create, vacate, tasks and the timer are told
    assert code == errno.EALREADY and "has not finished the checkpoint it was asked for" in why
    # An engine that did not look (an older console): the wrapper waits, moves nothing.
    run.store.update(lambda r: r.begin_request("root", "", 30, "create"))
    os.kill(run.proc.pid, signal.SIGURG)
    wait_for(lambda: (run.image / "g1" / "state").exists(), timeout=15)
    count, size = (int(x) for x in (run.image / "g1" / "state").read_text().split())
    assert size == sum(len(f"{i}\n") for i in range(1, count + 1))
    wait_for(lambda: run.record().in_progress is None, timeout=20)  # then the second one
    rec = run.record()
    assert rec.error_code == 0 and (run.image / "g2" / "state").exists()
    assert rec.refusal() == (0, "") and rec.tasks["0"].busy_since == 0
    run.stop()


def test_every_checkpoints_by_itself_and_says_why(work: Path) -> None:  # noqa: F811
    run = Run(work, wrapper_args=("--every", "10s"))
    rec = run.record()
    assert rec.policy.every == 10 and rec.policy.set_by == "sckpt run"
    assert rec.next_due - rec.tasks["0"].since in (9, 10, 11)
    wait_for(lambda: (run.image / "g1" / "state").exists(), timeout=20)
    wait_for(lambda: run.record().in_progress is None, timeout=10)
    rec = run.record()
    causes = [(h["operation"], h.get("cause")) for h in rec.history]
    assert ("create", CAUSE_INTERVAL) in causes and ("done", CAUSE_INTERVAL) in causes
    assert rec.ckpt_seconds["0"] > 0 and rec.image_bytes["0"] > 0  # measured for auto
    run.checkpoint()  # an operator's create among them
    assert run.record().history[-1]["cause"] == CAUSE_OPERATOR
    run.stop()
