"""The persistent compile cache: object code on disk, one file per key.

    entry = read(key)                 # (meta, payload) or None
    write(key, meta, payload)         # atomic; evicts least recently used entries past the bound

Where: config.cache_dir (GRADTAPE_CACHE_DIR), by default
$XDG_CACHE_HOME/gradtape or ~/.cache/gradtape, created private to the user
(mode 0o700). Loading a file means running its machine code, so a
directory that another user owns or may write to is refused (with a
warning, once) and the disk cache stays off. `GRADTAPE_CACHE_DIR=""` or
config.disk_cache = False turns it off.

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

import os
import stat
import tempfile
import threading
import time
import warnings

from . import config, entry_file

SUFFIX = ".gtc"
_TMP_PREFIX = ".tmp-"
_STALE_TMP_SECONDS = 3600  # a temporary file this old was left by a writer that died

_lock = threading.Lock()
_COUNTERS = ("hits", "misses", "writes", "evictions", "rejected", "errors")
_stats = dict.fromkeys(_COUNTERS, 0)
_last: dict = {"rejected": None}  # why the last rejected entry was
_checked_dirs: dict = {}  # path -> usable (bool), so the checks and the warning happen once


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


def directory() -> str | None:
    """The cache directory, created if needed, or None when the cache is off or the directory unsafe."""
    if not enabled():
        return None
    path = location()
    usable = _checked_dirs.get(path)
    if usable is None:
        usable = _prepare(path)
        _checked_dirs[path] = usable
    return path if usable else None


def _prepare(path: str) -> bool:
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError as e:
        warnings.warn(f"gradtape: the compile cache directory {path} cannot be created ({e}); "
                      "compiled code is not kept on disk", RuntimeWarning, stacklevel=4)
        return False
    problem = None
    if not stat.S_ISDIR(st.st_mode):
        problem = "it is not a directory"
    elif hasattr(os, "getuid") and st.st_uid != os.getuid():
        problem = f"it belongs to another user (uid {st.st_uid})"
    elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = f"other users may write to it (mode {stat.S_IMODE(st.st_mode):o})"
    if problem:
        warnings.warn(
            f"gradtape: not using {path} as the compile cache: {problem}, and cached files are "
            "machine code this process would run. Point GRADTAPE_CACHE_DIR to a directory of your "
            "own (mode 700), or set it to \"\" to turn the disk cache off", RuntimeWarning, stacklevel=4)
        return False
    return True


def _count(what: str, n: int = 1):
    with _lock:
        _stats[what] += n


def _path(directory_: str, key: str) -> str:
    return os.path.join(directory_, key + SUFFIX)


def has(key: str) -> bool:
    """Whether an entry file for `key` exists (unchecked: `read` may still reject it)."""
    d = directory()
    return d is not None and os.path.exists(_path(d, key))


def read(key: str, kind: str) -> tuple | None:
    """(meta, payload) of the valid entry for `key`, or None (a miss, or a rejected file).

    Args:
        key: the hex digest naming the entry (cache_key.disk_key).
        kind: what the entry must hold ("kernel", "wrappers").
    """
    d = directory()
    if d is None:
        return None
    path = _path(d, key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        _count("misses")
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
    try:
        os.utime(path)  # most recently used: the last to be evicted
    except OSError:
        pass
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
    d = directory()
    if d is None:
        return False
    data = entry_file.encode(dict(meta, key=key, built_for=entry_file.machine()), payload)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=SUFFIX, dir=d)  # mode 0o600
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, _path(d, key))
        tmp = None
    except OSError:
        _count("errors")
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _count("writes")
    evict(d)
    return True


def _entries(d: str) -> list:
    """[(mtime, size, path)] of the entries in `d`; stale temporary files are removed on the way."""
    out = []
    now = time.time()
    try:
        names = os.listdir(d)
    except OSError:
        return out
    for name in names:
        path = os.path.join(d, name)
        try:
            st = os.stat(path)
        except OSError:
            continue  # removed meanwhile (another process evicting)
        if name.startswith(_TMP_PREFIX):
            if now - st.st_mtime > _STALE_TMP_SECONDS:
                _unlink(path)
            continue
        if name.endswith(SUFFIX) and stat.S_ISREG(st.st_mode):
            out.append((st.st_mtime, st.st_size, path))
    return out


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
    except OSError:
        _count("errors")
        return False


def evict(d: str | None = None):
    """Remove least recently used entries until the cache holds at most config.cache_max_bytes."""
    d = d or directory()
    if d is None:
        return
    entries = _entries(d)
    total = sum(size for _, size, _ in entries)
    bound = int(config.cache_max_bytes)
    if total <= bound:
        return
    for _, size, path in sorted(entries):
        if total <= bound:
            break
        if _unlink(path):
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
        >>> gradtape.cache_info()["entries"]
        12
    """
    d = directory()
    entries = _entries(d) if d else []
    with _lock:
        info = dict(_stats)
        info["last_rejected"] = _last["rejected"]
    info.update(
        location=location(),
        enabled=d is not None,
        entries=len(entries),
        bytes=sum(size for _, size, _ in entries),
        max_bytes=int(config.cache_max_bytes),
    )
    return info


def clear_cache():
    """Delete every entry of the disk cache and zero its counters (the directory stays).

    Compiled functions already loaded keep working; a new process compiles again.
    """
    d = directory()
    if d is not None:
        for _, _, path in _entries(d):
            _unlink(path)
    with _lock:
        for k in _COUNTERS:
            _stats[k] = 0
        _last["rejected"] = None
