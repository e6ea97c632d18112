"""The disk cache loads only code this user wrote: each attack of issue 14 is refused.

The attacks forge an entry: the object code of one function stored under
the key of another of the same types, which every format check accepts
(the checksum is no signature). Loaded, it would make `target` return
`source`'s values; refused, `target` compiles in memory and is right.

Tests that need a file or directory of another user make one with os.chown,
which needs root; elsewhere they are skipped.
"""
from __future__ import annotations

import os
import stat
import threading

import numpy as np
import pytest

from gradtape import runtime
from gradtape.ir.ops import cos, sin
from gradtape.runtime import config, disk_cache, entry_file
from gradtape.runtime.cache_key import disk_key

from .samples import f64, function

OTHER_UID = 65534  # "nobody": any uid but ours
needs_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                                reason="making a file of another user (os.chown) needs root")


def target_fn():
    return function(sin, f64(6))


def source_fn():
    return function(cos, f64(6))


X = np.linspace(-2.0, 2.0, 6)


def run_fresh(fn) -> runtime.CompiledFunction:
    """compile_function(fn) with nothing in memory: what a new process would do."""
    runtime.clear_cache()
    return runtime.compile_function(fn)


def value(cf):
    return cf(X)[0]


def entry_path(fn, where=None) -> str:
    return os.path.join(where or disk_cache.location(), disk_key(fn) + disk_cache.SUFFIX)


def forge(where=None) -> str:
    """Store source_fn's code under target_fn's key in `where` (default: the cache); returns the path."""
    run_fresh(source_fn())
    with open(entry_path(source_fn()), "rb") as f:
        meta, payload = entry_file.decode(f.read())
    meta["key"] = disk_key(target_fn())
    path = entry_path(target_fn(), where)
    with open(path, "wb") as f:
        f.write(entry_file.encode(meta, payload))
    os.chmod(path, 0o600)
    return path


def assert_refused_and_right(match: str):
    with pytest.warns(RuntimeWarning, match=match):
        cf = run_fresh(target_fn())
    assert not cf.loaded_from_disk
    np.testing.assert_allclose(value(cf), np.sin(X), rtol=1e-14)


def test_a_forged_entry_of_our_own_is_loaded_so_the_attacks_below_mean_something():
    forge()
    cf = run_fresh(target_fn())
    assert cf.loaded_from_disk
    np.testing.assert_allclose(value(cf), np.cos(X), rtol=1e-14)  # what trusting a file means


@needs_root
def test_an_entry_owned_by_another_user_is_refused():
    os.chown(forge(), OTHER_UID, OTHER_UID)
    assert_refused_and_right("belongs to another user")
    assert disk_cache.cache_info()["rejected"] == 1
    assert os.stat(entry_path(target_fn())).st_uid == os.getuid()  # the rebuilt entry replaced it


def test_an_entry_others_may_write_to_is_refused():
    os.chmod(forge(), 0o666)
    assert_refused_and_right("other users may write to it")


def test_a_fifo_in_place_of_an_entry_does_not_hang():
    runtime.compile_function(source_fn())  # the cache directory exists
    os.mkfifo(entry_path(target_fn()), 0o600)
    done = []
    thread = threading.Thread(target=lambda: done.append(run_fresh(target_fn())), daemon=True)
    with pytest.warns(RuntimeWarning, match="a FIFO"):
        thread.start()
        thread.join(60)
    assert done, "the compile hung on a FIFO"
    np.testing.assert_allclose(value(done[0]), np.sin(X), rtol=1e-14)
    assert stat.S_ISREG(os.stat(entry_path(target_fn())).st_mode)


def test_a_link_to_dev_zero_in_place_of_an_entry_is_refused():
    runtime.compile_function(source_fn())
    os.symlink("/dev/zero", entry_path(target_fn()))
    assert_refused_and_right("a symbolic link")


