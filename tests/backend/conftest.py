"""Fixtures for the backend tests: an empty simulated cluster on a frozen clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from sckpt.backend.config import Settings
from sckpt.backend.engines.base import Engine
from sckpt.backend.facade import simulated_engine
from sckpt.backend.simulator import ManualClock, SimulatedCluster


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sim(clock: ManualClock) -> SimulatedCluster:
    """No generated jobs, no arrivals: each test submits exactly the jobs it needs."""
    return SimulatedCluster(seed=1, n_jobs=0, clock=clock, arrivals=False, demo_touches=False)


@pytest.fixture
def alice(sim: SimulatedCluster) -> Engine:
    return simulated_engine(sim, "alice")


@pytest.fixture
def bob(sim: SimulatedCluster) -> Engine:
    return simulated_engine(sim, "bob")


@pytest.fixture
def root(sim: SimulatedCluster) -> Engine:
    return simulated_engine(sim, "root")


@pytest.fixture
def slurm_user(sim: SimulatedCluster) -> Engine:
    return simulated_engine(sim, "slurm")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings with the audit log in the test's own directory."""
    return Settings(audit_log=tmp_path / "audit.log")
