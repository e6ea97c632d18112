"""ADBench's GMM objective, written from its definition with NumPy calls, as a user writes it.

The negative log-likelihood of N points `x` (N, D) under a mixture of K
Gaussians with a Wishart prior (ADBench's `gmm_objective`, Srajer et al.
2018). Parameters: `alphas` (K,) the weights' logits, `means` (K, D), and
`icf` (K, D + D(D-1)/2) each component's inverse Cholesky factor: the log
of its diagonal, then its strictly lower triangle column by column.
`np_` is the array module: gradtape, or NumPy for the reference; the
functions both have (`np_.concatenate`, `np_.stack`, `np_.einsum`, ...)
take either's arrays.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln


def logsumexp(np_, x, axis=None):
    m = np_.amax(x, axis=axis, keepdims=True) if axis is not None else np_.amax(x)
    out = np_.log(np_.sum(np_.exp(x - m), axis=axis, keepdims=True)) + m
    return np_.sum(out, axis=axis) if axis is not None else np_.sum(out)


def lower_triangle(np_, d, icf_k):
    """The D x D lower-triangular L of one component: zeros above the diagonal."""
    columns, at = [], d
    for i in range(d):
        n = d - i - 1
        columns.append(np_.concatenate([np_.zeros_like(icf_k[:i + 1]), icf_k[at:at + n]]))
        at += n
    return np_.stack(columns, axis=1)


def log_wishart_prior(np_, d, gamma, m, sum_qs, qdiags, icf):
    n = d + m + 1
    k = icf.shape[0]
    frobenius = np_.sum(qdiags ** 2) + np_.sum(icf[:, d:] ** 2)
    out = 0.5 * gamma * gamma * frobenius - m * np_.sum(sum_qs)
    c = n * d * (math.log(gamma) - 0.5 * math.log(2)) - gammaln(0.5 * (n - np.arange(d))).sum() \
        - 0.25 * d * (d - 1) * math.log(math.pi)
    return out - k * c


def gmm_objective(np_, alphas, means, icf, x, gamma=1.0, m=0):
    n, d = x.shape
    qdiags = np_.exp(icf[:, :d])
    sum_qs = np_.sum(icf[:, :d], axis=1)
    ls = np_.stack([lower_triangle(np_, d, icf[k]) for k in range(icf.shape[0])])
    xcentered = x[:, None, :] - means[None, :, :]  # (N, K, D)
    lx = qdiags * xcentered + np_.einsum("kij,nkj->nki", ls, xcentered)
    inner = alphas + sum_qs - 0.5 * np_.sum(lx ** 2, axis=2)
    const = -n * d * 0.5 * math.log(2 * math.pi)
    return (const + np_.sum(logsumexp(np_, inner, axis=1)) - n * logsumexp(np_, alphas)
            + log_wishart_prior(np_, d, gamma, m, sum_qs, qdiags, icf))


def inputs(n: int = 1000, k: int = 10, d: int = 8, seed: int = 0):
    """(alphas, means, icf, x) as ADBench's generator makes them: standard normal points,
    uniform parameters."""
    rng = np.random.default_rng(seed)
    alphas = rng.standard_normal(k)
    means = rng.uniform(0, 1, (k, d))
    icf = rng.uniform(0, 1, (k, d + d * (d - 1) // 2))
    x = rng.standard_normal((n, d))
    return alphas, means, icf, x
