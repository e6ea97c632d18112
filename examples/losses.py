"""The function the command-line examples in docs/aot_and_cache.md compile.

    cd examples
    python -m gradtape inspect losses:loss --shape w=4,3 --shape x=5,4
    python -m gradtape aot losses:loss --shape w=784,10 --shape x=128,784 --value-and-grad -o libloss.so

`loss(w, x)` is a tanh layer's squared output plus a weight penalty: w is
(inputs, outputs), x is (batch, inputs), the result a float scalar.
"""
import gradtape as gt


def loss(w, x):
    """sum(tanh(x @ w)^2) + 0.1 * sum(w^2)."""
    return gt.sum(gt.tanh(x @ w) ** 2) + 0.1 * gt.sum(w * w)
