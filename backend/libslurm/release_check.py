"""Compile the shim against one release's headers and report what it was built as.

Why: operators upgrade Slurm under sckpt and the shim is rebuilt against whatever headers
they have.  This check answers "does the shim build for release X, and is the result
right?" without a libslurm of that release, so anyone can run it against headers we never
tested::

    python -m sckpt.backend.libslurm.release_check /path/to/include [--json]

It uses the real build path (``shim_build.compile_module``: cffi, cdef and C, warnings that
matter as errors) and then checks, for that header directory:

* every ``slurm/*.h`` the compiler read came from it (a header missing from an old release
  would otherwise be taken silently from this machine's ``/usr/include/slurm``);
* the module's ``SCKPT_HEADER_VERSION`` equals the headers' ``SLURM_VERSION_NUMBER``;
* the error-name table is not empty;
* the special step ids (batch, extern, pending, interactive) translate to sckpt's
  canonical numbers and back to the release's own values.

The module is loaded with a stub in place of libslurm (every ``slurm_*`` symbol it
needs defined as ``abort()``): only constants and the shim's pure translations are read.
Exit status 0 when every check passes, 1 when one fails, 2 when the headers cannot be used.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ShimUnavailable
from . import shim_build

CANONICAL = {"batch": 0xFFFFFFFB, "extern": 0xFFFFFFFC, "pending": 0xFFFFFFFD}
"""sckpt's model numbers (Slurm >= 20.11 values), as in shim.c."""
CANONICAL_INTERACTIVE = 0xFFFFFFFA


@dataclass
class ReleaseReport:
    """What the shim built against one header directory is, and which checks failed."""

    include_dir: str
    header_version: str = ""
    """``SLURM_VERSION_NUMBER`` of the headers, as ``22.05.11``."""
    module_header_version: str = ""
    """``SCKPT_HEADER_VERSION`` of the compiled module."""
    error_names: int = 0
    step_ids: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per special step: the release's value, ``to_canon`` of it, ``from_canon`` back."""
    flags: dict[str, int] = field(default_factory=dict)
    foreign_headers: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _include_root(path: Path) -> Path:
    """Accept ``.../include`` and ``.../include/slurm`` alike."""
    return path.parent if path.name == "slurm" and (path / "slurm.h").is_file() else path


def foreign_headers(include_dir: Path) -> list[str]:
    """The ``slurm/*.h`` the compiler reads for the shim from outside ``include_dir``."""
    deps = shim_build.preprocess(include_dir, shim_build.shim_source(include_dir), "-M")
    own = (include_dir / "slurm").resolve()
    found = []
    for token in deps.replace("\\\n", " ").split():
        path = Path(token)
        if path.suffix == ".h" and path.parent.name == "slurm" and path.resolve().parent != own:
            found.append(str(path))
    return sorted(set(found))


