"""The disk cache in one process: entries written and loaded, damaged entries rebuilt, the bound.

Each test has its own empty cache directory (tests/conftest.py). A "new
process" is imitated by runtime.clear_cache(), which forgets what is in
memory: the next compile_function of the same Function then finds only
the disk. tests/runtime/test_disk_cache_processes.py does it with real
processes.
"""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import gradtape
from gradtape import ir, runtime
from gradtape.ir.ops import add, cos, exp, mul, reduce_sum, sin
from gradtape.runtime import config, disk_cache, entry_file
from gradtape.runtime.cache_key import disk_key

from .samples import f64, function


def sin_fn(n=6):
    return function(lambda a, b: (sin(mul(a, b)), add(a, b)), f64(n), f64(n))


def exp_sum_fn(n=5):
    return function(lambda a: reduce_sum(exp(cos(a)), axes=(0,)), f64(n))


def inputs(fn, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=t.shape) for t in fn.in_types]


def check_against_interpreter(cf, fn, seed=0):
    xs = inputs(fn, seed)
    for got, want in zip(cf(*xs), ir.eval_function(fn, xs)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def entry_path(fn) -> str:
    return os.path.join(disk_cache.location(), disk_key(fn) + disk_cache.SUFFIX)


def counts():
    info = runtime.cache_info()
    return {k: info[k] for k in ("misses", "compiles", "disk_loads", "native")}


def compile_in_new_process(fn):
    """compile_function(fn) with nothing in memory: what a new process would do."""
    runtime.clear_cache()
    return runtime.compile_function(fn)


def test_a_compiled_function_is_loaded_from_disk_next_time():
    fn = sin_fn()
    first = runtime.compile_function(fn)
    assert not first.loaded_from_disk and os.path.exists(entry_path(fn))
    xs = inputs(fn)
    expected = first(*xs)

    again = compile_in_new_process(sin_fn())
    assert counts() == dict(misses=1, compiles=0, disk_loads=1, native=1)
    assert again.loaded_from_disk and again.call_path == first.call_path
    for got, want in zip(again(*xs), expected):
        np.testing.assert_array_equal(got, want)  # the same machine code
    assert again(*xs, out=[np.empty(6), np.empty(6)])[0].tolist() == expected[0].tolist()
    assert set(again.compile_stages) >= {"disk_read", "load", "entry"}
    assert "lower" not in again.compile_stages
    assert disk_cache.cache_info()["hits"] >= 1


def test_a_disk_load_is_counted_apart_from_memory_hits_and_compiles():
    fn = exp_sum_fn()
    runtime.compile_function(fn)
    runtime.compile_function(fn)
    info = runtime.cache_info()
    assert (info["hits"], info["misses"], info["compiles"], info["disk_loads"]) == (1, 1, 1, 0)
    compile_in_new_process(fn)
    runtime.compile_function(fn)
    info = runtime.cache_info()
    assert (info["hits"], info["misses"], info["compiles"], info["disk_loads"]) == (1, 1, 0, 1)


def _damage_and_recompile(fn, damage):
    runtime.compile_function(fn)
    path = entry_path(fn)
    with open(path, "rb") as f:
        data = f.read()
    damage(path, data)
    rejected = disk_cache.cache_info()["rejected"]
    cf = compile_in_new_process(fn)
    assert counts() == dict(misses=1, compiles=1, disk_loads=0, native=1)  # rebuilt, not loaded
    assert disk_cache.cache_info()["rejected"] == rejected + 1
    check_against_interpreter(cf, fn, seed=3)
    # The rebuilt entry replaced the damaged file: the next process loads it.
    again = compile_in_new_process(fn)
    assert again.loaded_from_disk
    check_against_interpreter(again, fn, seed=4)
    return disk_cache.cache_info()["last_rejected"]


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def test_a_corrupted_entry_is_rebuilt():
    def flip_a_byte_of_the_code(path, data):
        i = len(data) - 200
        _write(path, data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :])

    assert "corrupted" in _damage_and_recompile(sin_fn(7), flip_a_byte_of_the_code)


