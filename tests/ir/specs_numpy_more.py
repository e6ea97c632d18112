"""Op specs of NumPy's remaining functions (issue 15): compositions of existing
ops, checked like every op (values against NumPy, gradients against finite
differences in both modes, compiled against the interpreter, vmap against a loop)."""
import warnings

import numpy as np

import gradtape as gt

from .op_specs import OpSpec, args, normal


def _uniform(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, shape)


def _away_from_integers(*shape):
    return lambda rng: rng.integers(-3, 4, shape) + rng.uniform(0.15, 0.85, shape)


def _spec(name, fn, makers, ops=("mul",), numpy_fn=None, order=2):
    return OpSpec(name, fn, args(*makers), ops=ops, order=order, numpy_fn=numpy_fn or fn)


def _np_or_gt(name):
    """NumPy's function (gradtape's reached through NumPy's dispatch) where this NumPy has it,
    else gradtape's: unstack and cumulative_sum/prod came in NumPy 2.1, matvec and vecmat in
    2.2, and NumPy 2.0 is supported. The references (numpy_fn) use what NumPy 2.0 has."""
    return getattr(np, name, None) or getattr(gt, name)


_KEY = np.array([3, 3], np.uint32)


def _traced_key(x):
    """The key [3, 3] computed from x (its value does not depend on x), so the draws are equations."""
    seed = gt.cast(gt.floor(x[0, 0] * 0.0) + 3.0, "uint32")
    return gt.stack([seed, seed])


_X = normal(2, 3)
_XP = np.array([-1.5, -0.5, 0.25, 1.0, 2.0])