def _stub_library(module: Path, work: Path) -> Path:
    """A shared object defining every ``slurm_*`` and ``slurmdb_*`` symbol the module needs,
    as ``abort()``."""
    nm = shutil.which("nm")
    if nm is None:
        raise ShimUnavailable("nm (binutils) is needed to load the module without libslurm")
    out = subprocess.run(
        [nm, "-D", "--undefined-only", str(module)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    names = sorted(
        {
            line.split()[-1].split("@")[0]
            for line in out.stdout.splitlines()
            if line.split() and line.split()[-1].startswith(("slurm_", "slurmdb_"))
        }
    )
    source = work / "stub.c"
    source.write_text(
        "#include <stdlib.h>\n" + "".join(f"void {n}(void) {{ abort(); }}\n" for n in names)
    )
    stub = work / "libslurm-stub.so"
    cc = shim_build.compiler() or "cc"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(stub), str(source)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return stub


def _load(module_path: Path, name: str, work: Path) -> Any:
    ctypes.CDLL(str(_stub_library(module_path, work)), mode=ctypes.RTLD_GLOBAL)
    spec = importlib.util.spec_from_file_location(name, module_path)
    if spec is None or spec.loader is None:
        raise ShimUnavailable(f"cannot import the module at {module_path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(include_dir: Path) -> ReleaseReport:
    """Build the shim against ``include_dir`` (no libslurm needed) and check the result."""
    include_dir = _include_root(include_dir.resolve())
    report = ReleaseReport(include_dir=str(include_dir))
    if not (include_dir / "slurm" / "slurm.h").is_file():
        raise ShimUnavailable(f"{include_dir}/slurm/slurm.h does not exist")
    report.foreign_headers = foreign_headers(include_dir)
    if report.foreign_headers:
        # Whatever would be built now is not what these headers make: stop here.
        for header in report.foreign_headers:
            report.failures.append(f"{header} was read instead of a header of {include_dir}")
        return report
    expected = shim_build.header_version(include_dir)
    report.header_version = shim_build.version_text(expected)
    name = f"_sckpt_slurm_check_{expected:06x}"
    with tempfile.TemporaryDirectory(prefix="sckpt-release-check-") as tmp:
        work = Path(tmp)
        built = shim_build.compile_module(include_dir, name, work / "out", lib_dir=None)
        lib = _load(built, name, work).lib
        built_version = int(lib.SCKPT_HEADER_VERSION)
        report.module_header_version = shim_build.version_text(built_version)
        if built_version != expected:
            report.failures.append(
                f"the module says it was built for {shim_build.version_text(built_version)}, "
                f"the headers are {report.header_version}"
            )
        report.error_names = int(lib.sckpt_errname_count())
        if report.error_names == 0:
            report.failures.append("the error-name table is empty")
        release = {
            "batch": int(lib.SCKPT_RELEASE_STEP_BATCH),
            "extern": int(lib.SCKPT_RELEASE_STEP_EXTERN),
            "pending": int(lib.SCKPT_RELEASE_STEP_PENDING),
        }
        canonical = dict(CANONICAL)
        if lib.HAS_INTERACTIVE_STEP:
            release["interactive"] = _interactive_value(include_dir)
            canonical["interactive"] = CANONICAL_INTERACTIVE
        for kind, value in release.items():
            to_canon = int(lib.sckpt_step_to_canon(value))
            back = int(lib.sckpt_step_from_canon(canonical[kind]))
            report.step_ids[kind] = {"release": value, "to_canon": to_canon, "from_canon": back}
            if to_canon != canonical[kind] or back != value:
                report.failures.append(
                    f"step id {kind}: the release's {value:#x} becomes {to_canon:#x} "
                    f"(want {canonical[kind]:#x}) and comes back as {back:#x}"
                )
        report.flags = {
            flag: int(getattr(lib, flag))
            for flag in (
                "HAS_STEP_ID_T",
                "HAS_SLURM_INIT",
                "HAS_CHECKPOINT_HEADERS",
                "HAS_INTERACTIVE_STEP",
                "HAS_STEPS_SINCE",
            )
        }
    return report


def _interactive_value(include_dir: Path) -> int:
    """``SLURM_INTERACTIVE_STEP`` as the preprocessor sees it (the shim maps it by macro)."""
    text = shim_build.preprocess(
        include_dir, "#include <slurm/slurm.h>\nsckpt_value SLURM_INTERACTIVE_STEP\n", "-E", "-P"
    )
    m = re.search(r"sckpt_value\s*\(?\s*(0x[0-9a-fA-F]+|\d+)", text)
    if not m:
        raise ShimUnavailable(f"SLURM_INTERACTIVE_STEP has no number in {include_dir}")
    return int(m.group(1), 0)


def _print_text(report: ReleaseReport) -> None:
    print(f"headers      {report.include_dir}: Slurm {report.header_version}")
    print(f"module       built for {report.module_header_version}")
    print(f"error names  {report.error_names}")
    for kind, ids in report.step_ids.items():
        print(
            f"step {kind:<11} release {ids['release']:#x} -> sckpt {ids['to_canon']:#x} "
            f"-> release {ids['from_canon']:#x}"
        )
    print("flags        " + " ".join(f"{k}={v}" for k, v in report.flags.items()))
    for failure in report.failures:
        print(f"FAIL         {failure}")
    print("ok" if report.ok else "FAILED")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sckpt.backend.libslurm.release_check",
        description="Compile sckpt's libslurm shim against a Slurm header directory (the one "
        "holding slurm/slurm.h) and check the result; no libslurm is needed.",
    )
    parser.add_argument("include_dir", type=Path)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        shim_build.check_toolchain()
        report = check(args.include_dir)
    except ShimUnavailable as exc:
        print(f"release_check: {exc.message}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**asdict(report), "ok": report.ok}, indent=1))
    else:
        _print_text(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
