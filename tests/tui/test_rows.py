"""The jobs table's plan: what to change, by identity, against a naive recomputation."""

from __future__ import annotations

import random

from sckpt.backend.model import Job, JobState, JobView
from sckpt.tui.console_text import Filter, parse_filter
from sckpt.tui.rows import GoneRow, RowData, ViewState, plan, render_job

NOW = 1_700_000_000.0


def view(job_id: int, *, user: str = "alice", state: JobState = JobState.RUNNING) -> JobView:
    job = Job(job_id, f"job{job_id}", user, 1000, "batch", state, start_time=int(NOW) - 90)
    return JobView(job, ())


def state(flt: Filter | None = None, *, column: str = "id", reverse: bool = False) -> ViewState:
    return ViewState(flt or Filter(), False, "alice", False, column, reverse)


def applied(shown: dict[str, RowData], order: list[str], p: object) -> list[str]:
    """Apply a plan to a plain ordered list, the way a table would."""
    from sckpt.tui.rows import RowPlan

    assert isinstance(p, RowPlan)
    if p.reset:
        return [key for key, _, _ in p.upserts]
    keys = {key: sk for key, sk, _ in p.upserts}
    removed = set(p.removals) | set(keys)
    kept = [key for key in order if key not in removed]
    # sort keys of kept rows: recompute from the data they hold (id order here)
    merged = [(int(k), k) for k in kept] + [(int(k), k) for k in keys]
    return [k for _, k in sorted(merged)]


def test_unchanged_views_plan_nothing() -> None:
    jobs = [view(i) for i in range(1, 101)]
    first = plan(state(), jobs, [], frozenset(), {}, NOW)
    assert len(first.upserts) == 100 and not first.removals
    again = plan(state(), jobs, [], frozenset(), first.shown, NOW + 2)
    assert again.upserts == [] and again.removals == []


def test_changed_new_and_vanished_jobs() -> None:
    jobs = [view(i) for i in range(1, 11)]
    first = plan(state(), jobs, [], frozenset(), {}, NOW)
    changed = view(3, state=JobState.SUSPENDED)
    later = [j for j in jobs if j.job.job_id not in (3, 7)] + [changed, view(11)]
    p = plan(state(), later, [], frozenset(), first.shown, NOW)
    assert sorted(k for k, _, _ in p.upserts) == ["11", "3"]
    assert p.removals == ["7"]
    assert p.shown["3"] is changed


def test_gone_rows_keep_their_object() -> None:
    jobs = [view(1), view(2)]
    first = plan(state(), jobs, [], frozenset(), {}, NOW)
    p = plan(state(), [jobs[0]], [jobs[1]], frozenset(), first.shown, NOW)
    gone = p.shown["2"]
    assert isinstance(gone, GoneRow) and gone.view is jobs[1]
    again = plan(state(), [jobs[0]], [jobs[1]], frozenset(), p.shown, NOW)
    assert again.shown["2"] is gone and again.upserts == []
    cells, _ = render_job(gone, NOW)
    assert cells["state"].plain == "R*"  # squeue's code, marked gone


def test_filter_and_reverse_sort_reset_in_order() -> None:
    jobs = [view(i, user="bob" if i % 2 else "alice") for i in range(1, 21)]
    p = plan(
        state(parse_filter("user:bob"), reverse=True), jobs, [], frozenset(), {}, NOW, reset=True
    )
    assert [k for k, _, _ in p.upserts] == [str(i) for i in range(19, 0, -2)]
    by_name = plan(state(column="name", reverse=True), jobs, [], frozenset(), {}, NOW, reset=True)
    names = [d.job.name for _, _, d in by_name.upserts if isinstance(d, JobView)]
    assert names == sorted(names, reverse=True)


def test_random_plans_match_a_full_recomputation() -> None:
    rng = random.Random(7)
    current = {i: view(i) for i in range(1, 200)}
    shown: dict[str, RowData] = {}
    order: list[str] = []
    next_id = 200
    for _ in range(300):
        for _ in range(rng.randint(0, 8)):
            action = rng.random()
            if action < 0.3 and current:
                del current[rng.choice(list(current))]
            elif action < 0.6:
                current[next_id] = view(next_id)
                next_id += 1
            elif current:
                job_id = rng.choice(list(current))
                current[job_id] = view(job_id, user=rng.choice(["alice", "bob"]))
        p = plan(
            state(parse_filter("user:alice")), list(current.values()), [], frozenset(), shown, NOW
        )
        order = applied(shown, order, p)
        shown = p.shown
        expected = sorted(i for i, v in current.items() if v.job.user == "alice")
        assert order == [str(i) for i in expected]
        assert all(shown[str(i)] is current[i] for i in expected)
