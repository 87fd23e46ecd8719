"""The Markdown table every console benchmark prints for bench/README.md."""

from __future__ import annotations

import os
import platform
import sys
import time
from typing import Any


def print_report(res: dict[str, Any]) -> None:
    """Machine, date, load and argv as comments, then one row per measurement."""
    print(
        f"# {platform.node()} {platform.python_version()} "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(f"# load average {os.getloadavg()}, argv {sys.argv[1:]}")
    print("| measurement | value |\n|---|---|")
    for key, value in res.items():
        shown = f"{value:.1f}" if isinstance(value, float) else str(value)
        print(f"| {key} | {shown} |")
