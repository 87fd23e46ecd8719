"""The cyclic GC pause (``backend/gc_pause.py``), and the console's from its start to its first
screen (``terminal.pause_gc``; back on in ``freeze_heap``, or at the limit: ``resume_gc``).

What is observable: whether the collector is on (``gc.isenabled``) inside and after each
block, nested and with ``pause`` False, and that building the simulated cluster and the
engine's views leaves it as it found it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from sckpt.backend.facade import open_facade
from sckpt.backend.gc_pause import FREEZE_FROM, cyclic_gc_paused
from sckpt.backend.simulator import SimulatedCluster
from sckpt.backend.simulator.clock import ManualClock
from sckpt.tui import terminal


@pytest.fixture(autouse=True)
def _gc_restored() -> Iterator[None]:
    was = gc.isenabled()
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_gc_is_off_inside_and_back_on_after() -> None:
    gc.enable()
    with cyclic_gc_paused():
        assert not gc.isenabled()
        with cyclic_gc_paused():  # nested: the outer block turns it back on
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_not_asked_for_leaves_the_gc_alone() -> None:
    gc.enable()
    with cyclic_gc_paused(False):
        assert gc.isenabled()
    gc.disable()
    with cyclic_gc_paused():
        pass
    assert not gc.isenabled()  # off before: stays off


def test_the_gc_is_back_on_after_an_error_inside() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), cyclic_gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_building_the_cluster_and_its_views_leaves_the_gc_on() -> None:
    gc.enable()
    cluster = SimulatedCluster(seed=3, n_jobs=200, clock=ManualClock())
    assert gc.isenabled()
    facade = open_facade(demo=True, cluster=cluster, as_user="root")
    snapshot = facade.snapshot()
    assert len(snapshot.jobs) == 200
    assert gc.isenabled()


def test_the_console_turns_the_gc_back_on_with_its_first_screen() -> None:
    terminal.pause_gc()
    assert not gc.isenabled()
    terminal.freeze_heap()
    assert gc.isenabled()
    assert gc.get_threshold() == terminal.GC_THRESHOLDS
    terminal.pause_gc()
    terminal.resume_gc()  # the limit when no first screen comes
    assert gc.isenabled()


def test_a_first_snapshot_of_many_jobs_is_hidden_from_the_gc_and_a_small_one_is_not() -> None:
    gc.unfreeze()
    small = open_facade(demo=True, cluster=SimulatedCluster(seed=3, n_jobs=200), as_user="root")
    small.snapshot()
    assert gc.get_freeze_count() == 0
    cluster = SimulatedCluster(seed=3, n_jobs=FREEZE_FROM, clock=ManualClock())
    cluster_frozen = gc.get_freeze_count()
    assert cluster_frozen > 0  # the cluster's own records
    facade = open_facade(demo=True, cluster=cluster, as_user="root")
    assert len(facade.snapshot().jobs) == FREEZE_FROM
    assert gc.get_freeze_count() > cluster_frozen  # and then the engine's views
    assert gc.isenabled()
