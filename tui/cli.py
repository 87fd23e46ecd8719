"""The ``sckpt`` command line (placeholder until the command-line issue lands).

``sckpt`` with no arguments opens the console; ``--demo`` runs it on the simulated cluster.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sckpt import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sckpt",
        description="A terminal console for Slurm operators: jobs, steps and their checkpoints.",
    )
    parser.add_argument("--version", action="version", version=f"sckpt {__version__}")
    parser.add_argument("--demo", action="store_true", help="use the simulated cluster")
    parser.add_argument("--read-only", action="store_true", help="refuse every mutating action")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    del args
    print("sckpt: the console is not built yet", file=sys.stderr)
    return 2
