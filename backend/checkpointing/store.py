"""The cooperative engine's shared state store: one small JSON file per job step.

Why a file: on modern Slurm nothing in the controller remembers checkpoint state, and the two
parties that need it cannot talk to each other directly.  The operator's console (any login
node, often root) and the ``sckpt run`` wrapper (the job's user, on a compute node) both reach
the cluster's shared filesystem, so the state lives there, by default next to the job's
working directory (the reference's image-dir rule): ``<work_dir>/.sckpt/<job>.<step>.json``.
``$SCKPT_STATE_DIR`` (or the wrapper's ``--state-dir``) names another directory for sites
whose working directories are not shared; consoles must then use the same value.  What the
files are called and what they hold is the protocol's (``protocol.py``); this module reads
and writes them, and the walk to their directory is ``access.open_trusted_dir``.

How it stays correct with several writers:

* **Lock, then read-modify-write.**  Every change holds an exclusive ``flock`` on a sibling
  lock file (never on the data file, whose inode is replaced by each write), reads the
  record, applies the change and writes it back.  Two operators acting at once are
  serialised, so neither loses the other's change (tests/cooperative/test_store.py).
* **Atomic replacement.**  The new content goes to a temporary file in the same directory,
  is fsync'ed, then ``rename``d over the old one: a reader sees the old or the new record,
  never half of one, even when the writer is killed.
* **Ownership.**  Files are created 0644 and owned by the job's user (the store's
  ``owner``; without one, the owner of the state directory).  When root writes (an
  operator's console), the temporary file is ``fchown``ed to that user before the rename,
  so the job's user can still update it and other users still cannot rewrite it.
* **Never tricked into writing elsewhere.**  The state directory belongs to the job's user,
  and an operator's console often runs as root.  So every file is opened with
  ``O_NOFOLLOW`` (a planted symlink is refused, not followed), temporary files with
  ``O_EXCL``, reads with ``O_NONBLOCK`` and only regular files are used (a FIFO cannot
  hang the console), and root ``fchown``s only a file it created itself (its own, one
  link).  Without this, a user could point their lock file at ``/etc/shadow`` and have an
  operator's ``disable`` hand it to them (tests/reliability/test_security_users.py).
* **Only the job's user is believed.**  A store opened with ``owner`` (the engine passes the
  job's uid, the wrapper its own) refuses a state file owned by anyone else but root, or
  writable by group or others: in a shared ``$SCKPT_STATE_DIR`` another user could
  otherwise plant a record for someone else's job (its wake signal is sent by the console,
  its image path handed to the program on restart).
* **Failures are reported, never fatal.**  A missing file is ``None`` (the step is not under
  ``sckpt run``); an unreadable or corrupt one raises ``StoreError`` naming the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ..model import StepId
from .access import open_failure, open_trusted_dir
from .protocol import (
    DATA_SUFFIX,
    INDEX_NAMES_LIMIT,
    LOCK_SUFFIX,
    StepRecord,
    StoreError,
    done_file_name,
    index_document,
    index_images,
    index_stem,
    step_key,
    step_of_state_file,
)

T = TypeVar("T")

MAX_STATE_BYTES = 4 * 1024 * 1024
"""A state file is a few KB (history is bounded); anything larger is refused, not read."""
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def _walked(directory: Path, owner: int | None, what: str) -> Iterator[int]:
    """``open_trusted_dir``'s descriptor for the block, closed after it."""
    fd = open_trusted_dir(directory, owner, what=what)
    try:
        yield fd
    finally:
        os.close(fd)


