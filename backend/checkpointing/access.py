"""Can a job's owner use an image directory?  Asked before any checkpoint request is recorded.

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

import errno
import os
import pwd
import stat
from pathlib import Path

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
