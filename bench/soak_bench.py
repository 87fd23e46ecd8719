"""Soak benchmark: the console refreshing every 0.2 s for half an hour over 10,000 churning jobs.

The same run as ``tests/reliability/test_soak.py``'s long variant (``tests/reliability/soak.py``),
printing a line per sample and a Markdown summary for bench/README.md.  Figures only.

    .venv/bin/python bench/soak_bench.py --minutes 30 --warmup 10
    .venv/bin/python bench/soak_bench.py --minutes 3 --warmup 1 --linger 20   # the default test
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sckpt.tui import refresh as refresh_module  # noqa: E402

from tests.reliability.soak import simulated_soak  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=10.0, help="minutes not judged")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument(
        "--linger", type=float, default=None, help="seconds finished jobs stay (default 300)"
    )
    args = parser.parse_args()
    if args.linger is not None:
        refresh_module.LINGER = args.linger
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    cpu0 = time.process_time()
    report = asyncio.run(
        simulated_soak(
            Path(tempfile.mkdtemp(prefix="sckpt-soak-")),
            seconds=args.minutes * 60,
            warmup=args.warmup * 60,
            jobs=args.jobs,
            interval=args.interval,
            log=lambda line: print(line, flush=True),
        )
    )
    cpu = time.process_time() - cpu0
    print(f"# {platform.node()} Python {platform.python_version()}, started {started}")
    print(f"# load average at the end {os.getloadavg()}, argv {sys.argv[1:]}")
    print(f"# CPU time {cpu:.0f} s over {args.minutes:.0f} min")
    print(report.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
