"""Trusted-path access: which directories sckpt may walk, write and read for a job's user.

Two questions, one per half of this module.  ``open_trusted_dir``: how sckpt (often root)
reaches a state directory the job's user owns without letting that user steer the walk
(``store.py`` opens every file relative to it).  ``image_dir_problem`` and
``file_read_problem``: whether the job's user could use a directory or read a file, asked
before anything is recorded (below).

Can a job's owner use an image directory?  Asked before any checkpoint request is recorded.

Images are written (create, vacate, tasks) and read (restart) by the job's own tasks under
``sckpt run``, as the job's user, not by sckpt.  An operator naming a directory that user
cannot write would get a request recorded, the step woken and, for vacate, the step ended,
with the failure only reported afterwards by the wrapper ("cannot copy the image").  So the
cooperative engine refuses such a directory first, saying why, and nothing happens.

sckpt may run as root, which could write anywhere, so the answer is worked out for the job
owner's uid and groups from the permission bits along the path (as the kernel does for
that user; POSIX ACLs are not consulted, so an ACL-only grant is refused, never the
reverse), plus a read-only file system.  A directory that does not exist yet is fine when
its nearest existing ancestor is writable: the wrapper creates it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import stat
from pathlib import Path

from .protocol import StoreError

_READ, _WRITE, _SEARCH = 4, 2, 1


def _user(uid: int) -> tuple[str, set[int]]:
    """The user's name and every group it is in (unknown uid: only its number)."""
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        return str(uid), set()
    try:
        groups = set(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except OSError:
        groups = {entry.pw_gid}
    return entry.pw_name, groups


def _allows(st: os.stat_result, uid: int, groups: set[int], want: int) -> bool:
    if uid == 0:
        return True
    if st.st_uid == uid:
        bits = (st.st_mode >> 6) & 7
    elif st.st_gid in groups:
        bits = (st.st_mode >> 3) & 7
    else:
        bits = st.st_mode & 7
    return bits & want == want


def image_dir_problem(path: str, uid: int, *, write: bool) -> tuple[int, str]:
    """``(0, "")`` when user ``uid`` can write (or read) images under ``path``; else why not.

    The answer is an errno code (EACCES, ENOTDIR, EROFS) and a sentence naming the user and
    the directory that stops it.
    """
    name, groups = _user(uid)
    doing = "write" if write else "read"
    chain = [Path(path), *Path(path).parents][::-1]  # "/" first, the directory itself last
    deepest: tuple[Path, os.stat_result] | None = None
    for directory in chain:
        try:
            st = directory.stat()
        except FileNotFoundError:
            break
        except PermissionError:
            return errno.EACCES, f"{directory} cannot be reached (permission denied)"
        except OSError as exc:
            return exc.errno or errno.EIO, f"{directory}: {exc.strerror}"
        if not stat.S_ISDIR(st.st_mode):
            return errno.ENOTDIR, f"{directory} is not a directory"
        if directory != chain[-1] and not _allows(st, uid, groups, _SEARCH):
            return errno.EACCES, f"user {name} cannot enter {directory}"
        deepest = (directory, st)
    if deepest is None:  # pragma: no cover - "/" always exists
        return errno.ENOENT, f"{path} does not exist"
    directory, st = deepest
    if write:
        if not _allows(st, uid, groups, _WRITE | _SEARCH):
            return errno.EACCES, f"user {name} cannot {doing} in {directory}"
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return errno.EROFS, f"{directory} is on a read-only file system"
    elif directory == chain[-1] and not _allows(st, uid, groups, _READ | _SEARCH):
        return errno.EACCES, f"user {name} cannot {doing} {directory}"
    return 0, ""


def file_read_problem(path: str, uid: int) -> tuple[int, str]:
    """``(0, "")`` when user ``uid`` may read the file ``path`` by its permission bits; else
    an errno code and why not.  A missing file or directory is ``ENOENT`` with no words:
    the caller knows what a missing file means (a job's output "not written yet").

    For sckpt running as root on behalf of another user (``--as-user``): root could read
    the file, but the console must show what that user would see.
    """
    name, groups = _user(uid)
    target = Path(path)
    for directory in [*target.parents][::-1]:
        try:
            st = directory.stat()
        except FileNotFoundError:
            return errno.ENOENT, ""
        except OSError as exc:
            return exc.errno or errno.EIO, f"{directory}: {exc.strerror}"
        if not _allows(st, uid, groups, _SEARCH):
            return errno.EACCES, f"user {name} cannot enter {directory}"
    try:
        st = target.stat()
    except FileNotFoundError:
        return errno.ENOENT, ""
    except OSError as exc:
        return exc.errno or errno.EIO, f"{target}: {exc.strerror}"
    if not _allows(st, uid, groups, _READ):
        return errno.EACCES, f"user {name} cannot read it"
    return 0, ""


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40


def open_trusted_dir(
    path: Path, owner: int | None, *, create: bool = False, what: str = "directory"
) -> int:
    """A descriptor of directory ``path``, reached without letting a user steer the walk.

    The walk starts at "/" and opens one component at a time relative to its parent's
    descriptor, never following a link: a symbolic link is followed only when root owns it
    (a site's ``/home -> /data/home``), any other is refused.  With ``owner``, every
    directory on the way must belong to root or to ``owner``, and one that others may
    write must be sticky (``/tmp``): anybody else could swap what comes next.  The caller
    then opens, renames and unlinks relative to the descriptor, so a directory swapped for a
    link after the walk changes nothing.  ``create`` makes missing directories (0755).

    Raises ``StoreError`` naming the component and the reason; ``FileNotFoundError`` when
    a component does not exist (and ``create`` is not set).
    """
    parts = list(Path(path).absolute().parts[1:])
    fd = os.open("/", _DIR_FLAGS)
    walked = Path("/")
    links = 0

    def refuse(reason: str) -> StoreError:
        return StoreError(
            f"{what} {path} refused: {reason}",
            hint="keep the job's working directory (or $SCKPT_STATE_DIR, `sckpt run "
            "--state-dir`) on a path only root and the job's user can change",
            errno=errno.EPERM,
        )

    try:
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            st = _component_stat(part, fd, create=create)
            here = walked / part if part != ".." else walked.parent
            if stat.S_ISLNK(st.st_mode):
                if st.st_uid != 0:
                    raise refuse(
                        f"{here} is a symbolic link owned by uid {st.st_uid}: sckpt follows "
                        "no link that a user controls"
                    )
                links += 1
                if links > _MAX_LINKS:
                    raise refuse(f"too many symbolic links at {here}")
                target = Path(os.readlink(part, dir_fd=fd))
                if target.is_absolute():
                    os.close(fd)
                    fd = os.open("/", _DIR_FLAGS)
                    walked = Path("/")
                    parts = list(target.parts[1:]) + parts
                else:
                    parts = list(target.parts) + parts
                continue
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise refuse(f"{here} is not a directory (or was just replaced)") from None
                raise
            os.close(fd)
            fd = child
            walked = here
            problem = _ownership_problem(walked, os.fstat(fd), owner)
            if problem:
                raise refuse(problem)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _component_stat(part: str, fd: int, *, create: bool) -> os.stat_result:
    """``part`` of the directory ``fd`` as it is (a link is not followed); made first (0755)
    when it is missing and ``create`` is set."""
    try:
        return os.stat(part, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):  # made meanwhile: looked at by the caller
            os.mkdir(part, 0o755, dir_fd=fd)
        return os.stat(part, dir_fd=fd, follow_symlinks=False)


def _ownership_problem(walked: Path, st: os.stat_result, owner: int | None) -> str:
    """Why directory ``walked`` (``st``) lets someone other than root or ``owner`` steer
    what comes after it, or "" when it does not (or no ``owner`` is asked for)."""
    if owner is None:
        return ""
    if st.st_uid not in (0, owner):
        return (
            f"{walked} belongs to uid {st.st_uid}, neither root nor the job's user "
            f"(uid {owner}): its owner could redirect what sckpt writes"
        )
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        return (
            f"{walked} is writable by other users and not sticky "
            f"(mode {stat.S_IMODE(st.st_mode):o}): they could redirect what sckpt writes"
        )
    return ""


def open_failure(exc: OSError) -> str:
    """An open's failure in words; a symlink refused by O_NOFOLLOW is named as such."""
    if exc.errno == errno.ELOOP:
        return "it is a symbolic link (refused)"
    return exc.strerror or str(exc)
