"""``sckpt auto TARGET --every D | --before-end D | --off`` on the demo's cluster (issue 32):
its answer and ``--json``, ``ls --json``'s ``checkpoint.auto`` moving with the simulated
clock, ``history``'s CAUSE column, bad values in one line with exit 2, and read-only mode's
audited refusal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sckpt.backend.facade import Facade, open_facade
from sckpt.backend.simulator import ManualClock, SimulatedCluster, demo_users_for

from .conftest import CliEnv


@pytest.fixture
def demo(cli_env: CliEnv) -> Iterator[SimulatedCluster]:
    """The demo's cluster (touches and policies included), acting as alice, shared by every
    command of the test."""
    shared = SimulatedCluster(
        seed=7, n_jobs=40, clock=ManualClock(), users=demo_users_for("alice"), arrivals=False
    )

    def as_alice(*args: Any, **kwargs: Any) -> Facade:
        kwargs["as_user"] = "alice"
        return open_facade(*args, cluster=shared, **kwargs)

    cli_env.inject["facade_factory"] = as_alice
    yield shared


def _auto_steps(cli_env: CliEnv) -> dict[str, dict[str, Any]]:
    """Each step's ``checkpoint`` of ``ls --steps --json``, for those under a policy."""
    result = cli_env.run("ls", "--steps", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    return {
        step["step_id"]: step["checkpoint"]
        for job in data["jobs"]
        for step in job["steps"]
        if step["checkpoint"]["auto"] is not None and step["user"] == "alice"
    }


def test_auto_sets_the_policy_and_ls_json_shows_it_moving(
    cli_env: CliEnv, demo: SimulatedCluster
) -> None:
    before = _auto_steps(cli_env)
    assert before, "none of alice's demo steps runs under a policy"
    sid = next(iter(before))
    now = int(demo.clock())
    done = cli_env.run("auto", sid, "--every", "15m")
    assert done.code == 0, done.err
    assert done.out.startswith(f"{sid}: auto requested: every 15m")
    auto = _auto_steps(cli_env)[sid]["auto"]
    assert (auto["every"], auto["auto"], auto["next_due"], auto["set_by"]) == (
        900,
        False,
        now + 900,
        "alice",
    )
    demo.control.advance(901)  # the interval checkpoint starts by itself; the due time moves
    assert _auto_steps(cli_env)[sid]["auto"]["next_due"] == now + 1800
    demo.control.advance(60)
    table = cli_env.run("history", sid.split(".")[0])
    assert table.code == 0, table.err
    rows = [line.split() for line in table.lines]
    assert [" ".join(r[5:]) for r in rows if r[1:5] == [sid, "auto", "-", "alice"]][-1].startswith(
        "every 15m"
    )
    # one line per checkpoint (its request and its end merged), with its cause
    assert [sid, "create", "interval", "sckpt", "run", "completed"] in [r[1:7] for r in rows]
    history = json.loads(cli_env.run("history", sid.split(".")[0], "--json").out)
    assert "interval" in {e["event"]["cause"] for e in history["checkpoints"]}

    off = cli_env.run("auto", sid, "--off", "--json")
    data = json.loads(off.out)
    assert (off.code, data["exit_code"], data["results"][0]["detail"]) == (0, 0, "off")
    assert sid not in _auto_steps(cli_env)
    line = cli_env.audit(demo=False)[-1] if cli_env.audit() else cli_env.audit(demo=True)[-1]
    assert (line["operation"], line["target"], line["arguments"]["off"]) == ("auto", sid, True)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--every", "0"], "sckpt: invalid --every '0': must be longer than zero"),
        (["--every", "-5m"], "sckpt: invalid --every '-5m': expected a duration such as 90s"),
        (["--every", "1x"], "sckpt: invalid --every '1x': expected a duration such as 90s"),
        (["--every", "5s"], "sckpt: invalid --every '5s': at least 10s"),
        (["--before-end", "soon"], "sckpt: invalid --before-end 'soon': expected a duration"),
        ([], "sckpt: say what to change: every (--every 30m|auto)"),
        (["--off", "--every", "1h"], "sckpt: off clears the policy"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(
    cli_env: CliEnv, demo: SimulatedCluster, argv: list[str], said: str
) -> None:
    result = cli_env.run("auto", "12.0", *argv)
    assert result.code == 2 and result.out == ""
    assert result.err.startswith(said) and result.err.count("\n") == 1, result.err
    assert cli_env.audit() == cli_env.audit(demo=True) == []  # bad usage: nothing audited


def test_read_only_refuses_auto_and_audits_it(cli_env: CliEnv, demo: SimulatedCluster) -> None:
    sid = next(iter(_auto_steps(cli_env)))
    result = cli_env.run("--read-only", "auto", sid, "--every", "1h")
    assert result.code == 1
    assert result.err.startswith(f"sckpt: auto {sid} refused: sckpt is in read-only mode")
    assert _auto_steps(cli_env)[sid]["auto"]["set_by"] == "sckpt run"  # unchanged
    lines = cli_env.audit() or cli_env.audit(demo=True)
    assert (lines[-1]["operation"], lines[-1]["result"]["name"]) == ("auto", "READ_ONLY")