def test_a_truncated_entry_is_rebuilt():
    assert "truncated" in _damage_and_recompile(sin_fn(8), lambda path, data: _write(path, data[: len(data) // 2]))


def test_an_empty_entry_is_rebuilt():
    assert "truncated" in _damage_and_recompile(sin_fn(9), lambda path, data: _write(path, b""))


def test_an_entry_swapped_for_another_keys_entry_is_rebuilt():
    other = exp_sum_fn(9)
    runtime.compile_function(other)
    swapped = lambda path, data: shutil.copyfile(entry_path(other), path)  # noqa: E731
    assert "holds the entry of key" in _damage_and_recompile(exp_sum_fn(11), swapped)


def _rewrite_meta(path, data, change):
    meta, payload = entry_file.decode(data)
    change(meta)
    _write(path, entry_file.encode(meta, payload))  # a well-formed file: only its contents say no


def test_an_entry_built_for_another_cpu_is_rebuilt():
    def other_cpu(meta):
        meta["built_for"]["cpu"] = "some-other-cpu"
        meta["built_for"]["features"] += ",+imaginary"

    reason = _damage_and_recompile(sin_fn(10), lambda path, data: _rewrite_meta(path, data, other_cpu))
    assert "built for another machine" in reason and "some-other-cpu" in reason and "+imaginary" in reason


def test_an_entry_from_another_code_generator_is_rebuilt():
    def older(meta):
        meta["built_for"]["codegen"] -= 1

    assert "codegen" in _damage_and_recompile(sin_fn(11), lambda path, data: _rewrite_meta(path, data, older))


def test_an_entry_whose_kernel_is_missing_is_rebuilt():
    def renamed(meta):
        meta["name"] = "no_such_kernel"

    reason = _damage_and_recompile(sin_fn(12), lambda path, data: _rewrite_meta(path, data, renamed))
    assert "cannot be loaded" in reason and "no_such_kernel" in reason


def test_an_entry_needing_a_library_that_is_not_there_is_rebuilt():
    def needs_missing(meta):
        meta["libraries"] = ["libgradtape-does-not-exist.so.7"]

    reason = _damage_and_recompile(sin_fn(13), lambda path, data: _rewrite_meta(path, data, needs_missing))
    assert "libgradtape-does-not-exist" in reason


def test_an_entry_of_other_types_is_rebuilt():
    def other_types(meta):
        meta["types"] = "(f32[6]) -> (f32[6])"

    assert "types" in _damage_and_recompile(sin_fn(14), lambda path, data: _rewrite_meta(path, data, other_types))


def test_least_recently_used_entries_are_evicted(monkeypatch):
    fns = [exp_sum_fn(n) for n in (2, 3, 4)]
    for fn in fns[:2]:
        runtime.compile_function(fn)
    sizes = [os.path.getsize(entry_path(fn)) for fn in fns[:2]]
    # The older entry is read again (a hit refreshes it): the other one is now the least recent.
    os.utime(entry_path(fns[0]), (1_000_000, 1_000_000))
    os.utime(entry_path(fns[1]), (2_000_000, 2_000_000))
    compile_in_new_process(fns[0])
    assert runtime.cache_info()["disk_loads"] == 1
    assert os.path.getmtime(entry_path(fns[0])) > 2_000_000
    wrappers = disk_cache.cache_info()["bytes"] - sum(sizes)  # the call wrappers' entry, if this process wrote it
    monkeypatch.setattr(config, "cache_max_bytes", wrappers + sum(sizes) + sizes[0] // 2)
    runtime.compile_function(fns[2])  # one entry too many: the least recently used one goes
    assert os.path.exists(entry_path(fns[0])) and os.path.exists(entry_path(fns[2]))
    assert not os.path.exists(entry_path(fns[1]))
    info = disk_cache.cache_info()
    assert info["evictions"] >= 1 and info["bytes"] <= info["max_bytes"]


def test_cache_info_and_clear_cache():
    gradtape.clear_cache()
    info = gradtape.cache_info()
    assert info["location"] == disk_cache.location() and info["enabled"]
    assert (info["entries"], info["bytes"], info["hits"], info["writes"]) == (0, 0, 0, 0)
    fn = sin_fn(15)
    runtime.compile_function(fn)
    info = gradtape.cache_info()
    assert info["entries"] >= 1 and info["writes"] == info["entries"]
    assert info["bytes"] == sum(os.path.getsize(os.path.join(info["location"], n)) for n in os.listdir(info["location"]))
    cf = runtime.compile_function(fn)
    gradtape.clear_cache()
    info = gradtape.cache_info()
    assert (info["entries"], info["bytes"], info["writes"]) == (0, 0, 0)
    check_against_interpreter(cf, fn)  # loaded code does not need its file
    assert compile_in_new_process(fn).loaded_from_disk is False


def test_the_directory_is_private_to_the_user(tmp_path, monkeypatch):
    where = tmp_path / "new" / "cache"
    monkeypatch.setattr(config, "cache_dir", str(where))
    runtime.compile_function(sin_fn(16))
    assert (where.stat().st_mode & 0o777) == 0o700
    assert all((p.stat().st_mode & 0o777) == 0o600 for p in where.iterdir())


def test_a_directory_others_may_write_to_is_not_used(tmp_path, monkeypatch):
    where = tmp_path / "shared"
    where.mkdir()
    where.chmod(0o777)
    monkeypatch.setattr(config, "cache_dir", str(where))
    with pytest.warns(RuntimeWarning, match="other users may write to it"):
        cf = runtime.compile_function(sin_fn(17))
    check_against_interpreter(cf, sin_fn(17))
    assert os.listdir(where) == [] and disk_cache.cache_info()["enabled"] is False


@pytest.mark.parametrize("setting", [("cache_dir", ""), ("disk_cache", False)])
def test_the_disk_cache_can_be_turned_off(monkeypatch, setting):
    monkeypatch.setattr(config, *setting)
    fn = sin_fn(18)
    runtime.compile_function(fn)
    assert not compile_in_new_process(fn).loaded_from_disk
    assert runtime.cache_info()["compiles"] == 1 and disk_cache.cache_info()["enabled"] is False


def test_a_handmade_lowering_never_reaches_the_disk(handmade):
    writes = disk_cache.cache_info()["writes"]
    runtime.compile_function(sin_fn(19))
    assert disk_cache.cache_info()["writes"] == writes and not os.path.exists(entry_path(sin_fn(19)))


def test_dumps_compile_instead_of_loading(monkeypatch, capsys):
    fn = exp_sum_fn(6)
    runtime.compile_function(fn)
    monkeypatch.setattr(config, "dump", frozenset({"opt"}))
    assert not compile_in_new_process(fn).loaded_from_disk
    assert "gradtape opt" in capsys.readouterr().err


def test_the_key_follows_the_settings_that_change_code(monkeypatch):
    fn = sin_fn()
    key = disk_key(fn)
    assert key == disk_key(sin_fn()) and len(key) == 32
    monkeypatch.setattr(config, "opt_level", config.opt_level + 1)
    assert disk_key(fn) != key
    monkeypatch.undo()
    assert disk_key(fn) == key
    assert disk_key(exp_sum_fn()) != key
    # An edited code generator (its files' sizes or times changed) gets new entries.
    from gradtape.runtime import cache_key

    monkeypatch.setattr(cache_key, "source_fingerprint", lambda: "edited")
    assert disk_key(fn) != key


def test_array_literals_are_part_of_the_key():
    def with_constant(values):
        b = ir.Builder()
        x = b.input(f64(3))
        return b.build([x], [mul(x, b.literal(np.array(values)))])

    assert disk_key(with_constant([1.0, 2.0, 3.0])) != disk_key(with_constant([1.0, 2.0, 4.0]))
    runtime.compile_function(with_constant([1.0, 2.0, 3.0]))
    cf = compile_in_new_process(with_constant([1.0, 2.0, 4.0]))
    assert not cf.loaded_from_disk
    assert cf(np.ones(3))[0].tolist() == [1.0, 2.0, 4.0]


def test_compile_function_if_cached_takes_only_what_costs_no_compile():
    fn = exp_sum_fn(13)
    assert runtime.compile_function_if_cached(fn) is None  # nowhere yet: the caller compiles
    assert runtime.cache_info()["misses"] == 0
    cf = runtime.compile_function(fn)
    assert runtime.compile_function_if_cached(fn) is cf  # in memory
    runtime.clear_cache()
    loaded = runtime.compile_function_if_cached(fn)  # on disk: loaded now
    assert loaded is not None and loaded.loaded_from_disk
    assert counts() == dict(misses=1, compiles=0, disk_loads=1, native=1)
    check_against_interpreter(loaded, fn)
