"""Every difference at once: ``python -m tests.differential.drift`` (as root, clusters up).

The tests stop at the first differing step of a scenario; this report lists them all, for
whoever makes the simulator (or an engine) agree with the real 19.05 controller.  It plays
the scenarios on the chosen clusters, writes each run as JSON under ``--out`` and prints, per
scenario, every step where a cluster answers differently from 19.05 (for the cooperative
engine, the intended differences of intended.py are marked as such).

``--sim-without-plugin`` builds the simulated cluster with its default plugin instead of
``checkpoint/ompi`` (BLCR, the reference's rules): how far the demo's rules are from 19.05.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from tests.conftest import CLUSTER_SCRIPT, RELEASE_1905, Slurm1905, SlurmCluster

from .clusters import (
    Answer,
    Cluster,
    Cooperative,
    Real1905,
    Run,
    Simulated,
    all_differences,
    private_home,
    run_scenario,
)
from .intended import INTENDED
from .scenarios import SCENARIOS


def real_1905() -> Slurm1905:
    line = subprocess.run(
        [str(CLUSTER_SCRIPT), "env", *RELEASE_1905], capture_output=True, text=True, check=True
    ).stdout
    values = dict(word.split("=", 1) for word in line.split()[1:])
    conf = Path(values["SLURM_CONF"])
    return Slurm1905(conf=conf, directory=conf.parent, prefix=Path(values["SLURM_LIB_DIR"]).parent)


def real_2205() -> SlurmCluster:
    directory = Path("/tmp/sckpt-cluster")
    return SlurmCluster(conf=directory / "slurm.conf", directory=directory)


def load(path: Path) -> Run:
    data = json.loads(path.read_text())
    return Run(data["cluster"], data["scenario"], [Answer(**a) for a in data["answers"]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", default="19.05,simulated,cooperative")
    parser.add_argument("--scenario", action="append", help="only these (default: all)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/sckpt-differential"))
    parser.add_argument("--sim-without-plugin", action="store_true")
    parser.add_argument("--tag", default="", help="suffix of the JSON files (run number)")
    parser.add_argument(
        "--oracle-tag", help="read the 19.05 runs from --out (files of this tag), do not run them"
    )
    args = parser.parse_args(argv)
    names = args.scenario or list(SCENARIOS)
    args.out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict[str, Run]] = {}
    if args.oracle_tag is not None:
        runs["19.05"] = {n: load(args.out / f"19.05-{n}{args.oracle_tag}.json") for n in names}
    for which in args.clusters.split(","):
        with private_home(f"sckpt-diff-{which}-") as home:
            cluster: Cluster
            if which == "19.05":
                cluster = Real1905(real_1905(), home)
            elif which == "cooperative":
                cluster = Cooperative(real_2205(), home)
            elif which == "simulated":
                plugin = None if args.sim_without_plugin else "ompi"
                cluster = Simulated(home / "config.toml", plugin=plugin)
            else:
                parser.error(f"unknown cluster {which}")
            for name in names:
                run = run_scenario(cluster, name, SCENARIOS[name])
                runs.setdefault(which, {})[name] = run
                out = args.out / f"{which}-{name}{args.tag}.json"
                out.write_text(json.dumps({**asdict(run)}, indent=1))
                print(f"{which} {name}: {len(run.answers)} answers -> {out}", file=sys.stderr)
    oracle = runs.get("19.05", {})
    for which, by_name in runs.items():
        if which == "19.05":
            continue
        for name, run in by_name.items():
            if name not in oracle:
                continue
            for index, real, other in all_differences(oracle[name], run):
                mark = " (intended)" if (name, index) in INTENDED and which == "cooperative" else ""
                if real.without_hint().same(other.without_hint()):
                    mark += " (only sckpt's explanation after '; ')"
                print(f"[{which} vs 19.05] {name} #{index} as {real.user}: {real.step}{mark}")
                print(f"    19.05: {real.short()}   stderr={real.stderr.strip()!r}")
                print(f"    {which}: {other.short()}   stderr={other.stderr.strip()!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