class _GuardedFile:
    """One JSON file of a state directory, read and written so that nobody can steer sckpt.

    The directory belongs to the job's user while sckpt often runs as root: every open is
    ``O_NOFOLLOW``, only regular files of the expected owner are believed, writes go through
    a fresh ``O_EXCL`` temporary file and an atomic rename, and changes hold a ``flock`` on
    a sibling lock file (see the module's docstring).
    """

    kind = "checkpoint state"
    """How messages name the file (``<kind> file <path>``)."""

    def __init__(self, directory: Path, stem: str, owner: int | None = None) -> None:
        self.directory = Path(directory)
        self.owner = owner
        """The uid whose file this must be (root's also accepted); None: any."""
        self.path = self.directory / f"{stem}{DATA_SUFFIX}"
        self.lock_path = self.directory / f"{stem}{LOCK_SUFFIX}"

    @contextlib.contextmanager
    def _directory(self, walks: RefreshWalks | None = None) -> Iterator[int]:
        """The directory's descriptor (``open_trusted_dir``): every file operation is
        relative to it.  ``FileNotFoundError`` when the directory does not exist.  With
        ``walks``, the walk its batch already made to this directory, if any."""
        opened = _walked if walks is None else walks.opened
        with opened(self.directory, self.owner, f"{self.kind} directory") as fd:
            yield fd

    def read_raw(self, walks: RefreshWalks | None = None) -> bytes | None:
        """The file's bytes (``None`` when missing): for callers that cache parsed records.

        ``walks``: a refresh reading many files shares one walk per directory."""
        try:
            with self._directory(walks) as dfd:
                return self._read_at(dfd)
        except FileNotFoundError:  # no directory yet
            return None

    def _read_at(self, dfd: int) -> bytes | None:
        try:
            fd = os.open(self.path.name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(
                f"{self.kind} file {self.path} cannot be read: {open_failure(exc)}",
                errno=exc.errno or 0,
            ) from None
        try:
            st = os.fstat(fd)
            self._check_trusted(st)
            if st.st_size > MAX_STATE_BYTES:
                raise StoreError(
                    f"{self.kind} file {self.path} is {st.st_size} bytes: "
                    f"at most {MAX_STATE_BYTES} expected"
                )
            chunks = []
            total = 0
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
                total += len(chunk)
                if total > MAX_STATE_BYTES:
                    raise StoreError(f"{self.kind} file {self.path} keeps growing")
            return b"".join(chunks)
        except OSError as exc:
            raise StoreError(
                f"{self.kind} file {self.path} cannot be read: {exc.strerror}",
                errno=exc.errno or 0,
            ) from None
        finally:
            os.close(fd)

    def _check_trusted(self, st: os.stat_result) -> None:
        """Refuse what is not a regular file, or (with ``owner``) not the owner's own."""
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{self.kind} file {self.path} is not a regular file: ignored")
        if self.owner is None:
            return
        if st.st_uid not in (self.owner, 0):
            raise StoreError(
                f"{self.kind} file {self.path} belongs to uid {st.st_uid}, not to the "
                f"job's user (uid {self.owner}): ignored",
                hint="another user may have planted it; remove it",
            )
        if st.st_mode & 0o022:
            raise StoreError(
                f"{self.kind} file {self.path} is writable by other users "
                f"(mode {stat.S_IMODE(st.st_mode):o}): ignored",
                hint="chmod go-w it",
            )

    def _load_json(self, raw: bytes) -> Any:
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise self._corrupt(exc) from None

    def _corrupt(self, exc: Exception) -> StoreError:
        return StoreError(
            f"{self.kind} file {self.path} is corrupt ({type(exc).__name__}: {exc})",
            hint="move it aside; the next `sckpt run` of the step starts a fresh one",
        )

    # ---- writing -------------------------------------------------------------------------
    def _owner(self, dfd: int) -> tuple[int, int]:
        """Whose files root writes here: the job's user when known, else the directory's.

        In a shared ``$SCKPT_STATE_DIR`` (root's, sticky) the directory's owner is root:
        a record root rewrote would then be root's, and the job's own wrapper could no
        longer update it.
        """
        st = os.fstat(dfd)
        if self.owner is not None and self.owner != 0:
            try:
                return self.owner, pwd.getpwuid(self.owner).pw_gid
            except KeyError:
                return self.owner, st.st_gid
        return st.st_uid, st.st_gid

    @contextlib.contextmanager
    def _locked(self, dfd: int) -> Iterator[None]:
        flags = os.O_NONBLOCK | _NOFOLLOW
        name = self.lock_path.name
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | flags, 0o644, dir_fd=dfd)
        except PermissionError:
            # Readers of someone else's job may still lock a read-only descriptor.
            try:
                fd = os.open(name, os.O_RDONLY | flags, dir_fd=dfd)
            except OSError as exc:
                raise self._lock_error(exc) from None
        except OSError as exc:
            raise self._lock_error(exc) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise StoreError(f"lock file {self.lock_path} is not a regular file")
            self._fix_owner(fd, dfd)
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _lock_error(self, exc: OSError) -> StoreError:
        return StoreError(
            f"cannot lock {self.kind} {self.lock_path}: {open_failure(exc)}", errno=exc.errno or 0
        )

    def _fix_owner(self, fd: int, dfd: int) -> None:
        """Give a file root created to the directory's owner (root only; others cannot).

        Only a regular file root owns with a single link is given away: one it created.
        Anything else (a hard link to a system file, a file someone else made) is left alone.
        """
        if os.geteuid() != 0:
            return
        uid, gid = self._owner(dfd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_nlink != 1:
            return
        if (st.st_uid, st.st_gid) != (uid, gid):
            os.fchown(fd, uid, gid)

    def _write_json(self, dfd: int, document: Any) -> None:
        data = json.dumps(document, indent=1, sort_keys=True).encode("utf-8")
        tmp = f".{self.path.name}.{os.getpid()}.tmp"
        try:
            # A leftover of a killed writer with the same pid (or a planted link) is removed:
            # unlink removes the name only, and O_EXCL then creates a file of our own.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
            fd = os.open(tmp, flags, 0o644, dir_fd=dfd)
            try:
                os.fchmod(fd, 0o644)
                self._fix_owner(fd, dfd)
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise StoreError(
                f"cannot write {self.kind} {self.path}: {exc.strerror}", errno=exc.errno or 0
            ) from None

    @contextlib.contextmanager
    def _changing(self, locked: bool = True) -> Iterator[int]:
        """The directory's descriptor with this file's lock held: for read-modify-write
        (``locked=False``: without the lock, for the one write made when locking failed)."""
        try:
            lock = self._locked if locked else _unlocked
            with self._directory() as dfd, lock(dfd):
                yield dfd
        except FileNotFoundError:
            raise StoreError(f"{self.kind} directory {self.directory} does not exist") from None

    def ensure_directory(self) -> None:
        """Create the state directory (0755) if needed; the wrapper calls this as the job user."""
        try:
            os.close(
                open_trusted_dir(
                    self.directory, self.owner, create=True, what=f"{self.kind} directory"
                )
            )
        except OSError as exc:
            raise StoreError(
                f"cannot create checkpoint state directory {self.directory}: {exc.strerror}",
                errno=exc.errno or 0,
            ) from None


class RefreshWalks:
    """State directories walked once per batch of reads (one refresh of the console).

    A refresh reads the state file of every running step, and ``open_trusted_dir`` walks
    from "/" to the file's directory, checking each component, for every one of them; the
    steps of a job share that directory, and often every job of a user does.  On a
    10,000-job queue with 50 running jobs those walks were most of the idle console's CPU.
    Inside ``batch()`` the first walk to a (directory, owner) is kept: its descriptor, or
    the directory's absence, or the refusal (``StoreError``), and later reads of the same
    batch start from it; the descriptors are closed when the batch ends, so the next
    refresh walks again and sees a directory replaced meanwhile.  Every file is still
    opened and read (``O_NOFOLLOW``, checked) relative to the descriptor.

    Only the thread that opened the batch shares its walks: another thread (an operation
    on the facade's worker) walks on its own, as without a batch, and never holds a
    descriptor the batch may close.
    """

    def __init__(self) -> None:
        self._thread: int | None = None
        self._found: dict[tuple[Path, int | None], int | StoreError | None] = {}
        """Per (directory, owner): its descriptor, None (missing) or the refusal."""

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Share walks until the block ends (a batch already open goes on as it is)."""
        if self._thread is not None:
            yield
            return
        self._thread = threading.get_ident()
        try:
            yield
        finally:
            self._thread = None
            found, self._found = self._found, {}
            for fd in found.values():
                if isinstance(fd, int):
                    os.close(fd)

    @contextlib.contextmanager
    def opened(self, directory: Path, owner: int | None, what: str) -> Iterator[int]:
        """``directory``'s descriptor as ``open_trusted_dir`` gives it (raising what it
        raises), walked once per batch; outside a batch (or in another thread), walked now
        and closed after the block."""
        if self._thread != threading.get_ident():
            with _walked(directory, owner, what) as fd:
                yield fd
            return
        key = (directory, owner)
        if key not in self._found:
            try:
                self._found[key] = open_trusted_dir(directory, owner, what=what)
            except FileNotFoundError:
                self._found[key] = None
            except StoreError as exc:
                self._found[key] = exc
        found = self._found[key]
        if found is None:
            raise FileNotFoundError(f"{what} {directory} does not exist")
        if isinstance(found, StoreError):
            raise found.with_traceback(None)
        yield found


def state_file_step(step: StepId) -> StepId:
    """The id that names ``step``'s state files: its job record's own id and the step.

    The one rule for every reader and writer.  The wrapper knows its step from
    ``SLURM_JOB_ID``, which in an array task is the task's own job record (squeue's ``%A``),
    never the array's id; the engine is handed steps named as squeue names them, and an
    array task's ``7_3.0`` (``model.label_steps``) prints as that, so a file name taken
    from it was one no wrapper writes: the task looked as if it were not under ``sckpt
    run``.  The array's names and the cluster (never part of a file name) are dropped here,
    so whoever opens a store finds the task's own file.
    """
    return StepId(step.job_id, step.step)


class StepStore(_GuardedFile):
    """The state file of one step, with locked read-modify-write updates.

    ``read()`` never locks (a rename makes reads consistent); ``update(fn)`` locks, reads
    (or starts a new record when ``create`` is set), calls ``fn(record)`` and writes the
    result atomically.
    """

    def __init__(self, directory: Path, step: StepId, owner: int | None = None) -> None:
        step = state_file_step(step)
        super().__init__(directory, step_key(step), owner)
        self.step = step
        """The step as its files name it (``state_file_step``): no array names."""

    def done_file(self, procid: int) -> Path:
        """Where task ``procid`` writes its completion status (``$SCKPT_CKPT_DONE``)."""
        return self.directory / done_file_name(self.step, procid)

    def read(self) -> StepRecord | None:
        """The record, ``None`` when the file does not exist; ``StoreError`` when unusable."""
        raw = self.read_raw()
        return None if raw is None else self.parse(raw)

    def _read_record(self, dfd: int) -> StepRecord | None:
        raw = self._read_at(dfd)
        return None if raw is None else self.parse(raw)

    def parse(self, raw: bytes) -> StepRecord:
        """Bytes of this step's state file -> record (``StoreError`` when corrupt).

        A record must describe this very step, and (with ``owner``) be that user's: one
        copied from another job's file, or naming another owner, is refused.
        """
        data = self._load_json(raw)
        try:
            rec = StepRecord.from_json(data)
        except (TypeError, ValueError, KeyError) as exc:
            raise self._corrupt(exc) from None
        if (rec.job_id, rec.step) != (self.step.job_id, self.step.step_text):
            raise StoreError(
                f"checkpoint state file {self.path} describes step {rec.job_id}.{rec.step}, "
                f"not {self.step}: ignored",
                hint="another user may have planted it; remove it",
            )
        if self.owner is not None and rec.owner_uid not in (-1, 0, self.owner):
            raise StoreError(
                f"checkpoint state file {self.path} names uid {rec.owner_uid} as its owner, "
                f"not the job's user (uid {self.owner}): ignored",
                hint="another user may have planted it; remove it",
            )
        return rec

    def update(
        self,
        change: Callable[[StepRecord], T],
        *,
        create: bool = False,
        reset_corrupt: bool = False,
        locked: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> T:
        """Locked read-modify-write.  Missing file: ``StoreError`` unless ``create``.

        ``reset_corrupt`` (the wrapper's registration) moves a corrupt file aside to
        ``<name>.corrupt-<time>`` (``clock``'s, the wrapper's) and starts afresh instead of
        failing.  ``locked=False`` skips the lock: only for the wrapper's note that
        checkpointing is off because the lock could not be had (a lost update is then
        better than saying nothing).
        """
        with self._changing(locked) as dfd:
            try:
                record = self._read_record(dfd)
            except StoreError:
                if not reset_corrupt:
                    raise
                aside = f"{self.path.name}.corrupt-{int(clock())}"
                with contextlib.suppress(OSError):
                    os.rename(self.path.name, aside, src_dir_fd=dfd, dst_dir_fd=dfd)
                record = None
            if record is None:
                if not create:
                    raise StoreError(f"checkpoint state file {self.path} does not exist")
                uid = self._owner(dfd)[0] if os.geteuid() == 0 else os.geteuid()
                record = StepRecord(job_id=self.step.job_id, step=self.step.step_text)
                record.owner_uid = uid
            result = change(record)
            self._write_json(dfd, record.to_json())
            return result


def job_stores(directory: Path, job_id: int, owner: int | None = None) -> list[StepStore]:
    """The state files of every step of job ``job_id`` in ``directory``, by step id.

    The directory is listed through ``open_trusted_dir``, as every file in it is opened:
    a state directory the job's user replaced by a link is refused (``StoreError`` naming
    it), never listed through the link.  A missing directory has no state files.
    """
    try:
        fd = open_trusted_dir(Path(directory), owner, what="checkpoint state directory")
    except FileNotFoundError:
        return []
    try:
        names = os.listdir(fd)  # noqa: PTH208 (a descriptor: no Path for it)
    except OSError as exc:
        raise StoreError(
            f"checkpoint state directory {directory} cannot be listed: {open_failure(exc)}",
            errno=exc.errno or 0,
        ) from None
    finally:
        os.close(fd)
    steps = (step_of_state_file(job_id, name) for name in sorted(names))
    return [StepStore(Path(directory), step, owner=owner) for step in steps if step is not None]


class ImageIndex(_GuardedFile):
    """A job's last complete image of each named step and task: ``<job>.images.json``.

    Step records are kept by step id, and a restarted job's steps may take their ids in
    another order; this index is kept by step name, so each step finds its own image.  The
    wrapper adds to it when a checkpoint completes, restart with an ImageDir points it there.
    """

    kind = "image index"

    def __init__(self, directory: Path, job_id: int, owner: int | None = None) -> None:
        super().__init__(directory, index_stem(job_id), owner)
        self.job_id = job_id

    def read(self) -> dict[str, dict[str, str]]:
        """``{name: {procid: image dir}}`` (empty when there is no index yet)."""
        return self._parse(self.read_raw())

    def _parse(self, raw: bytes | None) -> dict[str, dict[str, str]]:
        if raw is None:
            return {}
        data = self._load_json(raw)
        try:
            return index_images(data)
        except (TypeError, ValueError, AttributeError) as exc:
            raise self._corrupt(exc) from None

    def image(self, name: str, procid: int) -> str:
        """The last complete image of task ``procid`` of step ``name`` ("" when none)."""
        return self.read().get(name, {}).get(str(procid), "")

    def remember(self, name: str, images: dict[str, str]) -> None:
        """Record ``{procid: dir}`` as step ``name``'s last complete images (locked)."""
        with self._changing() as dfd:
            try:
                current = self._parse(self._read_at(dfd))
            except StoreError:
                current = {}  # a corrupt index is replaced: step records still hold images
            current.setdefault(name, {}).update(images)
            if len(current) > INDEX_NAMES_LIMIT:
                raise StoreError(
                    f"image index {self.path} lists more than {INDEX_NAMES_LIMIT} step names"
                )
            self._write_json(dfd, index_document(self.job_id, current))


