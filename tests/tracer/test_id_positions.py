"""Recording.var_of's table in C (`_crecord.IdPositions`) against a dict, the class it stands in
for: the same answers to every call recording.py, rebind.py and backward.py make."""
import numpy as np
import pytest

from gradtape.tracer import c_view
from gradtape.tracer.recording import Recording

if c_view.crecord is None:
    pytest.skip("the C extension is not built (pure-Python install)", allow_module_level=True)

IdPositions = c_view.crecord.IdPositions


def _addresses(rng, n):
    """Keys as id() gives them: 16-byte aligned addresses, some of them close together."""
    base = int(rng.integers(1 << 20, 1 << 40)) * 16
    near = base + 16 * np.arange(n // 2)
    far = rng.integers(1 << 20, 1 << 43, n - n // 2) * 16
    return [int(k) for k in np.concatenate([near, far])]


@pytest.mark.parametrize("seed,n", [(0, 10), (1, 300), (2, 20_000)])
def test_random_operations_answer_as_a_dict_does(seed, n):
    rng = np.random.default_rng(seed)
    keys = _addresses(rng, n)
    table, model = IdPositions(), {}
    for step in range(4 * n):
        k = keys[int(rng.integers(len(keys)))]
        what = int(rng.integers(6))
        if what <= 1:
            p = int(rng.integers(0, 1 << 40 if what else 1000))  # small shared ints and large ones
            table[k] = p
            model[k] = p
        elif what == 2:
            assert table.pop(k, None) == model.pop(k, None)
        elif what == 3:
            p = int(rng.integers(1000))
            assert table.setdefault(k, p) == model.setdefault(k, p)
        elif what == 4:
            assert table.get(k) == model.get(k) and (k in table) == (k in model)
        else:
            if k in model:
                assert table[k] == model[k]
                del table[k]
                del model[k]
            else:
                with pytest.raises(KeyError):
                    table[k]
        if step % max(1, n // 4) == 0:
            assert len(table) == len(model)
    assert sorted(table.items()) == sorted(model.items())
    assert sorted(table) == sorted(model)


def test_a_large_table_freed_and_another_grown_over_its_memory():
    """The freed table's memory is reused by the next one as large (the spare): nothing of the
    first may show through in the second."""
    rng = np.random.default_rng(3)
    first = IdPositions()
    for i, k in enumerate(_addresses(rng, 50_000)):
        first[k] = i
    del first
    keys = _addresses(rng, 30_000)
    second = IdPositions()
    for i, k in enumerate(keys):
        assert k not in second
        second[k] = i
    assert len(second) == len(keys)
    assert all(second[k] == i for i, k in enumerate(keys))


def test_bad_keys_and_values_raise():
    table = IdPositions()
    with pytest.raises(TypeError, match="keys are ints"):
        table["a"] = 1
    with pytest.raises(TypeError, match="values are positions"):
        table[64] = "1"
    with pytest.raises(ValueError, match="not negative"):
        table[64] = -1
    with pytest.raises(ValueError, match="addresses"):
        table[0] = 1
    with pytest.raises(KeyError):
        table[64]
    with pytest.raises(KeyError):
        table.pop(64)
    assert table.get(-5) is None and 1 << 70 not in table and table.pop(1 << 70, "no") == "no"
    with pytest.raises(TypeError):
        IdPositions(3)


def test_recordings_use_it():
    assert type(Recording().var_of) is (dict if c_view.pure_python else IdPositions)
