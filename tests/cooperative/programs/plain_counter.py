"""A counter that knows nothing of sckpt, DMTCP or signals: the transparent tests' program.

It writes 1, 2, 3 ... one per line to ``argv[1]`` (``%t`` there becomes ``SLURM_PROCID``),
opened for writing (not appending), every 20 ms.  Restarted from a DMTCP image it continues
from the image's count *and file offset*, so what it wrote after the image was taken is
written again, identically: a complete run leaves every number exactly once, in order.
An optional ``argv[2]`` holds that many MiB of random (incompressible) bytes in memory first,
for checkpoints that take seconds.
"""

import os
import sys
import time
from pathlib import Path

path = Path(sys.argv[1].replace("%t", os.environ.get("SLURM_PROCID", "0")))
held = os.urandom(int(sys.argv[2]) << 20) if len(sys.argv) > 2 else b""
out = path.open("w", buffering=1)
n = 0
while True:
    n += 1
    out.write(f"{n}\n")
    time.sleep(0.02)
