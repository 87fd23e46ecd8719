"""One task's checkpoint images as numbered generations, so an interrupted checkpoint never
touches the last good one.

Why: a checkpoint is interrupted exactly when it matters (a requeue, ``scancel``, a node
lost).  When every checkpoint of a task wrote into the same directory, an interrupted one
changed the previous image in place: a program that saves two files, each by ``.tmp`` and
rename, was handed the new first file and the old second one on restart, and nothing said
so.  Now each checkpoint writes into a directory of its own:

``task<rank>/g<N>.partial``
    the generation being written (N counts up); the program writes through the link below.
``task<rank>/g<N>``
    a complete generation: renamed from ``.partial`` only after the program's status file
    said ``0``.  The name alone says the image is whole, wherever it was copied to (an
    operator's ImageDir holds the same layout).
``task<rank>/current``
    a symbolic link to the generation being written: its path is ``$SCKPT_IMAGE_DIR``, fixed
    for the program's whole run, while the wrapper points it at a new, empty generation
    before each checkpoint signal.  A program that writes ``NAME.tmp`` then renames it in
    ``$SCKPT_IMAGE_DIR`` follows the link at each ``open``, so it needs no change.

The last ``keep`` complete generations stay; older ones, and incomplete ones older than the
newest complete one, are removed only once a newer generation is complete.  Everything here
runs in the wrapper, as the job's user, in directories of that user: the link is theirs,
and nothing running as root ever follows it (the console checks the ``g<N>`` paths the
image index records).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..arguments import DEFAULT_KEEP, MAX_KEEP

CURRENT = "current"
"""The link the program writes through (``$SCKPT_IMAGE_DIR``)."""
PARTIAL = ".partial"
_NAME = re.compile(r"g(\d{1,12})(\.partial)?")


@dataclass(frozen=True, slots=True)
class Generation:
    """One generation directory of a task: its number, path and whether it is complete."""

    number: int
    path: Path
    complete: bool


def generation_of(path: str | os.PathLike[str]) -> int:
    """The generation number a path names (``.../task0/g3`` -> 3); 0 for an image written
    before generations existed (the task directory itself)."""
    match = _NAME.fullmatch(Path(path).name)
    return int(match.group(1)) if match and not match.group(2) else 0


class TaskImages:
    """The generations of one task's images under ``task_dir`` (``<root>/<job>.<name>/task<r>``)."""

    def __init__(self, task_dir: str | os.PathLike[str], keep: int = DEFAULT_KEEP) -> None:
        if not 1 <= keep <= MAX_KEEP:
            raise ValueError(f"keep must be from 1 to {MAX_KEEP}, not {keep}")
        self.task_dir = Path(task_dir)
        self.keep = keep

    @property
    def link(self) -> Path:
        """``$SCKPT_IMAGE_DIR``: the link to the generation being written."""
        return self.task_dir / CURRENT

    def generations(self) -> list[Generation]:
        """Every generation directory here, oldest first (a missing task dir: none)."""
        found = []
        try:
            entries = list(os.scandir(self.task_dir))
        except (FileNotFoundError, NotADirectoryError):
            return []
        for entry in entries:
            match = _NAME.fullmatch(entry.name)
            if match and entry.is_dir(follow_symlinks=False):
                found.append(Generation(int(match.group(1)), Path(entry.path), not match.group(2)))
        return sorted(found, key=lambda g: (g.number, g.complete))

    def latest(self) -> Path | None:
        """The newest complete generation, None when there is none."""
        complete = [g for g in self.generations() if g.complete]
        return complete[-1].path if complete else None

    def begin(self) -> Path:
        """A new, empty ``g<N>.partial``, with the link pointed at it; returns its path.

        The number is one more than any generation here (complete or not), so a new
        checkpoint never reuses a directory an interrupted one may have half written.
        """
        self.task_dir.mkdir(parents=True, exist_ok=True, mode=0o755)
        number = max((g.number for g in self.generations()), default=0) + 1
        partial = self.task_dir / f"g{number}{PARTIAL}"
        partial.mkdir(mode=0o755)
        self._point(partial.name)
        return partial

    def current(self) -> Path | None:
        """The generation the link points at, when it is a partial one here (else None)."""
        try:
            target = str(self.link.readlink())
        except OSError:
            return None
        match = _NAME.fullmatch(target)
        if not match or not match.group(2):
            return None
        path = self.task_dir / target
        return path if path.is_dir() else None

    def ready(self) -> Path:
        """The partial generation the next checkpoint writes into: the current one while
        it is still empty, else a new one (``begin``)."""
        current = self.current()
        if current is not None:
            with contextlib.suppress(OSError):
                if not any(current.iterdir()):
                    return current
        return self.begin()

    def commit(self, partial: Path) -> Path:
        """Make ``partial`` a complete generation (rename, atomic), then prune; returns it.

        The link is pointed at a new, empty generation first, so that nothing the program
        writes later (it should not, but a bug might) reaches the image just called good.
        """
        match = _NAME.fullmatch(partial.name)
        if partial.parent != self.task_dir or not match or not match.group(2):
            raise ValueError(f"{partial} is not a partial generation of {self.task_dir}")
        complete = partial.rename(self.task_dir / f"g{match.group(1)}")
        self.begin()
        self.prune()
        return complete

    def prune(self) -> list[Path]:
        """Remove complete generations beyond the newest ``keep``, and incomplete ones older
        than the newest complete one; returns what was removed.  Nothing goes while no
        generation is complete."""
        gens = self.generations()
        complete = [g for g in gens if g.complete]
        if not complete:
            return []
        newest = complete[-1].number
        kept = {g.number for g in complete[-self.keep :]}
        removed = []
        for g in gens:
            if (g.complete and g.number not in kept) or (not g.complete and g.number < newest):
                shutil.rmtree(g.path, ignore_errors=True)
                removed.append(g.path)
        return removed

    def _point(self, name: str) -> None:
        """Point the link at ``name`` atomically (a new link renamed over the old one)."""
        tmp = self.task_dir / f".{CURRENT}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(name)
        tmp.replace(self.link)


