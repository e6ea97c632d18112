"""Op specs of the special-function ops (gammaln, polygamma) and the
gradtape.scipy.special compositions, against scipy.special."""
import numpy as np
from scipy import special as scipy_special

from gradtape.scipy import special

from .op_specs import OpSpec, args


def _uniform(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, shape)


SPECS = [
    # Bessel I0, I1 (functions/bessel.py): the series below 30 and the expansion above, and across the split
    OpSpec("np_i0", lambda x: np.i0(x) * 0.5, args(lambda rng: np.array([-2.5, -0.4, 0.0, 1.1, 7.0, 29.5])),
           ops=("mul", "add", "where"), numpy_fn=lambda x: np.i0(x) * 0.5),
    OpSpec("bessel_i1_i0e_i1e_large", lambda x: special.i1(x) * 1e-12 + special.i0e(x) + special.i1e(x),
           args(lambda rng: np.array([-45.0, -31.0, 30.5, 60.0])), ops=("exp", "sqrt", "div"),
           numpy_fn=lambda x: scipy_special.i1(x) * 1e-12 + scipy_special.i0e(x) + scipy_special.i1e(x)),
    OpSpec("bessel_i1_small", lambda x: special.i1(x) ** 2, args(_uniform(-3.0, 3.0, 2, 3)), ops=("mul",),
           numpy_fn=lambda x: scipy_special.i1(x) ** 2),
    OpSpec("gammaln", special.gammaln, args(_uniform(0.3, 8.0, 2, 3)), ops=("gammaln", "polygamma"),
           numpy_fn=scipy_special.gammaln),
    OpSpec("gammaln_negative", special.gammaln, args(_uniform(-2.9, -2.1, 4)), ops=("gammaln",),
           numpy_fn=scipy_special.gammaln),
    OpSpec("digamma", special.digamma, args(_uniform(0.3, 12.0, 2, 3)), ops=("polygamma",),
           numpy_fn=scipy_special.digamma),
    OpSpec("digamma_reflected", special.digamma, args(_uniform(-1.8, -1.2, 4)), ops=("polygamma",),
           numpy_fn=scipy_special.digamma),
    OpSpec("trigamma", lambda x: special.polygamma(1, x), args(_uniform(0.5, 6.0, 3)), ops=("polygamma",),
           numpy_fn=lambda x: scipy_special.polygamma(1, x)),
    OpSpec("logit_expit", lambda x: special.logit(special.expit(x * 0.5) * 0.5 + 0.25), args(_uniform(-3, 3, 3)),
           ops=("sigmoid", "log1p"),
           numpy_fn=lambda x: scipy_special.logit(scipy_special.expit(x * 0.5) * 0.5 + 0.25)),
    OpSpec("xlogy_xlog1py", lambda x, y: special.xlogy(x, y) + special.xlog1py(y, x),
           args(_uniform(0.5, 2.0, 3), _uniform(0.5, 2.0, 3)), ops=("log", "log1p", "where"),
           numpy_fn=lambda x, y: scipy_special.xlogy(x, y) + scipy_special.xlog1py(y, x)),
    OpSpec("special_logsumexp_b", lambda x, b: special.logsumexp(x, axis=1, b=b),
           args(_uniform(-2, 2, 2, 3), _uniform(0.5, 1.5, 3)), ops=("exp", "log"),
           numpy_fn=lambda x, b: scipy_special.logsumexp(x, axis=1, b=b)),
    OpSpec("special_softmax_all", lambda x: special.softmax(x) * special.log_softmax(x, axis=0),
           args(_uniform(-2, 2, 2, 3)), ops=("exp",),
           numpy_fn=lambda x: scipy_special.softmax(x) * scipy_special.log_softmax(x, axis=0)),
    OpSpec("betaln", special.betaln, args(_uniform(0.5, 4, 3), _uniform(0.5, 4, 3)), ops=("gammaln",),
           numpy_fn=scipy_special.betaln),
    OpSpec("entr_kl_div", lambda x, y: special.entr(x) + special.kl_div(x, y) + special.rel_entr(y, x),
           args(_uniform(0.3, 2.0, 3), _uniform(0.3, 2.0, 3)), ops=("log", "where"),
           numpy_fn=lambda x, y: scipy_special.entr(x) + scipy_special.kl_div(x, y) + scipy_special.rel_entr(y, x)),
    OpSpec("ndtr_log_ndtr", lambda x: special.ndtr(x) + special.log_ndtr(x), args(_uniform(-4, 4, 2, 3)),
           ops=("erfc", "log1p"), numpy_fn=lambda x: scipy_special.ndtr(x) + scipy_special.log_ndtr(x)),
    OpSpec("boxcox_comb_beta", lambda x, y: special.boxcox(x, 0.5) + special.boxcox1p(y, -0.5)
           + special.comb(x + 3.0, y) + special.beta(x, y) + special.rgamma(x) + special.poch(x, y),
           args(_uniform(0.5, 2.0, 3), _uniform(0.5, 2.0, 3)), ops=("expm1", "gammaln"),
           numpy_fn=lambda x, y: scipy_special.boxcox(x, 0.5) + scipy_special.boxcox1p(y, -0.5)
           + scipy_special.comb(x + 3.0, y) + scipy_special.beta(x, y) + scipy_special.rgamma(x)
           + scipy_special.poch(x, y)),
]
