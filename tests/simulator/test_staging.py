"""A simulated cluster built in two parts (``backend/simulator/staging.py``) is the cluster
built in one go, and only the console's reads see its first part meanwhile.

The demo's console builds its first ``DEMO_FIRST_PART`` jobs, shows them, and builds the
rest on a thread; ``sckpt --demo ls``, actions and the tests' oracle must see exactly what a
build in one go makes: jobs, steps, their checkpoint states, accounting, checkpoint
history, the steps under ``sckpt run`` and what happens as the clock moves on.
"""

from __future__ import annotations

import threading

import pytest
from sckpt.backend.model import STEP_EXTERN, JobState
from sckpt.backend.simulator import ManualClock, SimulatedCluster

SEED = 1
JOBS = 1_000
FIRST = 150


def _cluster(
    first_part: int | None, *, jobs: int = JOBS, arrays: bool = True
) -> tuple[SimulatedCluster, ManualClock]:
    clock = ManualClock()
    cluster = SimulatedCluster(
        seed=SEED, n_jobs=jobs, clock=clock, arrays=arrays, first_part=first_part
    )
    return cluster, clock


def _content(cluster: SimulatedCluster) -> dict[str, object]:
    """Everything the cluster answers, but the listing's change counter (``Listing.version``:
    a cluster built in two parts listed its first part once more)."""
    listed = cluster.listing()
    ids = [job.job_id for job in listed.jobs]
    return {
        "listing": (listed.jobs, listed.steps, listed.by_job),
        "views": cluster.snapshot().jobs,
        "accounting": cluster.accounting(0, 0, finished=True),
        "records": [cluster.accounting(job_id, 0) for job_id in ids],
        "events": [cluster.checkpoint_events(job_id) for job_id in ids],
        "transparent": [dict(cluster.transparent_steps(job_id)) for job_id in ids],
        "auto": [dict(cluster.auto_policies(job_id)) for job_id in ids],
        "size": cluster.size,
    }


@pytest.mark.parametrize("jobs", [48, JOBS])
def test_a_cluster_built_in_two_parts_is_the_cluster_built_in_one_go(jobs: int) -> None:
    whole, whole_clock = _cluster(None, jobs=jobs)
    staged, staged_clock = _cluster(FIRST if jobs > FIRST else 10, jobs=jobs)
    assert staged.building and not whole.building
    staged.finish_building()
    assert not staged.building
    assert _content(staged) == _content(whole)
    for clock in (whole_clock, staged_clock):  # the events to come: starts, ends, arrivals
        clock.advance(600)
    assert _content(staged) == _content(whole)
    for clock in (whole_clock, staged_clock):
        clock.advance(3 * 3600)
    assert _content(staged) == _content(whole)


def test_the_console_sees_the_first_part_until_the_rest_is_built() -> None:
    # No arrays: they are submitted when the build ends, at the clock's time then (as a
    # build in one go submits them when it ends); every generated job and touch is made
    # at the time the first part was.
    whole, whole_clock = _cluster(None, arrays=False)
    staged, clock = _cluster(FIRST, arrays=False)
    staged.allow_part()
    client = staged.connect("alice")
    jobs = client.load_jobs()
    steps = client.get_steps()
    # The top of the whole listing by id, the same job records (the demo's touches change
    # steps, not jobs; its arrays come after every generated job).
    assert staged.first_part == FIRST
    assert jobs.jobs == whole.listing().jobs[:FIRST]
    assert [job.job_id for job in jobs.jobs] == list(range(184_201, 184_201 + FIRST))
    assert {s.step_id.job_id for s in steps.steps} <= {job.job_id for job in jobs.jobs}
    # Its steps are probed meanwhile.  The clock stands still for the build: the rest is
    # made at the time the first part was, as a build in one go makes it.
    clock.advance(15)
    numbered = next(s for s in steps.steps if s.step_id.step < STEP_EXTERN - 16)
    assert staged.connect("root").ckpt_error(numbered.step_id) == (0, "")
    assert client.load_jobs(jobs.last_update).changed is False
    assert staged.building
    # An action needs the whole cluster: it is built first.
    pending = next(j.job_id for j in jobs.jobs if j.state is JobState.PENDING)
    client.hold(pending)
    assert not staged.building
    listed = client.load_jobs(jobs.last_update)
    assert listed.changed and len(listed.jobs) == len(whole.listing().jobs)
    whole_clock.advance(15)
    whole.connect("alice").hold(pending)
    assert _content(staged) == _content(whole)


def test_without_the_console_any_call_gets_the_whole_cluster() -> None:
    """``sckpt --demo ls``: the first listing asked is the whole one."""
    whole, _ = _cluster(None)
    staged, _ = _cluster(FIRST)
    listed = staged.connect("alice").load_jobs()
    assert not staged.building
    assert listed.jobs == whole.listing().jobs


def test_a_call_during_the_build_waits_for_it_and_sees_the_whole_cluster() -> None:
    whole, _ = _cluster(None)
    staged, _ = _cluster(FIRST)
    staged.allow_part()
    client = staged.connect("root")
    steps = client.get_steps().steps
    numbered = next(s for s in steps if s.step_id.step < STEP_EXTERN - 16).step_id
    seen: list[int] = []
    failures: list[BaseException] = []

    def look() -> None:  # the console's refreshes meanwhile: listing and probes
        try:
            for _ in range(50):
                seen.append(len(client.load_jobs().jobs))
                client.ckpt_error(numbered)
        except BaseException as crash:
            failures.append(crash)

    reader = threading.Thread(target=look)
    builder = threading.Thread(target=staged.finish_building)
    reader.start()
    builder.start()
    records = client.job_records(184_205, 0)  # waits for the build: the whole accounting
    builder.join()
    reader.join()
    assert failures == []
    assert set(seen) <= {FIRST, len(whole.listing().jobs)}
    assert records == whole.accounting(184_205, 0)
    assert _content(staged) == _content(whole)
