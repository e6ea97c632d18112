"""SymSize: sizes known at run time answer every question the same for every N >= 2, or refuse."""
import numpy as np
import pytest

from gradtape.codegen.dynamic_sizes import DynamicUnsupported, SymSize, at_least, concrete
from gradtape.codegen.lowered import Unsupported
from gradtape.ir import TensorType

N = SymSize.variable()


def test_arithmetic_is_polynomial_and_cancels_to_ints():
    assert repr(4 * N + 2) == "4*N+2"
    assert repr((4 * N + 2) // 2) == "2*N+1"
    assert repr(N * N - 3 * N) == "N**2-3*N"
    assert (N + 3) - N == 3 and type((N + 3) - N) is int
    for n in (2, 3, 17, 1000):
        assert concrete(N * N * 8 + 4 * N - 1, n) == n * n * 8 + 4 * n - 1
    assert (6 * N) % 3 == 0


def test_comparisons_true_for_every_n_or_refused():
    assert 4 * N > 1 and N >= 2 and not N < 2 and bool(N)
    assert N * N >= 2 * N  # N**2 - 2N = N(N-2) >= 0 for N >= 2
    assert 2 * N - 3 > 0  # 1 at N = 2
    for ambiguous in (lambda: N < 64, lambda: N * N > 10 * N, lambda: 3 * N <= 100):
        with pytest.raises(DynamicUnsupported, match="depends on the run-time size"):
            ambiguous()
    assert issubclass(DynamicUnsupported, Unsupported)  # so the runtime falls back, never guesses


def test_equality_is_structural():
    assert N * 4 == 4 * N and hash(N * 4) == hash(4 * N)
    assert N != 32 and N != 2 * N
    assert (N, 3) != (32, 3)


def test_no_silent_conversion_to_a_number():
    for convert in (int, float, str, lambda s: range(s), lambda s: [0, 1][s], lambda s: f"{s}",
                    lambda s: np.zeros(s), lambda s: (7 * N + 1) // 2, lambda s: 10 % s):
        with pytest.raises(DynamicUnsupported):
            convert(N)


def test_at_least_takes_a_run_time_size_as_large():
    assert at_least(N * 16, 1000) is True
    assert at_least(N, 2) is True
    assert at_least(500, 1000) is False


def test_tensor_types_hold_run_time_sizes():
    t = TensorType((N, 3), np.float64)
    assert repr(t) == "f64[N,3]" and t.size == 3 * N
    assert t == TensorType((N, 3), np.float64) and t != TensorType((5, 3), np.float64)