def image_problem(path: str | os.PathLike[str]) -> tuple[int, str]:
    """``(0, "")`` when ``path`` holds an image to resume from; else an errno and why not.

    An image is a directory with something in it besides what sckpt itself keeps there
    (generations, the link, ``*.tmp`` leftovers): an empty directory is never passed off as
    an image.  Asked by the wrapper before it hands ``SLURM_RESTART_DIR`` to the program,
    and by restart before it releases the job.
    """
    where = Path(path)
    try:
        entries = [p.name for p in where.iterdir()]
    except FileNotFoundError:
        return errno.ENOENT, f"{where} does not exist"
    except NotADirectoryError:
        return errno.ENOTDIR, f"{where} is not a directory"
    except OSError as exc:
        return exc.errno or errno.EIO, f"{where} cannot be read: {exc.strerror}"
    if not any(_is_image_entry(name) for name in entries):
        return errno.ENOENT, f"{where} is empty"
    return 0, ""


def generation_bytes(path: str | os.PathLike[str]) -> int:
    """The bytes of the files in a generation (what ``ls -s`` and the bench report as its
    size); files that vanish meanwhile count 0."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).lstat().st_size
    return total


def _is_image_entry(name: str) -> bool:
    return not (
        name == CURRENT
        or name.endswith(".tmp")
        or _NAME.fullmatch(name)
        or name.startswith(f".{CURRENT}.")
    )


def copy_generation(source: Path, task_dir: Path, keep: int = DEFAULT_KEEP) -> Path:
    """Copy a generation (complete, or partial with its program's "0" already read) into
    another task directory (an operator's ImageDir): under ``g<N>.partial`` first, renamed
    to ``g<N>`` once whole, then pruned there too.

    ``OSError`` (its ``errno`` the first one met) when the copy fails; the partial copy is
    removed and the destination's complete generations are untouched.
    """
    match = _NAME.fullmatch(source.name)
    if not match:
        raise ValueError(f"{source} is not a generation")
    number = int(match.group(1))
    task_dir.mkdir(parents=True, exist_ok=True, mode=0o755)
    partial = task_dir / f"g{number}{PARTIAL}"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        shutil.copytree(source, partial, ignore=shutil.ignore_patterns("*.tmp"))
    except shutil.Error as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise first_os_error(exc) from None
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    complete = task_dir / f"g{number}"
    if complete.exists():  # the same generation copied before: replace it whole
        shutil.rmtree(complete)
    partial.rename(complete)
    TaskImages(task_dir, keep).prune()
    return complete


def first_os_error(exc: shutil.Error) -> OSError:
    """The first failure inside ``shutil.Error`` (``copytree`` gathers a list of
    ``(source, destination, why)``) as an ``OSError`` with its errno, so callers can say
    "ENOSPC (28)" in one sentence instead of showing the list."""
    entries = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
    for entry in entries:
        why = entry[2] if isinstance(entry, tuple) and len(entry) == 3 else None
        if isinstance(why, OSError):
            return why
        if isinstance(why, str):
            match = re.search(r"\[Errno (\d+)\]", why)
            if match:
                code = int(match.group(1))
                return OSError(code, os.strerror(code))
    return OSError(errno.EIO, str(exc)[:200])
