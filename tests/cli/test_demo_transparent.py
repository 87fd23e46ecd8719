"""``sckpt --demo`` shows steps under ``sckpt run --transparent`` (issue 26): ``ls --steps``
names their checkpointer in the CKPT column, ``--json`` gives their last image, and a
create on one (on a demo cluster that lives through several commands) records the next
image generation in the wrapper's layout.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from sckpt.backend.facade import open_facade
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for

from .conftest import CliEnv

LABEL = "transparent (DMTCP 4.2.0)"


def _steps(cli_env: CliEnv, *argv: str) -> list[dict[str, Any]]:
    result = cli_env.run(*argv, "ls", "--steps", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    jobs = data if isinstance(data, list) else data["jobs"]
    return [step for job in jobs for step in job["steps"]]


def _transparent(steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["step_id"]: s["checkpoint"] for s in steps if s["checkpoint"]["checkpointer"]}


def test_the_demo_lists_transparent_steps_with_their_last_image(cli_env: CliEnv) -> None:
    steps = _steps(cli_env, "--demo")
    shown = _transparent(steps)
    assert shown, "the demo shows no transparent step"
    assert len({sid.split(".")[0] for sid in shown}) < len({s["job_id"] for s in steps}) / 4
    for sid, ckpt in shown.items():
        assert ckpt["checkpointer"] == LABEL
        assert ckpt["text"] == f"able, {LABEL}"
        if ckpt["image_bytes"]:
            job = sid.split(".")[0]
            assert re.fullmatch(rf"/.+/{job}\.[\w.-]+/task0/g[1-9][0-9]*", ckpt["image_dir"])
            assert ckpt["checkpoint_seconds"] > 0 and ckpt["last_checkpoint_time"] > 0
    assert any(ckpt["image_bytes"] for ckpt in shown.values())
    # The table's CKPT column says the same, for exactly those steps.
    table = cli_env.run("--demo", "ls", "--steps")
    assert table.code == 0
    said = {line.split()[0] for line in table.lines if line.endswith(f"able, {LABEL}")}
    assert said == set(shown)


@pytest.fixture
def demo_cluster(cli_env: CliEnv) -> Iterator[SimulatedCluster]:
    """The demo's cluster (its touches included) shared by every command of the test."""
    shared = SimulatedCluster(
        seed=7,
        n_jobs=40,
        clock=ManualClock(),
        users=demo_users_for("alice"),
        arrivals=False,
    )
    cli_env.inject["facade_factory"] = functools.partial(open_facade, cluster=shared)
    yield shared


def test_create_on_a_transparent_demo_step_records_the_next_image(
    cli_env: CliEnv, demo_cluster: SimulatedCluster
) -> None:
    before = _transparent(_steps(cli_env))
    sid, ckpt = next((k, v) for k, v in before.items() if v["image_bytes"])
    gen = int(ckpt["image_dir"].rsplit("/g", 1)[1])
    result = cli_env.run("create", sid)
    assert result.code == 0, result.err
    assert _transparent(_steps(cli_env))[sid]["kind"] == "in_progress"
    demo_cluster.control.advance(60)  # every simulated checkpoint ends within 42 s
    after = _transparent(_steps(cli_env))[sid]
    new_dir = ckpt["image_dir"].removesuffix(f"g{gen}") + f"g{gen + 1}"
    assert after["image_dir"] == new_dir
    assert after["text"] == f"able, {LABEL}"
    assert after["last_checkpoint_time"] > ckpt["last_checkpoint_time"]
    assert after["image_bytes"] > 0 and after["checkpoint_seconds"] > 0
    history = cli_env.run("history", sid.split(".")[0], "--json")
    assert history.code == 0, history.err
    events = [c["event"] for c in json.loads(history.out)["checkpoints"] if c["step_id"] == sid]
    assert [(e["operation"], e["image_dir"]) for e in events[-2:]] == [
        ("create", new_dir),
        ("done", new_dir),
    ]