def _fix(x):
    """np.fix, which NumPy 2.5 deprecates (for np.trunc) but still dispatches: gradtape keeps it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "numpy.fix is deprecated", DeprecationWarning)
        return np.fix(x)


def _near(values):
    return lambda rng: np.array(values) + rng.uniform(-0.05, 0.05, len(values))
_V = normal(3)

# np.astype came in NumPy 2.1 (NumPy 2.0 is supported): the array API's astype where it is missing
_astype = getattr(np, "astype", None) or gt.array_api.astype

SPECS = [
    # elementwise
    _spec("fabs", lambda x: np.fabs(x) * x, [_uniform(-2, -0.2, 2, 3)], ("abs",)),
    _spec("rint_trunc_fix", lambda x: (np.rint(x) + np.trunc(x) + _fix(x)) * x, [_away_from_integers(2, 3)],
          ("round", "floor", "ceil", "where")),
    _spec("modf", lambda x: np.modf(x)[0] * 2.0 + np.modf(x)[1] * x, [_away_from_integers(2, 3)], ("sub",)),
    _spec("ldexp", lambda x: np.ldexp(x, np.array([1, -2, 3])), [_X], ("pow", "mul")),
    # frexp: x away from the powers of two, where the mantissa jumps
    _spec("frexp", lambda x: np.frexp(x)[0] * x + np.frexp(x)[1], [_near([0.375, -0.7, 1.5, -3.0, 5.5, 12.0])],
          ("log2", "floor", "pow")),
    _spec("angle_real_if_close", lambda x: np.angle(x) * x + np.real_if_close(x), [_X], ("arctan2",)),
    # arrays
    _spec("append", lambda x, v: np.append(x, v) * 2.0, [_X, _V], ("concatenate",)),
    _spec("append_axis", lambda x, v: np.append(x, np.reshape(v, (1, 3)), axis=0), [_X, _V], ("concatenate",)),
    _spec("block", lambda x, v: np.block([[x], [np.reshape(v, (1, 3))]]) * 1.5, [_X, _V], ("concatenate",)),
    _spec("broadcast_arrays", lambda x, v: np.broadcast_arrays(x, v)[1] * x, [_X, _V], ("broadcast_to",)),
    _spec("compress_delete", lambda x: np.compress([True, False, True], x, axis=1) + np.delete(x, 1, axis=1),
          [_X], ("gather",)),
    _spec("copy_ediff1d", lambda x: np.ediff1d(np.copy(x), to_begin=0.5, to_end=[1.0, 2.0]), [_X], ("sub",)),
    _spec("diagflat", lambda v: np.diagflat(v, 1) * 2.0, [_V], ("mul",)),
    _spec("resize", lambda x: np.resize(x, (4, 4)), [_X], ("gather",)),
    _spec("rollaxis_unstack", lambda x: _np_or_gt("unstack")(np.rollaxis(x, 1), axis=0)[2] * 3.0, [_X], ("mul",),
          numpy_fn=lambda x: np.rollaxis(x, 1)[2] * 3.0),
    _spec("select", lambda x, y: np.select([x < -0.5, x > 0.5], [x * y, -x], default=y), [_X, normal(2, 3)],
          ("where",)),
    _spec("ix_", lambda a, b: np.ix_(a, b)[0] * np.ix_(a, b)[1], [normal(2), _V], ("mul",)),
    _spec("matrix_transpose_matvec_vecmat_vecdot",
          lambda x, v: _np_or_gt("matvec")(x, v) + _np_or_gt("vecmat")(v, np.matrix_transpose(x)) + np.vecdot(x, x),
          [_X, _V], ("mul", "reduce_sum"), numpy_fn=lambda x, v: x @ v + v @ x.T + np.sum(x * x, axis=-1)),
    _spec("cumulative_sum_prod",
          lambda x: _np_or_gt("cumulative_sum")(x, axis=1, include_initial=True)[:, 1:]
          + _np_or_gt("cumulative_prod")(x, axis=1),
          [_X], ("add",), numpy_fn=lambda x: np.cumsum(x, axis=1) + np.cumprod(x, axis=1)),
    _spec("full_like", lambda x, v: np.full_like(x, v[0]) * x, [_X, _V], ("broadcast_to",)),
    _spec("apply_along_axis", lambda x: np.apply_along_axis(lambda v: v * v[0], 1, x)
          + np.apply_along_axis(np.sum, 0, x)[0], [_X], ("mul",)),
    _spec("piecewise", lambda x: np.piecewise(x, [x < -0.5, x > 0.5], [lambda t: t * t, lambda t: -t, np.sin]),
          [_near([-1.2, -0.1, 0.3, 0.9, 1.6, -2.0])], ("where",), order=3),
    _spec("choose", lambda x, y: np.choose(np.array([[0, 1, 2], [2, 1, 0]]), [x, y, x * y])
          + np.choose(np.array([3, 4, -1]), [x, y[0]], mode="wrap"), [_X, normal(2, 3)], ("gather",)),
    _spec("insert", lambda x, v: np.concatenate([np.ravel(np.insert(x, 1, v, axis=0)), np.insert(x, [0, 2, 2], v[0])])
          * 2.0, [_X, _V], ("gather",)),
    _spec("polyfit", lambda x, y: np.polyfit(x, y, 2) + np.polyfit(x, y, 1, w=y * y)[0],
          [_near([0.0, 0.4, 0.8, 1.2, 1.6, 2.0]), normal(6)], ("pinv",)),
    _spec("astype", lambda x: _astype(x, np.int64) * x + _astype(x, np.float64) ** 2, [_away_from_integers(2, 3)],
          ("cast",), numpy_fn=lambda x: x.astype(np.int64) * x + x ** 2),
    # polynomials
    _spec("convolve", lambda a, v: np.convolve(a, v) + np.convolve(a, v[:2], "same")[0]
          + np.convolve(v, a, "valid")[0], [normal(4), _V], ("mul",)),
    _spec("correlate", lambda a, v: np.correlate(a, v, "full") * 2.0 + np.correlate(a, v)[0]
          + np.correlate(v, a, "same")[0], [normal(4), _V], ("mul",)),
    _spec("polyval_polyder_polyint",
          lambda p, x: np.polyval(np.polyder(p), x) + np.polyval(np.polyint(p, k=[0.5]), x), [normal(4), _X],
          ("mul", "add")),
    _spec("polyadd_polysub_polymul", lambda a, b: np.polyadd(a, b) * 2.0 + np.polysub(b, a) + np.polymul(a, b)[:4],
          [normal(4), normal(3)], ("add", "sub")),
    _spec("polydiv", lambda u, v: np.polydiv(u, v)[0] + np.polydiv(u, v)[1][0],
          [normal(5), lambda rng: np.array([1.5, 0.3, -0.7])], ("div",)),
    _spec("poly", lambda r: np.poly(r), [normal(3)], ("mul",)),
    _spec("vander", lambda x: np.vander(x, 4) + np.vander(x, 4, increasing=True), [normal(3)], ("mul",)),
    # calculus, sampling, statistics
    _spec("trapezoid", lambda y, x: np.trapezoid(y, dx=0.5) + np.trapezoid(y[0], x=x), [_X, _V], ("add",)),
    _spec("gradient", lambda x: np.gradient(x)[0] + np.gradient(x, 0.5, axis=1), [normal(3, 4)], ("sub",)),
    _spec("gradient_edge_order2", lambda x: np.gradient(x, 0.5, axis=1, edge_order=2), [normal(3, 4)], ("mul",)),
    _spec("unwrap", lambda p: np.unwrap(p * 2.0), [_uniform(-1.4, 1.4, 2, 5)], ("remainder",)),
    _spec("logspace_geomspace", lambda a, b: np.logspace(a[0], b[0], 4) + np.geomspace(a[1] + 2.0, b[1] + 3.0, 4),
          [_uniform(0.1, 1, 2), _uniform(1, 2, 2)], ("pow",)),
    _spec("cov_corrcoef", lambda x: np.cov(x) + np.corrcoef(x) + np.cov(x, rowvar=False, ddof=0)[0, 0],
          [normal(3, 5)], ("mul",)),
    _spec("histogram_weights", lambda w: np.histogram(np.array([0.1, 0.5, 0.9, 1.3, 2.2]), bins=3, weights=w)[0],
          [normal(5)], ("where",)),
    _spec("histogram_density_edges", lambda x: np.concatenate([np.histogram(x, bins=2, density=True)[0],
                                                               np.histogram_bin_edges(x, bins=4)]),
          [normal(6)], ("reduce_max",)),
    # interp: x away from the knots (where the derivative in x jumps), below and above them too
    _spec("interp", lambda x, fp: np.interp(x, _XP, fp) + np.interp(x, _XP, fp, left=-1.0, right=fp[0]) * x,
          [_near([-2.0, -1.2, -0.1, 0.6, 1.4, 2.6]), normal(5)], ("gather",), order=3),
    _spec("interp_period", lambda x, fp: np.interp(x, _XP, fp, period=2.5),
          [_near([-2.3, -0.9, 0.4, 1.7, 3.6]), normal(5)], ("remainder",)),
    _spec("nanquantile", lambda x: np.nanquantile(x, [0.3, 0.7], axis=1) + np.nanmedian(x)
          + np.nanpercentile(x, 40.0, axis=0)[0],
          [lambda rng: np.where(rng.uniform(size=(3, 5)) < 0.2, np.nan, rng.standard_normal((3, 5)))],
          ("gather",)),
    # gradtape.random: the philox op's bits (checked against Philox's published answers in
    # tests/random/test_random.py), from a key computed from x so that it is traced
    _spec("random_normal_uniform", lambda x: x * gt.random.normal(_traced_key(x), (2, 3), dtype=x.dtype)
          + gt.random.uniform(_traced_key(x), (3,), dtype=x.dtype, minval=x[0], maxval=x[1]),
          [_X], ("philox", "floor_divide", "cast"),
          numpy_fn=lambda x: x * gt.random.normal(_KEY, (2, 3), dtype=x.dtype).numpy()
          + gt.random.uniform(_KEY, (3,), dtype=x.dtype, minval=x[0], maxval=x[1]).numpy()),
]
