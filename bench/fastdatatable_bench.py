"""textual-fastdatatable against issue 15's targets: first screen, RSS, a live diff, keys.

Runs in its own venv (it pulls pyarrow, which sckpt does not need):

    python3 -m venv /tmp/fdt-venv
    /tmp/fdt-venv/bin/pip install textual==8.2.8 textual-fastdatatable
    /tmp/fdt-venv/bin/python bench/fastdatatable_bench.py --rows 10000

The table holds rows shaped like sckpt's jobs table (9 string columns).  A "refresh" is
what a changed snapshot asks of the console on a busy cluster: 50 rows changed (3 of them
on screen), 5 rows removed, 5 added, the order kept by job id.  fastdatatable has no row
keys, so the caller keeps the key → index map; removing a row is ``remove_row(index)``;
``update_cell_at`` raises NotImplementedError ("No updates allowed.") in 0.19.5, so a
changed row is removed and added again; new rows ``add_rows``, then ``sort``.  Figures
only.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import statistics
import time

from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual_fastdatatable import ArrowBackend, DataTable

COLUMNS = ["JobID", "User", "Name", "Part", "St", "Elapsed", "Nodes", "Stp", "Checkpoint"]


def row(job_id: int, rng: random.Random) -> list[str]:
    return [
        str(job_id),
        rng.choice(["alice", "bob", "carol", "dmitri"]),
        rng.choice(["qe-scf", "wrf-forecast", "bwa-align", "namd-apoa1"]),
        "batch",
        rng.choice(["R", "PD", "CD"]),
        f"{rng.randint(0, 59)}m",
        f"cn[{rng.randint(1, 9):03d}-{rng.randint(10, 99):03d}]",
        str(rng.randint(0, 9)),
        rng.choice(["3 able", "pending", "1 dis", "done"]),
    ]


class Bench(App[None]):
    def __init__(self, rows: int) -> None:
        super().__init__()
        rng = random.Random(1)
        self.records = [COLUMNS, *(row(i, rng) for i in range(1, rows + 1))]

    def compose(self) -> ComposeResult:
        yield DataTable(backend=ArrowBackend.from_records(self.records), id="t")


async def measure(rows: int, refreshes: int) -> dict[str, float]:
    out: dict[str, float] = {"rows": rows}
    start = time.perf_counter()
    app = Bench(rows)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table = app.query_one(DataTable)
        out["first_screen_ms"] = (time.perf_counter() - start) * 1000
        rng = random.Random(2)
        next_id = rows + 1
        apply_ms: list[float] = []
        key_ms: list[float] = []
        for _ in range(refreshes):
            table.move_cursor(row=5)
            cursor_key = table.get_cell_at(Coordinate(table.cursor_row, 0))
            t = time.perf_counter()
            # update_cell_at raises NotImplementedError("No updates allowed.") in 0.19.5:
            # a changed row is removed and added again, then the table is sorted by id.
            changed = [1, 2, 3, *rng.sample(range(60, table.row_count), 47)]
            gone = rng.sample(range(0, table.row_count), 5)
            again = [
                [str(table.get_cell_at(Coordinate(i, 0))), *row(0, rng)[1:8], "in progress"]
                for i in changed
            ]
            for index in sorted({*changed, *gone}, reverse=True):
                table.remove_row(index)
            table.add_rows([*again, *(row(next_id + i, rng) for i in range(5))])
            assert table.backend is not None
            table.sort(by=[(table.backend.data.column_names[0], "ascending")])
            next_id += 5
            apply_ms.append((time.perf_counter() - t) * 1000)
            # Where the cursor is now: fastdatatable keeps the index, not the row.
            out.setdefault("cursor_moved_to_other_row", 0)
            if table.get_cell_at(Coordinate(table.cursor_row, 0)) != cursor_key:
                out["cursor_moved_to_other_row"] += 1
            t = time.perf_counter()
            await pilot.press("down")
            key_ms.append((time.perf_counter() - t) * 1000)
        out["apply_refresh_p50_ms"] = statistics.median(apply_ms)
        out["apply_refresh_max_ms"] = max(apply_ms)
        out["key_after_refresh_pilot_p50_ms"] = statistics.median(key_ms)
        out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--refreshes", type=int, default=10)
    args = parser.parse_args()
    for key, value in asyncio.run(measure(args.rows, args.refreshes)).items():
        print(f"| {key} | {value:.1f} |")


if __name__ == "__main__":
    main()
