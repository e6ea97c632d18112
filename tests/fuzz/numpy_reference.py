"""A NumPy stand-in for the `gt` namespace: the same program text run with
NumPy's semantics, the oracle for forward values (inf and NaN included).

Functions NumPy has under the same name are NumPy's; the others are written
here from their definitions, in the plain form whose IEEE behaviour is the
textbook one (relu(nan) is nan, as numpy.maximum gives).
"""
from __future__ import annotations

import types

import numpy as np


def relu(x):
    return np.maximum(x, 0)


def sigmoid(x):
    x = np.asarray(x)
    return (1 / (1 + np.exp(-x))).astype(x.dtype)


def softplus(x):
    x = np.asarray(x)
    return np.logaddexp(np.zeros((), x.dtype), x)


def logsumexp(x, axis=None, keepdims=False):
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def softmax(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    return np.asarray(x) - logsumexp(x, axis=axis, keepdims=True)


def stop_gradient(x):
    return np.asarray(x)


def cast(x, dtype):
    return np.asarray(x).astype(dtype)


def norm(x, ord=None, axis=None, keepdims=False):
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


def constant(x):
    return np.asarray(x)


def einsum(subscripts, *operands, **kwargs):
    # Contiguous copies: on an operand with a zero stride (a broadcast_to view), NumPy's
    # einsum sums the other factor first, x*a + x*b as x*(a+b), so inf*0.69 + inf*-0.55
    # comes out inf rather than NaN (fuzz seed 3504); on copies it multiplies term by term.
    operands = [np.ascontiguousarray(x) for x in operands]
    inputs, out = subscripts.split("->")
    terms = inputs.split(",")
    if len(terms) > 1 and all(len(set(t)) == len(t) for t in terms) and set("".join(terms)) == set(out):
        # No index is summed: each element is one product. NumPy's einsum adds it to a +0,
        # which turns -1 * 0 = -0 into +0 (fuzz seed 11324); a product keeps the sign.
        result = np.ones((), operands[0].dtype)
        for term, x in zip(terms, operands):
            order = sorted(range(len(term)), key=lambda i: out.index(term[i]))
            placed = np.transpose(x, order).reshape([x.shape[term.index(c)] if c in term else 1 for c in out])
            result = result * placed
        return result
    return np.einsum(subscripts, *operands, **kwargs)


def scan(f, init, xs, reverse=False):
    carry, ys = init, []
    for x in (xs[::-1] if reverse else xs):
        carry, y = f(carry, x)
        ys.append(np.asarray(y))
    ys = ys[::-1] if reverse else ys
    return carry, np.stack(ys)


def fori_loop(lower, upper, body, init):
    carry = init
    for i in range(lower, upper):
        carry = body(i, carry)
    return carry


def while_loop(cond_fun, body, init):
    carry = init
    while cond_fun(carry):
        carry = body(carry)
    return carry


def cond(pred, true_fun, false_fun, *operands):
    return true_fun(*operands) if pred else false_fun(*operands)


def switch(index, branches, *operands):
    # An index out of range is clamped to the first or last branch (as in JAX).
    return branches[min(max(int(index), 0), len(branches) - 1)](*operands)


namespace = types.SimpleNamespace(**{
    name: getattr(np, name) for name in [
        "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "arctan", "negative",
        "abs", "sign", "floor", "ceil", "round", "square", "reciprocal", "positive", "add", "subtract",
        "multiply", "divide", "power", "maximum", "minimum", "where", "logical_and", "logical_or",
        "logical_not", "clip", "sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin",
        "argmax", "argmin", "reshape", "ravel", "expand_dims", "squeeze", "broadcast_to", "transpose",
        "moveaxis", "swapaxes", "stack", "concatenate", "pad", "take", "matmul", "dot", "vdot", "inner",
        "outer", "tensordot", "trace", "diag", "zeros_like", "ones_like", "full_like", "sort", "median",
        "quantile",
    ]
})
namespace.flatten = lambda x: np.asarray(x).flatten()
for _fn in [relu, sigmoid, softplus, logsumexp, softmax, log_softmax, stop_gradient, cast, norm, constant, einsum,
            scan, fori_loop, while_loop, cond, switch]:
    setattr(namespace, _fn.__name__, _fn)
