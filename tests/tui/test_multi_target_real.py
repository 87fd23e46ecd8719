"""Several marked jobs on the real Slurm 22.05 cluster: hold both, then release both.

Two pending jobs (``--begin=now+1hour``, so they never start under the test) are marked
with space, held with one confirmation and released the same way; ``scontrol show job``
must show each held (Priority=0, reason JobHeldAdmin) and then released, and the audit log
one line per job and verb.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sckpt.backend.config import Settings
from sckpt.backend.facade import open_facade
from sckpt.tui.app import build_app
from sckpt.tui.dialogs.confirm import Confirm

from tests.conftest import SlurmCluster
from tests.helpers import wait_for

from .conftest import notifications, run_test, settle
from .console_keys import console_of, go_to_job

pytestmark = pytest.mark.slurm


def _show(cluster: SlurmCluster, job: int) -> dict[str, str]:
    out = cluster.run("scontrol", "-o", "show", "job", str(job), check=False).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


@pytest.fixture
def two_jobs(slurm_cluster: SlurmCluster) -> Iterator[tuple[str, list[int]]]:
    name = f"multi-{uuid.uuid4().hex[:6]}"
    ids = []
    try:
        for _ in range(2):
            out = slurm_cluster.run(
                "sbatch", "--parsable", "-J", name, "-o", "/dev/null", "--begin=now+1hour",
                "--wrap", "sleep 600",
            )  # fmt: skip
            ids.append(int(out.stdout.strip().split(";")[0]))
        yield name, ids
    finally:
        slurm_cluster.run("scancel", *map(str, ids), check=False)


async def test_hold_then_release_two_marked_real_jobs(
    slurm_cluster: SlurmCluster,
    two_jobs: tuple[str, list[int]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    name, ids = two_jobs
    audit = tmp_path / "audit.log"
    settings = Settings(audit_log=audit, refresh_interval=3600)
    facade = open_facade(settings)
    app = build_app(facade, settings)
    try:
        async with run_test(app, size=(160, 50)) as pilot:
            await settle(pilot)
            await go_to_job(pilot, name)
            con = console_of(pilot)
            assert sorted(map(int, con.jobs_table.row_keys_in_order)) == ids
            con.jobs_table.move_cursor(row=0)
            await pilot.press("space", "down", "space")
            for verb, key in (("hold", "H"), ("release", "L")):
                await pilot.press(key)
                await pilot.pause()
                assert isinstance(app.screen, Confirm)
                await pilot.press("y")
                await settle(pilot)
                said = "\n".join(notifications(app))
                assert f"{verb} on 2 targets: 2 requested, 0 refused or failed" in said
                if verb == "hold":
                    for job in ids:
                        record = _show(slurm_cluster, job)
                        assert (record["Priority"], record["Reason"]) == ("0", "JobHeldAdmin")
                    # the marks went with the action: mark both again for release
                    assert con.marks == {}
                    con.jobs_table.move_cursor(row=0)
                    await pilot.press("space", "down", "space")
            for job in ids:
                wait_for(lambda job=job: _show(slurm_cluster, job)["Priority"] != "0")
                assert _show(slurm_cluster, job)["Reason"] != "JobHeldAdmin"
    finally:
        facade.close()
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    done = sorted((x["operation"], x["target"], x["result"]["code"]) for x in lines)
    assert done == sorted(
        [("hold", str(j), 0) for j in ids] + [("release", str(j), 0) for j in ids]
    )
