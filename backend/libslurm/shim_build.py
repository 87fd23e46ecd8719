"""Find Slurm's headers and library, and build the cffi shim on first use into a per-user cache.

Why build at run time: ``pip install sckpt`` stays pure Python, and the shim is compiled
against the headers of the Slurm the user actually has.  The cache key is the Slurm version
plus a hash of the headers, the shim sources, cffi's version and the Python ABI, so a Slurm
upgrade (new headers) builds a new shim instead of calling through a stale layout.

Concurrency: two processes starting at once take an exclusive ``flock`` on the cache's lock
file; the build happens in a temporary directory that is renamed into place atomically, and
whoever gets the lock second finds the finished build.

The compiler runs in a child Python process so its output never reaches the terminal UI and
a broken toolchain cannot take the caller down.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ..config import environment
from ..errors import ShimUnavailable

FIX_PACKAGES = "apt-get install libslurm-dev gcc python3-dev"
"""The command that installs everything the build needs on Debian/Ubuntu."""

BUILD_FORMAT = 1
"""Bump when the build procedure changes in a way the cache key would not notice."""

HERE = Path(__file__).resolve().parent
SHIM_PARTS = tuple(
    HERE / name
    for name in ("shim.c", "shim_jobs.c", "shim_actions.c", "shim_checkpoint.c", "shim_slurmdb.c")
)
"""The shim's C source, in the order it is handed to cffi as one text: the shared part first
(includes, records, init, error names), then reads, actions, checkpoint API, slurmdbd."""
CDEF_SOURCE = HERE / "cdef.h"

INCLUDE_PREFIXES = ("/usr/include", "/usr/local/include", "/opt/slurm/include")
LIB_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib64",
    "/usr/local/lib",
    "/opt/slurm/lib64",
    "/opt/slurm/lib",
)


@dataclass(frozen=True, slots=True)
class BuildPlan:
    """Everything that decides which shim to build and where it lives."""

    include_dir: Path
    """The directory holding ``slurm/slurm.h``."""
    lib_dir: Path
    lib_path: Path
    """The libslurm shared object to load (RTLD_GLOBAL) before the shim."""
    slurm_version: int
    """``SLURM_VERSION_NUMBER`` of the headers."""
    key: str
    cache_root: Path
    headers_missing: str = ""
    """Why the headers were not found, when this plan is a cached build used without them."""

    @property
    def version_text(self) -> str:
        return version_text(self.slurm_version)

    @property
    def module_name(self) -> str:
        return f"_sckpt_slurm_{self.key}"

    @property
    def build_dir(self) -> Path:
        return self.cache_root / f"slurm-{self.version_text}-{self.key}"

    @property
    def meta_path(self) -> Path:
        return self.build_dir / "meta.json"


def version_text(v: int) -> str:
    """``SLURM_VERSION_NUMBER`` as a release: 0x16050b -> ``22.05.11``."""
    return f"{(v >> 16) & 0xFF}.{(v >> 8) & 0xFF:02d}.{v & 0xFF}"


def cache_root() -> Path:
    """Where built shims live (``~/.cache/sckpt/shim`` on Linux; ``SCKPT_CACHE_DIR`` wins)."""
    override = environment().cache_dir
    base = Path(override) if override else platformdirs.user_cache_path("sckpt")
    return base / "shim"


def find_include_dir() -> Path:
    """The directory with ``slurm/slurm.h``: ``SLURM_INCLUDE_DIR`` first, then usual prefixes."""
    override = os.environ.get("SLURM_INCLUDE_DIR")
    candidates: list[Path] = []
    if override:
        p = Path(override)
        # Accept both ".../include" and ".../include/slurm".
        candidates = [p, p.parent] if p.name == "slurm" else [p]
    else:
        candidates = [Path(p) for p in INCLUDE_PREFIXES]
    for c in candidates:
        # Only slurm.h: releases before 21.08 install no slurm_version.h.
        if (c / "slurm" / "slurm.h").is_file():
            return c
    where = f"SLURM_INCLUDE_DIR={override}" if override else ", ".join(INCLUDE_PREFIXES)
    raise ShimUnavailable(
        f"Slurm's C headers (slurm/slurm.h) were not found in {where}",
        hint=f"install them: {FIX_PACKAGES}, or set SLURM_INCLUDE_DIR",
    )


def find_library() -> tuple[Path, Path]:
    """``(lib_dir, libslurm path)``: ``SLURM_LIB_DIR`` first, then the usual directories."""
    override = os.environ.get("SLURM_LIB_DIR")
    dirs = [Path(override)] if override else [Path(d) for d in LIB_DIRS]
    for d in dirs:
        dev = d / "libslurm.so"
        if dev.exists():
            return d, dev.resolve()
        versioned = sorted(d.glob("libslurm.so.*"), key=lambda p: len(p.name))
        if versioned:
            return d, versioned[0]
    where = f"SLURM_LIB_DIR={override}" if override else ", ".join(LIB_DIRS)
    raise ShimUnavailable(
        f"libslurm was not found in {where}",
        hint=f"install it: {FIX_PACKAGES}, or set SLURM_LIB_DIR",
    )


def header_version(include_dir: Path) -> int:
    """``SLURM_VERSION_NUMBER`` of the headers.

    Releases up to 20.11 define it in ``slurm.h``; later ones in ``slurm_version.h``.
    """
    for name in ("slurm_version.h", "slurm.h"):
        try:
            text = (include_dir / "slurm" / name).read_text(errors="replace")
        except OSError:
            continue
        m = re.search(r"#define\s+SLURM_VERSION_NUMBER\s+(0x[0-9a-fA-F]+|\d+)", text)
        if m:
            return int(m.group(1), 0)
    raise ShimUnavailable(
        f"no SLURM_VERSION_NUMBER in {include_dir}/slurm/slurm_version.h or slurm.h",
        hint=f"reinstall the headers: {FIX_PACKAGES}",
    )


def _hash_inputs(include_dir: Path, lib_path: Path) -> str:
    h = hashlib.sha256()
    # The library's identity too: an upgraded libslurm gets a fresh build.
    h.update(_library_identity(lib_path).encode())
    for header in sorted((include_dir / "slurm").iterdir()):
        if header.name.endswith(".h"):
            h.update(header.name.encode())
            h.update(header.read_bytes())
    for part in SHIM_PARTS:
        h.update(part.read_bytes())
    h.update(CDEF_SOURCE.read_bytes())
    import cffi

    h.update(f"{cffi.__version__}|{sysconfig.get_config_var('SOABI')}|{BUILD_FORMAT}".encode())
    return h.hexdigest()[:16]


def plan() -> BuildPlan:
    """Locate headers and library and compute the cache key (no compiling yet).

    Without headers, a shim built earlier for this very library file (same path, size,
    mtime and API version, module bytes intact) is used: headers are needed to build, not
    to run, and removing libslurm-dev after the first run must not break sckpt.  With no
    such build the headers' absence is the error.
    """
    try:
        include_dir = find_include_dir()
    except ShimUnavailable as missing:
        lib_dir, lib_path = find_library()
        cached = _cached_plan(lib_dir, lib_path, missing.message)
        if cached is None:
            raise
        return cached
    lib_dir, lib_path = find_library()
    return BuildPlan(
        include_dir=include_dir,
        lib_dir=lib_dir,
        lib_path=lib_path,
        slurm_version=header_version(include_dir),
        key=_hash_inputs(include_dir, lib_path),
        cache_root=cache_root(),
    )


def _library_identity(lib_path: Path) -> str:
    st = lib_path.stat()
    return f"{lib_path}|{st.st_size}|{int(st.st_mtime)}"


def _cached_plan(lib_dir: Path, lib_path: Path, why: str) -> BuildPlan | None:
    """A verified cached build made for ``lib_path`` as it is now, or None."""
    root = cache_root()
    try:
        identity = _library_identity(lib_path)
        api = library_api_version(lib_path)
    except OSError:
        return None
    for meta_path in sorted(root.glob("slurm-*/meta.json")):
        try:
            meta = json.loads(meta_path.read_text())
            candidate = BuildPlan(
                include_dir=Path(meta["include_dir"]),
                lib_dir=lib_dir,
                lib_path=lib_path,
                slurm_version=int(meta["slurm_version"]),
                key=str(meta["key"]),
                cache_root=root,
                headers_missing=why,
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if (
            meta.get("lib_identity") == identity
            and meta.get("api_version") == api
            and candidate.build_dir == meta_path.parent
            and _verified_module(candidate) is not None
        ):
            return candidate
    return None


def compiler() -> str | None:
    """The C compiler cffi will use (``CC``, then Python's, then cc/gcc), or None."""
    cc = os.environ.get("CC") or (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) or shutil.which("cc") or shutil.which("gcc")


def check_toolchain() -> None:
    """Refuse early, with the fix, when the compiler or Python's headers are missing."""
    if compiler() is None:
        raise ShimUnavailable(
            "no C compiler found to build the libslurm shim", hint=f"install: {FIX_PACKAGES}"
        )
    py_include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not py_include.is_file():
        raise ShimUnavailable(
            f"Python's C headers ({py_include}) are missing", hint=f"install: {FIX_PACKAGES}"
        )


def preprocess(include_dir: Path, source: str, *flags: str) -> str:
    """The C preprocessor's output for ``source`` with ``include_dir`` first (``-E``, ``-M`` ...).

    The shim's build, its error table and the release check all ask it about the headers.
    """
    cc = compiler() or "cc"
    out = subprocess.run(
        [cc, *flags, "-I", str(include_dir), "-x", "c", "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if out.returncode != 0:
        raise ShimUnavailable(
            f"the C preprocessor failed with the headers in {include_dir}: "
            + out.stderr.strip()[-800:],
            hint=f"check those headers, or install: {FIX_PACKAGES}",
        )
    return out.stdout


def error_names(include_dir: Path) -> list[str]:
    """Names of Slurm's error enum's members, read from the preprocessed ``slurm_errno.h``.

    The C preprocessor resolves any conditional members, so the list is what this release
    really defines; values come later from the compiler, never from this text.
    """
    text = preprocess(include_dir, "#include <slurm/slurm_errno.h>\n", "-E", "-P")
    # 21.08 and later: ``typedef enum {...} slurm_err_t;``.  Up to 20.11 the same list is an
    # unnamed ``enum {...};``: take the enum of ESLURM_ names either way.
    for body in re.findall(r"\benum\s*\{(.*?)\}", text, re.S):
        names = re.findall(r"(?:^|,)\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?==|,|$)", body)
        if any(n.startswith("ESLURM_") for n in names):
            return list(dict.fromkeys(names))
    return []


def shim_source(include_dir: Path) -> str:
    """The C source handed to cffi: the shim's parts with the generated error-name table."""
    table = "".join(f'\t{{ "{n}", {n} }},\n' for n in error_names(include_dir))
    source = "".join(part.read_text() for part in SHIM_PARTS)
    return source.replace("SCKPT_ERRNAME_TABLE\n", table)


def compile_module(
    include_dir: Path, module_name: str, out_dir: Path, lib_dir: Path | None
) -> Path:
    """Compile the shim (cdef and C) against ``include_dir`` into ``out_dir``.

    ``lib_dir`` is libslurm's directory to link with; None links none (the release check:
    the module's libslurm symbols then stay undefined until something provides them).
    """
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(CDEF_SOURCE.read_text())
    system_dirs = {"/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/lib"}
    rpath = [] if lib_dir is None or str(lib_dir) in system_dirs else [str(lib_dir)]
    ffi.set_source(
        module_name,
        shim_source(include_dir),
        include_dirs=[str(include_dir)],
        library_dirs=[] if lib_dir is None else [str(lib_dir)],
        runtime_library_dirs=rpath,
        libraries=["dl"] if lib_dir is None else ["slurm", "dl"],
        extra_compile_args=[
            "-std=gnu11",
            "-O2",
            "-Wno-unused-function",
            # A missing prototype would silently truncate pointers: make it an error.
            "-Werror=implicit-function-declaration",
            "-Werror=int-conversion",
            "-Werror=incompatible-pointer-types",
        ],
    )
    try:
        built = ffi.compile(tmpdir=str(out_dir), verbose=False)
    except Exception as exc:  # cffi/setuptools raise their own CompileError/LinkError kinds
        raise ShimUnavailable(
            f"compiling the shim against {include_dir} failed ({type(exc).__name__}: {exc}); "
            "the compiler's messages are above"
        ) from None
    return Path(built)


def _compile(p: BuildPlan, out_dir: Path) -> Path:
    """Compile the module into ``out_dir`` (runs in the child process)."""
    return compile_module(p.include_dir, p.module_name, out_dir, p.lib_dir)


ProgressReporter = Callable[[str], None]
"""Told, in one line each, what a long step of the build is doing (the command line prints
them on a terminal's stderr); the backend itself never writes to a terminal."""

_reporters: list[ProgressReporter] = []


def report_build_progress(reporter: ProgressReporter | None) -> None:
    """Set (or, with None, remove) who hears of the shim build: it takes from a few seconds
    to a minute on first use, once per Slurm release, and looked like a hang."""
    _reporters.clear()
    if reporter is not None:
        _reporters.append(reporter)


def _progress(line: str) -> None:
    for reporter in _reporters:
        reporter(line)


def build(p: BuildPlan) -> Path:
    """Return the built module's path, building it (once, under a lock) when missing.

    A cached module is used only when its bytes still hash to what the build recorded: a
    truncated or overwritten ``.so`` would otherwise be handed to ``dlopen``, which answers
    a truncated file with SIGBUS (the process dies) and garbage with an ImportError.  A bad
    build is removed and built again.
    """
    found = _verified_module(p)
    if found is not None:
        return found
    check_toolchain()
    try:
        p.cache_root.mkdir(parents=True, exist_ok=True)
        lock = (p.cache_root / ".lock").open("a")
    except OSError as exc:
        raise ShimUnavailable(
            f"cannot use the shim cache {p.cache_root}: {exc.strerror or exc}",
            hint="make it writable, or set SCKPT_CACHE_DIR to a directory you own",
        ) from None
    with lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            found = _verified_module(p)
            if found is not None:
                return found
            discard(p)  # missing, partial or corrupted: start afresh
            _progress(
                f"building the libslurm shim for Slurm {p.version_text} with "
                f"{compiler() or 'cc'} (once per Slurm release, cached in {p.cache_root})..."
            )
            started = time.monotonic()
            module = _build_locked(p)
            _progress(f"shim built in {time.monotonic() - started:.0f} s")
            return module
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def module_digest(path: Path) -> str:
    """SHA-256 of a built module, recorded in ``meta.json`` and checked before every load."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def _verified_module(p: BuildPlan) -> Path | None:
    """The cached module when it is complete and unchanged since it was built, else None."""
    if not p.meta_path.is_file():
        return None
    found = _built_module(p)
    if found is None:
        return None
    expected = read_meta(p).get("module_sha256")
    try:
        actual = module_digest(found)
    except OSError:
        return None
    return found if expected == actual else None


def library_api_version(lib_path: Path) -> int:
    """``slurm_api_version()`` of a libslurm (loaded RTLD_GLOBAL, as it will be anyway)."""
    import ctypes

    lib = ctypes.CDLL(str(lib_path), mode=ctypes.RTLD_GLOBAL)
    lib.slurm_api_version.restype = ctypes.c_long
    return int(lib.slurm_api_version())


_RELEASE_STRING = re.compile(rb"\x00(\d{2}\.\d{2}\.\d{1,3})\x00")
"""SLURM_VERSION_STRING as C leaves it in a library's data: a string of its own."""
_RELEASE_IN_TEXT = re.compile(rb"(?<![\w.])(\d{2}\.\d{2}\.\d{1,3})(?![\w.])")
"""The same inside a longer string (``slurm 22.05.8``): ~6x slower, so only the fallback."""


def library_release(lib_path: Path) -> str | None:
    """The Slurm release a libslurm belongs to (``22.05.8``), or None when it cannot tell.

    Read from the library's own ``SLURM_VERSION_STRING`` (``YY.MM.P`` in its data; None
    when it has none, or several different ones); ``slurm_api_version()`` numbers the ABI,
    not the release.  Every start reads it (~8 ms for 22.05's 1.9 MB library).
    """
    try:
        data = lib_path.read_bytes()
    except OSError:
        return None
    found = {m.decode() for m in _RELEASE_STRING.findall(data)}
    if not found:
        found = {m.decode() for m in _RELEASE_IN_TEXT.findall(data)}
    return found.pop() if len(found) == 1 else None


def require_matching_release(p: BuildPlan) -> None:
    """Refuse libslurm of one release with the headers of another, naming both.

    Struct layouts and prototypes differ per release: a shim built against 19.05's headers
    and loaded with 22.05's libslurm would read garbage, or crash, on the first call.
    """
    library = library_release(p.lib_path)
    if library is None:
        raise ShimUnavailable(
            f"{p.lib_path} is not Slurm {p.version_text[:5]} as far as sckpt can tell (it "
            f"names no release), the release of the headers in {p.include_dir}/slurm",
            hint="install the libslurm-dev matching your libslurm, or set SLURM_LIB_DIR and "
            "SLURM_INCLUDE_DIR to one Slurm installation",
        )
    if library.split(".")[:2] == p.version_text.split(".")[:2]:
        return
    prefix = p.include_dir.parent
    example = (
        f" (here: SLURM_LIB_DIR={prefix}/lib SLURM_INCLUDE_DIR={prefix}/include)"
        if any((prefix / "lib").glob("libslurm.so*"))
        else ""
    )
    raise ShimUnavailable(
        f"libslurm {p.lib_path} is Slurm {library}, but the headers in {p.include_dir}/slurm "
        f"are Slurm {p.version_text}: sckpt never calls a libslurm through another release's "
        "headers",
        hint="libslurm and its headers must come from one Slurm installation: set "
        f"SLURM_LIB_DIR and SLURM_INCLUDE_DIR to the same one{example}, or install the "
        f"libslurm-dev that matches libslurm {library}",
    )


def read_meta(p: BuildPlan) -> dict[str, object]:
    """The build's metadata (empty when unreadable)."""
    try:
        data = json.loads(p.meta_path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def discard(p: BuildPlan) -> None:
    """Remove a build (stale or mismatching) so the next ``build`` starts afresh."""
    shutil.rmtree(p.build_dir, ignore_errors=True)


def _built_module(p: BuildPlan, directory: Path | None = None) -> Path | None:
    mods = sorted((directory or p.build_dir).glob(f"{p.module_name}*.so"))
    return mods[0] if mods else None


def _build_locked(p: BuildPlan) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=p.cache_root))
    try:
        args = json.dumps(
            {
                "include_dir": str(p.include_dir),
                "lib_dir": str(p.lib_dir),
                "lib_path": str(p.lib_path),
                "slurm_version": p.slurm_version,
                "key": p.key,
                "cache_root": str(p.cache_root),
                "out": str(tmp),
            }
        )
        log = tmp / "build.log"
        with log.open("w") as fh:
            proc = subprocess.run(
                [sys.executable, "-m", "sckpt.backend.libslurm.shim_build", args],
                stdout=fh,
                stderr=subprocess.STDOUT,
                check=False,
                timeout=600,
                cwd=str(tmp),
            )
        if proc.returncode != 0:
            tail = log.read_text(errors="replace").strip()[-1500:]
            raise ShimUnavailable(
                f"building the libslurm shim against {p.include_dir} failed:\n{tail}",
                hint=f"check the compiler and headers ({FIX_PACKAGES})",
            )
        module = _built_module(p, tmp)
        if module is None:
            raise ShimUnavailable(f"the shim build left no module in {tmp}")
        meta = {
            "module_sha256": module_digest(module),
            "api_version": library_api_version(p.lib_path),
            "slurm_version": p.slurm_version,
            "version_text": p.version_text,
            "include_dir": str(p.include_dir),
            "lib_path": str(p.lib_path),
            "lib_identity": _library_identity(p.lib_path),
            "key": p.key,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        # Keep only the module, the log and the metadata.
        for child in tmp.iterdir():
            if child.is_file() and child.suffix in (".c", ".o"):
                child.unlink()
            elif child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
        if p.build_dir.exists():
            shutil.rmtree(p.build_dir, ignore_errors=True)
        tmp.rename(p.build_dir)  # atomic: same filesystem
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    found = _built_module(p)
    if found is None:
        raise ShimUnavailable(f"the shim build left no module in {p.build_dir}")
    return found


def _main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    p = BuildPlan(
        include_dir=Path(spec["include_dir"]),
        lib_dir=Path(spec["lib_dir"]),
        lib_path=Path(spec["lib_path"]),
        slurm_version=int(spec["slurm_version"]),
        key=spec["key"],
        cache_root=Path(spec["cache_root"]),
    )
    print(_compile(p, Path(spec["out"])))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
