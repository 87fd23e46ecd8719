"""The shim cache: concurrent first use builds once, and a changed library forces a rebuild.

No cluster needed: building only needs the headers, libslurm and a compiler.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .conftest import PYTHON, ROOT

BUILD = r"""
import sys, time
from sckpt.backend.libslurm import shim_build
p = shim_build.plan()
path = shim_build.build(p)
print(path)
"""


def _env(cache: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    return {**base, "PYTHONPATH": str(ROOT), "SCKPT_CACHE_DIR": str(cache), **extra}


def test_two_processes_building_at_once_share_one_build(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen(
            [PYTHON, "-c", BUILD],
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/tmp",
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    paths = {out.strip() for out, _err in outputs}
    assert len(paths) == 1
    built = Path(paths.pop())
    assert built.is_file()
    builds = [d for d in (tmp_path / "shim").iterdir() if d.is_dir()]
    assert builds == [built.parent], "one build directory, no leftover temporary ones"
    meta = json.loads((built.parent / "meta.json").read_text())
    assert meta["slurm_version"] > 0 and meta["api_version"] > 0


LOAD = r"""
import json
from sckpt.backend.libslurm import get_binding
b = get_binding()
print(json.dumps({"path": str(b.module_path), "api": b.api_version}))
"""


def test_a_build_for_another_library_api_is_rebuilt(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"  # no controller is contacted; slurm_init only parses
    conf.write_text(
        "ClusterName=x\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1\n"
    )
    cache = tmp_path / "cache"
    first = subprocess.run(
        [PYTHON, "-c", BUILD], env=_env(cache), capture_output=True, text=True, timeout=600
    )
    assert first.returncode == 0, first.stderr
    meta_path = Path(first.stdout.strip()).parent / "meta.json"
    meta = json.loads(meta_path.read_text())
    real_api = meta["api_version"]
    meta["api_version"] = real_api + 0x10000  # as if built against another libslurm
    meta_path.write_text(json.dumps(meta))
    module = Path(first.stdout.strip())
    before = module.stat().st_mtime_ns

    loaded = subprocess.run(
        [PYTHON, "-c", LOAD],
        env=_env(cache, SLURM_CONF=str(conf)),
        capture_output=True,
        text=True,
        timeout=600,
        cwd="/tmp",
    )
    assert loaded.returncode == 0, loaded.stderr
    result = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert result["api"] == real_api
    assert json.loads(meta_path.read_text())["api_version"] == real_api
    assert Path(result["path"]).stat().st_mtime_ns != before, "the shim was built again"
