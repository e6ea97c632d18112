"""The persistent compile cache: object code on disk, one file per key.

    entry = read(key)                 # (meta, payload) or None
    write(key, meta, payload)         # atomic; evicts least recently used entries past the bound

Where: config.cache_dir (GRADTAPE_CACHE_DIR), by default
$XDG_CACHE_HOME/gradtape or ~/.cache/gradtape; directories it creates are
mode 0o700 whatever the umask. `GRADTAPE_CACHE_DIR=""` or
config.disk_cache = False turns it off.

Loading an entry means running its machine code, so every operation opens
the directory and the entry through trusted_path.py, on file descriptors,
each time (a directory trusted once may be swapped later): the directory
and each one above it must be this user's or root's and not writable by
others (sticky directories such as /tmp excepted on the way, not for the
cache directory itself), symbolic links on the way this user's or root's,
and an entry a regular file of this user's, read up to the size it claims
and at most MAX_ENTRY_BYTES. A directory that fails is not used (a
RuntimeWarning, once per reason) and functions compile in memory; an
entry that fails counts as `rejected`, with a warning, and is rebuilt.

Each entry is `<key>.gtc` in entry_file.py's format; the key (cache_key.py's
disk_key) is a hash of everything that determines the machine code. A read
checks the file before anything in it is used: the digest (truncated or
corrupted files), the key recorded inside (a file copied over another's
name), and the machine it was built for (CPU name and features, LLVM,
code generator). A file failing any check counts as `rejected`, is treated
as a miss, and the rebuilt entry overwrites it.

Writes go to a temporary file in the same directory, then os.replace: a
reader sees the old file or the new one, never half of one, and two
processes writing the same key at once both leave a valid entry. A read
refreshes the entry's mtime, so eviction (oldest mtime first, down to
config.cache_max_bytes after each write) removes the least recently used.
I/O errors never fail a compile: they are counted (`errors`) and the
compile proceeds without the disk.
"""
from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
import warnings

from . import config, entry_file, trusted_path

SUFFIX = ".gtc"
_TMP_PREFIX = ".tmp-"
_STALE_TMP_SECONDS = 3600  # a temporary file this old was left by a writer that died
MAX_ENTRY_BYTES = 256 * 1024 * 1024  # far above any kernel's object code; bounds what a read may take

_lock = threading.Lock()
_COUNTERS = ("hits", "misses", "writes", "evictions", "rejected", "errors")
_stats = dict.fromkeys(_COUNTERS, 0)
_last: dict = {"rejected": None}  # why the last rejected entry was
_warned: set = set()  # (path, reason) already warned about: once each per process


def _after_fork_in_child():
    global _lock
    _lock = threading.Lock()  # a thread of the parent may have held it


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def location() -> str:
    """The cache directory the settings name (whether or not the cache is on)."""
    if config.cache_dir:
        return os.path.abspath(os.path.expanduser(config.cache_dir))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gradtape")


def enabled() -> bool:
    """Whether the settings turn the disk cache on (config.disk_cache, and cache_dir not "")."""
    return bool(config.disk_cache) and config.cache_dir != ""


@contextlib.contextmanager
def _opened(create: bool = True):
    """The cache directory as a descriptor checked by trusted_path (closed after), or None when
    the cache is off or the directory fails the checks (warned once per reason)."""
    if not enabled():
        yield None
        return
    path = location()
    try:
        fd = trusted_path.open_directory(path, create=create)
    except trusted_path.Untrusted as e:
        _warn_once(path, f"not using {path} as the compile cache: {e}, and cached files are machine "
                   "code this process would run. Point GRADTAPE_CACHE_DIR to a directory of your own "
                   "(mode 700, in directories only you or root may write to), or set it to \"\" to turn "
                   "the disk cache off")
        yield None
        return
    except FileNotFoundError:
        yield None  # not made yet, and not asked to make it
        return
    except OSError as e:
        _warn_once(path, f"the compile cache directory {path} cannot be created or opened ({e}); "
                   "compiled code is not kept on disk")
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _warn_once(path: str, message: str):
    with _lock:
        if (path, message) in _warned:
            return
        _warned.add((path, message))
    warnings.warn(f"gradtape: {message}", RuntimeWarning, stacklevel=5)


def directory() -> str | None:
    """The cache directory, created if needed, or None when the cache is off or the directory fails
    the checks. Checked now: by the time it is used it may have changed, so reads and writes check again."""
    with _opened() as fd:
        return None if fd is None else location()


def _count(what: str, n: int = 1):
    with _lock:
        _stats[what] += n


def _name(key: str) -> str:
    return key + SUFFIX


def has(key: str) -> bool:
    """Whether a regular file is there for `key` (unchecked otherwise: `read` may still reject it)."""
    with _opened(create=False) as d:
        if d is None:
            return False
        try:
            return stat.S_ISREG(os.stat(_name(key), dir_fd=d, follow_symlinks=False).st_mode)
        except OSError:
            return False


