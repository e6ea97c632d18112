"""Random programs through every front door against the interpreter, NumPy and
finite differences (tests/fuzz/differential.py). bench/fuzz_differential.py
runs the same check on 10,000 programs; here a CI-sized sample."""
import numpy as np
import pytest

from . import differential, generator

# Seeds 0..N-1: about 0.2 s each (five to seven small compiles per program).
N_PROGRAMS = 120


def _report(program, findings) -> str:
    details = "\n".join(f"[{f.category}]\n{f.detail}" for f in findings)
    return f"\n{program.text()}\n{details}\nreplay: python bench/fuzz_differential.py --replay {program.seed}"


@pytest.mark.parametrize("seed", range(N_PROGRAMS))
def test_random_program_agrees_on_every_path(seed):
    program = generator.generate(seed)
    findings = differential.check(program)
    assert not findings, _report(program, findings)


def test_a_seed_always_generates_the_same_program():
    a, b = generator.generate(7), generator.generate(7)
    assert a.source == b.source
    for x, y in zip(a.inputs + a.batch + a.tangents, b.inputs + b.batch + b.tangents):
        np.testing.assert_array_equal(x, y)
    assert generator.generate(8).source != a.source


def test_generated_inputs_include_special_values_and_kinks():
    values = np.concatenate([np.ravel(x) for s in range(300) for x in generator.generate(s).inputs])
    assert np.isnan(values).any() and np.isposinf(values).any() and np.isneginf(values).any()
    assert (values == 0).any() and (values == 1).any()


def test_version_2_programs_use_control_flow_and_sorting_and_version_1_programs_do_not():
    constructs = ["gt.scan(", "gt.fori_loop(", "gt.while_loop(", "gt.cond(", "gt.switch(", "gt.sort(", "gt.quantile("]
    v2 = "".join(generator.generate(s).source for s in range(N_PROGRAMS))
    assert all(c in v2 for c in constructs), [c for c in constructs if c not in v2]
    v1 = "".join(generator.generate(s, version=1).source for s in range(300))
    assert not any(c in v1 for c in constructs)
    with pytest.raises(ValueError, match="version must be 1 or 2"):
        generator.generate(0, version=3)