@contextlib.contextmanager
def _unlocked(dfd: int) -> Iterator[None]:
    """``_GuardedFile._locked``'s stand-in for the one write made without the lock."""
    yield


SECRET_BYTES = 32
SECRET_SUFFIX = ".secret"


def job_secret(directory: Path, job_id: int, owner: int) -> bytes:
    """The job's secret (``<job>.secret`` beside its state, mode 0600): made by the first
    task that asks, read by the others.

    Why: a step's coordinator is reachable from other nodes, where no uid can be read; every
    relay must prove it knows these 32 random bytes first (``relay.py``).  The file is made
    whole under a temporary name (``O_EXCL``, 0600) and then linked to its name, so a reader
    never sees half of it and two first tasks cannot both win.  A file that is not a regular
    file of ``owner`` (or root) with mode 0600 is refused: anyone else could read it, or
    could have planted it to know the secret.
    """
    name = f"{job_id}{SECRET_SUFFIX}"
    fd_dir = open_trusted_dir(
        Path(directory), owner, create=True, what="checkpoint state directory"
    )
    try:
        tmp = f".{name}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=fd_dir)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=fd_dir)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, os.urandom(SECRET_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, name, src_dir_fd=fd_dir, dst_dir_fd=fd_dir, follow_symlinks=False)
        os.unlink(tmp, dir_fd=fd_dir)
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=fd_dir)
        try:
            st = os.fstat(fd)
            if (
                not stat.S_ISREG(st.st_mode)
                or st.st_uid not in (owner, 0)
                or st.st_mode & 0o077
                or st.st_size != SECRET_BYTES
            ):
                raise StoreError(
                    f"the job's secret {Path(directory) / name} is not a {SECRET_BYTES}-byte "
                    "file of the job's user with mode 0600: refused"
                )
            return os.read(fd, SECRET_BYTES)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreError(
            f"cannot make or read the job's secret in {directory}: {exc.strerror}",
            errno=exc.errno or 0,
        ) from None
    finally:
        os.close(fd_dir)
