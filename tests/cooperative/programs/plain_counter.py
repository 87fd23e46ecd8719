"""A counter that knows nothing of sckpt, DMTCP or signals: the transparent tests' program.

It writes 1, 2, 3 ... one per line to ``argv[1]`` (``%t`` there becomes ``SLURM_PROCID``),
opened for writing (not appending), every 20 ms.  Restarted from a DMTCP image it continues
from the image's count *and file offset*, so what it wrote after the image was taken is
written again, identically: a complete run leaves every number exactly once, in order.
An optional ``argv[2]`` holds that many MiB of random (incompressible) bytes in memory first,
for checkpoints that take seconds; ``argv[3]`` stops after that count (0: never) and
``argv[4]`` is the seconds between two counts (default 0.02).
"""

import os
import sys
import time
from pathlib import Path

path = Path(sys.argv[1].replace("%t", os.environ.get("SLURM_PROCID", "0")))
held = os.urandom(int(sys.argv[2]) << 20) if len(sys.argv) > 2 else b""
limit = int(sys.argv[3]) if len(sys.argv) > 3 else 0
pause = float(sys.argv[4]) if len(sys.argv) > 4 else 0.02
out = path.open("w", buffering=1)
n = 0
while not limit or n < limit:
    n += 1
    out.write(f"{n}\n")
    time.sleep(pause)