@needs_root
def test_a_device_in_place_of_an_entry_is_refused_unread():
    runtime.compile_function(source_fn())
    try:
        os.mknod(entry_path(target_fn()), 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
    except PermissionError:
        pytest.skip("this container does not allow mknod")
    assert_refused_and_right("a character device")


def test_an_entry_larger_than_the_bound_is_refused_unread(monkeypatch):
    forge()
    monkeypatch.setattr(disk_cache, "MAX_ENTRY_BYTES", 64)
    assert_refused_and_right("more than the 64 an entry may have")


@needs_root
def test_a_symlink_of_another_user_to_a_private_directory_is_refused(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    os.lchown(link, OTHER_UID, OTHER_UID)
    monkeypatch.setattr(config, "cache_dir", str(link))
    assert_refused_and_right("symbolic link that belongs to another user")
    assert os.listdir(real) == [] and disk_cache.cache_info()["enabled"] is False


def test_a_symlink_of_our_own_is_followed(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to("real")  # relative, resolved from the link's directory
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "link"))
    run_fresh(target_fn())
    assert os.path.exists(entry_path(target_fn(), str(real)))
    assert run_fresh(target_fn()).loaded_from_disk


@needs_root
def test_the_directory_is_checked_again_at_each_load(tmp_path, monkeypatch):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir(mode=0o700)
    theirs.mkdir(mode=0o700)
    link = tmp_path / "cache"
    link.symlink_to(mine)
    monkeypatch.setattr(config, "cache_dir", str(link))
    assert run_fresh(target_fn()) and run_fresh(target_fn()).loaded_from_disk  # trusted: written, then loaded
    forge(str(theirs))  # their directory holds source_fn's code under target_fn's key
    for p in (theirs, *theirs.iterdir()):
        os.chown(p, OTHER_UID, OTHER_UID)
    link.unlink()
    link.symlink_to(theirs)  # re-pointed in the middle of the run
    assert_refused_and_right("belongs to another user")


def test_a_directory_made_writable_mid_run_is_refused_at_the_next_load(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setattr(config, "cache_dir", str(where))
    assert run_fresh(target_fn()) and run_fresh(target_fn()).loaded_from_disk
    where.chmod(0o777)
    assert_refused_and_right("other users may write to it")


def test_a_parent_others_may_write_to_is_refused(tmp_path, monkeypatch):
    parent = tmp_path / "open"
    parent.mkdir()
    parent.chmod(0o777)
    (parent / "cache").mkdir(mode=0o700)
    monkeypatch.setattr(config, "cache_dir", str(parent / "cache"))
    assert_refused_and_right("other users may write to .*open, a directory above it")


def test_a_sticky_parent_like_tmp_is_accepted(tmp_path, monkeypatch):
    parent = tmp_path / "sticky"
    parent.mkdir()
    parent.chmod(0o1777)
    monkeypatch.setattr(config, "cache_dir", str(parent / "cache"))
    run_fresh(target_fn())
    assert run_fresh(target_fn()).loaded_from_disk


@needs_root
def test_a_sticky_parent_of_another_user_is_refused(tmp_path, monkeypatch):
    parent = tmp_path / "sticky"
    parent.mkdir()
    parent.chmod(0o1777)
    os.chown(parent, OTHER_UID, OTHER_UID)  # its owner may remove or rename anything in it
    (parent / "cache").mkdir(mode=0o700)
    monkeypatch.setattr(config, "cache_dir", str(parent / "cache"))
    assert_refused_and_right("sticky, a directory above it, belongs to another user")


@needs_root
def test_a_parent_of_another_user_is_refused(tmp_path, monkeypatch):
    parent = tmp_path / "theirs"
    parent.mkdir(mode=0o755)
    (parent / "cache").mkdir(mode=0o700)
    os.chown(parent, OTHER_UID, OTHER_UID)
    monkeypatch.setattr(config, "cache_dir", str(parent / "cache"))
    assert_refused_and_right("theirs, a directory above it, belongs to another user")


def test_directories_made_are_private_whatever_the_umask(tmp_path, monkeypatch):
    where = tmp_path / "a" / "b" / "cache"
    monkeypatch.setattr(config, "cache_dir", str(where))
    old = os.umask(0)
    try:
        run_fresh(target_fn())
    finally:
        os.umask(old)
    for d in (tmp_path / "a", tmp_path / "a" / "b", where):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in where.iterdir())
    assert run_fresh(target_fn()).loaded_from_disk

