"""Open a directory, and files in it, only when no other user can have put them there.

    dir_fd = open_directory("/home/me/.cache/gradtape", create=True)   # or raises Untrusted
    data = read_file(dir_fd, "entry.gtc", max_bytes)                     # or raises Untrusted

The disk cache holds machine code this process runs, so it must hold only
what this user (or root) wrote. The rule, checked on open file descriptors
each time (never on a path checked earlier, which another user could swap
between the check and the use):

- Every directory from `/` down to the cache directory, and every symbolic
  link met on the way, is owned by this user or by root: only its owner
  (and root) can change its mode or, for a directory, its contents.
- None of those directories is writable by group or others, since anyone
  who can write to a directory can rename or replace what is in it. The
  exception is a sticky directory (mode +t, as /tmp and /var/tmp): others
  may create names in it but cannot remove or rename names they do not
  own, so the name we walk through, owned by us or root per the first
  rule, stays ours. Group-writable counts as others: a group can have
  other members.
- The cache directory itself is not writable by group or others at all,
  sticky or not.
- An entry is a regular file owned by this user, not writable by group or
  others. It is opened with O_NOFOLLOW (a symbolic link is refused, not
  followed) and O_NONBLOCK (a FIFO cannot block the open), checked with
  fstat on the opened descriptor, and read up to the size it claims, and
  never more than `max_bytes` (a device or a growing file cannot make us
  read without end).

Path resolution is done here, one name at a time from `/` with
openat(O_NOFOLLOW): a symbolic link is read (after its owner is checked)
and its target resolved by the same walk, and `..` returns to the
directory already checked on the way down. Directories created on the way
are made mode 0700 whatever the umask.
"""
from __future__ import annotations

import errno
import os
import stat

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
_MAX_SYMLINKS = 40  # as the kernel's own limit
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class Untrusted(Exception):
    """The path or file could have been written by another user; the message says why."""


def _uid() -> int:
    return os.getuid()


def _owner_ok(st) -> bool:
    return st.st_uid in (_uid(), 0)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _check_directory(st, where: str, final: bool):
    """`where` names a directory on the way; the final one (the directory opened) is "it"."""
    where = "it" if final else f"{where}, a directory above it,"
    if not stat.S_ISDIR(st.st_mode):
        raise Untrusted(f"{where} is not a directory")
    if not _owner_ok(st):
        raise Untrusted(f"{where} belongs to another user (uid {st.st_uid})")
    if st.st_mode & _OTHERS_WRITE and (final or not st.st_mode & stat.S_ISVTX):
        raise Untrusted(f"other users may write to {where.rstrip(',')} (mode {stat.S_IMODE(st.st_mode):o})")


def _close_all(fds):
    for fd in fds:
        os.close(fd)


def open_directory(path: str, create: bool = False) -> int:
    """A descriptor of the directory `path` (absolute), opened only if the rule above holds.

    Args:
        path: an absolute path.
        create: make missing directories (mode 0700, whatever the umask).
    Returns:
        An O_DIRECTORY descriptor the caller must close.
    Raises:
        Untrusted: a directory or link on the way breaks the rule.
        OSError: a directory is missing (without `create`) or cannot be made.
    """
    if not os.path.isabs(path):
        raise ValueError(f"open_directory needs an absolute path, got {path!r}")
    stack = [os.open("/", _DIR_FLAGS)]  # the directories walked, root first; `..` pops
    try:
        if path.strip("/"):
            _check_directory(os.fstat(stack[0]), "/", final=False)
        names = [n for n in path.split("/") if n]
        walked = ""
        links = 0
        while names:
            name = names.pop(0)
            if name == ".":
                continue
            if name == "..":
                if len(stack) > 1:
                    os.close(stack.pop())
                    walked = os.path.dirname(walked)
                continue
            here = f"{walked}/{name}"
            try:
                st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise
                _make_private_directory(stack[-1], name)
                st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                if not _owner_ok(st):
                    raise Untrusted(f"{here} is a symbolic link that belongs to another user (uid {st.st_uid})")
                links += 1
                if links > _MAX_SYMLINKS:
                    raise Untrusted(f"too many symbolic links resolving {path}")
                target = os.readlink(name, dir_fd=stack[-1])
                if target.startswith("/"):
                    _close_all(stack[1:])
                    del stack[1:]
                    walked = ""
                names[:0] = [n for n in target.split("/") if n]
                continue
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=stack[-1])
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Untrusted(f"{here} changed while it was being checked") from None
                raise
            stack.append(fd)
            walked = here
            if names:
                _check_directory(os.fstat(fd), here, final=False)
        _check_directory(os.fstat(stack[-1]), walked or "/", final=True)  # the directory itself: no sticky exception
        result = stack.pop()
        _close_all(stack)
        return result
    except BaseException:
        _close_all(stack)
        raise


def _make_private_directory(parent_fd: int, name: str):
    """mkdir `name` in `parent_fd` with mode 0700 exactly (the umask cannot widen it, nor leave it unusable)."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    except FileExistsError:
        return  # made meanwhile (another process): checked like any other
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    try:
        os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def read_file(dir_fd: int, name: str, max_bytes: int) -> bytes:
    """The contents of `name` in `dir_fd`, if it is a regular file of this user's that others cannot write.

    Raises:
        FileNotFoundError: no such entry.
        Untrusted: anything else there (a link, FIFO, device, another user's
            file, a file others may write, or larger than `max_bytes`).
    """
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):  # refused before opening: opening a device can have effects
        raise Untrusted(f"it is {_kind(st.st_mode)}, not a regular file")
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Untrusted("it is a symbolic link, not a regular file") from None
        raise
    try:
        st = os.fstat(fd)  # what was opened is what counts
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(f"it is {_kind(st.st_mode)}, not a regular file")
        if st.st_uid != _uid():
            raise Untrusted(f"it belongs to another user (uid {st.st_uid})")
        if st.st_mode & _OTHERS_WRITE:
            raise Untrusted(f"other users may write to it (mode {stat.S_IMODE(st.st_mode):o})")
        if st.st_size > max_bytes:
            raise Untrusted(f"it claims {st.st_size} bytes, more than the {max_bytes} an entry may have")
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break  # shorter than it claimed: the format's length check refuses it
            chunks.append(chunk)
            left -= len(chunk)
        try:
            os.utime(fd)  # most recently used (for eviction)
        except OSError:
            pass
        return b"".join(chunks)
    finally:
        os.close(fd)