def read(key: str, kind: str) -> tuple | None:
    """(meta, payload) of the valid entry for `key`, or None (a miss, or a rejected file).

    Args:
        key: the hex digest naming the entry (cache_key.disk_key).
        kind: what the entry must hold ("kernel", "wrappers").
    """
    with _opened() as d:
        if d is None:
            return None
        try:
            data = trusted_path.read_file(d, _name(key), MAX_ENTRY_BYTES)
        except FileNotFoundError:
            _count("misses")
            return None
        except trusted_path.Untrusted as e:
            reason = f"refused: {e}"
            _warn_once(location(), f"compile cache entry {os.path.join(location(), _name(key))} {reason}; "
                       "it is compiled instead, and the new entry replaces it")
            reject(key, reason)
            return None
        except OSError:
            _count("errors")
            _count("misses")
            return None
    try:
        meta, payload = entry_file.decode(data)
        reason = _unsuitable(meta, key, kind)
    except entry_file.BadEntry as e:
        reason = str(e)
    if reason:
        reject(key, reason)
        return None
    _count("hits")
    return meta, payload


def _unsuitable(meta: dict, key: str, kind: str) -> str | None:
    if meta.get("key") != key:
        return f"it holds the entry of key {meta.get('key')!r}, not {key!r}"
    if meta.get("kind") != kind:
        return f"it holds a {meta.get('kind')!r}, not a {kind!r}"
    diff = entry_file.mismatches(meta)
    return f"built for another machine ({'; '.join(diff)})" if diff else None


def reject(key: str, reason: str):
    """Count the entry of `key` as unusable (`reason` is kept for cache_info's `last_rejected`);
    the caller rebuilds it, and the new entry replaces the file."""
    with _lock:
        _stats["rejected"] += 1
        _stats["misses"] += 1
        _last["rejected"] = f"{key}: {reason}"


def write(key: str, meta: dict, payload: bytes) -> bool:
    """Store an entry atomically, then evict past config.cache_max_bytes. True when written."""
    data = entry_file.encode(dict(meta, key=key, built_for=entry_file.machine()), payload)
    with _opened() as d:
        if d is None:
            return False
        tmp = None
        try:
            tmp = _TMP_PREFIX + os.urandom(8).hex() + SUFFIX
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=d)
            with os.fdopen(fd, "wb") as f:
                os.fchmod(fd, 0o600)  # whatever the umask
                f.write(data)
            os.replace(tmp, _name(key), src_dir_fd=d, dst_dir_fd=d)
            tmp = None
        except OSError:
            _count("errors")
            return False
        finally:
            if tmp is not None:
                _unlink(d, tmp)
        _count("writes")
        _evict(d)
    return True


def _entries(d: int) -> list:
    """[(mtime, size, name)] of the entries in directory `d`; stale temporary files are removed on the way."""
    out = []
    now = time.time()
    try:
        names = os.listdir(d)
    except OSError:
        return out
    for name in names:
        try:
            st = os.stat(name, dir_fd=d, follow_symlinks=False)
        except OSError:
            continue  # removed meanwhile (another process evicting)
        if name.startswith(_TMP_PREFIX):
            if now - st.st_mtime > _STALE_TMP_SECONDS:
                _unlink(d, name)
            continue
        if name.endswith(SUFFIX) and stat.S_ISREG(st.st_mode):
            out.append((st.st_mtime, st.st_size, name))
    return out


def _unlink(d: int, name: str) -> bool:
    try:
        os.unlink(name, dir_fd=d)
        return True
    except FileNotFoundError:
        return False
    except OSError:
        _count("errors")
        return False


def evict():
    """Remove least recently used entries until the cache holds at most config.cache_max_bytes."""
    with _opened(create=False) as d:
        if d is not None:
            _evict(d)


def _evict(d: int):
    entries = _entries(d)
    total = sum(size for _, size, _ in entries)
    bound = int(config.cache_max_bytes)
    if total <= bound:
        return
    for _, size, name in sorted(entries):
        if total <= bound:
            break
        if _unlink(d, name):
            _count("evictions")
        total -= size


def cache_info() -> dict:
    """The disk cache: where, how big, and its counters since the last clear_cache().

    Returns:
        dict with `location` (the directory), `enabled` (the settings turn it
        on and the directory is usable), `entries` and `bytes` (what it holds
        now), `max_bytes` (the bound), `hits` (entries loaded), `misses`
        (lookups that found no usable entry, rejected ones included),
        `writes`, `evictions`, `rejected` (files refused: truncated,
        corrupted, another key's, another machine's) with `last_rejected`
        (why the last one was), and `errors` (I/O errors ignored).

    Example:
        >>> sorted(gradtape.cache_info())[:4]
        ['bytes', 'enabled', 'entries', 'errors']
    """
    with _opened() as d:
        entries = _entries(d) if d is not None else []
        usable = d is not None
    with _lock:
        info = dict(_stats)
        info["last_rejected"] = _last["rejected"]
    info.update(
        location=location(),
        enabled=usable,
        entries=len(entries),
        bytes=sum(size for _, size, _ in entries),
        max_bytes=int(config.cache_max_bytes),
    )
    return info


def clear_cache():
    """Delete every entry of the disk cache and zero its counters (the directory stays).

    Compiled functions already loaded keep working; a new process compiles again.
    """
    with _opened(create=False) as d:
        if d is not None:
            for _, _, name in _entries(d):
                _unlink(d, name)
    with _lock:
        for k in _COUNTERS:
            _stats[k] = 0
        _last["rejected"] = None
