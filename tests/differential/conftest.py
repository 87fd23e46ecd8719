"""Fixtures of the differential tests: each scenario played once per session per cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Slurm1905, SlurmCluster

from .clusters import Cooperative, Real1905, Run, Simulated, private_home, run_scenario
from .scenarios import SCENARIOS

Player = Callable[[str], Run]
"""Plays the named scenario (once per session; later calls return the same run)."""


def _memo(play: Callable[[str], Run]) -> Player:
    runs: dict[str, Run] = {}

    def get(name: str) -> Run:
        if name not in runs:
            runs[name] = play(name)
        return runs[name]

    return get


@pytest.fixture(scope="session")
def on_1905(slurm1905: Slurm1905) -> Iterator[Player]:
    """The real 19.05.8 cluster (checkpoint/ompi) through the installed sckpt."""
    with private_home("sckpt-diff-1905-") as home:
        cluster = Real1905(slurm1905, home)
        yield _memo(lambda name: run_scenario(cluster, name, SCENARIOS[name]))


@pytest.fixture(scope="session")
def on_cooperative(slurm_cluster: SlurmCluster) -> Iterator[Player]:
    """The cooperative engine on the real 22.05 cluster, steps under ``sckpt run``."""
    with private_home("sckpt-diff-coop-") as home:
        cluster = Cooperative(slurm_cluster, home)
        yield _memo(lambda name: run_scenario(cluster, name, SCENARIOS[name]))


@pytest.fixture
def on_simulated(tmp_path: Path) -> Player:
    """A fresh simulated controller in its ompi setting for each scenario."""

    def play(name: str) -> Run:
        where = tmp_path / name
        where.mkdir()
        return run_scenario(Simulated(where / "config.toml"), name, SCENARIOS[name])

    return play
