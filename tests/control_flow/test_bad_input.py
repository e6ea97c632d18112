"""Every bad input to a control-flow construct is a TypeError naming the construct,
the branch or argument, and both types (what was expected and what came)."""
import numpy as np
import pytest

import gradtape as gt

CASES = [
    ("cond, a float predicate", lambda x: gt.cond(x, lambda v: v, lambda v: -v, x),
     r"cond: pred must be a boolean scalar \(pred of shape \(\) and dtype bool\), got f64\[\]"),
    ("cond, a vector predicate", lambda x: gt.cond(gt.stack([x, x]) > 0, lambda v: v, lambda v: -v, x),
     r"cond: pred must be a boolean scalar .*, got bool\[2\]"),
    ("cond, structures", lambda x: gt.cond(x > 0, lambda v: (v, v), lambda v: v, x),
     r"cond: false_fun and true_fun must return the same structure; false_fun returns \* and true_fun "
     r"returns \(\*, \*\)"),
    ("cond, dtypes", lambda x: gt.cond(x > 0, lambda v: v, lambda v: v.astype(np.float32), x),
     r"cond: false_fun and true_fun must return the same shapes and dtypes; output leaf 0 is f32\[\] in "
     r"false_fun and f64\[\] in true_fun"),
    ("switch, a float index", lambda x: gt.switch(x, [lambda v: v, lambda v: -v], x),
     r"switch: index must be an integer scalar \(index of shape \(\) and an int dtype\), got f64\[\]"),
    ("switch, shapes", lambda x: gt.switch((x > 0).astype(np.int32), [lambda v: v, lambda v: gt.stack([v, v])], x),
     r"switch: branch 0 and branch 1 must return the same shapes and dtypes; output leaf 0 is f64\[\] in "
     r"branch 0 and f64\[2\] in branch 1"),
    ("scan, a carry's shape", lambda x: gt.scan(lambda c, _: (gt.stack([c, c]), None), x, None, length=3)[0],
     r"scan: f changes carry leaf 0 from f64\[\] to f64\[2\]"),
    ("scan, a carry's dtype", lambda x: gt.scan(lambda c, _: (c.astype(np.float32), None), x, None, length=3)[0],
     r"scan: f changes carry leaf 0 from f64\[\] to f32\[\]"),
    ("scan, the carry's structure", lambda x: gt.scan(lambda c, _: ((c, c), None), x, None, length=3)[0],
     r"scan: f must return a carry of the initial value's structure; the initial carry is \*, f returned "
     r"\(\*, \*\)"),
    ("fori_loop, a float bound", lambda x: gt.fori_loop(0.5, 3, lambda i, v: v * 2, x),
     r"fori_loop: lower must be an integer scalar, got f64\[\]"),
    ("fori_loop, a carry's dtype", lambda x: gt.fori_loop(0, 3, lambda i, v: v.astype(np.float32), x),
     r"fori_loop: body_fun changes carry leaf 0 from f64\[\] to f32\[\]"),
    ("while_loop, a carry's shape", lambda x: gt.while_loop(lambda v: gt.sum(v) < 3, lambda v: gt.stack([v, v]), x),
     r"while_loop: body_fun changes carry leaf 0 from f64\[\] to f64\[2\]"),
    ("while_loop, a vector condition", lambda x: gt.while_loop(lambda v: gt.stack([v, v]) < 3, lambda v: v * 2, x),
     r"while_loop: cond_fun's result must be a boolean scalar, got bool\[2\]"),
]


@pytest.mark.parametrize("name, f, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_names_the_construct_the_argument_and_both_types(name, f, message):
    with pytest.raises(TypeError, match=message):
        gt.make_ir(f, 1.0)


def test_an_index_out_of_range_is_clamped_as_in_jax():
    branches = [lambda v: v + 1.0, lambda v: v * 10.0, lambda v: -v]
    pick = gt.differentiable(lambda i, x: gt.switch(i, branches, x))
    got = [float(pick(np.int32(i), 2.0)) for i in (-5, -1, 0, 1, 2, 3, 99)]
    assert got == [3.0, 3.0, 3.0, 20.0, -2.0, -2.0, -2.0]
